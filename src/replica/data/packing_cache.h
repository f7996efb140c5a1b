// The on-disk cache of one source group's packing (OLMo-core keeps it in work_dir/dataset-common): the OBFD
// result of pack_documents, keyed by what it depends on, written atomically and checked in full before it is used.
#pragma once
#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "replica/data/obfd.h"
#include "replica/data/packed_dataset.h"
#include "replica/data/token_file.h"

namespace replica::data {

// What a group's packing depends on: each file's token count and content hash (TokenFile::content_hash, the same
// evidence the data fingerprint trusts; paths are left out, so a moved mix keeps its cache), in group order, and
// the settings; with document boundaries from metadata, each file's sidecar hash (`metadata_hashes`, one per file;
// empty for EOS boundaries, whose keys stay what they were). Its XXH3-128 in hex names the cache file.
std::string packing_cache_key(std::span<const TokenFile> files, uint64_t seq_len, uint32_t eos,
                              LongDocStrategy strategy, std::span<const uint64_t> metadata_hashes = {});

// `<work_dir>/packing-<key>.bin`.
std::string packing_cache_path(const std::string& work_dir, const std::string& key);

// The cached packing at `path`, or nothing when there is no file. Raises Error naming the file and what is wrong
// when it is not a valid packing of `key`: bad magic, another key, a size that does not match its counts, a
// checksum mismatch, or tables that are not a packing of documents within `group_tokens` tokens into `seq_len`.
std::optional<PackedInstances> read_packing_cache(const std::string& path, const std::string& key,
                                                  uint64_t group_tokens, uint64_t seq_len);

// Writes `packed` under `key` to `path`: to a name unique to this process and `writer`, then renamed, so that
// ranks and threads packing the same group never see each other's half-written files.
void write_packing_cache(const std::string& path, const std::string& key, const PackedInstances& packed,
                         uint64_t writer);

}  // namespace replica::data
