// One rule for every command that writes a file or a directory: the output may not be one of the command's inputs,
// nor a file of a training run (its metrics.jsonl, config.yaml, lock, checkpoints). A write goes to a temporary
// name and is renamed over the output, so naming an input as the output would replace that input (review 2026-12-03,
// W2 and W4); the check runs before any work and names both paths.
#pragma once
#include <string>
#include <vector>

namespace replica {

enum class OutputKind { file, directory };

// Raises replica::Error (exit 2) when `output` (given as option `option`, e.g. "--out"):
// - resolves to one of `inputs` (realpath: `./`, `..` and symlinks on either side; hard links by inode), or its
//   temporary name `output.tmp` does;
// - lies inside an input that is a model or checkpoint directory and names an existing file there;
// - is a file of a training run or lies inside a checkpoint directory;
// - for OutputKind::file, is an existing directory.
// Inputs that do not exist are skipped (their own readers report them).
void check_output_path(const std::string& option, const std::string& output, const std::vector<std::string>& inputs,
                       OutputKind kind = OutputKind::file);

}  // namespace replica
