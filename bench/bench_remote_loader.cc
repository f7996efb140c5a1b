// Data-loader throughput over HTTP: tokens/s delivered as int32 batches from token files read by range requests
// (data/remote_files.h), as a training loop asks for them (batch b, then b + 1, ...), with read-ahead on or off.
//   build/bench/bench_remote_loader URL... [--seq-len N] [--global-batch G] [--batches B] [--read-ahead R]
// bench/remote_loader.sh serves the files with added latency and runs it (results: bench/RESULTS.md).
#include <fmt/format.h>

#include <chrono>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "replica/core/error.h"
#include "replica/core/parse_number.h"
#include "replica/data/loader.h"
#include "replica/data/remote_files.h"

using namespace replica;
using namespace replica::data;

int main(int argc, char** argv) try {
  LoaderConfig config;
  config.seq_len = 4096;
  config.global_batch = 64;
  config.seed = 34521;
  int64_t batches = 20;
  std::vector<std::string> urls;
  for (int i = 1; i < argc; i++) {
    auto value = [&] {
      const std::optional<uint64_t> n = i + 1 < argc ? parse_uint64(argv[i + 1]) : std::nullopt;
      check(n.has_value(), "{} needs a number", argv[i]);
      i++;
      return int64_t(*n);
    };
    if (!std::strcmp(argv[i], "--seq-len")) config.seq_len = value();
    else if (!std::strcmp(argv[i], "--global-batch")) config.global_batch = value();
    else if (!std::strcmp(argv[i], "--batches")) batches = value();
    else if (!std::strcmp(argv[i], "--read-ahead")) config.read_ahead = value();
    else urls.push_back(argv[i]);
  }
  check(!urls.empty(), "usage: bench_remote_loader URL... [--seq-len N] [--global-batch G] [--batches B] "
                       "[--read-ahead R]");
  configure_remote_files({});  // no cache: every batch is read from the server
  config.files = mix_from_paths(urls);
  const auto opened = std::chrono::steady_clock::now();
  DataLoader loader(config);
  loader.order(1);
  const auto start = std::chrono::steady_clock::now();
  for (int64_t b = 0; b < batches; b++) loader.batch(1, b % loader.batches_per_epoch(), 0, 1);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double tokens = double(batches * config.global_batch * config.seq_len);
  fmt::print("{} files opened in {:.2f} s; {} batches of {} x {} with read-ahead {}: {:.2f} s, {:.1f} ms/batch, "
             "{:.2f} M tokens/s\n",
             urls.size(), std::chrono::duration<double>(start - opened).count(), batches, config.global_batch,
             config.seq_len, config.read_ahead, seconds, 1e3 * seconds / double(batches), tokens / seconds / 1e6);
  return 0;
} catch (const Error& e) {
  fmt::print(stderr, "bench_remote_loader: {}\n", e.what());
  return 2;
}
