// Trainer checkpoint glue: resume, init_from, train state, metrics truncation.
#include "replica/train/checkpointing.h"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <filesystem>
#include <optional>
#include <sstream>

#include "replica/ckpt/model_source.h"
#include "replica/ckpt/olmo_core_checkpoint.h"
#include "replica/core/error.h"
#include "replica/core/file.h"
#include "replica/metrics/metrics_schema.h"
#include "replica/train/resume_check.h"

namespace replica::train {

namespace fs = std::filesystem;

std::string checkpoint_root(const Recipe& r) { return (fs::path(r.run.dir) / "checkpoints").string(); }

model::ModelConfig recipe_model_config(const Recipe& r) {
  return r.model.config.empty() ? ckpt::load_model_source_config(r.model.init_from)
                                : model::load_model_config(r.model.config);
}

static nlohmann::json schedule_json(const optim::ScheduleConfig& c) {
  return {{"type", optim::schedule_type_name(c.type)},
          {"lr", c.lr},
          {"warmup", c.warmup},
          {"alpha_f", c.alpha_f},
          {"t_max", c.t_max},
          {"decay", c.decay},
          {"stitch_step", c.stitch_step},
          {"part2_warmup", c.part2_warmup},
          {"part2_t_max", c.part2_t_max}};
}

// The fields of a resolved schedule that its type reads: two schedules that give every step the same LR are equal
// (a cosine has no part 2, so its part2_t_max, resolved to train.max_steps, does not count; a constant has no
// horizon), and a run extends by train.max_steps when its schedule's horizon stays put.
static nlohmann::json schedule_identity(nlohmann::json j) {
  const std::string type = j.is_object() ? j.value("type", "") : "";
  if (type != "olmo3_stitched")
    for (const char* key : {"stitch_step", "part2_warmup", "part2_t_max"}) j.erase(key);
  if (type != "wsd") j.erase("decay");
  if (type == "constant")
    for (const char* key : {"t_max", "alpha_f"}) j.erase(key);
  return j;
}

// A step-0 start in a run directory whose metrics.jsonl already holds training steps (and no checkpoint is left to
// resume from) would empty that history. That is right only when it is this same run restarting before its first
// checkpoint: its steps are recomputed bit for bit. Anything else is refused rather than erased.
// Returns what a permitted restart over earlier steps does, for the start-up notes.
static std::optional<std::string> check_fresh_start_keeps_history(const Recipe& r,
                                                                  const std::vector<std::string>& set_aside) {
  const fs::path metrics = fs::path(r.run.dir) / "metrics.jsonl", config = fs::path(r.run.dir) / "config.yaml";
  if (!fs::exists(metrics)) return std::nullopt;
  int64_t steps = 0;
  std::istringstream in(read_text_file(metrics.string()));
  for (std::string line; std::getline(in, line);) {
    const nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_object() && j.contains("loss") && j.contains("step") && j["step"].is_number_integer()) steps++;
  }
  if (steps == 0) return std::nullopt;
  std::vector<std::string> changed;
  if (fs::exists(config))
    for (const RecipeChange& c : recipe_changes(read_text_file(config.string()), r))
      if (!neutral_on_resume(c.key, false)) changed.push_back(c.key);
  std::string why;
  if (!set_aside.empty())
    why = fmt::format("its checkpoints were set aside as incomplete ({})", fmt::join(set_aside, "; "));
  else if (!fs::exists(config))
    why = "there is no config.yaml to show that it is this run";
  else if (!changed.empty())
    why = fmt::format("config.yaml is another recipe ({} differ)", fmt::join(changed, ", "));
  check(why.empty(),
        "{}: holds {} training steps, no checkpoint is left to resume from, and {}; starting at step 0 would erase "
        "them: resume from a checkpoint (train.resume_from), use another run.dir, or move metrics.jsonl away",
        metrics.string(), steps, why);
  return fmt::format(
      "{} holds {} training steps of this recipe and no checkpoint: starting at step 0 recomputes "
      "them (the same recipe gives the same steps)",
      metrics.string(), steps);
}

// A start at step 0 with a fresh optimizer (until its state is read), its notes as the message.
static RunStart at_step_0(const std::vector<std::string>& notes) {
  RunStart start;
  start.message = fmt::format("{}", fmt::join(notes, "\n"));
  return start;
}

// The weights and the optimizer state `state_names` of checkpoint `dir` into params and start.
static void read_weights_and_optimizer(const std::string& dir, const model::ParamTable& table,
                                       const std::vector<std::string>& state_names, float* params, RunStart& start,
                                       int64_t optimizer_step_count) {
  start.optimizer.names = state_names;
  ckpt::read_checkpoint_tensors(dir, table, params, &start.optimizer);
  start.optimizer_loaded = true;
  start.optimizer_step_count = optimizer_step_count;
}

// A stage transition from AI2's run: the weights, the optimizer state (AdamW's moments) and step count of an
// OLMo-core checkpoint.
static RunStart start_from_olmo_core(const Recipe& r, const std::string& from, const model::ParamTable& table,
                                     const std::vector<std::string>& state_names, float* params,
                                     std::vector<std::string> notes) {
  RunStart start;
  start.optimizer.names = state_names;
  start.optimizer_step_count =
      ckpt::read_olmo_core_checkpoint(from, recipe_model_config(r), table, params, &start.optimizer);
  start.optimizer_loaded = true;
  notes.push_back(
      fmt::format("weights and optimizer state (step count {}) from the OLMo-core checkpoint {}; steps, "
                  "schedule and data start afresh",
                  start.optimizer_step_count, from));
  start.message = fmt::format("{}", fmt::join(notes, "\n"));
  return start;
}

static RunStart resume(const Recipe& r, const std::string& dir, const model::ParamTable& table,
                       const data::DataLoader& loader, const std::vector<std::string>& state_names, float* params,
                       optim::SkipStep& skip_step, std::vector<std::string> notes) {
  const size_t changes_from = notes.size();  // notes before this: what was set aside in checkpoints/
  const ckpt::TrainState s = ckpt::read_checkpoint_state(dir, ckpt::CheckpointRead::weights_and_optimizer);
  ckpt::check_same_model(s.model, recipe_model_config(r), dir);
  check(s.step <= r.last_step(), "{}: {}={} is before the checkpoint's step {}", dir,
        r.train.stop_at > 0 ? "train.stop_at" : "train.max_steps", r.last_step(), s.step);
  check(s.global_batch_size == r.step.global_batch && s.seq_len == r.step.seq_len,
        "{}: saved with data.global_batch_size={} and data.seq_len={}, the recipe has {} and {} (the data "
        "position would not carry over)",
        dir, s.global_batch_size, s.seq_len, r.step.global_batch, r.step.seq_len);
  try {
    loader.check_fingerprint(s.data_fingerprint, r.data.allow_fingerprint_change);
  } catch (const Error& e) {
    fail("{}: {} (data.allow_fingerprint_change=true)", dir, e.what());
  }
  if (s.data_fingerprint != loader.fingerprint())
    notes.push_back(fmt::format("data changed (data.allow_fingerprint_change=true): fingerprint {} -> {}",
                                s.data_fingerprint, loader.fingerprint()));
  const bool schedule_unchanged = schedule_identity(s.schedule) == schedule_identity(schedule_json(schedule_config(r)));
  const int64_t saved_horizon = s.schedule.is_object() ? s.schedule.value("t_max", int64_t(0)) : 0;
  for (std::string& line : check_resume_changes(dir, s.recipe, r, schedule_unchanged, saved_horizon))
    notes.push_back(line);
  const auto [epoch, batch] = loader.position(s.step);
  check(epoch == s.epoch && batch == s.batch,
        "{}: data position (epoch {}, batch {}) does not match step {} (epoch {}, batch {})", dir, s.epoch, s.batch,
        s.step, epoch, batch);
  const std::vector<std::string> changes(notes.begin() + std::ptrdiff_t(changes_from), notes.end());
  notes.push_back(fmt::format("resuming from {} (step {}, {} tokens)", dir, s.step, s.tokens));
  RunStart start;
  start.step = s.step;
  start.message = fmt::format("{}", fmt::join(notes, "\n"));
  start.observers = s.observers;
  start.resume = {{"step", s.step},
                  {"tokens", s.tokens},
                  {"checkpoint", dir},
                  {"saved_world_size", s.world_size},
                  {"changes", changes}};
  read_weights_and_optimizer(dir, table, state_names, params, start, s.optimizer_step_count);
  try {
    skip_step.load_json(s.skip_step);
  } catch (const Error& e) {
    fail("{}: {}", dir, e.what());
  }
  truncate_metrics((fs::path(r.run.dir) / "metrics.jsonl").string(), s.step);
  return start;
}

RunStart start_run(const Recipe& r, const model::ParamTable& table, const data::DataLoader& loader,
                   const std::vector<std::string>& state_names, float* params, optim::SkipStep& skip_step) {
  const std::string root = checkpoint_root(r);
  check(!fs::exists(root) || fs::is_directory(root),
        "{}: exists and is not a directory (run.dir={} keeps its checkpoints there)", root, r.run.dir);
  const ckpt::IncompleteCheckpoints incomplete = ckpt::set_aside_incomplete_checkpoints(root, r.train.resume_from);
  std::vector<std::string> notes = incomplete.removed;
  notes.insert(notes.end(), incomplete.set_aside.begin(), incomplete.set_aside.end());
  notes.insert(notes.end(), incomplete.linked.begin(), incomplete.linked.end());
  if (!r.train.resume_from.empty()) {
    check(ckpt::is_checkpoint_dir(r.train.resume_from), "train.resume_from: {} is not a replica checkpoint directory",
          r.train.resume_from);
    return resume(r, r.train.resume_from, table, loader, state_names, params, skip_step, notes);
  }
  const std::string latest = ckpt::find_latest_checkpoint(root);
  if (!latest.empty()) return resume(r, latest, table, loader, state_names, params, skip_step, notes);
  if (auto note = check_fresh_start_keeps_history(r, incomplete.set_aside)) notes.push_back(*note);
  truncate_metrics((fs::path(r.run.dir) / "metrics.jsonl").string(), -1);  // a run killed before its first save

  const std::string& from = r.model.init_from;
  if (from.empty()) {
    model::init_params(recipe_model_config(r), table, uint64_t(r.train.seed), params);
    notes.push_back(fmt::format("fresh initialisation (train.seed={})", r.train.seed));
    return at_step_0(notes);
  }
  if (!r.optim.load_state) {
    ckpt::load_model_source_params(from, recipe_model_config(r), table, params);
    notes.push_back(fmt::format("weights from {}", from));
    return at_step_0(notes);
  }
  if (ckpt::is_olmo_core_checkpoint(from)) return start_from_olmo_core(r, from, table, state_names, params, notes);
  check(ckpt::is_checkpoint_dir(from),
        "optim.load_state: model.init_from={} is not a replica or OLMo-core checkpoint (an HF directory "
        "holds weights only)",
        from);
  const ckpt::TrainState s = ckpt::read_checkpoint_state(from, ckpt::CheckpointRead::weights_and_optimizer);
  notes.push_back(fmt::format("weights and optimizer state (step count {}) from {} (step {}); steps, schedule and "
                              "data start afresh", s.optimizer_step_count, from, s.step));
  RunStart start = at_step_0(notes);
  read_weights_and_optimizer(from, table, state_names, params, start, s.optimizer_step_count);
  return start;
}

ckpt::TrainState train_state(const Recipe& r, const model::ModelConfig& config, int64_t step,
                             const data::DataLoader& loader, const optim::Optimizer& optimizer,
                             const optim::SkipStep& skip_step) {
  ckpt::TrainState s;
  s.step = step;
  s.tokens = step * r.tokens_per_step();
  std::tie(s.epoch, s.batch) = loader.position(step);
  s.batches_consumed = step;
  s.global_batch_size = r.step.global_batch;
  s.seq_len = r.step.seq_len;
  s.data_fingerprint = loader.fingerprint();
  s.optimizer_step_count = optimizer.step_count();
  s.schedule = schedule_json(schedule_config(r));
  s.skip_step = skip_step.to_json();
  s.world_size = 1;
  s.recipe = r.to_yaml();
  s.model = config;
  return s;
}

void truncate_metrics(const std::string& path, int64_t step) {
  if (!fs::exists(path)) return;
  const std::string text = read_text_file(path);
  std::string kept;
  int64_t number = 0;
  for (size_t begin = 0; begin < text.size();) {
    const size_t newline = text.find('\n', begin);
    const bool terminated = newline != std::string::npos;
    const std::string line = text.substr(begin, (terminated ? newline : text.size()) - begin);
    begin = terminated ? newline + 1 : text.size();
    number++;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::optional<int64_t> at = metrics::jsonl::step_of(nlohmann::json::parse(line, nullptr, false));
    const bool record = at.has_value();
    if (!record && !terminated) break;  // the last line, half-written by a run that was killed
    // Any other line is history: dropping it would lose steps without a word (review 2026-12-03, cases 24-25).
    check(record,
          "{}:{}: not a metrics record (expected a JSON object with an integer \"step\"); a resume drops only a "
          "half-written last line: repair or remove this line, then resume",
          path, number);
    if (*at <= step) kept += line + "\n";
  }
  write_text_file_atomic(path, kept);
}

}  // namespace replica::train
