// Tokenizer throughput (MB/s of UTF-8 per core, on the text files named on the command line) and data-loader
// throughput (tokens/s delivered as int32 batches, with and without the n-gram filter).
//   build/bench/bench_tokenizer [benchmark flags] FILE...     (bench/bench_tokenizer.sh runs it side by side
//                                                              with the npm tiktoken WASM build)
#include <benchmark/benchmark.h>

#include <filesystem>
#include <random>

#include "replica/core/file.h"
#include "replica/data/loader.h"
#include "replica/data/tokenizer.h"

using namespace replica;
using namespace replica::data;

namespace {

const Tokenizer& tokenizer() {
  static Tokenizer t = Tokenizer::load_default();
  return t;
}

void BM_EncodeOrdinary(benchmark::State& state, const std::string& text) {
  std::vector<uint32_t> ids;
  tokenizer().encode_ordinary(text, ids);  // warm the piece cache as a long run would
  size_t tokens = ids.size();
  for (auto _ : state) {
    ids.clear();
    tokenizer().encode_ordinary(text, ids);
    benchmark::DoNotOptimize(ids.data());
  }
  state.SetBytesProcessed(int64_t(state.iterations() * text.size()));
  state.counters["bytes/token"] = double(text.size()) / double(tokens);
}

// A synthetic 32M-token file (random ids with EOS every ~1000 tokens), read in global batches of 64 x 4096.
std::string loader_file() {
  std::string path = (std::filesystem::temp_directory_path() / "replica_bench_tokens.npy").string();
  if (!std::filesystem::exists(path)) {
    std::vector<uint32_t> ids(size_t(32) << 20);
    std::mt19937 rng(1);
    for (auto& id : ids) id = rng() % 1000 == 0 ? kDolma2Eos : rng() % 100000;
    AtomicFile file(path);
    file.write(ids.data(), ids.size() * 4);
    file.commit();
  }
  return path;
}

void BM_LoaderBatch(benchmark::State& state) {
  LoaderConfig config;
  config.files = mix_from_paths({loader_file()});
  config.seq_len = 4096;
  config.seed = 34521;
  config.global_batch = 64;
  config.filter.enabled = state.range(0) != 0;
  DataLoader loader(config);
  loader.order(1);
  int64_t b = 0;
  for (auto _ : state) {
    Batch batch = loader.batch(1, b, 0, 1);
    benchmark::DoNotOptimize(batch.tokens.data());
    b = (b + 1) % loader.batches_per_epoch();
  }
  state.counters["tokens/s"] = benchmark::Counter(double(state.iterations() * config.global_batch * config.seq_len),
                                                  benchmark::Counter::kIsRate);
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  for (int i = 1; i < argc; i++) {
    std::string text = read_text_file(argv[i]);
    benchmark::RegisterBenchmark(("encode_ordinary/" + std::filesystem::path(argv[i]).filename().string()).c_str(),
                                 BM_EncodeOrdinary, text)
        ->Unit(benchmark::kMillisecond);
  }
  benchmark::RegisterBenchmark("loader_batch_64x4096/filter", BM_LoaderBatch)
      ->Arg(0)
      ->Arg(1)
      ->Unit(benchmark::kMillisecond);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
}
