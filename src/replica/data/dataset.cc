// FSL dataset: mix files, per-file chunking, global id -> (file, local instance) by binary search.
#include "replica/data/dataset.h"

#include <algorithm>
#include <filesystem>
#include <sstream>

#include "replica/core/error.h"
#include "replica/core/file.h"
#include "replica/core/python_random.h"
#include "replica/core/threads.h"
#include "replica/core/pystr.h"
#include "replica/data/http_client.h"
#include "replica/data/remote_files.h"

namespace replica::data {

namespace fs = std::filesystem;

namespace {

// The directory a relative line of a mix file without a base_dir is taken from: the mix file's own.
std::string mix_directory(const std::string& mix_path) {
  if (is_url(mix_path)) return mix_path.substr(0, mix_path.rfind('/'));
  return fs::path(mix_path).parent_path().string();
}

std::string stem_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  return fs::path(slash == std::string::npos ? path : path.substr(slash + 1)).stem().string();
}

}  // namespace

std::string mix_tokenizer_id(const std::string& mix_name) {
  static const char* const kOlmo3Mixes[] = {
      "OLMo-mix-0625-official",
      "OLMo-mix-0925-official",
      "OLMo-midtraining-mix-0625-100B",
      "OLMo-midtraining-mix-0925-ingredient1-100B",
      "OLMo-midtraining-mix-0925-ingredient2-100B",
      "OLMo-longmino-mix-0625",
      "OLMo-longmino-mix-0925"};
  for (const char* name : kOlmo3Mixes)
    if (mix_name == name) return "allenai/dolma3-tokenizer";
  if (mix_name == "v3-small-ppl-validation" || mix_name == "code-fresh-ppl-validation") return "dolma2-tokenizer";
  return "allenai/dolma2-tokenizer";
}

std::vector<MixEntry> read_mix_file(const std::string& mix_path, const std::string& base_dir) {
  const std::vector<char> bytes = read_whole(mix_path);
  std::istringstream in(std::string(bytes.begin(), bytes.end()));
  const std::string tokenizer_id = mix_tokenizer_id(stem_of(mix_path));
  std::string root = base_dir.empty() ? mix_directory(mix_path) : base_dir;
  if (!root.empty() && root.back() != '/') root += '/';
  std::vector<MixEntry> entries;
  std::string line;
  for (int line_no = 1; std::getline(in, line); line_no++) {
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
    if (line.empty() || line[0] == '#') continue;
    MixEntry entry;
    size_t comma = line.find(',');
    entry.path = py::replace(comma == std::string::npos ? line : line.substr(comma + 1), "{TOKENIZER}", tokenizer_id);
    check(!entry.path.empty(), "{}:{}: expected 'label,path' or 'path'", mix_path, line_no);
    entry.label = comma == std::string::npos ? stem_of(entry.path) : line.substr(0, comma);
    if (!is_url(entry.path) && fs::path(entry.path).is_relative()) entry.path = root + entry.path;
    entries.push_back(std::move(entry));
  }
  check(!entries.empty(), "{}: mix file lists no token files", mix_path);
  return entries;
}

std::vector<TokenFile> open_token_files(const std::vector<MixEntry>& files, TokenDtype dtype) {
  std::vector<std::string> paths;
  for (const MixEntry& entry : files) paths.push_back(entry.path);
  stat_remote_files(paths);
  const bool remote = std::any_of(paths.begin(), paths.end(), [](const std::string& p) { return is_url(p); });
  std::vector<std::optional<TokenFile>> opened(files.size());
  for_each_concurrently(files.size(), remote ? kConnections : 1, [&](size_t i) { opened[i].emplace(paths[i], dtype); });
  std::vector<TokenFile> out;
  for (std::optional<TokenFile>& file : opened) out.push_back(std::move(*file));
  return out;
}

std::vector<MixEntry> mix_from_paths(const std::vector<std::string>& paths) {
  std::vector<MixEntry> entries;
  for (const auto& path : paths) entries.push_back({stem_of(path), path});
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
  files_ = open_token_files(files, dtype);
  offsets_.push_back(0);
  for (size_t i = 0; i < files.size(); i++) {
    labels_.push_back(files[i].label);
    offsets_.push_back(offsets_.back() + files_[i].num_tokens() / uint64_t(seq_len));
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
