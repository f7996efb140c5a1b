// Reading checkpoint series: replica run directories, directories of HF revisions, AI2's CSV.
#include "replica/reproduce/checkpoint_series.h"

#include <algorithm>
#include <filesystem>
#include <regex>
#include <set>

#include <fmt/ranges.h>

#include "replica/ckpt/checkpoint.h"
#include "replica/core/error.h"
#include "replica/core/file.h"
#include "replica/core/parse_number.h"
#include "replica/data/http_client.h"
#include "replica/report/csv.h"

namespace replica::reproduce {
namespace fs = std::filesystem;

namespace {

constexpr int64_t kBillion = 1000000000;

bool is_hf_model_dir(const fs::path& dir) { return fs::is_regular_file(dir / "config.json"); }

// A replica checkpoint's step and exact tokens from its train_state.json (no checksum pass: that is for loading).
SeriesCheckpoint replica_checkpoint(const fs::path& dir) {
  const nlohmann::json j = nlohmann::json::parse(read_text_file((dir / "train_state.json").string()), nullptr, false);
  check(!j.is_discarded(), "{}: malformed train_state.json", dir.string());
  const ckpt::TrainState state = ckpt::train_state_from_json(j, (dir / "train_state.json").string());
  return {state.step, "", dir.string(), TokensSeen{state.tokens, 0}, ""};
}

std::vector<SeriesCheckpoint> replica_run(const fs::path& run) {
  std::vector<SeriesCheckpoint> out;
  for (const fs::directory_entry& e : fs::directory_iterator(run / "checkpoints"))
    if (e.is_directory() && ckpt::is_checkpoint_dir(e.path().string()) && fs::exists(e.path() / "MANIFEST.json") &&
        e.path().filename().string().starts_with("step") && e.path().extension().empty())
      out.push_back(replica_checkpoint(e.path()));
  return out;
}

std::vector<SeriesCheckpoint> hf_revisions(const fs::path& dir) {
  std::vector<SeriesCheckpoint> out;
  for (const fs::directory_entry& e : fs::directory_iterator(dir)) {
    if (!e.is_directory()) continue;
    std::optional<SeriesCheckpoint> c = parse_revision_name(e.path().filename().string());
    if (!c) continue;
    check(is_hf_model_dir(e.path()) || ckpt::is_checkpoint_dir(e.path().string()),
          "{}: named like a revision but holds no config.json (an HF model directory) or train_state.json",
          e.path().string());
    c->path = e.path().string();
    if (!c->tokens && ckpt::is_checkpoint_dir(c->path)) c->tokens = replica_checkpoint(e.path()).tokens;
    out.push_back(*c);
  }
  return out;
}

// The index of the header field whose lower-cased text is `name`, or -1.
int64_t column(const std::vector<std::string>& header, const std::string& name) {
  for (size_t i = 0; i < header.size(); i++) {
    std::string h = header[i];
    std::transform(h.begin(), h.end(), h.begin(), [](unsigned char c) { return char(std::tolower(c)); });
    h.erase(0, h.find_first_not_of(" \t"));
    h.erase(h.find_last_not_of(" \t\r") + 1);
    if (h == name) return int64_t(i);
  }
  return -1;
}

std::vector<SeriesCheckpoint> csv_series(const fs::path& csv) {
  const std::vector<report::CsvRow> rows = report::parse_csv(read_text_file(csv.string()), csv.string());
  check(!rows.empty(), "{}: empty CSV (expected the header Stage,Step,Checkpoint Directory)", csv.string());
  const std::vector<std::string>& header = rows[0].fields;
  const int64_t stage = column(header, "stage"), step = column(header, "step"), tokens = column(header, "tokens"),
                dir = column(header, "checkpoint directory");
  check(step >= 0 && dir >= 0, "{}: the header must name the columns Stage,Step,Checkpoint Directory (got {} fields)",
        csv.string(), header.size());
  std::vector<SeriesCheckpoint> out;
  for (size_t r = 1; r < rows.size(); r++) {
    const report::CsvRow& row = rows[r];
    if (row.fields.size() == 1 && row.fields[0].empty()) continue;  // a blank line
    auto field = [&](int64_t i) -> std::string { return i >= 0 && size_t(i) < row.fields.size() ? row.fields[size_t(i)] : ""; };
    SeriesCheckpoint c;
    const std::optional<int64_t> s = parse_int64(field(step));
    check(s && *s >= 0, "{}:{}: Step '{}' is not a step number", csv.string(), row.line, field(step));
    c.step = *s;
    c.stage = field(stage);
    if (tokens >= 0 && !field(tokens).empty()) {
      const std::optional<int64_t> t = parse_int64(field(tokens));
      check(t && *t >= 0, "{}:{}: Tokens '{}' is not a token count", csv.string(), row.line, field(tokens));
      c.tokens = TokensSeen{*t, 0};
    }
    fs::path p = field(dir);
    check(!p.empty(), "{}:{}: no Checkpoint Directory", csv.string(), row.line);
    if (data::is_url(p.string())) {  // fetched when it is paired (reproduce/remote_checkpoint.h)
      c.url = p.string();
      std::string name = c.url;
      while (name.ends_with('/')) name.pop_back();
      if (!c.tokens)
        if (const auto named = parse_revision_name(name.substr(name.rfind('/') + 1))) c.tokens = named->tokens;
      out.push_back(c);
      continue;
    }
    check(p.string().find("://") == std::string::npos,
          "{}:{}: '{}' is a URL replica does not read (http:// and https:// it does)", csv.string(), row.line,
          p.string());
    if (p.is_relative()) p = csv.parent_path() / p;
    check(is_hf_model_dir(p) || ckpt::is_checkpoint_dir(p.string()),
          "{}:{}: {} is no HF model directory (config.json) or replica checkpoint", csv.string(), row.line, p.string());
    c.path = p.string();
    if (!c.tokens && ckpt::is_checkpoint_dir(c.path)) c.tokens = replica_checkpoint(p).tokens;
    if (!c.tokens)
      if (const std::optional<SeriesCheckpoint> named = parse_revision_name(p.filename().string())) c.tokens = named->tokens;
    out.push_back(c);
  }
  return out;
}

}  // namespace

std::string SeriesCheckpoint::label() const {
  return (stage.empty() ? "" : stage + "-") + "step" + std::to_string(step);
}

std::optional<SeriesCheckpoint> parse_revision_name(const std::string& name) {
  static const std::regex pattern(R"(^(?:(stage\d+(?:-[A-Za-z0-9]+)*)-)?step(\d+)(?:-tokens(\d+)B)?$)");
  std::smatch m;
  if (!std::regex_match(name, m, pattern)) return std::nullopt;
  const std::optional<int64_t> step = parse_int64(m[2].str());
  if (!step) return std::nullopt;
  SeriesCheckpoint c{*step, m[1].str(), "", std::nullopt, ""};
  if (m[3].matched) {
    const std::optional<int64_t> billions = parse_int64(m[3].str());
    if (!billions || *billions > INT64_MAX / kBillion) return std::nullopt;
    c.tokens = TokensSeen{*billions * kBillion, kBillion};
  }
  return c;
}

CheckpointSeries read_series(const std::string& path, const std::string& stage) {
  const fs::path p(path);
  CheckpointSeries series{path, "", {}};
  if (fs::is_regular_file(p)) {
    check(p.extension() == ".csv", "{}: a checkpoint series file must be a CSV (Stage,Step,Checkpoint Directory)", path);
    series.kind = "CSV";
    series.checkpoints = csv_series(p);
  } else if (fs::is_directory(p / "checkpoints")) {
    series.kind = "replica run";
    series.checkpoints = replica_run(p);
  } else if (fs::is_directory(p)) {
    series.kind = "HF revisions";
    series.checkpoints = hf_revisions(p);
  } else {
    fail("{}: no such checkpoint series (a run directory, a directory of stage1-stepN model directories, or a CSV)",
         path);
  }
  check(!series.checkpoints.empty(), "{}: a {} without a checkpoint ({})", path, series.kind,
        series.kind == "replica run"    ? "no complete checkpoints/stepNNNNNNNN"
        : series.kind == "HF revisions" ? "no subdirectory named like stage1-step1000 or step1000"
                                        : "no rows after the header");
  std::set<std::string> stages;
  for (const SeriesCheckpoint& c : series.checkpoints) stages.insert(c.stage);
  const bool staged = !(stages.size() == 1 && stages.begin()->empty());  // a replica run has no stages
  if (!stage.empty() && staged) {
    std::erase_if(series.checkpoints, [&](const SeriesCheckpoint& c) { return c.stage != stage; });
    check(!series.checkpoints.empty(), "{}: no checkpoint of stage '{}' (it has {})", path, stage,
          fmt::join(stages, ", "));
  } else {
    check(stages.size() == 1, "{}: checkpoints of several stages ({}): choose one with --stage", path,
          fmt::join(stages, ", "));
  }
  std::sort(series.checkpoints.begin(), series.checkpoints.end(),
            [](const SeriesCheckpoint& a, const SeriesCheckpoint& b) { return a.step < b.step; });
  for (size_t i = 1; i < series.checkpoints.size(); i++)
    check(series.checkpoints[i].step != series.checkpoints[i - 1].step, "{}: step {} appears twice ({} and {})", path,
          series.checkpoints[i].step, series.checkpoints[i - 1].path, series.checkpoints[i].path);
  return series;
}

}  // namespace replica::reproduce
