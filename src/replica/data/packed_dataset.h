// Packed-document dataset with OLMo-core's NumpyPackedFSLDataset semantics (data/numpy_dataset.py): the files,
// in dataset order, form consecutive groups of source_group_size; in each group the documents (EOS-terminated, or
// as each file's Dolma metadata lists them; longer than seq_len: truncated or fragmented) are packed by OBFD
// (data/obfd.h) into instances of seq_len tokens, padded with the pad id. Global instance ids run over the
// groups in order, and within a group in bin creation order. Files stay memory-mapped; the packing (document
// spans only, no tokens) is computed when the dataset is built, the groups in parallel, or read from the cache in
// packing.work_dir.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "replica/data/dataset.h"
#include "replica/data/document_metadata.h"
#include "replica/data/obfd.h"
#include "replica/data/tokenizer.h"

namespace replica::data {

enum class Packing { none, obfd };
Packing parse_packing(std::string_view name);  // "none" | "obfd"
const char* packing_name(Packing packing);

// OLMo-core's LongDocStrategy: a document longer than seq_len keeps its first seq_len tokens (truncate), or is
// cut into seq_len-token fragments, the last one shorter (fragment).
enum class LongDocStrategy { truncate, fragment };
LongDocStrategy parse_long_doc_strategy(std::string_view name);
const char* long_doc_strategy_name(LongDocStrategy strategy);

// Where a file's documents begin and end, as OLMo-core's iter_document_indices: at each EOS (its path for a local
// file; tokens after the last EOS are dropped), or the `start,end` lines of the file's Dolma metadata sidecar
// (data/document_metadata.h; its path for a gs:// or https:// file, which the real OLMo 3 stage-3 run read).
enum class DocumentBoundaries { eos, metadata };
DocumentBoundaries parse_document_boundaries(std::string_view name);  // "eos" | "metadata"
const char* document_boundaries_name(DocumentBoundaries boundaries);

struct PackingConfig {
  Packing kind = Packing::none;   // data.packing: none = fixed-length chunks of each file (FslDataset)
  int64_t source_group_size = 1;  // data.source_group_size: files packed together (OLMo-core's default 1; stage 3: 8)
  LongDocStrategy long_doc_strategy = LongDocStrategy::truncate;  // data.long_doc_strategy (OLMo-core's default)
  // data.work_dir: where each group's packing is cached (data/packing_cache.h), as OLMo-core's work_dir; empty: no
  // cache, every start packs again. Not part of the data: the fingerprint leaves it out.
  std::string work_dir = {};
  // data.document_boundaries: eos (the default, every existing run) or metadata (each file's .csv.gz sidecar).
  DocumentBoundaries document_boundaries = DocumentBoundaries::eos;
};

class PackedDataset : public InstanceSource {
 public:
  // seq_len must be a power of two (the segment tree's leaves). `eos` ends documents; `pad` fills instances.
  PackedDataset(const std::vector<MixEntry>& files, int64_t seq_len, TokenDtype dtype, uint32_t vocab_size,
                const PackingConfig& packing, uint32_t eos = kDolma2Eos, int32_t pad = int32_t(kDolma2Pad));

  uint64_t num_instances() const override { return group_offsets_.back(); }
  int64_t seq_len() const override { return seq_len_; }
  size_t num_files() const override { return files_.size(); }
  const TokenFile& file(size_t i) const override { return files_[i]; }
  const std::string& label(size_t i) const override { return labels_[i]; }
  size_t num_groups() const { return groups_.size(); }
  size_t groups_from_cache() const;  // groups whose packing was read from packing.work_dir
  uint64_t num_documents() const;    // packed documents (after truncation or fragmentation) over all groups
  uint64_t padding_tokens() const;   // over all instances
  uint32_t eos() const { return eos_; }
  // XXH3-64 of file i's document metadata sidecar (data/document_metadata.h) when the boundaries come from it.
  uint64_t document_metadata_hash(size_t file) const;

  // One document of an instance: tokens [start, start + length) of file `file`.
  struct Document {
    size_t file = 0;
    uint64_t start = 0, length = 0;
  };
  // The instance's documents in order (the longest first, as packed).
  std::vector<Document> documents(uint64_t instance) const;
  // The instance's segment lengths: document_lengths (below) of its tokens with this dataset's EOS.
  std::vector<int32_t> document_lengths(uint64_t instance) const;
  void read_instance(uint64_t instance, int32_t* out) const override;
  std::vector<std::pair<size_t, uint64_t>> token_sources(uint64_t instance) const override;

 private:
  struct Group {
    size_t first_file = 0;
    std::vector<uint64_t> file_starts;  // token offset of each of the group's files within the group, and the end
    PackedInstances packed;
    bool from_cache = false;
    std::vector<uint64_t> metadata_hashes;  // of each file's sidecar, with document_boundaries: metadata
  };
  std::pair<const Group*, uint64_t> locate(uint64_t instance) const;  // the group and the instance within it
  Group pack_group(size_t first_file, size_t count) const;
  // The group's documents as pack_documents takes them: each file's documents as its sidecar lists them (one
  // sidecar per file of the group), or split at EOS when there are none; long ones truncated or fragmented.
  std::vector<DocumentSpan> document_spans(const Group& group, std::span<const DocumentMetadata> sidecars) const;

  std::vector<TokenFile> files_;
  std::vector<std::string> labels_;
  int64_t seq_len_;
  uint32_t vocab_size_, eos_;
  int32_t pad_;
  PackingConfig packing_;
  std::vector<Group> groups_;
  std::vector<uint64_t> group_offsets_;  // cumulative instance counts, group_offsets_[0] = 0
};

// OLMo-core's get_document_lengths(input_ids, eos) without a BOS: the lengths of the segments that end at each EOS,
// and of the tail after the last EOS if the instance does not end with one, summing to the instance's length. The
// padding tail is its own segment; a document that does not end with EOS joins the segment of what follows it.
// What attention's document mask and the labels see, whatever the documents were packed by.
std::vector<int32_t> document_lengths(std::span<const int32_t> tokens, uint32_t eos);

}  // namespace replica::data
