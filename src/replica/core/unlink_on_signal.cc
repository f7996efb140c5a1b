// The handler may only call async-signal-safe functions: unlink, signal and raise are; the paths are copied into
// static buffers beforehand, since a std::string's memory is not safe to read from a handler that interrupted an
// allocation.
#include "replica/core/unlink_on_signal.h"

#include <signal.h>
#include <unistd.h>

#include <cstring>

#include "replica/core/error.h"

namespace replica {
namespace {

constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP};
char g_paths[UnlinkOnSignal::kMaxPaths][4096];
volatile sig_atomic_t g_count = 0;
struct sigaction g_previous[std::size(kSignals)];

extern "C" void unlink_and_die(int signal_number) {
  for (sig_atomic_t i = 0; i < g_count; i++) unlink(g_paths[i]);
  signal(signal_number, SIG_DFL);
  raise(signal_number);
}

}  // namespace

UnlinkOnSignal::UnlinkOnSignal(const std::vector<std::string>& paths) {
  check(g_count == 0, "UnlinkOnSignal: one at a time");
  check(paths.size() <= kMaxPaths, "UnlinkOnSignal: {} paths, at most {}", paths.size(), kMaxPaths);
  for (size_t i = 0; i < paths.size(); i++) {
    check(paths[i].size() < sizeof(g_paths[i]), "{}: path too long to clean up after a signal", paths[i]);
    std::memcpy(g_paths[i], paths[i].c_str(), paths[i].size() + 1);
  }
  g_count = sig_atomic_t(paths.size());
  struct sigaction action {};
  action.sa_handler = unlink_and_die;
  sigemptyset(&action.sa_mask);
  for (size_t s = 0; s < std::size(kSignals); s++) sigaction(kSignals[s], &action, &g_previous[s]);
}

UnlinkOnSignal::~UnlinkOnSignal() {
  for (size_t s = 0; s < std::size(kSignals); s++) sigaction(kSignals[s], &g_previous[s], nullptr);
  g_count = 0;
}

}  // namespace replica
