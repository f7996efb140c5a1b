// FSL dataset: mix files, per-file chunking, global id -> (file, local instance) by binary search.
#include "replica/data/dataset.h"

#include <algorithm>
#include <filesystem>
#include <sstream>

#include "replica/core/error.h"
#include "replica/core/file.h"
#include "replica/core/python_random.h"

namespace replica::data {

namespace fs = std::filesystem;

std::vector<MixEntry> read_mix_file(const std::string& mix_path) {
  std::istringstream in(read_text_file(mix_path));
  fs::path dir = fs::path(mix_path).parent_path();
  std::vector<MixEntry> entries;
  std::string line;
  for (int line_no = 1; std::getline(in, line); line_no++) {
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
    if (line.empty() || line[0] == '#') continue;
    MixEntry entry;
    size_t comma = line.find(',');
    entry.path = comma == std::string::npos ? line : line.substr(comma + 1);
    check(!entry.path.empty(), "{}:{}: expected 'label,path' or 'path'", mix_path, line_no);
    entry.label = comma == std::string::npos ? fs::path(entry.path).stem().string() : line.substr(0, comma);
    if (fs::path(entry.path).is_relative()) entry.path = (dir / entry.path).string();
    entries.push_back(std::move(entry));
  }
  check(!entries.empty(), "{}: mix file lists no token files", mix_path);
  return entries;
}

std::vector<MixEntry> mix_from_paths(const std::vector<std::string>& paths) {
  std::vector<MixEntry> entries;
  for (const auto& path : paths) entries.push_back({fs::path(path).stem().string(), path});
  return entries;
}

std::vector<MixEntry> permute_mix(const std::vector<MixEntry>& files, int64_t seed) {
  std::vector<size_t> order(files.size());
  for (size_t i = 0; i < order.size(); i++) order[i] = i;
  PythonRandom(seed).shuffle(std::span<size_t>(order));
  std::vector<MixEntry> permuted;
  for (size_t i : order) permuted.push_back(files[i]);
  return permuted;
}

FslDataset::FslDataset(const std::vector<MixEntry>& files, int64_t seq_len, TokenDtype dtype, uint32_t vocab_size)
    : seq_len_(seq_len), dtype_(dtype), vocab_size_(vocab_size) {
  check(seq_len > 0, "sequence length must be positive, got {}", seq_len);
  check(!files.empty(), "the dataset needs at least one token file");
  offsets_.push_back(0);
  for (const auto& entry : files) {
    files_.emplace_back(entry.path, dtype);
    labels_.push_back(entry.label);
    offsets_.push_back(offsets_.back() + files_.back().num_tokens() / uint64_t(seq_len));
  }
}

FslDataset::Location FslDataset::locate(uint64_t instance) const {
  check(instance < num_instances(), "instance {} is out of range (the dataset has {})", instance, num_instances());
  size_t file = size_t(std::upper_bound(offsets_.begin(), offsets_.end(), instance) - offsets_.begin()) - 1;
  return {file, instance - offsets_[file]};
}

void FslDataset::read_instance(uint64_t instance, int32_t* out) const {
  Location at = locate(instance);
  files_[at.file].read(at.local * uint64_t(seq_len_), uint64_t(seq_len_), out, vocab_size_);
}

}  // namespace replica::data
