// A run's data audit and resume events.
#include "replica/reproduce/run_records.h"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "replica/ckpt/checkpoint.h"
#include "replica/core/error.h"
#include "replica/data/audit.h"
#include "replica/data/remote_files.h"
#include "replica/train/recipe.h"

namespace replica::reproduce {
namespace fs = std::filesystem;
using nlohmann::json;

std::optional<DataAuditResult> audit_run_data(const CheckpointSeries& series) {
  if (series.kind != "replica run" || series.checkpoints.empty()) return std::nullopt;
  const std::string checkpoint = series.checkpoints.back().path;
  DataAuditResult out;
  try {
    const ckpt::TrainState state = ckpt::read_checkpoint_state(checkpoint, ckpt::CheckpointRead::weights);
    const std::string source = (fs::path(checkpoint) / "train_state.json").string();
    train::Recipe r = train::load_recipe_text(state.recipe, source, {}, /*check_files=*/false);
    train::resolve_training_files(r, source);
    data::configure_remote_files(r.remote);
    const data::DataLoader loader(train::loader_config(r, state.model));
    data::AuditPlan plan;
    plan.steps = state.step;
    plan.world_size = int(state.world_size);
    plan.micro_batch = r.step.micro_batch;
    const data::AuditReport report = data::audit(loader, plan);
    out.ok = report.ok();
    out.text = report.text();
    out.fingerprint = loader.fingerprint();
    out.repeat_fraction = report.repeat_fraction();
    out.steps = state.step;
    out.world_size = state.world_size;
  } catch (const Error& e) {
    out.error = e.what();
  }
  return out;
}

std::vector<ResumeEvent> read_resume_events(const CheckpointSeries& series) {
  std::vector<ResumeEvent> events;
  const fs::path path = fs::path(series.source) / "resumes.jsonl";
  if (series.kind != "replica run" || !fs::exists(path)) return events;
  std::ifstream in(path);
  std::string line;
  for (int64_t n = 1; std::getline(in, line); n++) {
    if (line.empty()) continue;
    try {
      const json j = json::parse(line);
      ResumeEvent e;
      e.step = j.at("step").get<int64_t>();
      e.tokens = j.value("tokens", int64_t(0));
      e.checkpoint = j.at("checkpoint").get<std::string>();
      e.saved_world_size = j.value("saved_world_size", int64_t(1));
      e.world_size = j.value("world_size", int64_t(1));
      for (const json& c : j.at("changes")) e.changes.push_back(c.get<std::string>());
      events.push_back(std::move(e));
    } catch (const json::exception& e) {
      fail("{}:{}: not a resume record ({})", path.string(), n, e.what());
    }
  }
  return events;
}

}  // namespace replica::reproduce
