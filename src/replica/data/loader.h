// The trainer's data API. A DataLoader serves, for (epoch, batch b, rank r of W), the instances OLMo-core's
// NumpyFSLDataLoader would: row b of the epoch's global order, strided by rank (row[r::W]), read from the
// memory-mapped token files, with the instance filter's keep flags, in the order of the rank's micro-batches
// (data/order.h: local micro-batch k is global micro-batch r + W k). Epochs are 1-based as in OLMo-core
// (the order of epoch e is seeded with seed + e). The loader has no hidden position: the trainer stores
// (epoch, batches consumed) and the fingerprint in its checkpoint, and refuses to resume on a different
// fingerprint unless told to.
//
//   LoaderConfig config;  // files, seq_len, seed, global_batch (+ dtype, vocab_size, filter, permutation, packing)
//   config.files = read_mix_file("train.mix"), config.seq_len = 8192, config.seed = 34521, config.global_batch = 512;
//   DataLoader loader(config);
//   auto [epoch, b] = loader.position(step);            // step -> (epoch, batch within the epoch)
//   Batch batch = loader.batch(epoch, b, rank, world, micro_batch);  // [512 / world, 8192] int32 ids
#pragma once
#include <cstdint>
#include <future>
#include <map>
#include <memory>
#include <tuple>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "replica/data/dataset.h"
#include "replica/data/instance_filter.h"
#include "replica/data/order.h"
#include "replica/data/packed_dataset.h"
#include "replica/data/tokenizer.h"

namespace replica::data {

// A loader bug injected on purpose (data.fault), so that the tools meant to catch one can be shown to: `data audit`
// flags it and `replica reproduce` diverges on it. double_sharding: with W > 1 ranks each rank's own stream (its
// row[r::W] slices, step after step) is strided again by W, as MaxText's loader did — a rank consumes its stream W
// times too fast, and within one planned epoch reads part of the corpus twice and part not at all. The data
// fingerprint does not show it (the files are the same), as a real bug's would not.
enum class LoaderFault { none, double_sharding };
LoaderFault parse_loader_fault(std::string_view name);  // "none" | "double_sharding"
const char* loader_fault_name(LoaderFault fault);

struct LoaderConfig {
  std::vector<MixEntry> files;             // in mix order (read_mix_file / mix_from_paths)
  int64_t seq_len = 0;                     // tokens per instance
  uint64_t seed = 0;                       // data-loader seed (OLMo 3 stage 1: 34521)
  int64_t global_batch = 0;                // instances per optimizer step, over all ranks
  TokenDtype dtype = TokenDtype::u32;      // of headerless files
  uint32_t vocab_size = kDolma2VocabSize;  // ids at or above it are a corrupt-data error
  InstanceFilterConfig filter;             // off by default
  // OLMo-core's source_permutation_seed: the files are permuted by random.Random(seed).shuffle before anything
  // else (permute_mix); none: mix order (OLMo-core's default; stage 3: 123).
  std::optional<int64_t> source_permutation_seed;
  PackingConfig packing;  // none by default: fixed-length chunks of each file
  // Batches read ahead of the one asked for, on threads of their own, when some file is remote (http(s)://): a
  // step then finds its batch read. 0: none. What a batch holds does not depend on it.
  int64_t read_ahead = 0;
  LoaderFault fault = LoaderFault::none;  // for tests only
};

struct Batch {
  int64_t rows = 0, seq_len = 0;
  std::vector<int32_t> tokens;      // [rows, seq_len], row-major
  std::vector<uint8_t> keep;        // [rows]; 0 = masked by the instance filter: set all its labels to -100
  std::vector<uint32_t> instances;  // [rows] global instance ids
  // [rows]; each row's document lengths in order, summing to seq_len, from an EOS scan of its tokens as OLMo-core's
  // get_document_lengths (data::document_lengths); the padding tail is its own entry; empty when the mix is not
  // packed.
  std::vector<std::vector<int32_t>> doc_lens;
};

// The dataset a loader reads: the files (permuted when the config says so) as fixed-length chunks or packed.
std::unique_ptr<const InstanceSource> open_dataset(const LoaderConfig& config);

class DataLoader {
 public:
  explicit DataLoader(LoaderConfig config);

  const LoaderConfig& config() const { return config_; }
  const InstanceSource& dataset() const { return *dataset_; }
  const PackedDataset* packed() const { return packed_; }  // the dataset when the mix is packed, else null
  int64_t batches_per_epoch() const { return int64_t(dataset_->num_instances() / uint64_t(config_.global_batch)); }

  // The epoch (from first_epoch) and batch within it that training step `step` (0-based) reads.
  std::pair<uint64_t, int64_t> position(int64_t step, uint64_t first_epoch = 1) const;

  // The rows of global batch `b` of `epoch` read by data-parallel `rank` of `world` (global_batch / world rows)
  // for micro-batches of `micro_batch` instances: rows [k M, (k + 1) M) are global micro-batch rank + world k
  // (GlobalOrder::rank_micro_batches). Without a micro-batch size, the rank's rows in row order (row[r::W], one
  // micro-batch). Thread-safe. With read_ahead and a remote file, the batches that follow (b + 1, ..., into the next
  // epoch) for the same rank are read in the background.
  Batch batch(uint64_t epoch, int64_t b, int rank = 0, int world = 1,
              std::optional<int64_t> micro_batch = std::nullopt) const;
  std::vector<uint32_t> batch_instances(uint64_t epoch, int64_t b, int rank = 0, int world = 1,
                                        std::optional<int64_t> micro_batch = std::nullopt) const;

  // 32 hex digits: XXH3-128 of (version, seq_len, dtype, vocab size, filter, seed, the source permutation seed and
  // packing settings when set, and each file's base name, size in bytes and content hash, in dataset order; with
  // document boundaries from metadata, that and each file's sidecar hash). The global batch and world size are
  // not part of it.
  std::string fingerprint() const;
  // For resume: raises Error when `saved` (from a checkpoint) differs from fingerprint(), unless
  // `allow_change` (the explicit override).
  void check_fingerprint(const std::string& saved, bool allow_change) const;

  // The shuffled order of one epoch (cached: the last epoch asked for is kept).
  std::shared_ptr<const GlobalOrder> order(uint64_t epoch) const;

 private:
  // (epoch, batch, rank, world, micro-batch size or 0): what a batch is read for.
  using BatchKey = std::tuple<uint64_t, int64_t, int, int, int64_t>;
  Batch read_batch(const BatchKey& key) const;
  BatchKey next(const BatchKey& key) const;  // the batch training reads after `key`
  // batch_instances without config_.fault.
  std::vector<uint32_t> correct_instances(uint64_t epoch, int64_t b, int rank, int world,
                                          std::optional<int64_t> micro_batch) const;

  LoaderConfig config_;
  std::unique_ptr<const InstanceSource> dataset_;
  const PackedDataset* packed_ = nullptr;
  bool remote_ = false;  // some file is read over HTTP: rows are read concurrently, and ahead when configured
  mutable std::mutex ahead_mutex_;
  mutable std::map<BatchKey, std::future<Batch>> ahead_;
  mutable std::mutex mutex_;
  mutable uint64_t cached_epoch_ = 0;
  mutable std::shared_ptr<const GlobalOrder> cached_order_;
};

}  // namespace replica::data
