// The MFU denominator: a peak FLOP rate per rank that stays the same from run to run, and the MFU it gives.
//
// A CPU has no datasheet number that fits every machine, so its peak is a measured GEMM rate. Measured at each
// start, as replica once did, it moves with whatever else runs on the machine (168 to 421 GFLOP/s between runs on
// two shared cores): a start under load gives a low peak and an MFU above 100 % once the load goes. So the CPU peak
// is measured once per machine (CPU model, thread count, precision) and cached in
// $XDG_CACHE_HOME/replica/peak.json (~/.cache/replica/peak.json without XDG_CACHE_HOME); a run whose steps go faster
// than the cached peak measures it again once and keeps the better. GPUs report the datasheet's dense peak
// (Backend::peak_flops), which needs no cache.
#pragma once
#include <optional>
#include <string>

#include "replica/kernels/backend.h"

namespace replica::metrics {

struct Peak {
  double flops = 0;    // per rank, FLOP/s
  std::string source;  // how it was found: the datasheet, "cached in PATH", "measured now, cached in PATH"
};

// The peak of `backend` at `precision` (on the CPU: the cached measurement, measuring and caching it when absent).
Peak stable_peak(Backend& backend, Precision precision);

// After a run's steps exceeded `exceeded` (a CPU peak measured under load, or cached before the machine got faster):
// the peak measured again now, and the better of the two cached. What was exceeded, unchanged, on a GPU.
Peak remeasured_peak(Backend& backend, Precision precision, const Peak& exceeded);

// Where the CPU peak cache lives.
std::string peak_cache_path();

// achieved / peak, or none when the achieved rate exceeds the peak: then the peak is not trustworthy (measured under
// load) and the MFU is "n/a" rather than above 100 %.
std::optional<double> model_flops_utilization(double achieved_flops, double peak_flops);

// The dense datasheet peak of the SXM Hopper parts, H100 and H200, which share the compute die and clocks: bf16
// 989.4 TFLOP/s (1830 MHz × 528 tensor cores × 1024 FLOP per clock; ../shared/reference/gpu-performance.md §4), fp32
// 66.9 TFLOP/s. What a CUDA backend on them reports, and what `replica plan` estimates with.
inline double hopper_peak_flops(Precision precision) { return precision == Precision::bf16 ? 989.4e12 : 66.9e12; }

}  // namespace replica::metrics
