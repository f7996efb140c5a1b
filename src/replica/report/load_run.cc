// load_run: dispatch on what the path is, and the run directory's config and data fingerprint.
#include "replica/report/load_run.h"

#include <fmt/core.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "replica/ckpt/checkpoint.h"
#include "replica/core/error.h"
#include "replica/core/file.h"
#include "replica/report/metrics_jsonl.h"
#include "replica/report/wandb_csv.h"

namespace replica::report {
namespace fs = std::filesystem;

namespace {

// The data fingerprint the newest complete checkpoint recorded (metrics.jsonl does not carry it).
void read_fingerprint(const fs::path& run_dir, RunHistory& run) {
  const std::string checkpoint = ckpt::find_latest_checkpoint((run_dir / "checkpoints").string());
  if (checkpoint.empty()) return;
  const std::string path = (fs::path(checkpoint) / "train_state.json").string();
  // The fingerprint is an extra line of the report: a damaged checkpoint loses that line, not the report (the
  // checkpoint itself is refused by whatever loads it).
  try {
    const ckpt::TrainState state = ckpt::train_state_from_json(nlohmann::json::parse(read_text_file(path)), path);
    run.fingerprint = state.data_fingerprint;
    run.fingerprint_step = state.step;
  } catch (const nlohmann::json::exception& e) {
    fmt::print(stderr, "warning: {}: not a train_state.json ({}); the report shows no data fingerprint\n", path,
               e.what());
  } catch (const Error& e) {
    fmt::print(stderr, "warning: {}; the report shows no data fingerprint\n", e.what());
  }
}

}  // namespace

RunHistory load_run(const std::string& path, const std::string& label) {
  RunHistory run{.label = label, .source = path};
  if (fs::is_directory(path)) {
    const fs::path metrics = fs::path(path) / "metrics.jsonl";
    check(fs::exists(metrics), "{}: not a run directory (expected {} in it)", path, metrics.filename().string());
    read_metrics_jsonl(metrics.string(), run);
    const fs::path config = fs::path(path) / "config.yaml";
    if (fs::exists(config)) run.config_yaml = read_text_file(config.string());
    read_fingerprint(path, run);
  } else if (path.ends_with(".csv")) {
    check(fs::is_regular_file(path), "{}: no such file (expected a W&B CSV export)", path);
    read_wandb_csv(path, run);
  } else {
    check(fs::is_regular_file(path),
          "{}: no such run directory or file (expected a run directory, a metrics.jsonl or a W&B CSV export)", path);
    read_metrics_jsonl(path, run);
  }
  return run;
}

std::string default_label(const std::string& path) {
  fs::path p = fs::absolute(path).lexically_normal();
  if (p.filename().empty()) p = p.parent_path();  // "runs/a/" or "."
  if (p.filename() == "metrics.jsonl") return p.parent_path().filename().string();
  return fs::is_directory(p) ? p.filename().string() : p.stem().string();
}

}  // namespace replica::report
