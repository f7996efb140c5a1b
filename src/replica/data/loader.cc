// DataLoader: epoch orders, rank micro-batches, instance reads and the dataset fingerprint.
#include "replica/data/loader.h"

#include <xxhash.h>

#include <algorithm>
#include <filesystem>

#include "replica/core/error.h"
#include "replica/core/threads.h"
#include "replica/data/http_client.h"
#include "replica/data/remote_files.h"

namespace replica::data {

std::unique_ptr<const InstanceSource> open_dataset(const LoaderConfig& c) {
  const std::vector<MixEntry> files =
      c.source_permutation_seed ? permute_mix(c.files, *c.source_permutation_seed) : c.files;
  check(c.packing.kind == Packing::obfd || c.packing.document_boundaries == DocumentBoundaries::eos,
        "document boundaries '{}' (data.document_boundaries, --document-boundaries) need packed documents "
        "(data.packing: obfd); fixed-length chunks ignore document boundaries",
        document_boundaries_name(c.packing.document_boundaries));
  if (c.packing.kind == Packing::obfd)
    return std::make_unique<const PackedDataset>(files, c.seq_len, c.dtype, c.vocab_size, c.packing);
  return std::make_unique<const FslDataset>(files, c.seq_len, c.dtype, c.vocab_size);
}

DataLoader::DataLoader(LoaderConfig config)
    : config_(std::move(config)),
      dataset_(open_dataset(config_)),
      packed_(dynamic_cast<const PackedDataset*>(dataset_.get())),
      remote_(std::any_of(config_.files.begin(), config_.files.end(), [](const MixEntry& e) { return is_url(e.path); })) {
  check(config_.global_batch > 0, "global batch must be positive, got {}", config_.global_batch);
  check(dataset_->num_instances() >= uint64_t(config_.global_batch),
        "the dataset has {} instances of {} tokens, fewer than one global batch of {}", dataset_->num_instances(),
        config_.seq_len, config_.global_batch);
}

std::pair<uint64_t, int64_t> DataLoader::position(int64_t step, uint64_t first_epoch) const {
  check(step >= 0, "step must be non-negative, got {}", step);
  return {first_epoch + uint64_t(step / batches_per_epoch()), step % batches_per_epoch()};
}

std::shared_ptr<const GlobalOrder> DataLoader::order(uint64_t epoch) const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!cached_order_ || cached_epoch_ != epoch) {
    cached_order_ = std::make_shared<const GlobalOrder>(dataset_->num_instances(), config_.seed, epoch,
                                                        uint64_t(config_.global_batch));
    cached_epoch_ = epoch;
  }
  return cached_order_;
}

LoaderFault parse_loader_fault(std::string_view name) {
  if (name == "none") return LoaderFault::none;
  if (name == "double_sharding") return LoaderFault::double_sharding;
  fail("data.fault '{}': expected none or double_sharding", name);
}

const char* loader_fault_name(LoaderFault fault) {
  return fault == LoaderFault::double_sharding ? "double_sharding" : "none";
}

std::vector<uint32_t> DataLoader::batch_instances(uint64_t epoch, int64_t b, int rank, int world,
                                                  std::optional<int64_t> micro_batch) const {
  if (config_.fault == LoaderFault::double_sharding && world > 1) {
    // Row k of the rank's batch at step t is element (t·R + k)·W + rank of its correct stream (R rows a step), as
    // the audit's unit test injects it (tests/unit/test_data_loader.cc).
    const int64_t per_epoch = batches_per_epoch(), rows = config_.global_batch / world;
    const int64_t t = int64_t(epoch - 1) * per_epoch + b;
    std::vector<uint32_t> out;
    for (int64_t k = 0; k < rows; k++) {
      const int64_t p = (t * rows + k) * world + rank;
      const int64_t step = p / rows;
      const uint64_t e = uint64_t(step / per_epoch) + 1;
      out.push_back(correct_instances(e, step % per_epoch, rank, world, micro_batch)[size_t(p % rows)]);
    }
    return out;
  }
  return correct_instances(epoch, b, rank, world, micro_batch);
}

std::vector<uint32_t> DataLoader::correct_instances(uint64_t epoch, int64_t b, int rank, int world,
                                                    std::optional<int64_t> micro_batch) const {
  if (!micro_batch) return order(epoch)->rank_slice(uint64_t(b), rank, world);
  check(*micro_batch > 0, "micro-batch size must be positive, got {}", *micro_batch);
  return order(epoch)->rank_micro_batches(uint64_t(b), rank, world, uint64_t(*micro_batch));
}

Batch DataLoader::batch(uint64_t epoch, int64_t b, int rank, int world, std::optional<int64_t> micro_batch) const {
  const BatchKey key{epoch, b, rank, world, micro_batch.value_or(0)};
  if (!remote_ || config_.read_ahead == 0) return read_batch(key);
  std::future<Batch> mine;
  std::vector<std::future<Batch>> stale;  // destroyed (waited for) outside the lock
  {
    std::lock_guard<std::mutex> lock(ahead_mutex_);
    if (auto it = ahead_.find(key); it != ahead_.end()) mine = std::move(it->second);
    std::map<BatchKey, std::future<Batch>> wanted;
    BatchKey k = key;
    for (int64_t i = 0; i < config_.read_ahead; i++) {
      k = next(k);
      auto it = ahead_.find(k);
      wanted[k] = it != ahead_.end() ? std::move(it->second)
                                     : std::async(std::launch::async, [this, k] { return read_batch(k); });
    }
    for (auto& [k_, f] : ahead_)
      if (f.valid()) stale.push_back(std::move(f));
    ahead_ = std::move(wanted);
  }
  return mine.valid() ? mine.get() : read_batch(key);
}

DataLoader::BatchKey DataLoader::next(const BatchKey& key) const {
  auto [epoch, b, rank, world, micro] = key;
  return b + 1 < batches_per_epoch() ? BatchKey{epoch, b + 1, rank, world, micro}
                                     : BatchKey{epoch + 1, 0, rank, world, micro};
}

Batch DataLoader::read_batch(const BatchKey& key) const {
  const auto [epoch, b, rank, world, micro] = key;
  Batch out;
  out.instances = batch_instances(epoch, b, rank, world, micro > 0 ? std::optional<int64_t>(micro) : std::nullopt);
  out.rows = int64_t(out.instances.size());
  out.seq_len = config_.seq_len;
  out.tokens.resize(size_t(out.rows * out.seq_len));
  out.keep.resize(size_t(out.rows));
  if (packed_) out.doc_lens.resize(size_t(out.rows));
  // Rows of a remote mix are range requests: kConnections of them in flight at once.
  for_each_concurrently(size_t(out.rows), remote_ ? kConnections : 1, [&](size_t row) {
    int32_t* tokens = out.tokens.data() + int64_t(row) * out.seq_len;
    dataset_->read_instance(out.instances[row], tokens);
    out.keep[row] = instance_passes(tokens, size_t(out.seq_len), config_.filter);
    if (packed_) out.doc_lens[row] = document_lengths({tokens, size_t(out.seq_len)}, packed_->eos());
  });
  return out;
}

std::string DataLoader::fingerprint() const {
  const auto& f = config_.filter;
  std::string text = fmt::format("replica-data-v1;seq_len={};dtype={};vocab={};filter={}:{}:{}:{};seed={};",
                                 config_.seq_len, token_dtype_name(config_.dtype), config_.vocab_size, f.enabled,
                                 f.min_period, f.max_period, f.max_count, config_.seed);
  if (config_.source_permutation_seed)
    text += fmt::format("source_permutation_seed={};", *config_.source_permutation_seed);
  if (packed_)
    text += fmt::format("packing={}:{}:{};", packing_name(config_.packing.kind), config_.packing.source_group_size,
                        long_doc_strategy_name(config_.packing.long_doc_strategy));
  // Only a run that switches the boundaries to metadata fingerprints them, so every EOS fingerprint stays as it was.
  const bool metadata = packed_ && config_.packing.document_boundaries == DocumentBoundaries::metadata;
  if (metadata) text += "document_boundaries=metadata;";
  // Remote files' hashes read sampled blocks over the network: all files at once, and remembered for a restart.
  for_each_concurrently(dataset_->num_files(), remote_ ? kConnections : 1,
                        [&](size_t i) { dataset_->file(i).content_hash(); });
  save_remote_index();
  for (size_t i = 0; i < dataset_->num_files(); i++) {
    const TokenFile& file = dataset_->file(i);
    text += fmt::format("file={},size={},hash={:016x};", std::filesystem::path(file.path()).filename().string(),
                        file.file_size(), file.content_hash());
    if (metadata) text += fmt::format("metadata_hash={:016x};", packed_->document_metadata_hash(i));
  }
  XXH128_hash_t hash = XXH3_128bits(text.data(), text.size());
  return fmt::format("{:016x}{:016x}", hash.high64, hash.low64);
}

void DataLoader::check_fingerprint(const std::string& saved, bool allow_change) const {
  std::string now = fingerprint();
  check(allow_change || saved == now,
        "data fingerprint changed: the checkpoint was trained on {}, the configured data gives {} (token files, "
        "seq_len, dtype, instance filter or seed differ); resuming would not continue the same data order. "
        "Override explicitly to resume anyway",
        saved, now);
}

}  // namespace replica::data
