// Packed dataset: per-group document spans (pack_documents_into_instances), OBFD, instance materialisation.
#include "replica/data/packed_dataset.h"

#include <algorithm>
#include <bit>
#include <exception>
#include <filesystem>
#include <optional>
#include <span>

#include "replica/core/error.h"
#include "replica/data/packing_cache.h"

namespace replica::data {

Packing parse_packing(std::string_view name) {
  if (name == "none") return Packing::none;
  if (name == "obfd") return Packing::obfd;
  fail("packing '{}': expected none or obfd", name);
}

const char* packing_name(Packing packing) { return packing == Packing::obfd ? "obfd" : "none"; }

LongDocStrategy parse_long_doc_strategy(std::string_view name) {
  if (name == "truncate") return LongDocStrategy::truncate;
  if (name == "fragment") return LongDocStrategy::fragment;
  fail("long document strategy '{}': expected truncate or fragment", name);
}

const char* long_doc_strategy_name(LongDocStrategy strategy) {
  return strategy == LongDocStrategy::fragment ? "fragment" : "truncate";
}

DocumentBoundaries parse_document_boundaries(std::string_view name) {
  if (name == "eos") return DocumentBoundaries::eos;
  if (name == "metadata") return DocumentBoundaries::metadata;
  fail("document boundaries '{}': expected eos or metadata", name);
}

const char* document_boundaries_name(DocumentBoundaries boundaries) {
  return boundaries == DocumentBoundaries::metadata ? "metadata" : "eos";
}

PackedDataset::PackedDataset(const std::vector<MixEntry>& files, int64_t seq_len, TokenDtype dtype, uint32_t vocab_size,
                             const PackingConfig& packing, uint32_t eos, int32_t pad)
    : seq_len_(seq_len), vocab_size_(vocab_size), eos_(eos), pad_(pad), packing_(packing) {
  check(seq_len > 0 && std::has_single_bit(uint64_t(seq_len)) && seq_len <= (int64_t(1) << 31),
        "a packed dataset needs a power-of-two sequence length (the OBFD segment tree's leaves), got {}", seq_len);
  check(packing.source_group_size >= 1, "source group size must be at least 1, got {}", packing.source_group_size);
  check(!files.empty(), "the dataset needs at least one token file");
  files_ = open_token_files(files, dtype);
  for (const auto& entry : files) labels_.push_back(entry.label);
  const size_t group_size = size_t(packing.source_group_size);
  groups_.resize((files_.size() + group_size - 1) / group_size);
  // Each group is packed on its own (OLMo-core runs them in a process pool), so any thread count gives the same.
  // An error cannot leave an OpenMP loop: each group keeps its own, and the first one is raised after the loop.
  std::vector<std::exception_ptr> errors(groups_.size());
#pragma omp parallel for schedule(dynamic, 1)
  for (size_t g = 0; g < groups_.size(); g++) {
    try {
      groups_[g] = pack_group(g * group_size, std::min(group_size, files_.size() - g * group_size));
    } catch (...) {
      errors[g] = std::current_exception();
    }
  }
  for (const std::exception_ptr& error : errors)
    if (error) std::rethrow_exception(error);
  group_offsets_.push_back(0);
  for (const Group& group : groups_)
    group_offsets_.push_back(group_offsets_.back() + group.packed.instance_offsets.size() - 1);
}

PackedDataset::Group PackedDataset::pack_group(size_t first_file, size_t count) const {
  Group group;
  group.first_file = first_file;
  group.file_starts.push_back(0);
  std::vector<DocumentMetadata> sidecars;
  for (size_t f = first_file; f < first_file + count; f++) {
    group.file_starts.push_back(group.file_starts.back() + files_[f].num_tokens());
    if (packing_.document_boundaries == DocumentBoundaries::metadata) {
      sidecars.emplace_back(files_[f].path());
      group.metadata_hashes.push_back(sidecars.back().content_hash());
    }
  }
  const uint64_t max_len = uint64_t(seq_len_);
  if (packing_.work_dir.empty()) {
    group.packed = pack_documents(document_spans(group, sidecars), max_len);
    return group;
  }
  const std::string key = packing_cache_key(std::span(files_).subspan(first_file, count), max_len, eos_,
                                            packing_.long_doc_strategy, group.metadata_hashes);
  // A work_dir that is a file is a mistake in the recipe, named as such (not std::filesystem's words, nor a warning).
  check(!std::filesystem::exists(packing_.work_dir) || std::filesystem::is_directory(packing_.work_dir),
        "data.work_dir {}: exists and is not a directory (the packing cache is kept in that directory)",
        packing_.work_dir);
  const std::string path = packing_cache_path(packing_.work_dir, key);
  try {
    if (std::optional<PackedInstances> cached = read_packing_cache(path, key, group.file_starts.back(), max_len)) {
      group.packed = std::move(*cached);
      group.from_cache = true;
      return group;
    }
  } catch (const Error& e) {  // never trusted: packed again and rewritten
    fmt::print(stderr, "packing cache: {}; packing files {}..{} again\n", e.what(), first_file, first_file + count - 1);
  }
  group.packed = pack_documents(document_spans(group, sidecars), max_len);
  // The cache saves time, nothing more: a full disk or a work_dir that cannot hold it costs a repack next time, not
  // the run.
  try {
    write_packing_cache(path, key, group.packed, first_file);
  } catch (const std::exception& e) {
    fmt::print(stderr, "warning: packing cache (data.work_dir={}): cannot write it ({}); going on without it\n",
               packing_.work_dir, e.what());
  }
  return group;
}

std::vector<DocumentSpan> PackedDataset::document_spans(const Group& group,
                                                        std::span<const DocumentMetadata> sidecars) const {
  const uint64_t max_len = uint64_t(seq_len_);
  std::vector<DocumentSpan> documents;
  // iter_document_indices_with_max_sequence_length: a document [start, end) of the file at `offset` in the group.
  auto add = [&](uint64_t offset, uint64_t start, uint64_t end) {
    if (end - start <= max_len) {
      documents.push_back({offset + start, offset + end});
    } else if (packing_.long_doc_strategy == LongDocStrategy::truncate) {
      documents.push_back({offset + start, offset + start + max_len});
    } else {
      for (uint64_t s = start; s < end; s += max_len)
        documents.push_back({offset + s, offset + std::min(end, s + max_len)});
    }
  };
  for (size_t i = 0; i + 1 < group.file_starts.size(); i++) {
    const uint64_t offset = group.file_starts[i];
    const TokenFile& file = files_[group.first_file + i];
    if (!sidecars.empty()) {
      for (const DocumentSpan& d : sidecars[i].documents(file.num_tokens())) add(offset, d.start, d.end);
      continue;
    }
    uint64_t start = 0;
    // A document ends with its EOS; a tail without one is dropped.
    for (uint64_t eos : file.positions_of(eos_)) {
      add(offset, start, eos + 1);
      start = eos + 1;
    }
  }
  return documents;
}

size_t PackedDataset::groups_from_cache() const {
  return size_t(std::count_if(groups_.begin(), groups_.end(), [](const Group& g) { return g.from_cache; }));
}

uint64_t PackedDataset::num_documents() const {
  uint64_t n = 0;
  for (const Group& group : groups_) n += group.packed.documents.size();
  return n;
}

uint64_t PackedDataset::document_metadata_hash(size_t file) const {
  check(packing_.document_boundaries == DocumentBoundaries::metadata && file < files_.size(),
        "file {} has no document metadata in this dataset", file);
  const Group& group = groups_[file / size_t(packing_.source_group_size)];
  return group.metadata_hashes[file - group.first_file];
}

uint64_t PackedDataset::padding_tokens() const {
  uint64_t tokens = 0;
  for (const Group& group : groups_)
    for (const DocumentSpan& d : group.packed.documents) tokens += d.length();
  return num_instances() * uint64_t(seq_len_) - tokens;
}

std::pair<const PackedDataset::Group*, uint64_t> PackedDataset::locate(uint64_t instance) const {
  check(instance < num_instances(), "instance {} is out of range (the dataset has {})", instance, num_instances());
  const size_t g =
      size_t(std::upper_bound(group_offsets_.begin(), group_offsets_.end(), instance) - group_offsets_.begin()) - 1;
  return {&groups_[g], instance - group_offsets_[g]};
}

std::vector<PackedDataset::Document> PackedDataset::documents(uint64_t instance) const {
  auto [group, local] = locate(instance);
  const PackedInstances& packed = group->packed;
  std::vector<Document> out;
  for (uint64_t k = packed.instance_offsets[local]; k < packed.instance_offsets[local + 1]; k++) {
    const DocumentSpan& span = packed.documents[packed.documents_by_instance[k]];
    // The file whose token range holds the document's start (documents never cross files).
    const size_t f = size_t(std::upper_bound(group->file_starts.begin(), group->file_starts.end(), span.start) -
                            group->file_starts.begin()) -
                     1;
    out.push_back({group->first_file + f, span.start - group->file_starts[f], span.length()});
  }
  return out;
}

std::vector<int32_t> PackedDataset::document_lengths(uint64_t instance) const {
  std::vector<int32_t> tokens(static_cast<size_t>(seq_len_));
  read_instance(instance, tokens.data());
  return data::document_lengths(tokens, eos_);
}

void PackedDataset::read_instance(uint64_t instance, int32_t* out) const {
  int64_t filled = 0;
  for (const Document& d : documents(instance)) {
    files_[d.file].read(d.start, d.length, out + filled, vocab_size_);
    filled += int64_t(d.length);
  }
  std::fill(out + filled, out + seq_len_, pad_);
}

std::vector<std::pair<size_t, uint64_t>> PackedDataset::token_sources(uint64_t instance) const {
  std::vector<std::pair<size_t, uint64_t>> sources;
  for (const Document& d : documents(instance)) sources.emplace_back(d.file, d.length);
  return sources;
}

std::vector<int32_t> document_lengths(std::span<const int32_t> tokens, uint32_t eos) {
  std::vector<int32_t> lengths;
  int64_t previous = -1;  // the last boundary: the position of the last EOS seen
  for (size_t i = 0; i < tokens.size(); i++)
    if (uint32_t(tokens[i]) == eos) {
      lengths.push_back(int32_t(int64_t(i) - previous));
      previous = int64_t(i);
    }
  if (previous + 1 < int64_t(tokens.size())) lengths.push_back(int32_t(int64_t(tokens.size()) - 1 - previous));
  return lengths;
}

}  // namespace replica::data
