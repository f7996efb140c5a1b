// `replica data`: tokenize text into OLMo token files, inspect token datasets, write the global order, and
// audit a planned run for repeated data. The logic lives in src/replica/data/.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <memory>
#include <optional>
#include <sstream>

#include "replica/cli/command.h"
#include "replica/cli/data_text.h"
#include "replica/core/error.h"
#include "replica/core/unlink_on_signal.h"
#include "replica/data/document_metadata.h"
#include "replica/core/file.h"
#include "replica/core/npy.h"
#include "replica/core/output_guard.h"
#include "replica/core/threads.h"
#include "replica/data/audit.h"
#include "replica/data/loader.h"
#include "replica/data/remote_files.h"
#include "replica/data/tokenize.h"
#include "replica/train/checkpointing.h"
#include "replica/train/recipe.h"

namespace {

using namespace replica;
using namespace replica::data;
using replica::cli::non_negative_number;
using replica::cli::positive_number;

// A YAML scalar holding `text` as it is (a path with ": " or a leading "[" stays a path).
std::string yaml_scalar(const std::string& text) {
  YAML::Emitter out;
  out << YAML::DoubleQuoted << text;
  return out.c_str();
}

// Options naming a token dataset: --paths FILES... or --mix FILE, the sequence length and dtype, and how the
// files become instances (a source permutation, packing).
struct DatasetOptions {
  std::vector<std::string> paths;
  std::string mix, dtype = "uint32", packing = "none", long_doc_strategy = "truncate", work_dir,
      document_boundaries = "eos", base_dir;
  RemoteConfig remote;  // how http(s):// paths are read
  int64_t seq_len = 0, source_group_size = 1;
  std::optional<int64_t> source_permutation_seed;

  void add_to(CLI::App* app, bool need_seq_len = true) {
    auto* paths_opt = app->add_option("--paths", paths, "Token files, in mix order");
    auto* mix_opt = app->add_option("--mix", mix, "Mix file: one 'label,path' or 'path' per line");
    paths_opt->excludes(mix_opt);
    auto* seq = app->add_option("--seq-len", seq_len, "Tokens per instance")->check(positive_number);
    if (need_seq_len) seq->required();
    app->add_option("--dtype", dtype, "Element type of headerless token files (uint32 or uint16)")
        ->capture_default_str();
    app->add_option("--packing", packing, "none (fixed-length chunks) or obfd (OLMo-core's packed documents)")
        ->capture_default_str();
    app->add_option("--source-group-size", source_group_size, "Files packed together")->capture_default_str();
    app->add_option("--long-doc-strategy", long_doc_strategy, "Documents longer than --seq-len: truncate or fragment")
        ->capture_default_str();
    app->add_option("--document-boundaries", document_boundaries,
                    "With --packing obfd: eos (split at EOS) or metadata (each file's Dolma .csv.gz sidecar)")
        ->capture_default_str();
    app->add_option("--work-dir", work_dir, "Cache each group's packing here (the recipe's data.work_dir)");
    app->add_option("--source-permutation-seed", source_permutation_seed,
                    "Shuffle the files with Python's random.Random(seed) first (OLMo-core's source permutation)");
    app->add_option("--base-dir", base_dir,
                    "Where the mix file's relative paths are (data.base_dir: https://olmo-data.org or a local copy)");
    app->add_option("--cache-dir", remote.cache_dir,
                    "Keep the ranges read from http(s):// files here, and what a HEAD said of each (data.cache_dir)");
    app->add_option("--cache-bytes", remote.cache_bytes, "The cache's bound (data.cache_bytes)")
        ->capture_default_str()
        ->check(positive_number);
    app->add_option("--http-timeout", remote.http.timeout_s, "Seconds without a byte before a request is retried")
        ->capture_default_str()
        ->check(CLI::Range(0.001, 3600.0));
    app->add_option("--http-retries", remote.http.retries, "Retries of a 5xx, a reset or a timeout")
        ->capture_default_str()
        ->check(non_negative_number);
  }
  // How http(s):// paths are read without a recipe: sizes and validators are kept beside the cache when there is one
  // (a run keeps its own in run.dir).
  void configure_remote() const {
    RemoteConfig c = remote;
    if (!c.cache_dir.empty()) c.index_path = (std::filesystem::path(c.cache_dir) / "remote_files.json").string();
    configure_remote_files(c);
  }
  // The recipe keys these flags set (--seq-len 4096 is data.seq_len=4096); --dtype is the files' own, no key.
  std::vector<std::string> overrides() const {
    std::vector<std::string> out;
    if (!mix.empty()) out.push_back("data.mix_file=" + yaml_scalar(mix));
    YAML::Emitter files;
    files << YAML::Flow << YAML::BeginSeq;
    for (const std::string& path : paths) files << YAML::DoubleQuoted << path;
    files << YAML::EndSeq;
    if (!paths.empty()) out.push_back(fmt::format("data.paths={}", files.c_str()));
    if (seq_len > 0) out.push_back(fmt::format("data.seq_len={}", seq_len));
    out.push_back("data.packing=" + yaml_scalar(packing));
    out.push_back(fmt::format("data.source_group_size={}", source_group_size));
    out.push_back("data.long_doc_strategy=" + yaml_scalar(long_doc_strategy));
    out.push_back("data.document_boundaries=" + yaml_scalar(document_boundaries));
    out.push_back("data.work_dir=" + yaml_scalar(work_dir));
    if (source_permutation_seed) out.push_back(fmt::format("data.source_permutation_seed={}", *source_permutation_seed));
    out.push_back("data.base_dir=" + yaml_scalar(base_dir));
    return out;
  }
  std::vector<MixEntry> entries() const {
    check(!paths.empty() || !mix.empty(), "give the token files with --paths FILES... or --mix FILE");
    return mix.empty() ? mix_from_paths(paths) : read_mix_file(mix, base_dir);
  }
};

// The recipe's range for data.seed (train.seed is an int64), and epochs as far: seed + epoch, which seeds the order's
// generator, then stays below 2^64 as numpy's Python integers do, never wrapping to another seed.
const CLI::Range kSeedRange(uint64_t{0}, uint64_t(INT64_MAX), "a seed in [0, 2^63 - 1]");
const CLI::Range kEpochRange(uint64_t{1}, uint64_t(INT64_MAX), "an epoch in [1, 2^63 - 1]");

// dolma2's 100,278 ids padded to a multiple of 128: the vocab_size of every shipped model (configs/models/), which the
// trainer hashes into the data fingerprint.
constexpr uint32_t kModelVocabSize = 100352;

struct Options {
  // tokenize
  std::vector<std::string> inputs;
  std::string input_list, output, tokenizer, recipe, rules = "dolma";
  std::vector<std::string> overrides;  // of the recipe
  int jobs = 0;
  // datasets and orders
  DatasetOptions dataset;
  uint64_t seed = 34521, epoch = 1, first_epoch = 1;
  int64_t global_batch = 0, steps = 0, micro_batch = 0, instance = 0;
  int world_size = 1;
  uint32_t vocab_size = kModelVocabSize;  // the model's, hashed into the fingerprint
  bool filter = false, scan = false, ids = false, npy_header = false, no_metadata = false;
};

// What a fingerprint from the flags stands for, so it can be matched with (or told apart from) a run's: a line under
// the fingerprint's own, which stays "fingerprint  HEX" for scripts.
std::string flags_fingerprint_note(const Options& o) {
  return fmt::format("  (the fingerprint `replica train` records for these files, seq_len {}, seed {}, packing {}, "
                     "instance filter {} and a model vocab of {}; a recipe's own: data audit --config RECIPE)\n",
                     o.dataset.seq_len, o.seed, o.dataset.packing, o.filter ? "on" : "off", o.vocab_size);
}

// The loader the command-line flags describe (without --config): they are overrides of the default recipe, so the
// loader is built as `replica train` builds it (train::loader_config), with the model's vocabulary from --vocab-size.
LoaderConfig flags_loader_config(const Options& o) {
  o.dataset.entries();  // --paths or --mix, else the error that says so
  std::vector<std::string> flags = o.dataset.overrides();
  flags.push_back(fmt::format("data.seed={}", o.seed));
  flags.push_back(fmt::format("data.global_batch_size={}", std::max<int64_t>(o.global_batch, 1)));
  flags.push_back(fmt::format("data.instance_filter={}", o.filter));
  flags.insert(flags.end(), o.overrides.begin(), o.overrides.end());
  LoaderConfig config = train::loader_config(train::load_recipe_text("", "replica data", flags, false), o.vocab_size);
  config.dtype = parse_token_dtype(o.dataset.dtype);
  return config;
}

// --input's files, then --input-list's (one path a line; blank lines skipped, a missing file named with its line).
std::vector<std::string> tokenize_inputs(const Options& o) {
  std::vector<std::string> inputs = o.inputs;
  if (o.input_list.empty()) return inputs;
  std::istringstream list(read_text_file(o.input_list));
  int64_t number = 0;
  for (std::string line; std::getline(list, line);) {
    number++;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    check(std::filesystem::is_regular_file(line), "{}:{}: '{}' is not a file (expected one input path a line)",
          o.input_list, number, line);
    inputs.push_back(line);
  }
  return inputs;
}

int run_tokenize(const Options& o) {
  const std::vector<std::string> inputs = tokenize_inputs(o);
  std::vector<std::string> read = inputs;
  if (!o.input_list.empty()) read.push_back(o.input_list);
  check_output_path("--output", o.output, read);
  if (std::filesystem::exists(o.output + ".tmp"))
    fmt::print(stderr, "note: replacing {}.tmp, left by a tokenize that was cut short\n", o.output);
  Tokenizer tokenizer = Tokenizer::load(o.tokenizer.empty() ? default_ranks_path() : o.tokenizer);
  TokenizeOptions options;
  options.rules = parse_text_rules(o.rules, "--rules");
  options.jobs = o.jobs;
  options.npy_header = o.npy_header;
  options.metadata = !o.no_metadata;
  options.progress = true;
  std::vector<std::string> temporary = {o.output + ".tmp"};  // what a signal must not leave behind
  if (options.metadata) try {
      temporary.push_back(document_metadata_path(o.output) + ".tmp");
    } catch (const Error&) {  // no sidecar for this name: tokenize says so
    }
  const UnlinkOnSignal cleanup(temporary);
  TokenizeStats stats = tokenize_files(tokenizer, inputs, o.output, options);
  fmt::print("{}: {} documents, {:.2f} MB of text, {} tokens ({:.2f} bytes/token), {:.2f} s ({:.1f} MB/s), {}\n",
             o.output, stats.documents, stats.bytes / 1e6, stats.tokens,
             stats.tokens ? double(stats.bytes) / double(stats.tokens) : 0.0, stats.seconds,
             stats.seconds > 0 ? stats.bytes / 1e6 / stats.seconds : 0.0,
             o.npy_header ? ".npy header (np.load, forward --tokens)"
                          : "headerless uint32 (np.fromfile(path, '<u4'); forward --tokens with --seq-len)");
  if (stats.empty) fmt::print("  skipped {} documents that are empty after strip(), as dolma does\n", stats.empty);
  if (stats.without_id)
    fmt::print("  {} JSONL documents have no string \"id\": dolma tokens would skip them; they are kept, with an "
               "empty id in the metadata\n",
               stats.without_id);
  if (!stats.metadata_path.empty())
    fmt::print("  document metadata (dolma's sidecar: start,end,id,source,line): {}\n", stats.metadata_path);
  else if (!o.no_metadata)
    fmt::print("  no document metadata: OLMo-core finds it by replacing \".npy\" in the token file's name, and {} has "
               "none\n",
               o.output);
  return 0;
}

int run_info(const Options& o) {
  TokenDtype dtype = parse_token_dtype(o.dataset.dtype);
  const bool packed = parse_packing(o.dataset.packing) == Packing::obfd;
  uint64_t total = 0, total_instances = 0;
  const std::vector<MixEntry> entries = o.dataset.entries();
  std::vector<std::string> paths;
  for (const MixEntry& entry : entries) paths.push_back(entry.path);
  stat_remote_files(paths);  // the URLs' HEADs together
  for (const auto& entry : entries) {
    TokenFile file(entry.path, dtype);
    std::string line = fmt::format("{:<12} {}  {} tokens ({}{})", entry.label, entry.path, file.num_tokens(),
                                   token_dtype_name(file.dtype()), file.has_npy_header() ? ", .npy header" : "");
    if (o.dataset.seq_len > 0 && !packed) {
      uint64_t n = file.num_tokens() / uint64_t(o.dataset.seq_len);
      total_instances += n;
      line += fmt::format(", {} instances", n);
    }
    if (o.scan) {  // every id below the vocabulary; documents = EOS count
      uint64_t documents = 0;
      for (uint64_t i = 0; i < file.num_tokens(); i++) {
        uint32_t id = file.at(i);
        check(id < kDolma2VocabSize, "{}: token {} has id {} >= vocab size {}", entry.path, i, id, kDolma2VocabSize);
        documents += id == kDolma2Eos;
      }
      line += fmt::format(", {} documents", documents);
      if (documents == 0 && file.dtype() == TokenDtype::u16)
        line += fmt::format(" (the EOS id {} does not fit uint16)", kDolma2Eos);
    }
    fmt::print("{}\n", line);
    if (std::string hint = file.dtype_hint(); !hint.empty()) fmt::print(stderr, "warning: {}\n", hint);
    total += file.num_tokens();
  }
  fmt::print("total        {} tokens", total);
  if (o.dataset.seq_len > 0 && !packed) fmt::print(", {} instances of {}", total_instances, o.dataset.seq_len);
  fmt::print("\n");
  if (o.dataset.seq_len > 0 && packed) {
    const std::unique_ptr<const InstanceSource> dataset = open_dataset(flags_loader_config(o));
    const auto& set = dynamic_cast<const PackedDataset&>(*dataset);
    const uint64_t tokens = set.num_instances() * uint64_t(o.dataset.seq_len);
    fmt::print("packed       {} documents into {} instances of {} in {} groups, {} padding tokens ({:.2f} %)\n",
               set.num_documents(), set.num_instances(), o.dataset.seq_len, set.num_groups(), set.padding_tokens(),
               tokens ? 100.0 * double(set.padding_tokens()) / double(tokens) : 0.0);
    if (!o.dataset.work_dir.empty())
      fmt::print("packing      {} of {} groups read from the cache in {}\n", set.groups_from_cache(), set.num_groups(),
                 o.dataset.work_dir);
  }
  if (o.dataset.seq_len > 0)  // the global batch is not part of it
    fmt::print("fingerprint  {}\n{}", DataLoader(flags_loader_config(o)).fingerprint(), flags_fingerprint_note(o));
  return 0;
}

// The instance's text (or ids) on stdout; where its tokens come from on stderr. A packed instance is shown document
// by document, each with its position in the instance and its place in its file, then the padding.
int run_show(const Options& o) {
  const std::unique_ptr<const InstanceSource> dataset = open_dataset(flags_loader_config(o));
  for (size_t f = 0; f < dataset->num_files(); f++)
    if (std::string hint = dataset->file(f).dtype_hint(); !hint.empty()) fmt::print(stderr, "warning: {}\n", hint);
  const uint64_t instance = uint64_t(o.instance);
  std::vector<int32_t> ids(size_t(o.dataset.seq_len));
  dataset->read_instance(instance, ids.data());
  std::unique_ptr<Tokenizer> tokenizer;
  if (!o.ids)
    tokenizer = std::make_unique<Tokenizer>(Tokenizer::load(o.tokenizer.empty() ? default_ranks_path() : o.tokenizer));
  auto print_tokens = [&](size_t begin, size_t end) {
    if (tokenizer)
      fmt::print("{}\n", tokenizer->decode(std::vector<uint32_t>(ids.begin() + begin, ids.begin() + end)));
    else
      fmt::print("{}\n", fmt::join(ids.begin() + begin, ids.begin() + end, " "));
  };
  const auto* packed = dynamic_cast<const PackedDataset*>(dataset.get());
  if (!packed) {
    auto at = dynamic_cast<const FslDataset&>(*dataset).locate(instance);
    fmt::print(stderr, "instance {}: {} tokens [{}, {}) of {}\n", o.instance, o.dataset.seq_len,
               at.local * uint64_t(o.dataset.seq_len), (at.local + 1) * uint64_t(o.dataset.seq_len),
               dataset->file(at.file).path());
    print_tokens(0, ids.size());
    return 0;
  }
  const std::vector<PackedDataset::Document> documents = packed->documents(instance);
  fmt::print(stderr, "instance {}: {} tokens, {} documents\n", o.instance, o.dataset.seq_len, documents.size());
  size_t position = 0;
  for (size_t k = 0; k < documents.size(); k++) {
    const PackedDataset::Document& d = documents[k];
    fmt::print(stderr, "document {}: [{}, {}) = tokens [{}, {}) of {}\n", k, position, position + d.length, d.start,
               d.start + d.length, dataset->file(d.file).path());
    print_tokens(position, position + d.length);
    position += d.length;
  }
  if (position < ids.size())
    fmt::print(stderr, "padding: [{}, {}) = {} pad tokens\n", position, ids.size(), ids.size() - position);
  return 0;
}

// The files a dataset's options name (for the output check).
std::vector<std::string> dataset_inputs(const DatasetOptions& d) {
  std::vector<std::string> inputs = d.paths;
  if (!d.mix.empty()) inputs.push_back(d.mix);
  return inputs;
}

int run_order(const Options& o) {
  check_output_path("--out", o.output, dataset_inputs(o.dataset));
  DataLoader loader(flags_loader_config(o));
  auto order = loader.order(o.epoch);
  std::vector<int64_t> shape = {int64_t(order->num_batches()), int64_t(order->global_batch())};
  write_npy(o.output, NpyType::u32, shape, order->indices().data());
  fmt::print("{}: [{}, {}] uint32 (seed {} + epoch {}, {} instances, {} dropped by truncation)\n", o.output,
             shape[0], shape[1], o.seed, o.epoch, loader.dataset().num_instances(),
             loader.dataset().num_instances() - order->indices().size());
  return 0;
}

int run_audit(Options o) {
  AuditPlan plan;
  std::optional<LoaderConfig> config;
  if (!o.recipe.empty()) {  // the planned run's loader, exactly as `replica train` builds it
    train::Recipe r = train::load_recipe(o.recipe, o.overrides, /*check_files=*/false);
    train::resolve_training_files(r, o.recipe);  // an audit reads no held-out files, so they need not exist
    configure_remote_files(r.remote);  // the run's settings; its record in run.dir is the run's to write
    config = replica::train::loader_config(r, train::recipe_model_config(r));
    o.steps = r.train.max_steps;
    o.micro_batch = r.step.micro_batch;
  } else {
    check(o.dataset.seq_len > 0 && o.global_batch > 0 && o.steps > 0,
          "data audit: give --config RECIPE, or --seq-len, --global-batch and --steps");
    config = flags_loader_config(o);
  }
  DataLoader loader(*config);
  plan.steps = o.steps;
  plan.world_size = o.world_size;
  if (o.micro_batch > 0) plan.micro_batch = o.micro_batch;
  plan.first_epoch = o.first_epoch;
  AuditReport report = audit(loader, plan);  // first: a plan it refuses prints no half report
  fmt::print("fingerprint  {}\n{}", loader.fingerprint(),
             o.recipe.empty() ? flags_fingerprint_note(o)
                              : fmt::format("  (the fingerprint `replica train --config {}` records)\n", o.recipe));
  fmt::print("{}", report.text());
  return report.ok() ? 0 : 1;
}

replica::cli::Command data_cmd("data", "Tokenize text and inspect token datasets", [](CLI::App& app) {
  auto o = std::make_shared<Options>();
  app.require_subcommand(1);

  auto* tokenize = app.add_subcommand(
      "tokenize", "Text or JSONL ({\"id\": ..., \"text\": ...} per line) -> uint32 token file, as dolma tokens writes it");
  tokenize->add_option("--input", o->inputs,
                       "Input files: *.jsonl/*.json (optionally .gz) are JSONL, others one document each");
  tokenize->add_option("--input-list", o->input_list, "A file naming one input file per line (after --input's)");
  tokenize->add_option("--output", o->output, "Output token file (uint32, EOS after each document)")->required();
  tokenize->add_flag("--npy-header", o->npy_header,
                     "Write a .npy header (np.load reads it; the trainer too); default: headerless, as OLMo's files");
  tokenize->add_option("--jobs", o->jobs, "Threads (0 = all cores); the output does not depend on it")
      ->check(CLI::Range(int64_t{0}, kMaxThreads));
  tokenize->add_option("--tokenizer", o->tokenizer, "cl100k_base.tiktoken (default: data/tokenizer/)");
  tokenize->add_option("--rules", o->rules,
                       "dolma: AI2's dolma tokens (text.strip(), empty documents skipped, extra ids and PII masks as "
                       "their ids); verbatim: every byte as text and EOS after every document")
      ->capture_default_str();
  tokenize->add_flag("--no-metadata", o->no_metadata,
                     "Do not write dolma's document metadata sidecar (NAME.csv.gz beside NAME.npy)");

  auto* info = app.add_subcommand("info", "Tokens, instances and documents per file; with --seq-len, the fingerprint");
  o->dataset.add_to(info, false);
  info->add_flag("--scan", o->scan, "Read every token: check ids against the vocab, count documents");
  info->add_option("--seed", o->seed, "Data-loader seed (for the fingerprint)")
      ->capture_default_str()
      ->check(kSeedRange);
  info->add_option("--global-batch", o->global_batch, "Instances per step (not part of the fingerprint)")
      ->check(positive_number);
  info->add_option("--vocab-size", o->vocab_size, "The model's vocab size (part of the fingerprint)")
      ->capture_default_str()
      ->check(positive_number);

  auto* show = app.add_subcommand("show", "Decode one instance of a dataset");
  o->dataset.add_to(show);
  show->add_option("--instance", o->instance, "Global instance id")->required()->check(non_negative_number);
  show->add_option("--tokenizer", o->tokenizer, "cl100k_base.tiktoken (default: data/tokenizer/)");
  show->add_flag("--ids", o->ids, "Print token ids instead of text");

  auto* order = app.add_subcommand("order", "Write OLMo-core's global order [num_batches, G] as uint32 .npy");
  o->dataset.add_to(order);
  order->add_option("--seed", o->seed, "Data-loader seed")->capture_default_str()->check(kSeedRange);
  order->add_option("--epoch", o->epoch, "Epoch (1-based; the generator is seeded with seed + epoch)")
      ->capture_default_str()
      ->check(kEpochRange);
  order->add_option("--global-batch", o->global_batch, "Instances per step")->required()->check(positive_number);
  order->add_option("--out", o->output, "Output .npy")->required();

  auto* audit_cmd = app.add_subcommand("audit", "Replay a planned run's data reads and report repeats (exit 1)");
  audit_cmd->add_option("--config", o->recipe, "The run's recipe: its data loader (the run's fingerprint), steps");
  audit_cmd->add_option("overrides", o->overrides,
                        "section.key=value overrides of the recipe, as `replica train` (without --config: of the "
                        "default recipe the flags describe)");
  o->dataset.add_to(audit_cmd, false);
  audit_cmd->add_option("--seed", o->seed, "Data-loader seed")->capture_default_str()->check(kSeedRange);
  audit_cmd->add_option("--global-batch", o->global_batch, "Instances per step")->check(positive_number);
  audit_cmd->add_option("--steps", o->steps, "Optimizer steps in the planned run")->check(positive_number);
  audit_cmd->add_option("--world-size", o->world_size, "Data-parallel ranks")
      ->capture_default_str()
      ->check(positive_number);
  audit_cmd->add_option("--micro-batch", o->micro_batch, "Rows per micro-batch per rank (0 = whole rank batch)")
      ->check(non_negative_number);
  audit_cmd->add_option("--first-epoch", o->first_epoch, "Epoch of step 0")->capture_default_str()->check(kEpochRange);
  audit_cmd->add_option("--vocab-size", o->vocab_size, "The model's vocab size (part of the fingerprint)")
      ->capture_default_str();
  audit_cmd->add_flag("--filter", o->filter, "The run uses the n-gram instance filter (part of the fingerprint)");

  const replica::cli::TextCommands text = replica::cli::add_text_commands(app);  // encode, decode

  return std::function<int()>([=] {
    if (text.parsed()) return text.run();
    if (tokenize->parsed()) return run_tokenize(*o);
    if (o->recipe.empty()) o->dataset.configure_remote();  // an audit of a recipe reads the recipe's settings
    if (info->parsed()) return run_info(*o);
    if (show->parsed()) return run_show(*o);
    if (order->parsed()) return run_order(*o);
    return run_audit(*o);
  });
});

}  // namespace
