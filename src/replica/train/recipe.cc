// Recipe loading: one table of keys drives parsing, overrides, unknown-key errors and to_yaml().
#include "replica/train/recipe.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <filesystem>
#include <map>
#include <string_view>

#include "replica/core/config_fields.h"
#include "replica/core/error.h"
#include "replica/core/file.h"
#include "replica/core/glob.h"
#include "replica/core/threads.h"
#include "replica/data/http_client.h"

namespace replica::train {
namespace {

using namespace config;  // Field and its kinds (number, integer, text, list, choice, ...)

// No name or path holds a line break or ": ": yaml-cpp lets an unclosed quote run on over the following lines,
// folding them and the keys there into the value ("runs/x model: config: m.yaml"), and either says where it happened.
std::string one_line(const std::string& value) {
  return value.find('\n') == std::string::npos && value.find(": ") == std::string::npos
             ? ""
             : fmt::format("holds {:?}, keys and all: is a quote left open?", value);
}

// The recipe's keys, each declared once: where its value lives (a member of the module config the recipe holds),
// how it reads and writes (its kind), the rule its value keeps, and what a resume may do with it (by default it
// needs train.allow_change). Rules between several keys are in validate().
std::vector<Field> fields(Recipe& r) {
  auto precision = [](const std::string& s) { return parse_precision(s.c_str()); };
  StepConfig& step = r.step;
  optim::ScheduleConfig& schedule = r.step.schedule;
  optim::AdamWConfig& adamw = r.step.optimizer.adamw;
  data::LoaderConfig& loader = r.loader;
  const auto at_least_0 = at_least<int64_t>(0), positive_integer = positive<int64_t>();
  // How the schedule is written may change on a resume as long as the schedule it resolves to does not (extending a
  // run by train.max_steps with schedule.t_max set to the old horizon).
  constexpr OnResume same_schedule = OnResume::neutral_if_schedule_unchanged;
  // The model is compared by its structure and the data by its fingerprint (checkpointing.cc), not by these keys.
  return {
      text("run.dir", r.run.dir,
           [](const std::string& dir) { return dir.empty() ? "must name the run directory" : one_line(dir); })
          .neutral(),
      text("run.name", r.run.name, one_line).neutral(),
      text("model.config", r.model.config, one_line).neutral(),
      text("model.init_from", r.model.init_from, one_line).neutral(),
      list("data.paths", r.data.paths, "a list of token files").neutral(),
      text("data.mix_file", r.data.mix_file, one_line).neutral(),
      // A checkpoint's data position holds for the batch shape it was saved with.
      integer("data.seq_len", step.seq_len, positive_integer).resume(OnResume::refused),
      unsigned_integer("data.seed", loader.seed),
      integer("data.global_batch_size", step.global_batch, positive_integer).resume(OnResume::refused),
      integer("data.micro_batch_size", step.micro_batch, positive_integer).neutral(),
      list("data.validation_paths", r.data.validation_paths, "a list of token files").neutral(),
      boolean("data.allow_fingerprint_change", r.data.allow_fingerprint_change).neutral(),
      boolean("data.instance_filter", loader.filter.enabled),
      choice("data.packing", loader.packing.kind, data::parse_packing, data::packing_name),
      integer("data.source_group_size", loader.packing.source_group_size, at_least<int64_t>(1)),
      choice("data.long_doc_strategy", loader.packing.long_doc_strategy, data::parse_long_doc_strategy,
             data::long_doc_strategy_name),
      choice("data.document_boundaries", loader.packing.document_boundaries, data::parse_document_boundaries,
             data::document_boundaries_name),
      text("data.work_dir", loader.packing.work_dir),
      optional_integer("data.source_permutation_seed", loader.source_permutation_seed),
      // A loader bug injected for tests (data/loader.h LoaderFault): what the audit and reproduce must catch.
      choice("data.fault", loader.fault, data::parse_loader_fault, data::loader_fault_name),
      // Where the files are and how they are read: the data fingerprint shows what was read, not these.
      text("data.base_dir", r.data.base_dir, one_line).neutral(),
      text("data.cache_dir", r.remote.cache_dir, one_line).neutral(),
      integer("data.cache_bytes", r.remote.cache_bytes, positive_integer).neutral(),
      number("data.http_timeout", r.remote.http.timeout_s,
             [](double s) { return s > 0 && s <= 3600 ? "" : fmt::format("must be in (0, 3600] seconds, got {}", s); })
          .neutral(),
      integer("data.http_retries", r.remote.http.retries, at_least_0).neutral(),
      integer("data.read_ahead", loader.read_ahead, at_least<int64_t>(0, "0 = none")).neutral(),
      // The optimizer and its state tensors (optim/optimizers.h): a checkpoint's state is of the optimizer it was saved
      // with.
      choice("optim.name", step.optimizer.name, optim::parse_optimizer_name, optim::optimizer_name)
          .resume(OnResume::refused),
      number("optim.lr", schedule.lr, positive<double>()),
      number("optim.weight_decay", adamw.weight_decay, at_least(0.0)),
      number_pair("optim.betas", adamw.beta1, adamw.beta2, "a list of two numbers [beta1, beta2]",
                  [](double beta1, double beta2) {
                    return beta1 >= 0 && beta1 < 1 && beta2 >= 0 && beta2 < 1
                               ? ""
                               : "must be two numbers [beta1, beta2] in [0, 1)";
                  }),
      number("optim.eps", adamw.eps, positive<double>()),
      boolean("optim.host_moments", adamw.host_moments).neutral(),  // where the moments live, not their bits
      number("optim.momentum", step.optimizer.sgd.momentum,
             [](double m) { return m >= 0 && m < 1 ? "" : fmt::format("must be in [0, 1) (0 = none), got {}", m); }),
      number("optim.clip", step.clip, at_least(0.0, "0 = no clipping")),
      boolean("optim.skip_step", step.skip_step.enabled),
      number("optim.skip_step_sigma", step.skip_step.sigma, positive<double>()),
      integer("optim.skip_step_window", step.skip_step.window, at_least<int64_t>(2)),
      number("optim.z_loss", step.z_loss, at_least(0.0)),
      boolean("optim.load_state", r.optim.load_state).neutral(),
      choice("schedule.type", schedule.type, optim::parse_schedule_type, optim::schedule_type_name)
          .resume(same_schedule),
      integer("schedule.warmup_steps", schedule.warmup).resume(same_schedule),
      number("schedule.alpha_f", schedule.alpha_f).resume(same_schedule),
      integer("schedule.t_max", schedule.t_max, at_least_0).resume(same_schedule),
      number("schedule.t_max_tokens", r.schedule.t_max_tokens, at_least(0.0)).resume(same_schedule),
      integer("schedule.decay_steps", schedule.decay).resume(same_schedule),
      integer("schedule.stitch_step", schedule.stitch_step).resume(same_schedule),
      integer("schedule.part2_warmup_steps", schedule.part2_warmup).resume(same_schedule),
      integer("schedule.part2_t_max", schedule.part2_t_max).resume(same_schedule),
      number("schedule.part2_t_max_tokens", r.schedule.part2_t_max_tokens).resume(same_schedule),
      integer("train.max_steps", r.train.max_steps, positive_integer).resume(same_schedule),
      integer("train.stop_at", r.train.stop_at).neutral(),
      number("train.max_seconds", r.train.max_seconds, at_least(0.0)).neutral(),
      text("train.resume_from", r.train.resume_from, one_line).neutral(),
      list("train.allow_change", r.train.allow_change, "a list of recipe keys").neutral(),
      choice("train.device", r.train.device, parse_device, device_name).neutral(),
      choice("train.precision", step.precision, precision, precision_name),
      integer("train.threads", r.train.threads,
              [](int64_t n) {
                return n >= 0 && n <= kMaxThreads
                           ? ""
                           : fmt::format("must be 0 (one per free core) to {}, got {}", kMaxThreads, n);
              })
          .neutral(),
      integer("train.seed", r.train.seed, at_least_0),
      // Recomputation, sharding and context parallelism change where the numbers are computed, not what they are.
      choice("train.remat", step.remat, model::parse_remat, model::remat_name).neutral(),
      boolean("train.shard_weights", step.sharding.weights).neutral(),
      integer("train.context_parallel", step.context.degree, at_least<int64_t>(1, "1 = off")).neutral(),
      integer("train.cp_head_stride", step.context.head_stride, at_least<int64_t>(0, "0 = all KV heads at once"))
          .neutral(),
      choice("train.attention", step.attention, parse_attention_kernel, attention_kernel_name).neutral(),
      boolean("train.float8", step.float8),
      boolean("train.profile", r.train.profile).neutral(),
      integer("train.log_every", r.train.log_every, positive_integer).neutral(),
      choice("train.progress", r.train.progress, metrics::parse_progress_style, metrics::progress_style_name)
          .neutral(),
      integer("checkpoint.every", r.checkpoint.every, at_least_0).neutral(),
      integer("checkpoint.keep", r.checkpoint.keep, at_least_0).neutral(),
      integer("eval.every", r.eval.every, at_least_0).neutral(),
      integer("eval.batches", r.eval.batches, at_least_0).neutral(),
      text("eval.suite", r.eval.suite, one_line).neutral(),
      integer("eval.alarm_window", r.alarm.window).neutral(),
      number("eval.alarm_margin", r.alarm.margin).neutral(),
  };
}

const Field* find(const std::vector<Field>& table, const std::string& key) {
  for (const Field& f : table)
    if (f.key == key) return &f;
  return nullptr;
}

std::vector<std::string> keys(const std::vector<Field>& table) {
  std::vector<std::string> out;
  for (const Field& f : table) out.push_back(f.key);
  return out;
}

std::vector<std::string> sections(const std::vector<Field>& table) {
  std::vector<std::string> out;
  for (const Field& f : table) {
    std::string section = f.key.substr(0, f.key.find('.'));
    if (out.empty() || out.back() != section) out.push_back(section);
  }
  return out;
}

void apply_file(Recipe& r, const YAML::Node& root, const std::string& source) {
  std::vector<Field> table = fields(r);
  std::vector<std::string> known = sections(table);
  if (root.IsNull()) return;
  check(root.IsMap(), "{}: a recipe must be a mapping of sections ({})", source, fmt::join(known, ", "));
  for (const auto& [name, section] : mapping_entries(root, "", source)) {
    check(std::find(known.begin(), known.end(), name) != known.end(),
          "{}: unknown section '{}'{} (expected one of {})", source, name, did_you_mean(name, known),
          fmt::join(known, ", "));
    if (section.IsNull()) continue;
    check(section.IsMap(), "{}: section '{}' must be a mapping of keys", source, name);
    for (const auto& [key, value] : mapping_entries(section, name + ".", source)) {
      const Field* f = find(table, key);
      check(f != nullptr, "{}: unknown key '{}'{}", source, key, did_you_mean(key, keys(table)));
      f->set(value, source);
    }
  }
}

// Where each key's value came from, for errors: the override that set it last, else the recipe file.
struct Origins {
  std::string file;
  std::map<std::string, std::string> overrides;  // key -> "override 'key=value'"

  std::string of(std::initializer_list<std::string_view> keys) const {
    for (std::string_view key : keys)
      if (auto it = overrides.find(std::string(key)); it != overrides.end()) return it->second;
    return file;
  }
  std::string of_section(std::string_view prefix) const {
    for (const auto& [key, origin] : overrides)
      if (key.starts_with(prefix)) return origin;
    return file;
  }
};

std::string override_key(const std::string& text) { return text.substr(0, text.find('=')); }

void apply_override(Recipe& r, const std::string& text) {
  std::vector<Field> table = fields(r);
  size_t eq = text.find('=');
  check(eq != std::string::npos, "override '{}': expected section.key=value", text);
  std::string key = text.substr(0, eq);
  const Field* f = find(table, key);
  check(f != nullptr, "override '{}': unknown key '{}'{}", text, key, did_you_mean(key, keys(table)));
  YAML::Node value;
  try {
    value = YAML::Load(text.substr(eq + 1));
  } catch (const YAML::Exception& e) {
    fail("override '{}': the value is not valid YAML ({})", text, e.what());
  }
  f->set(value, fmt::format("override '{}'", text));
}

// Each row's rule, then the rules between keys.
void validate(const Recipe& r, const Origins& origins) {
  auto require = [&](bool ok, const char* key, const std::string& what) {
    check(ok, "{}: '{}' {}", origins.of({key}), key, what);
  };
  Recipe copy = r;
  const std::vector<Field> table = fields(copy);
  for (const Field& f : table)
    if (f.problem)
      if (const std::string problem = f.problem(); !problem.empty())
        fail("{}: '{}' {}", origins.of({f.key}), f.key, problem);
  for (const std::string& key : r.train.allow_change) {
    const Field* f = find(table, key);
    require(f != nullptr, "train.allow_change", fmt::format("names an unknown key '{}'", key));
    require(f->on_resume != OnResume::refused, "train.allow_change",
            fmt::format("names '{}', which no resume can change (the checkpoint's data position needs it)", key));
  }
  require(r.data.paths.empty() || r.data.mix_file.empty(), "data.paths",
          "or data.mix_file must be set (exactly one of them)");
  const StepConfig& step = r.step;
  check(step.global_batch % step.micro_batch == 0,
        "{}: 'data.global_batch_size' ({}) must be a multiple of data.micro_batch_size ({})",
        origins.of({"data.global_batch_size", "data.micro_batch_size"}), step.global_batch, step.micro_batch);
  const data::PackingConfig& packing = r.loader.packing;
  check(packing.kind == data::Packing::none || std::has_single_bit(uint64_t(step.seq_len)),
        "{}: 'data.seq_len' must be a power of two with data.packing: obfd (the OBFD segment tree's leaves), got {}",
        origins.of({"data.seq_len", "data.packing"}), step.seq_len);
  check(packing.kind == data::Packing::obfd || packing.document_boundaries == data::DocumentBoundaries::eos,
        "{}: 'data.document_boundaries: metadata' needs data.packing: obfd (fixed-length chunks have no documents)",
        origins.of({"data.document_boundaries", "data.packing"}));
  require(!r.optim.load_state || !r.model.init_from.empty(), "optim.load_state",
          "needs model.init_from (the checkpoint holding the optimizer state)");
  const optim::OptimizerConfig& optimizer = step.optimizer;
  require(optimizer.name == optim::OptimizerName::sgd || optimizer.sgd.momentum == 0, "optim.momentum",
          fmt::format("is SGD's (optim.name: sgd), not {}'s", optim::optimizer_name(optimizer.name)));
  require(optimizer.name == optim::OptimizerName::adamw || !optimizer.adamw.host_moments, "optim.host_moments",
          fmt::format("keeps AdamW's moments in host memory; optim.name: {} has none there",
                      optim::optimizer_name(optimizer.name)));
  const optim::ScheduleConfig& s = step.schedule;
  require(s.t_max == 0 || r.schedule.t_max_tokens == 0, "schedule.t_max",
          "and schedule.t_max_tokens cannot both be set");
  require(s.part2_t_max == 0 || r.schedule.part2_t_max_tokens == 0, "schedule.part2_t_max",
          "and schedule.part2_t_max_tokens cannot both be set");
  require(r.train.stop_at >= 0 && r.train.stop_at <= r.train.max_steps, "train.stop_at",
          fmt::format("must be in [0, train.max_steps = {}] (0 = run to max_steps), got {}", r.train.max_steps,
                      r.train.stop_at));
  const distributed::ContextParallelConfig& cp = step.context;
  if (cp.degree > 1) {
    require(step.micro_batch == 1, "data.micro_batch_size",
            fmt::format("must be 1 with train.context_parallel={} (a context-parallel micro-batch is one instance "
                        "split over the ranks), got {}",
                        cp.degree, step.micro_batch));
    const int64_t multiple = cp.degree * distributed::ContextParallelConfig::kSliceMultiple;
    require(step.seq_len % multiple == 0, "data.seq_len",
            fmt::format("({}) must be a multiple of {} with train.context_parallel={} (each rank's slice a multiple "
                        "of {} tokens)",
                        step.seq_len, multiple, cp.degree, distributed::ContextParallelConfig::kSliceMultiple));
  }
  require(r.eval.every == 0 || !r.data.validation_paths.empty(), "eval.every",
          "needs data.validation_paths (held-out token files)");
  try {
    validate(schedule_config(r));
  } catch (const Error& e) {
    fail("{}: {}", origins.of_section("schedule."), e.what());
  }
}

void check_held_out_files(Recipe& r, const Origins& origins) {
  const std::string source = origins.of({"data.validation_paths"});
  r.data.validation_paths = expand_globs(r.data.validation_paths, source, "data.validation_paths");
  for (const std::string& p : r.data.validation_paths)
    check(data::is_url(p) || std::filesystem::exists(p), "{}: 'data.validation_paths': {} not found{}", source, p,
          resolved_against(p));
}

// What training reads must be named (a plan or a data command names only what it needs) and exist.
void check_training_files(Recipe& r, const Origins& origins) {
  check(!r.model.config.empty() || !r.model.init_from.empty(),
        "{}: 'model.config' must be set (a model YAML file or HF config.json) unless model.init_from gives the model",
        origins.of({"model.config", "model.init_from"}));
  check(!r.data.paths.empty() || !r.data.mix_file.empty(),
        "{}: 'data.paths' or data.mix_file must be set (exactly one of them)", origins.of({"data.paths", "data.mix_file"}));
  auto exists = [&](const std::string& path, const char* key) {
    check(std::filesystem::exists(path), "{}: '{}': {} not found{}", origins.of({key}), key, path,
          resolved_against(path));
  };
  r.data.paths = expand_globs(r.data.paths, origins.of({"data.paths"}), "data.paths");
  if (!r.model.config.empty()) exists(r.model.config, "model.config");
  if (!r.model.init_from.empty()) exists(r.model.init_from, "model.init_from");
  if (!r.train.resume_from.empty()) exists(r.train.resume_from, "train.resume_from");
  for (const std::string& p : r.data.paths)
    if (!data::is_url(p)) exists(p, "data.paths");  // a URL is HEADed when the data is opened
  if (!r.data.mix_file.empty() && !data::is_url(r.data.mix_file)) exists(r.data.mix_file, "data.mix_file");
}

}  // namespace

Recipe load_recipe_text(const std::string& yaml, const std::string& source, const std::vector<std::string>& overrides,
                        bool check_files) {
  Recipe r;
  YAML::Node root;
  try {
    root = YAML::Load(yaml);
  } catch (const YAML::Exception& e) {
    fail("{}: invalid YAML ({})", source, config::yaml_error_text(e));
  }
  apply_file(r, root, source);
  Origins origins{source, {}};
  for (const std::string& o : overrides) {
    apply_override(r, o);
    origins.overrides[override_key(o)] = fmt::format("override '{}'", o);
  }
  validate(r, origins);
  if (check_files) {
    check_training_files(r, origins);
    check_held_out_files(r, origins);
  }
  return r;
}

void resolve_training_files(Recipe& r, const std::string& source) { check_training_files(r, Origins{source, {}}); }

Recipe load_recipe(const std::string& path, const std::vector<std::string>& overrides, bool check_files) {
  check(std::filesystem::is_regular_file(path), "{}: recipe file not found", path);
  return load_recipe_text(read_text_file(path), path, overrides, check_files);
}

std::string Recipe::to_yaml() const {
  Recipe copy = *this;  // the table's fields write as well as read
  std::vector<Field> table = fields(copy);
  YAML::Node root(YAML::NodeType::Map);
  for (const Field& f : table) {
    size_t dot = f.key.find('.');
    root[f.key.substr(0, dot)][f.key.substr(dot + 1)] = f.get();
  }
  YAML::Emitter out;
  out << root;
  return "# replica recipe, resolved (defaults, file and overrides)\n" + std::string(out.c_str()) + "\n";
}

// Steps needed for `tokens` tokens at tokens_per_step (OLMo-core: ceil(tokens / global batch tokens)).
static int64_t steps_for_tokens(double tokens, int64_t tokens_per_step) {
  return int64_t(std::ceil(tokens / double(tokens_per_step)));
}

optim::ScheduleConfig schedule_config(const Recipe& r) {
  const optim::ScheduleConfig& steps = r.step.schedule;
  optim::ScheduleConfig c = steps;
  c.t_max = steps.t_max > 0                ? steps.t_max
            : r.schedule.t_max_tokens > 0 ? steps_for_tokens(r.schedule.t_max_tokens, r.tokens_per_step())
                                          : r.train.max_steps;
  c.part2_t_max = steps.part2_t_max > 0                ? steps.part2_t_max
                  : r.schedule.part2_t_max_tokens > 0 ? steps_for_tokens(r.schedule.part2_t_max_tokens,
                                                                         r.tokens_per_step())
                                                      : r.train.max_steps;
  return c;
}

StepConfig step_config(const Recipe& r) {
  StepConfig c = r.step;
  c.schedule = schedule_config(r);
  return c;
}

data::LoaderConfig loader_config(const Recipe& r, uint32_t vocab_size) {
  data::LoaderConfig c = r.loader;
  c.files = r.data.mix_file.empty() ? data::mix_from_paths(r.data.paths)
                                    : data::read_mix_file(r.data.mix_file, r.data.base_dir);
  c.seq_len = r.step.seq_len;
  c.global_batch = r.step.global_batch;
  c.vocab_size = vocab_size;
  return c;
}

data::RemoteConfig remote_config(const Recipe& r) {
  data::RemoteConfig c = r.remote;
  c.index_path = (std::filesystem::path(r.run.dir) / "remote_files.json").string();
  return c;
}

data::LoaderConfig loader_config(const Recipe& r, const model::ModelConfig& model) {
  return loader_config(r, uint32_t(model.vocab_size));
}

std::vector<std::pair<std::string, OnResume>> resume_rules() {
  Recipe r;
  std::vector<std::pair<std::string, OnResume>> rules;
  for (const Field& f : fields(r)) rules.emplace_back(f.key, f.on_resume);
  return rules;
}

}  // namespace replica::train
