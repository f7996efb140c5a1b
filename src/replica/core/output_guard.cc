// check_output_path: an output never replaces an input or a run's files.
#include "replica/core/output_guard.h"

#include <algorithm>
#include <array>
#include <filesystem>
#include <string_view>

#include "replica/core/error.h"

namespace replica {
namespace fs = std::filesystem;

namespace {

// What `replica train` keeps in run.dir (docs/training.md; tb/ holds its TensorBoard events). Anything else a run
// writes there (report.html) is a by-product that a report may replace.
constexpr std::array<std::string_view, 5> kRunFiles = {"metrics.jsonl", "config.yaml", ".lock", "checkpoints", "tb"};

bool same_file(const fs::path& a, const fs::path& b) {
  std::error_code error;
  return fs::equivalent(a, b, error) && !error;  // false when either does not exist
}

bool is_run_dir(const fs::path& dir) {
  std::error_code error;
  return fs::is_regular_file(dir / "metrics.jsonl", error) || fs::is_directory(dir / "checkpoints", error);
}

bool is_checkpoint_dir(const fs::path& dir) {
  std::error_code error;
  return fs::exists(dir / "MANIFEST.json", error) || fs::exists(dir / "train_state.json", error);
}

// `path` with every existing component resolved (symlinks, `.`, `..`), the rest appended as given.
fs::path resolved(const std::string& path) {
  std::error_code error;
  fs::path p = fs::weakly_canonical(fs::absolute(path), error);
  return error ? fs::absolute(path).lexically_normal() : p;
}

bool lies_inside(const fs::path& path, const fs::path& dir) {
  const auto [d, p] = std::mismatch(dir.begin(), dir.end(), path.begin(), path.end());
  return d == dir.end() && p != path.end();
}

bool is_run_file(const fs::path& path) {
  const std::string name = path.filename().string();
  return std::find(kRunFiles.begin(), kRunFiles.end(), name) != kRunFiles.end() && is_run_dir(path.parent_path());
}

// What `output` would destroy of a run, or "".
std::string run_part(const fs::path& output) {
  if (is_run_file(output)) return "a file of the training run " + output.parent_path().string();
  if (is_run_dir(output)) return "a training run's directory";
  for (fs::path dir = output.parent_path(); !dir.empty() && dir != dir.root_path(); dir = dir.parent_path()) {
    if (is_checkpoint_dir(dir)) return "inside the checkpoint " + dir.string();
    if (is_run_file(dir)) return "inside " + dir.string() + " of the training run " + dir.parent_path().string();
  }
  return "";
}

}  // namespace

void check_output_path(const std::string& option, const std::string& output, const std::vector<std::string>& inputs,
                       OutputKind kind) {
  check(!output.empty(), "{} is empty: give the path to write", option);
  std::error_code error;
  check(kind == OutputKind::directory || !fs::is_directory(output, error),
        "{} {}: is a directory (expected the path of a file to write)", option, output);
  const fs::path out = resolved(output);
  // The same file first, for every input: that names the very file the output would destroy.
  for (const std::string& input : inputs) {
    const bool same = same_file(output, input) || same_file(output + ".tmp", input);
    check(!same,
          "{} {} is the input {} (the same file{}): writing it would destroy the input; choose another output path",
          option, output, input, fs::path(output) == fs::path(input) ? "" : " once links and `..` are resolved");
  }
  // A model directory's files are all inputs; a run directory's are the run's files, which run_part() names
  // (its report.html is a by-product that a report replaces).
  for (const std::string& input : inputs) {
    if (!fs::is_directory(input, error) || is_run_dir(input)) continue;
    const fs::path dir = resolved(input);
    check(!(lies_inside(out, dir) && fs::exists(out, error)) && !lies_inside(dir, out) && out != dir,
          "{} {} would replace {}, which is part of the input {}; choose a path outside it", option, output,
          out.string(), input);
  }
  const std::string part = run_part(out);
  check(part.empty(), "{} {} is {}: a command's output never replaces what a run keeps; choose another path", option,
        output, part);
}

}  // namespace replica
