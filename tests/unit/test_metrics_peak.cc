// metrics/peak: the CPU peak is measured once and then read from the cache, measured again when a run exceeds it;
// an MFU above 100 % is not reported.
#include "replica/metrics/peak.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "replica/core/threads.h"
#include "replica/kernels/forwarding_backend.h"
#include "scratch_dir.h"

namespace replica::metrics {
namespace {

// The CPU backend with a peak that counts its measurements and returns a fixed rate.
class CountingPeak final : public ForwardingBackend {
 public:
  explicit CountingPeak(double rate) : ForwardingBackend(cpu_backend()), rate_(rate) {}
  double peak_flops(Precision) override {
    measurements++;
    return rate_ + measurements;  // the best of several measurements is kept
  }
  int measurements = 0;

 private:
  double rate_;
};

TEST(MetricsPeak, TheCpuPeakIsMeasuredOnceThenReadFromTheCache) {
  const std::filesystem::path dir = replica::testing::scratch_dir("peak");
  std::filesystem::remove_all(dir);
  ::setenv("XDG_CACHE_HOME", dir.c_str(), 1);
  const std::string path = (dir / "replica" / "peak.json").string();
  EXPECT_EQ(peak_cache_path(), path);

  CountingPeak first(4e11);
  const Peak measured = stable_peak(first, Precision::bf16);
  EXPECT_EQ(first.measurements, 3);
  EXPECT_EQ(measured.flops, 4e11 + 3);
  EXPECT_EQ(measured.source, "measured now, cached in " + path);

  CountingPeak second(1e9);  // a later start under load measures nothing
  const Peak cached = stable_peak(second, Precision::bf16);
  EXPECT_EQ(second.measurements, 0);
  EXPECT_EQ(cached.flops, measured.flops);
  EXPECT_EQ(cached.source, "cached in " + path);

  stable_peak(second, Precision::fp32);  // another precision is another key
  EXPECT_EQ(second.measurements, 3);
  const nlohmann::json cache = nlohmann::json::parse(std::ifstream(path));
  ASSERT_EQ(cache.size(), 2u);
  for (const auto& [key, value] : cache.items())
    EXPECT_NE(key.find(" | " + std::to_string(num_threads()) + " threads | "), std::string::npos) << key;

  std::ofstream(path) << "not json";  // a damaged cache is measured again
  CountingPeak third(2e11);
  EXPECT_EQ(stable_peak(third, Precision::bf16).flops, 2e11 + 3);
  ::unsetenv("XDG_CACHE_HOME");
}

TEST(MetricsPeak, APeakAStepExceededIsMeasuredAgainAndTheBetterCached) {
  const std::filesystem::path dir = replica::testing::scratch_dir("peak_again");
  std::filesystem::remove_all(dir);
  ::setenv("XDG_CACHE_HOME", dir.c_str(), 1);
  CountingPeak under_load(1e9);
  const Peak low = stable_peak(under_load, Precision::bf16);
  CountingPeak quiet(4e11);
  const Peak again = remeasured_peak(quiet, Precision::bf16, low);
  EXPECT_EQ(quiet.measurements, 3);
  EXPECT_EQ(again.flops, 4e11 + 3);
  EXPECT_EQ(again.source, "measured now, cached in " + peak_cache_path());
  EXPECT_EQ(stable_peak(quiet, Precision::bf16).flops, 4e11 + 3) << "the next run reads the better peak";
  CountingPeak busier(1e8);  // measured again lower still: the cache keeps the better
  EXPECT_EQ(remeasured_peak(busier, Precision::bf16, again).flops, 4e11 + 3);
  EXPECT_EQ(stable_peak(busier, Precision::bf16).flops, 4e11 + 3);
  ::unsetenv("XDG_CACHE_HOME");
}

TEST(MetricsPeak, UtilizationIsNoneAboveThePeak) {
  EXPECT_EQ(model_flops_utilization(1e11, 4e11), 0.25);
  EXPECT_EQ(model_flops_utilization(4e11, 4e11), 1.0);
  EXPECT_EQ(model_flops_utilization(5e11, 4e11), std::nullopt);
  EXPECT_EQ(model_flops_utilization(1e11, 0), std::nullopt);
}

}  // namespace
}  // namespace replica::metrics
