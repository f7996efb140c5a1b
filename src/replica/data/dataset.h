// Fixed-sequence-length dataset with OLMo-core's NumpyFSLDataset semantics: each file is chunked on its own
// into seq_len-token instances (the tail is dropped, instances never cross files) and global instance ids
// run over the files in mix order by cumulative offset. Files stay memory-mapped.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "replica/data/instance_source.h"
#include "replica/data/token_file.h"

namespace replica::data {

struct MixEntry {
  std::string label;  // source name for reports; the file's stem when the mix line has no label
  std::string path;
};

// A mix file (a local path or a URL): one token file per line, `label,path` or `path`; blank lines and lines starting
// with '#' are skipped. As OLMo-core's DataMix.build: `{TOKENIZER}` in a path becomes mix_tokenizer_id(the mix's
// name), and a relative path is appended to `base_dir` (data.base_dir: "https://olmo-data.org" or a local copy of
// that tree; a '/' is put between them). Without a base_dir, relative paths are taken relative to the mix file's
// own directory (or URL). Absolute paths and URLs are kept as they are.
std::vector<MixEntry> read_mix_file(const std::string& mix_path, const std::string& base_dir = "");
// What OLMo-core's DataMix.build puts for `{TOKENIZER}` with the dolma2 tokenizer, by the mix file's stem:
// "allenai/dolma3-tokenizer" for the OLMo 3 mixes (stored under that name, the same tokenizer),
// "dolma2-tokenizer" for v3-small-ppl-validation and code-fresh-ppl-validation, "allenai/dolma2-tokenizer" otherwise.
std::string mix_tokenizer_id(const std::string& mix_name);
// The token files of `files` opened, in order: the URLs among them HEADed together first, and remote files opened
// kConnections at a time (each reads its first bytes for a .npy header).
std::vector<TokenFile> open_token_files(const std::vector<MixEntry>& files, TokenDtype dtype);
std::vector<MixEntry> mix_from_paths(const std::vector<std::string>& paths);
// OLMo-core's source permutation (NumpyDatasetConfig.source_permutation_seed): order = list(range(n)),
// random.Random(seed).shuffle(order), files[order[i]] at position i.
std::vector<MixEntry> permute_mix(const std::vector<MixEntry>& files, int64_t seed);

class FslDataset : public InstanceSource {
 public:
  FslDataset(const std::vector<MixEntry>& files, int64_t seq_len, TokenDtype dtype, uint32_t vocab_size);

  uint64_t num_instances() const override { return offsets_.back(); }
  int64_t seq_len() const override { return seq_len_; }
  uint32_t vocab_size() const { return vocab_size_; }
  TokenDtype dtype() const { return dtype_; }
  size_t num_files() const override { return files_.size(); }
  const TokenFile& file(size_t i) const override { return files_[i]; }
  const std::string& label(size_t i) const override { return labels_[i]; }
  uint64_t first_instance(size_t file) const { return offsets_[file]; }  // global id of the file's instance 0

  struct Location {
    size_t file;
    uint64_t local;  // instance index within the file: tokens [local * seq_len, (local + 1) * seq_len)
  };
  Location locate(uint64_t instance) const;
  void read_instance(uint64_t instance, int32_t* out) const override;
  std::vector<std::pair<size_t, uint64_t>> token_sources(uint64_t instance) const override {
    return {{locate(instance).file, uint64_t(seq_len_)}};
  }

 private:
  std::vector<TokenFile> files_;
  std::vector<std::string> labels_;
  std::vector<uint64_t> offsets_;  // cumulative instance counts, offsets_[0] = 0
  int64_t seq_len_;
  TokenDtype dtype_;
  uint32_t vocab_size_;
};

}  // namespace replica::data
