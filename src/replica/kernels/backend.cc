// The backend factory, device names and HostMirror. The CUDA backend is linked in only when the build has
// it (REPLICA_HAVE_CUDA_BACKEND, kernels/cuda/backend.cc).
#include "replica/kernels/backend.h"

#include "replica/core/error.h"

namespace replica {

#ifdef REPLICA_HAVE_CUDA_BACKEND
std::unique_ptr<Backend> make_cuda_backend(int gpu);  // kernels/cuda/backend.cc
int cuda_device_count();
#endif

const char* device_name(Device d) { return d == Device::cpu ? "cpu" : "cuda"; }

Device parse_device(const std::string& text) {
  if (text == "cpu") return Device::cpu;
  if (text == "cuda") return Device::cuda;
  fail("device must be 'cpu' or 'cuda', got '{}'", text);
}

std::unique_ptr<Backend> new_cuda_backend(int gpu) {
#ifdef REPLICA_HAVE_CUDA_BACKEND
  check(cuda_device_count() > 0, "device=cuda: no CUDA device is visible to this process");
  return make_cuda_backend(gpu);
#else
  (void)gpu;
  fail("device=cuda: this replica was built without the CUDA backend (CMake found no CUDA compiler, or "
       "-DREPLICA_CUDA=OFF)");
#endif
}

Backend& backend_for(Device device, int gpu) {
  if (device == Device::cpu) return cpu_backend();
  static const std::unique_ptr<Backend> cuda = new_cuda_backend(gpu);
  return *cuda;
}

bool cuda_available() {
#ifdef REPLICA_HAVE_CUDA_BACKEND
  return cuda_device_count() > 0;
#else
  return false;
#endif
}

OnBackend::OnBackend(Backend& backend, const std::vector<float>& host) : host_(host.data()) {
  if (backend.host_memory() || host.empty()) return;
  copy_ = DeviceArray<float>(backend, host.size());
  backend.to_device(copy_.data(), host.data(), host.size() * sizeof(float));
}

HostMirror::HostMirror(Backend& backend, float* data, size_t n)
    : backend_(backend), device_(data), host_(backend.host_memory() ? data : nullptr) {
  if (!host_) staged_.resize(n);
}

void HostMirror::upload() {
  if (!host_) backend_.to_device(device_, staged_.data(), staged_.size() * sizeof(float));
}

}  // namespace replica
