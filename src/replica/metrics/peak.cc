// The CPU peak cache (a JSON object keyed by "CPU model | threads | precision") and MFU.
#include "replica/metrics/peak.h"

#include <fmt/core.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "replica/core/error.h"
#include "replica/core/file.h"
#include "replica/core/threads.h"

namespace replica::metrics {
namespace {

std::string cpu_model() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);)
    if (line.rfind("model name", 0) == 0 && line.find(':') != std::string::npos)
      return line.substr(line.find(':') + 2);
  return "unknown CPU";
}

nlohmann::json read_cache(const std::string& path) {
  if (!std::filesystem::is_regular_file(path)) return nlohmann::json::object();
  nlohmann::json cache = nlohmann::json::parse(read_text_file(path), nullptr, /*allow_exceptions=*/false);
  return cache.is_object() ? cache : nlohmann::json::object();  // a damaged cache is measured again, not an error
}

std::string cache_key(Precision precision) {
  return fmt::format("{} | {} threads | {}", cpu_model(), num_threads(), precision_name(precision));
}

// Measures the CPU peak (the best of three measurements is the least disturbed one; a few seconds) and caches the
// better of it and `floor`.
Peak measure_and_cache(Backend& backend, Precision precision, double floor) {
  const std::string path = peak_cache_path();
  double best = floor;
  for (int i = 0; i < 3; i++) best = std::max(best, backend.peak_flops(precision));
  nlohmann::json cache = read_cache(path);
  cache[cache_key(precision)] = best;
  try {
    std::filesystem::create_directories(std::filesystem::path(path).parent_path());
    write_text_file_atomic(path, cache.dump(2) + "\n");
  } catch (const std::exception& e) {
    return {best, fmt::format("measured now; not cached ({})", e.what())};
  }
  return {best, fmt::format("measured now, cached in {}", path)};
}

}  // namespace

std::string peak_cache_path() {
  namespace fs = std::filesystem;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && *xdg != '\0')
    return (fs::path(xdg) / "replica" / "peak.json").string();
  const char* home = std::getenv("HOME");
  return (fs::path(home != nullptr ? home : ".") / ".cache" / "replica" / "peak.json").string();
}

Peak stable_peak(Backend& backend, Precision precision) {
  if (backend.device() != Device::cpu)  // a GPU is not shared: its own number needs no cache
    return {backend.peak_flops(precision), "the datasheet's, or measured on a GPU without one"};
  const std::string path = peak_cache_path();
  const nlohmann::json cache = read_cache(path);
  const std::string key = cache_key(precision);
  if (cache.contains(key) && cache[key].is_number() && cache[key].get<double>() > 0)
    return {cache[key].get<double>(), fmt::format("cached in {}", path)};
  return measure_and_cache(backend, precision, 0);
}

Peak remeasured_peak(Backend& backend, Precision precision, const Peak& exceeded) {
  if (backend.device() != Device::cpu) return exceeded;
  return measure_and_cache(backend, precision, exceeded.flops);
}

std::optional<double> model_flops_utilization(double achieved_flops, double peak_flops) {
  if (!(peak_flops > 0) || achieved_flops > peak_flops) return std::nullopt;
  return achieved_flops / peak_flops;
}

}  // namespace replica::metrics
