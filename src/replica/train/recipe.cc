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
#include "replica/data/remote_files.h"

namespace replica::train {
namespace {

using namespace config;  // Field and its kinds (number, integer, text, list, choice, ...)

std::vector<Field> fields(Recipe& r) {
  auto precision = [](const std::string& s) { return parse_precision(s.c_str()); };
  optim::ScheduleConfig& schedule = r.schedule.steps;
  return {
      text("run.dir", r.run.dir),
      text("run.name", r.run.name),
      text("model.config", r.model.config),
      text("model.init_from", r.model.init_from),
      list("data.paths", r.data.paths, "a list of token files"),
      text("data.mix_file", r.data.mix_file),
      integer("data.seq_len", r.data.seq_len),
      integer("data.seed", r.data.seed),
      integer("data.global_batch_size", r.data.global_batch_size),
      integer("data.micro_batch_size", r.data.micro_batch_size),
      list("data.validation_paths", r.data.validation_paths, "a list of token files"),
      boolean("data.allow_fingerprint_change", r.data.allow_fingerprint_change),
      boolean("data.instance_filter", r.data.instance_filter.enabled),
      choice("data.packing", r.data.packing.kind, data::parse_packing, data::packing_name),
      integer("data.source_group_size", r.data.packing.source_group_size),
      choice("data.long_doc_strategy", r.data.packing.long_doc_strategy, data::parse_long_doc_strategy,
             data::long_doc_strategy_name),
      choice("data.document_boundaries", r.data.packing.document_boundaries, data::parse_document_boundaries,
             data::document_boundaries_name),
      text("data.work_dir", r.data.packing.work_dir),
      optional_integer("data.source_permutation_seed", r.data.source_permutation_seed),
      text("data.base_dir", r.data.base_dir),
      text("data.cache_dir", r.data.cache_dir),
      integer("data.cache_bytes", r.data.cache_bytes, 1),
      number("data.http_timeout", r.data.http_timeout),
      integer("data.http_retries", r.data.http_retries, 0),
      integer("data.read_ahead", r.data.read_ahead, 0),
      number("optim.lr", schedule.lr),
      number("optim.weight_decay", r.optim.adamw.weight_decay),
      number_pair("optim.betas", r.optim.adamw.beta1, r.optim.adamw.beta2, "a list of two numbers [beta1, beta2]"),
      number("optim.eps", r.optim.adamw.eps),
      boolean("optim.host_moments", r.optim.adamw.host_moments),
      number("optim.clip", r.optim.clip),
      boolean("optim.skip_step", r.optim.skip_step.enabled),
      number("optim.skip_step_sigma", r.optim.skip_step.sigma),
      integer("optim.skip_step_window", r.optim.skip_step.window),
      number("optim.z_loss", r.optim.z_loss),
      boolean("optim.load_state", r.optim.load_state),
      choice("schedule.type", schedule.type, optim::parse_schedule_type, optim::schedule_type_name),
      integer("schedule.warmup_steps", schedule.warmup),
      number("schedule.alpha_f", schedule.alpha_f),
      integer("schedule.t_max", schedule.t_max),
      number("schedule.t_max_tokens", r.schedule.t_max_tokens),
      integer("schedule.decay_steps", schedule.decay),
      integer("schedule.stitch_step", schedule.stitch_step),
      integer("schedule.part2_warmup_steps", schedule.part2_warmup),
      integer("schedule.part2_t_max", schedule.part2_t_max),
      number("schedule.part2_t_max_tokens", r.schedule.part2_t_max_tokens),
      integer("train.max_steps", r.train.max_steps),
      integer("train.stop_at", r.train.stop_at),
      text("train.resume_from", r.train.resume_from),
      list("train.allow_change", r.train.allow_change, "a list of recipe keys"),
      choice("train.device", r.train.device, parse_device, device_name),
      choice("train.precision", r.train.precision, precision, precision_name),
      integer("train.threads", r.train.threads),
      integer("train.seed", r.train.seed),
      choice("train.remat", r.train.remat, model::parse_remat, model::remat_name),
      boolean("train.shard_weights", r.train.shard_weights),
      integer("train.context_parallel", r.train.context.degree),
      integer("train.cp_head_stride", r.train.context.head_stride),
      choice("train.attention", r.train.attention, parse_attention_kernel, attention_kernel_name),
      boolean("train.float8", r.train.float8),
      boolean("train.profile", r.train.profile),
      integer("train.log_every", r.train.log_every),
      choice("train.progress", r.train.progress, metrics::parse_progress_style, metrics::progress_style_name),
      integer("checkpoint.every", r.checkpoint.every),
      integer("checkpoint.keep", r.checkpoint.keep),
      integer("eval.every", r.eval.every),
      integer("eval.batches", r.eval.batches),
      text("eval.suite", r.eval.suite),
      integer("eval.alarm_window", r.eval.alarm_window),
      number("eval.alarm_margin", r.eval.alarm_margin),
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

void validate(const Recipe& r, const Origins& origins) {
  auto require = [&](bool ok, const char* key, const std::string& what) {
    check(ok, "{}: '{}' {}", origins.of({key}), key, what);
  };
  require(!r.run.dir.empty(), "run.dir", "must name the run directory");
  // yaml-cpp lets an unclosed quote run on over the following lines, folding them and the keys there into the value
  // ("runs/x model: config: m.yaml"); no name or path holds a line break or ": ", so either says where it happened.
  const std::pair<const char*, const std::string*> names[] = {{"run.dir", &r.run.dir},
                                                              {"run.name", &r.run.name},
                                                              {"model.config", &r.model.config},
                                                              {"model.init_from", &r.model.init_from},
                                                              {"data.mix_file", &r.data.mix_file},
                                                              {"train.resume_from", &r.train.resume_from},
                                                              {"eval.suite", &r.eval.suite}};
  for (const auto& [key, value] : names)
    require(value->find('\n') == std::string::npos && value->find(": ") == std::string::npos, key,
            fmt::format("holds {:?}, keys and all: is a quote left open?", *value));
  Recipe copy = r;
  const std::vector<Field> table = fields(copy);
  for (const std::string& key : r.train.allow_change)
    require(find(table, key) != nullptr, "train.allow_change", fmt::format("names an unknown key '{}'", key));
  require(!r.model.config.empty() || !r.model.init_from.empty(), "model.config",
          "must be set (a model YAML file or HF config.json) unless model.init_from gives the model");
  require(r.data.paths.empty() != r.data.mix_file.empty(), "data.paths",
          "or data.mix_file must be set (exactly one of them)");
  require(r.data.seq_len > 0, "data.seq_len", fmt::format("must be positive, got {}", r.data.seq_len));
  require(r.data.seed >= 0, "data.seed", fmt::format("must be >= 0, got {}", r.data.seed));
  require(r.data.global_batch_size > 0, "data.global_batch_size",
          fmt::format("must be positive, got {}", r.data.global_batch_size));
  require(r.data.micro_batch_size > 0, "data.micro_batch_size",
          fmt::format("must be positive, got {}", r.data.micro_batch_size));
  check(r.data.global_batch_size % r.data.micro_batch_size == 0,
        "{}: 'data.global_batch_size' ({}) must be a multiple of data.micro_batch_size ({})",
        origins.of({"data.global_batch_size", "data.micro_batch_size"}), r.data.global_batch_size,
        r.data.micro_batch_size);
  require(r.data.http_timeout > 0 && r.data.http_timeout <= 3600, "data.http_timeout",
          fmt::format("must be in (0, 3600] seconds, got {}", r.data.http_timeout));
  require(r.data.packing.source_group_size >= 1, "data.source_group_size",
          fmt::format("must be at least 1, got {}", r.data.packing.source_group_size));
  check(r.data.packing.kind == data::Packing::none || std::has_single_bit(uint64_t(r.data.seq_len)),
        "{}: 'data.seq_len' must be a power of two with data.packing: obfd (the OBFD segment tree's leaves), got {}",
        origins.of({"data.seq_len", "data.packing"}), r.data.seq_len);
  check(r.data.packing.kind == data::Packing::obfd ||
            r.data.packing.document_boundaries == data::DocumentBoundaries::eos,
        "{}: 'data.document_boundaries: metadata' needs data.packing: obfd (fixed-length chunks have no documents)",
        origins.of({"data.document_boundaries", "data.packing"}));
  const optim::AdamWConfig& adamw = r.optim.adamw;
  require(r.schedule.steps.lr > 0, "optim.lr", fmt::format("must be positive, got {}", r.schedule.steps.lr));
  require(adamw.weight_decay >= 0, "optim.weight_decay", fmt::format("must be >= 0, got {}", adamw.weight_decay));
  require(adamw.beta1 >= 0 && adamw.beta1 < 1 && adamw.beta2 >= 0 && adamw.beta2 < 1, "optim.betas",
          "must be two numbers [beta1, beta2] in [0, 1)");
  require(adamw.eps > 0, "optim.eps", fmt::format("must be positive, got {}", adamw.eps));
  require(r.optim.clip >= 0, "optim.clip", fmt::format("must be >= 0 (0 = no clipping), got {}", r.optim.clip));
  require(r.optim.skip_step.sigma > 0, "optim.skip_step_sigma",
          fmt::format("must be positive, got {}", r.optim.skip_step.sigma));
  require(r.optim.skip_step.window >= 2, "optim.skip_step_window",
          fmt::format("must be >= 2, got {}", r.optim.skip_step.window));
  require(r.optim.z_loss >= 0, "optim.z_loss", fmt::format("must be >= 0, got {}", r.optim.z_loss));
  require(!r.optim.load_state || !r.model.init_from.empty(), "optim.load_state",
          "needs model.init_from (the checkpoint holding the optimizer state)");
  const Recipe::Schedule& s = r.schedule;
  require(s.steps.t_max >= 0 && s.t_max_tokens >= 0, "schedule.t_max", "must be >= 0");
  require(s.steps.t_max == 0 || s.t_max_tokens == 0, "schedule.t_max", "and schedule.t_max_tokens cannot both be set");
  require(s.steps.part2_t_max == 0 || s.part2_t_max_tokens == 0, "schedule.part2_t_max",
          "and schedule.part2_t_max_tokens cannot both be set");
  require(r.train.max_steps > 0, "train.max_steps", fmt::format("must be positive, got {}", r.train.max_steps));
  require(r.train.stop_at >= 0 && r.train.stop_at <= r.train.max_steps, "train.stop_at",
          fmt::format("must be in [0, train.max_steps = {}] (0 = run to max_steps), got {}", r.train.max_steps,
                      r.train.stop_at));
  require(r.train.threads >= 0 && r.train.threads <= kMaxThreads, "train.threads",
          fmt::format("must be 0 (all cores) to {}, got {}", kMaxThreads, r.train.threads));
  require(r.train.seed >= 0, "train.seed", fmt::format("must be >= 0, got {}", r.train.seed));
  require(r.train.log_every > 0, "train.log_every", fmt::format("must be positive, got {}", r.train.log_every));
  const dist::ContextParallelConfig& cp = r.train.context;
  require(cp.degree >= 1, "train.context_parallel", fmt::format("must be >= 1 (1 = off), got {}", cp.degree));
  require(cp.head_stride >= 0, "train.cp_head_stride",
          fmt::format("must be >= 0 (0 = all KV heads at once), got {}", cp.head_stride));
  if (cp.degree > 1) {
    require(r.data.micro_batch_size == 1, "data.micro_batch_size",
            fmt::format("must be 1 with train.context_parallel={} (a context-parallel micro-batch is one instance "
                        "split over the ranks), got {}",
                        cp.degree, r.data.micro_batch_size));
    const int64_t multiple = cp.degree * dist::ContextParallelConfig::kSliceMultiple;
    require(r.data.seq_len % multiple == 0, "data.seq_len",
            fmt::format("({}) must be a multiple of {} with train.context_parallel={} (each rank's slice a multiple "
                        "of {} tokens)",
                        r.data.seq_len, multiple, cp.degree, dist::ContextParallelConfig::kSliceMultiple));
  }
  require(r.checkpoint.every >= 0, "checkpoint.every", fmt::format("must be >= 0, got {}", r.checkpoint.every));
  require(r.checkpoint.keep >= 0, "checkpoint.keep", fmt::format("must be >= 0, got {}", r.checkpoint.keep));
  require(r.eval.every >= 0, "eval.every", fmt::format("must be >= 0, got {}", r.eval.every));
  require(r.eval.batches >= 0, "eval.batches", fmt::format("must be >= 0, got {}", r.eval.batches));
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
    check(data::is_url(p) || std::filesystem::exists(p), "{}: 'data.validation_paths': {} not found{}", source, p, resolved_against(p));
}

void check_training_files(Recipe& r, const Origins& origins) {
  auto exists = [&](const std::string& path, const char* key) {  // a URL is HEADed when the data is opened
    check(data::is_url(path) || std::filesystem::exists(path), "{}: '{}': {} not found{}", origins.of({key}), key, path,
          resolved_against(path));
  };
  r.data.paths = expand_globs(r.data.paths, origins.of({"data.paths"}), "data.paths");
  if (!r.model.config.empty()) exists(r.model.config, "model.config");
  if (!r.model.init_from.empty()) exists(r.model.init_from, "model.init_from");
  if (!r.train.resume_from.empty()) exists(r.train.resume_from, "train.resume_from");
  for (const std::string& p : r.data.paths) exists(p, "data.paths");
  if (!r.data.mix_file.empty()) exists(r.data.mix_file, "data.mix_file");
}

}  // namespace

Recipe load_recipe_text(const std::string& yaml, const std::string& source, const std::vector<std::string>& overrides,
                        bool check_files) {
  Recipe r;
  YAML::Node root;
  try {
    root = YAML::Load(yaml);
  } catch (const YAML::Exception& e) {
    fail("{}: invalid YAML ({})", source, e.what());
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
  const Recipe::Schedule& s = r.schedule;
  optim::ScheduleConfig c = s.steps;
  c.t_max = s.steps.t_max > 0    ? s.steps.t_max
            : s.t_max_tokens > 0 ? steps_for_tokens(s.t_max_tokens, r.tokens_per_step())
                                 : r.train.max_steps;
  c.part2_t_max = s.steps.part2_t_max > 0    ? s.steps.part2_t_max
                  : s.part2_t_max_tokens > 0 ? steps_for_tokens(s.part2_t_max_tokens, r.tokens_per_step())
                                             : r.train.max_steps;
  return c;
}

// How this run reads http(s):// files; what it learns of them is kept in run.dir.
static data::RemoteConfig remote_config(const Recipe& r) {
  data::RemoteConfig c;
  c.http.retries = int(r.data.http_retries);
  c.http.timeout_s = r.data.http_timeout;
  c.cache_dir = r.data.cache_dir;
  c.cache_bytes = uint64_t(r.data.cache_bytes);
  c.index_path = (std::filesystem::path(r.run.dir) / "remote_files.json").string();
  return c;
}

data::LoaderConfig loader_config(const Recipe& r, const model::ModelConfig& model) {
  data::configure_remote_files(remote_config(r));  // before the mix file, which may itself be a URL
  data::LoaderConfig c;
  c.files = r.data.mix_file.empty() ? data::mix_from_paths(r.data.paths)
                                    : data::read_mix_file(r.data.mix_file, r.data.base_dir);
  c.read_ahead = r.data.read_ahead;
  c.seq_len = r.data.seq_len;
  c.seed = uint64_t(r.data.seed);
  c.global_batch = r.data.global_batch_size;
  c.vocab_size = uint32_t(model.vocab_size);
  c.filter = r.data.instance_filter;
  c.source_permutation_seed = r.data.source_permutation_seed;
  c.packing = r.data.packing;
  return c;
}

}  // namespace replica::train
