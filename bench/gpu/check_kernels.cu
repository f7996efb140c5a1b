// GPU kernel checks and step benchmark, driven by bench/gpu/run.sh.
//   check_kernels check   every CUDA kernel on random inputs against the CPU kernel: a table of the largest
//                         error relative to the reference's largest magnitude, against a bound per dtype.
//   check_kernels bench   a 1B- and a 7B-class OLMo 3 training step assembled from timed pieces (GEMMs,
//                         attention, norms, LM head + loss, AdamW) on this GPU, with an MFU estimate.
// Exit status: 0 when every check passes, 1 when one fails, 2 on a CUDA error.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "replica/core/bf16.h"
#include "replica/kernels/adamw_scalars.h"
#include "replica/kernels/cpu/adamw.h"
#include "replica/kernels/cpu/attention.h"
#include "replica/kernels/cpu/embedding.h"
#include "replica/kernels/cpu/gemm.h"
#include "replica/kernels/cpu/lm_head_loss.h"
#include "replica/kernels/cpu/rmsnorm.h"
#include "replica/kernels/cpu/rope.h"
#include "replica/kernels/cpu/swiglu.h"
#include "replica/kernels/cuda/adamw.h"
#include "replica/kernels/cuda/attention.h"
#include "replica/kernels/cuda/embedding.h"
#include "replica/kernels/cuda/gemm.h"
#include "replica/kernels/cuda/grad_norm.h"
#include "replica/kernels/cuda/lm_head_loss.h"
#include "replica/kernels/cuda/rmsnorm.h"
#include "replica/kernels/cuda/rope.h"
#include "replica/kernels/cuda/swiglu.h"
#include "replica/optim/clip.h"

namespace {

using namespace replica;
using cuda::Context;

// Error bounds, relative to the reference's largest magnitude. fp32: different summation orders and exp
// implementations. bf16: the same rounded operands, fp32 accumulation on the GPU against double on the CPU.
constexpr double kFp32Bound = 2e-5;
constexpr double kBf16Bound = 1e-4;
// bf16 values rounded from fp32 results that GPU and CPU compute in different orders (the LM head's logit
// gradient): an element near a rounding boundary lands one bf16 ulp (2^-8 relative) apart, so the products
// built on them are held to half an ulp of the largest magnitude. A wrong gradient is off by far more.
constexpr double kBf16RoundedBound = 2e-3;
constexpr double kExact = 0.0;  // same operations in the same order: the same bits

// A device array owned for one scope; copies go through the context's stream.
template <typename T>
struct DeviceArray {
  Context& ctx;
  T* p = nullptr;
  size_t n;
  DeviceArray(Context& c, size_t count) : ctx(c), n(count) {
    cuda::check_cuda(cudaMalloc(&p, std::max<size_t>(n, 1) * sizeof(T)), "cudaMalloc");
  }
  DeviceArray(Context& c, const std::vector<T>& host) : DeviceArray(c, host.size()) { upload(host); }
  ~DeviceArray() { cudaFree(p); }
  DeviceArray(const DeviceArray&) = delete;
  void upload(const std::vector<T>& host) {
    cuda::check_cuda(cudaMemcpyAsync(p, host.data(), n * sizeof(T), cudaMemcpyHostToDevice, ctx.stream()), "upload");
    ctx.synchronize();
  }
  std::vector<T> download() const {
    std::vector<T> host(n);
    cuda::check_cuda(cudaMemcpyAsync(host.data(), p, n * sizeof(T), cudaMemcpyDeviceToHost, ctx.stream()),
                     "download");
    ctx.synchronize();
    return host;
  }
};

std::vector<float> random_vector(size_t n, uint64_t seed, float scale = 1.0f) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = normal(rng);
  return v;
}

// max |got − want| / max |want|; infinite when got has a NaN or the sizes differ.
double rel_error(const std::vector<float>& got, const std::vector<float>& want) {
  if (got.size() != want.size()) return INFINITY;
  double diff = 0.0, scale = 0.0;
  for (size_t i = 0; i < got.size(); i++) {
    if (std::isnan(got[i])) return INFINITY;
    diff = std::max(diff, std::fabs(double(got[i]) - double(want[i])));
    scale = std::max(scale, std::fabs(double(want[i])));
  }
  return scale > 0.0 ? diff / scale : diff;
}

double rel_error(double got, double want) {
  return std::isnan(got) ? INFINITY : std::fabs(got - want) / std::max(std::fabs(want), 1e-300);
}

struct CheckTable {
  int failures = 0, rows = 0;
  CheckTable() {
    std::printf("| kernel | shape | output | rel. error | bound | ok |\n|---|---|---|---|---|---|\n");
  }
  void row(const std::string& kernel, const std::string& shape, const std::string& output, double error,
           double bound) {
    const bool ok = error <= bound;
    failures += ok ? 0 : 1;
    rows++;
    std::printf("| %s | %s | %s | %.2e | %.0e | %s |\n", kernel.c_str(), shape.c_str(), output.c_str(), error, bound,
                ok ? "yes" : "**NO**");
    std::fflush(stdout);
  }
};

const char* dtype(Precision p) { return p == Precision::bf16 ? "bf16" : "fp32"; }

std::string shape_text(std::initializer_list<std::pair<const char*, int64_t>> dims) {
  std::string s;
  for (const auto& [name, value] : dims) s += (s.empty() ? "" : " ") + std::string(name) + "=" + std::to_string(value);
  return s;
}

void check_gemm(Context& ctx, CheckTable& t) {
  const int64_t M = 193, N = 130, K = 257;
  for (Precision p : {Precision::fp32, Precision::bf16})
    for (int ta = 0; ta < 2; ta++)
      for (int tb = 0; tb < 2; tb++) {
        const int64_t lda = ta ? M : K, ldb = tb ? K : N, ldc = N;
        const std::vector<float> A = random_vector(static_cast<size_t>(M * K), 1), B = random_vector(static_cast<size_t>(K * N), 2),
                                 C0 = random_vector(static_cast<size_t>(M * N), 3);
        const bool accumulate = (ta + tb) % 2 == 1;
        std::vector<float> want = C0;
        cpu::gemm(ta, tb, M, N, K, A.data(), lda, B.data(), ldb, want.data(), ldc, accumulate, p);
        DeviceArray<float> dA(ctx, A), dB(ctx, B), dC(ctx, C0);
        cuda::gemm(ctx, ta, tb, M, N, K, dA.p, lda, dB.p, ldb, dC.p, ldc, accumulate, p);
        const std::string shape = shape_text({{"M", M}, {"N", N}, {"K", K}}) + (ta ? " Aᵀ" : "") + (tb ? " Bᵀ" : "") +
                                  (accumulate ? " +=" : "");
        t.row(std::string("gemm ") + dtype(p), shape, "C", rel_error(dC.download(), want),
              p == Precision::bf16 ? kBf16Bound : kFp32Bound);
      }
  // Weights rounded once by the caller (B16), as the model does each step.
  const std::vector<float> x = random_vector(static_cast<size_t>(M * K), 4), w = random_vector(static_cast<size_t>(N * K), 5);
  std::vector<float> want(static_cast<size_t>(M * N));
  cpu::gemm(false, true, M, N, K, x.data(), K, w.data(), K, want.data(), N, false, Precision::bf16);
  DeviceArray<float> dx(ctx, x), dw(ctx, w), dy(ctx, size_t(M * N));
  DeviceArray<bf16> dw16(ctx, w.size());
  cuda::convert_to_bf16(ctx, dw.p, dw16.p, int64_t(w.size()));
  cuda::gemm(ctx, false, true, M, N, K, dx.p, K, dw.p, K, dy.p, N, false, Precision::bf16, dw16.p);
  t.row("linear_forward bf16 (B16)", shape_text({{"M", M}, {"N", N}, {"K", K}}), "y", rel_error(dy.download(), want),
        kBf16Bound);
  // Activations rounded once too (A16, and B16 for the weight gradient's input), as the model's bf16 path does,
  // against rounding inside the call (the same bf16 operands: equal unless cuBLASLt picks another algorithm).
  DeviceArray<bf16> dx16(ctx, x.size());
  cuda::convert_to_bf16(ctx, dx.p, dx16.p, int64_t(x.size()));
  DeviceArray<float> dy_pre(ctx, size_t(M * N));
  cuda::gemm(ctx, false, true, M, N, K, dx.p, K, dw.p, K, dy_pre.p, N, false, Precision::bf16, dw16.p, dx16.p);
  t.row("linear_forward bf16 (A16, B16)", shape_text({{"M", M}, {"N", N}, {"K", K}}), "y = in-call rounding",
        rel_error(dy_pre.download(), dy.download()), kBf16Bound);
  DeviceArray<float> dW(ctx, w.size()), dW_pre(ctx, w.size());
  cuda::gemm(ctx, true, false, N, K, M, dy.p, N, dx.p, K, dW.p, K, false, Precision::bf16);
  DeviceArray<bf16> dy16(ctx, size_t(M * N));
  cuda::convert_to_bf16(ctx, dy.p, dy16.p, M * N);
  cuda::gemm(ctx, true, false, N, K, M, dy.p, N, dx.p, K, dW_pre.p, K, false, Precision::bf16, dx16.p, dy16.p);
  t.row("linear_backward_weight bf16 (A16, B16)", shape_text({{"M", M}, {"N", N}, {"K", K}}), "dW = in-call rounding",
        rel_error(dW_pre.download(), dW.download()), kBf16Bound);
}

void check_rmsnorm(Context& ctx, CheckTable& t) {
  const int64_t rows = 301, C = 1024;
  const float eps = 1e-6f;
  const std::vector<float> x = random_vector(static_cast<size_t>(rows * C), 10), w = random_vector(static_cast<size_t>(C), 11),
                           dy = random_vector(static_cast<size_t>(rows * C), 12), dx0 = random_vector(static_cast<size_t>(rows * C), 13),
                           dw0 = random_vector(static_cast<size_t>(C), 14);
  std::vector<float> y(x.size()), rstd(static_cast<size_t>(rows)), dx = dx0, dw = dw0;
  cpu::rmsnorm_forward(y.data(), rstd.data(), x.data(), w.data(), rows, C, eps);
  cpu::rmsnorm_backward(dx.data(), dw.data(), dy.data(), x.data(), w.data(), rstd.data(), rows, C, true);
  DeviceArray<float> d_x(ctx, x), d_w(ctx, w), d_dy(ctx, dy), d_dx(ctx, dx0), d_dw(ctx, dw0), d_y(ctx, x.size()),
      d_rstd(ctx, size_t(rows));
  cuda::rmsnorm_forward(ctx, d_y.p, d_rstd.p, d_x.p, d_w.p, rows, C, eps);
  cuda::rmsnorm_backward(ctx, d_dx.p, d_dw.p, d_dy.p, d_x.p, d_w.p, d_rstd.p, rows, C, true);
  const std::string shape = shape_text({{"rows", rows}, {"C", C}});
  t.row("rmsnorm_forward", shape, "y", rel_error(d_y.download(), y), kFp32Bound);
  t.row("rmsnorm_forward", shape, "rstd", rel_error(d_rstd.download(), rstd), kFp32Bound);
  t.row("rmsnorm_backward", shape + " +=", "dx", rel_error(d_dx.download(), dx), kFp32Bound);
  t.row("rmsnorm_backward", shape, "dw", rel_error(d_dw.download(), dw), kFp32Bound);
}

void check_rope(Context& ctx, CheckTable& t) {
  const int64_t B = 2, T = 67, heads = 3, D = 64;
  const RopeTable table(T, D, 500000.0);
  const std::vector<float> x0 = random_vector(static_cast<size_t>(B * T * heads * D), 20);
  std::vector<float> fwd = x0, bwd = x0;
  cpu::rope_forward(fwd.data(), table, B, T, heads, D);
  cpu::rope_backward(bwd.data(), table, B, T, heads, D);
  DeviceArray<float> d_cos(ctx, table.cos), d_sin(ctx, table.sin), d_fwd(ctx, x0), d_bwd(ctx, x0);
  cuda::rope_forward(ctx, d_fwd.p, d_cos.p, d_sin.p, B, T, heads, D);
  cuda::rope_backward(ctx, d_bwd.p, d_cos.p, d_sin.p, B, T, heads, D);
  const std::string shape = shape_text({{"B", B}, {"T", T}, {"heads", heads}, {"D", D}});
  t.row("rope_forward", shape, "x", rel_error(d_fwd.download(), fwd), kFp32Bound);
  t.row("rope_backward", shape, "dx", rel_error(d_bwd.download(), bwd), kFp32Bound);
}

// Attention outputs of one run: forward (out, lse) and backward (dq, dk, dv) on the same inputs.
struct AttentionResult {
  std::vector<float> out, lse, dq, dk, dv;
};

struct AttentionInputs {
  std::vector<float> q, k, v, dout;
  explicit AttentionInputs(const AttentionShape& s)
      : q(random_vector(size_t(s.B * s.T * s.H * s.D), 30)), k(random_vector(size_t(s.B * s.T * s.K * s.D), 31)),
        v(random_vector(size_t(s.B * s.T * s.K * s.D), 32)), dout(random_vector(size_t(s.B * s.T * s.H * s.D), 33)) {}
};

AttentionResult attention_cpu(const AttentionInputs& in, const AttentionShape& s) {
  AttentionResult r{std::vector<float>(in.q.size()), std::vector<float>(size_t(s.B * s.H * s.T)),
                    std::vector<float>(in.q.size()), std::vector<float>(in.k.size()), std::vector<float>(in.k.size())};
  cpu::attention_forward(r.out.data(), r.lse.data(), in.q.data(), in.k.data(), in.v.data(), s);
  cpu::attention_backward(r.dq.data(), r.dk.data(), r.dv.data(), in.dout.data(), r.out.data(), r.lse.data(),
                          in.q.data(), in.k.data(), in.v.data(), s);
  return r;
}

// The attention kernels: fp32 on CUDA cores; bf16 on tensor cores through mma.sync (what the backend runs by
// default) and through Hopper's wgmma.
enum class AttentionKernel { fp32, mma, wgmma };
constexpr AttentionKernel kAttentionKernels[] = {AttentionKernel::fp32, AttentionKernel::mma, AttentionKernel::wgmma};
constexpr AttentionKernel kTensorCoreAttentionKernels[] = {AttentionKernel::mma, AttentionKernel::wgmma};
const char* name(AttentionKernel kernel) {
  switch (kernel) {
    case AttentionKernel::fp32: return "fp32";
    case AttentionKernel::mma: return "bf16 mma";
    case AttentionKernel::wgmma: return "bf16 wgmma";
  }
  return "";
}
const char* suffix(AttentionKernel kernel) {
  switch (kernel) {
    case AttentionKernel::fp32: return "";
    case AttentionKernel::mma: return "_mma";
    case AttentionKernel::wgmma: return "_wgmma";
  }
  return "";
}

void attention_forward_gpu(Context& ctx, AttentionKernel kernel, float* out, float* lse, const float* q, const float* k,
                           const float* v, const AttentionShape& s) {
  if (kernel == AttentionKernel::fp32) cuda::attention_forward(ctx, out, lse, q, k, v, s);
  if (kernel == AttentionKernel::mma) cuda::attention_forward_mma(ctx, out, lse, q, k, v, s);
  if (kernel == AttentionKernel::wgmma) cuda::attention_forward_wgmma(ctx, out, lse, q, k, v, s);
}

void attention_backward_gpu(Context& ctx, AttentionKernel kernel, float* dq, float* dk, float* dv, const float* dout,
                            const float* out, const float* lse, const float* q, const float* k, const float* v,
                            const AttentionShape& s) {
  if (kernel == AttentionKernel::fp32) cuda::attention_backward(ctx, dq, dk, dv, dout, out, lse, q, k, v, s);
  if (kernel == AttentionKernel::mma) cuda::attention_backward_mma(ctx, dq, dk, dv, dout, out, lse, q, k, v, s);
  if (kernel == AttentionKernel::wgmma) cuda::attention_backward_wgmma(ctx, dq, dk, dv, dout, out, lse, q, k, v, s);
}

// One kernel's forward, then its backward on the GPU's own out and lse.
AttentionResult attention_gpu(Context& ctx, const AttentionInputs& in, const AttentionShape& s, AttentionKernel kernel) {
  const size_t nq = in.q.size(), nk = in.k.size(), nl = size_t(s.B * s.H * s.T);
  DeviceArray<float> q(ctx, in.q), k(ctx, in.k), v(ctx, in.v), dout(ctx, in.dout), out(ctx, nq), lse(ctx, nl),
      dq(ctx, nq), dk(ctx, nk), dv(ctx, nk);
  attention_forward_gpu(ctx, kernel, out.p, lse.p, q.p, k.p, v.p, s);
  attention_backward_gpu(ctx, kernel, dq.p, dk.p, dv.p, dout.p, out.p, lse.p, q.p, k.p, v.p, s);
  return {out.download(), lse.download(), dq.download(), dk.download(), dv.download()};
}

std::string attention_shape_text(const AttentionShape& s) {
  return shape_text({{"B", s.B}, {"T", s.T}, {"H", s.H}, {"K", s.K}, {"D", s.D}, {"W", s.window}});
}

// One row per output; `error` compares two results (relative error, or 0 / inf for bitwise equality).
void attention_rows(CheckTable& t, const std::string& suffix, const std::string& shape, const AttentionResult& got,
                    const AttentionResult& want, double bound,
                    const std::function<double(const std::vector<float>&, const std::vector<float>&)>& error) {
  t.row("attention_forward" + suffix, shape, "out", error(got.out, want.out), bound);
  t.row("attention_forward" + suffix, shape, "lse", error(got.lse, want.lse), bound);
  t.row("attention_backward" + suffix, shape, "dq", error(got.dq, want.dq), bound);
  t.row("attention_backward" + suffix, shape, "dk", error(got.dk, want.dk), bound);
  t.row("attention_backward" + suffix, shape, "dv", error(got.dv, want.dv), bound);
}

double relative(const std::vector<float>& got, const std::vector<float>& want) { return rel_error(got, want); }

double bitwise(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0 ? 0.0 : INFINITY;
}

void check_attention(Context& ctx, CheckTable& t) {
  const AttentionShape shapes[] = {{2, 200, 4, 2, 64, 0}, {1, 300, 4, 4, 128, 77}, {1, 130, 6, 2, 32, 33}};
  for (const AttentionShape& s : shapes) {
    const AttentionInputs in(s);
    attention_rows(t, "", attention_shape_text(s), attention_gpu(ctx, in, s, AttentionKernel::fp32),
                   attention_cpu(in, s), kFp32Bound, relative);
  }
}

// bf16 operands (q, k, v, dout, P, dS rounded to bf16, fp32 accumulation) against the fp32 CPU kernel.
constexpr double kAttentionBf16Bound = 2e-2;
constexpr AttentionShape kAttentionBf16Bench{1, 300, 8, 2, 128, 64};  // also verified by `bench`

// Both tensor-core variants (mma.sync, wgmma).
void check_attention_bf16(Context& ctx, CheckTable& t, AttentionKernel kernel) {
  const std::string tag = suffix(kernel);
  // Odd lengths (tails of the 64-row tiles), windows shorter and longer than a tile, GQA, and a head dim that
  // is not a power of two.
  const AttentionShape shapes[] = {{2, 77, 8, 2, 64, 0},   {2, 300, 8, 2, 128, 16}, kAttentionBf16Bench,
                                   {1, 300, 4, 4, 128, 0}, {2, 300, 8, 2, 64, 64},  {1, 130, 6, 2, 48, 33}};
  for (const AttentionShape& s : shapes) {
    const AttentionInputs in(s);
    attention_rows(t, tag, attention_shape_text(s), attention_gpu(ctx, in, s, kernel), attention_cpu(in, s),
                   kAttentionBf16Bound, relative);
  }
  // A single token: out = v, and dq = dk = 0 exactly in real arithmetic, so what the bf16 kernel returns there is
  // rounding noise (dO·V from bf16 operands minus delta from fp32 ones) that no relative bound can judge. The
  // row checks that every output is finite and out matches.
  {
    const AttentionShape s{1, 1, 2, 1, 128, 0};
    const AttentionInputs in(s);
    const AttentionResult got = attention_gpu(ctx, in, s, kernel), want = attention_cpu(in, s);
    double error = rel_error(got.out, want.out);
    for (const std::vector<float>* x : {&got.lse, &got.dq, &got.dk, &got.dv})
      for (float value : *x)
        if (!std::isfinite(value)) error = INFINITY;
    t.row("attention" + tag, attention_shape_text(s), "out; all finite", error, kAttentionBf16Bound);
  }
  // Determinism: a second run gives the same bits.
  const AttentionShape s{2, 300, 8, 2, 128, 64};
  const AttentionInputs in(s);
  attention_rows(t, tag, attention_shape_text(s) + " rerun", attention_gpu(ctx, in, s, kernel),
                 attention_gpu(ctx, in, s, kernel), kExact, bitwise);
  // A head dim the tensor-core tiles cannot take is refused, not miscomputed.
  const AttentionShape bad{1, 16, 2, 2, 72, 0};
  double refused = INFINITY;
  try {
    attention_gpu(ctx, AttentionInputs(bad), bad, kernel);
  } catch (const std::invalid_argument&) {
    refused = 0.0;
  }
  t.row("attention_forward" + tag, attention_shape_text(bad), "throws", refused, kExact);
}

void check_swiglu(Context& ctx, CheckTable& t) {
  const int64_t n = 100003;
  const std::vector<float> g = random_vector(static_cast<size_t>(n), 40, 3.0f), u = random_vector(static_cast<size_t>(n), 41),
                           ds = random_vector(static_cast<size_t>(n), 42);
  std::vector<float> s(static_cast<size_t>(n)), dg(static_cast<size_t>(n)), du(static_cast<size_t>(n));
  cpu::swiglu_forward(s.data(), g.data(), u.data(), n);
  cpu::swiglu_backward(dg.data(), du.data(), ds.data(), g.data(), u.data(), n);
  DeviceArray<float> d_g(ctx, g), d_u(ctx, u), d_ds(ctx, ds), d_s(ctx, size_t(n)), d_dg(ctx, size_t(n)),
      d_du(ctx, size_t(n));
  cuda::swiglu_forward(ctx, d_s.p, d_g.p, d_u.p, n);
  cuda::swiglu_backward(ctx, d_dg.p, d_du.p, d_ds.p, d_g.p, d_u.p, n);
  const std::string shape = shape_text({{"n", n}});
  t.row("swiglu_forward", shape, "s", rel_error(d_s.download(), s), kFp32Bound);
  t.row("swiglu_backward", shape, "dg", rel_error(d_dg.download(), dg), kFp32Bound);
  t.row("swiglu_backward", shape, "du", rel_error(d_du.download(), du), kFp32Bound);
}

void check_embedding(Context& ctx, CheckTable& t) {
  const int64_t V = 97, C = 300, N = 1000;
  std::vector<int32_t> ids(static_cast<size_t>(N));
  std::mt19937 rng(50);
  for (int32_t& id : ids) id = int32_t(rng() % uint32_t(V));
  const std::vector<float> table = random_vector(static_cast<size_t>(V * C), 51), dout = random_vector(static_cast<size_t>(N * C), 52),
                           dtable0 = random_vector(static_cast<size_t>(V * C), 53);
  std::vector<float> out(static_cast<size_t>(N * C)), dtable = dtable0;
  cpu::embedding_forward(out.data(), ids.data(), table.data(), N, C);
  cpu::embedding_backward(dtable.data(), ids.data(), dout.data(), N, C);
  DeviceArray<int32_t> d_ids(ctx, ids);
  DeviceArray<float> d_table(ctx, table), d_dout(ctx, dout), d_dtable(ctx, dtable0), d_out(ctx, size_t(N * C));
  cuda::embedding_forward(ctx, d_out.p, d_ids.p, d_table.p, N, C);
  cuda::embedding_backward(ctx, d_dtable.p, ids.data(), d_dout.p, N, C);
  const std::string shape = shape_text({{"V", V}, {"C", C}, {"N", N}});
  t.row("embedding_forward", shape, "out", rel_error(d_out.download(), out), kExact);
  t.row("embedding_backward", shape + " +=", "dtable", rel_error(d_dtable.download(), dtable), kExact);
}

void check_lm_head_loss(Context& ctx, CheckTable& t) {
  const int64_t N = 150, C = 192, V = 3001;
  const float z_coef = 1e-5f, grad_scale = 1.0f / 117.0f;
  std::vector<int32_t> targets(static_cast<size_t>(N));
  std::mt19937 rng(60);
  for (int32_t& y : targets) y = rng() % 5 == 0 ? kIgnoreLabel : int32_t(rng() % uint32_t(V));
  const std::vector<float> hidden = random_vector(static_cast<size_t>(N * C), 61), weight = random_vector(static_cast<size_t>(V * C), 62, 0.2f),
                           dweight0 = random_vector(static_cast<size_t>(V * C), 63, 0.01f);
  for (Precision p : {Precision::fp32, Precision::bf16}) {
    std::vector<float> dhidden(static_cast<size_t>(N * C)), dweight = dweight0;
    const LmHeadGrads grads{dhidden.data(), dweight.data(), grad_scale};
    const LossSums want = cpu::lm_head_loss(hidden.data(), weight.data(), targets.data(), N, C, V, z_coef, p, &grads);
    DeviceArray<float> d_hidden(ctx, hidden), d_weight(ctx, weight), d_dweight(ctx, dweight0),
        d_dhidden(ctx, size_t(N * C));
    DeviceArray<int32_t> d_targets(ctx, targets);
    const LmHeadGrads d_grads{d_dhidden.p, d_dweight.p, grad_scale};
    const LossSums got =
        cuda::lm_head_loss(ctx, d_hidden.p, d_weight.p, d_targets.p, N, C, V, z_coef, p, &d_grads);
    const LossSums eval = cuda::lm_head_loss(ctx, d_hidden.p, d_weight.p, d_targets.p, N, C, V, z_coef, p, nullptr);
    const double bound = p == Precision::bf16 ? kBf16Bound : kFp32Bound;
    const std::string kernel = std::string("lm_head_loss ") + dtype(p);
    const std::string shape = shape_text({{"N", N}, {"C", C}, {"V", V}});
    t.row(kernel, shape, "Σ ce", rel_error(got.ce, want.ce), bound);
    t.row(kernel, shape, "Σ z", rel_error(got.z, want.z), bound);
    t.row(kernel, shape, "labels", got.n_labels == want.n_labels ? 0.0 : INFINITY, kExact);
    t.row(kernel, shape + " eval", "Σ ce", rel_error(eval.ce, want.ce), bound);
    const double grad_bound = p == Precision::bf16 ? kBf16RoundedBound : kFp32Bound;
    t.row(kernel, shape, "dhidden", rel_error(d_dhidden.download(), dhidden), grad_bound);
    t.row(kernel, shape + " +=", "dweight", rel_error(d_dweight.download(), dweight), grad_bound);
  }
}

// Chunks of at most 2^15 floats over [begin, end), as optim/adamw.cc cuts a tensor.
void append_chunks(std::vector<AdamWChunk>& chunks, size_t begin, size_t end, bool decay) {
  for (size_t b = begin; b < end; b += size_t(1) << 15)
    chunks.push_back({b, std::min(b + (size_t(1) << 15), end), decay ? 1 : 0});
}

void check_adamw(Context& ctx, CheckTable& t) {
  // An embedding (no decay), a matrix and a norm, with 16-float padding between them left untouched.
  std::vector<AdamWChunk> chunks;
  append_chunks(chunks, 0, 70000, false);
  append_chunks(chunks, 70016, 120017, true);
  append_chunks(chunks, 120032, 120065, true);
  const size_t n = 120080;
  std::vector<float> params = random_vector(n, 70, 0.02f), m(n, 0.0f), v(n, 0.0f);
  DeviceArray<float> d_params(ctx, params), d_m(ctx, m), d_v(ctx, v), d_grads(ctx, n);
  DeviceArray<AdamWChunk> d_chunks(ctx, chunks);
  for (int64_t step = 1; step <= 3; step++) {
    const std::vector<float> grads = random_vector(n, uint64_t(70 + step), 1e-3f);
    const double lr = 3e-4 * double(step);
    const AdamWScalars s = adamw_scalars(0.9, 0.95, 1e-8, 0.1, step, lr);
    cpu::adamw_step(params.data(), grads.data(), m.data(), v.data(), 0, chunks.data(), int64_t(chunks.size()), s);
    d_grads.upload(grads);
    cuda::adamw_step(ctx, d_params.p, d_grads.p, d_m.p, d_v.p, 0, d_chunks.p, int64_t(chunks.size()), s);
  }
  const std::string shape = shape_text({{"n", int64_t(n)}, {"steps", 3}});
  t.row("adamw_step", shape, "params", rel_error(d_params.download(), params), kExact);
  t.row("adamw_step", shape, "exp_avg", rel_error(d_m.download(), m), kExact);
  t.row("adamw_step", shape, "exp_avg_sq", rel_error(d_v.download(), v), kExact);
}

void check_grad_norm(Context& ctx, CheckTable& t) {
  const size_t n = 1000123;
  const std::vector<float> g = random_vector(n, 80, 1e-2f);
  DeviceArray<float> d_g(ctx, g);
  const std::string shape = shape_text({{"n", int64_t(n)}});
  t.row("sum_of_squares", shape, "Σ g²", rel_error(cuda::sum_of_squares(ctx, d_g.p, n), sum_of_squares(g.data(), n)),
        1e-12);
  const double first = cuda::sum_of_squares(ctx, d_g.p, n), again = cuda::sum_of_squares(ctx, d_g.p, n);
  t.row("sum_of_squares", shape + " rerun", "Σ g²", first == again ? 0.0 : INFINITY, kExact);
}

// ---- Benchmark ----------------------------------------------------------------------------------------

struct ModelShape {
  const char* name;
  int64_t C, F, L, H, K, D, V, W, B, T;
  int64_t params() const { return L * (2 * C * H * D + 2 * C * K * D + 3 * C * F + 4 * C) + 2 * V * C + C; }
};

// Milliseconds per call of f: one untimed call, then the mean of `reps` timed back to back.
double time_ms(Context& ctx, const std::function<void()>& f, int reps) {
  f();
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  cudaEventRecord(start, ctx.stream());
  for (int i = 0; i < reps; i++) f();
  cudaEventRecord(stop, ctx.stream());
  ctx.synchronize();
  float ms = 0.0f;
  cudaEventElapsedTime(&ms, start, stop);
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  cuda::check_cuda(cudaGetLastError(), "benchmark");
  return double(ms) / reps;
}

// Visible (query, key) pairs of one head: Σ_i min(i + 1, W).
double attention_pairs(int64_t T, int64_t W) {
  double pairs = 0.0;
  for (int64_t i = 0; i < T; i++) pairs += double(W > 0 ? std::min(i + 1, W) : i + 1);
  return pairs;
}

// cuBLASLt bf16 throughput on an 8192³ product: the practical peak MFU is also reported against.
double measure_bf16_peak(Context& ctx) {
  const int64_t n = 8192;
  DeviceArray<bf16> a(ctx, size_t(n * n)), b(ctx, size_t(n * n));
  DeviceArray<float> c(ctx, size_t(n * n));
  cudaMemsetAsync(a.p, 0x3c, a.n * sizeof(bf16), ctx.stream());  // ~0.01: finite, nonzero operands
  cudaMemsetAsync(b.p, 0x3c, b.n * sizeof(bf16), ctx.stream());
  const double ms = time_ms(ctx, [&] { cuda::gemm_bf16(ctx, false, true, n, n, n, a.p, n, b.p, n, c.p, n, false); }, 10);
  return 2.0 * double(n) * double(n) * double(n) / (ms * 1e-3);
}

struct StepEstimate {
  double gemm_ms = 0, gemm_bf16_ms = 0, attention_ms = 0, other_ms = 0, head_ms = 0, optim_ms = 0;
  double flops = 0, gemm_flops = 0;  // per step: everything counted, and the layers' GEMMs alone
  const char* attention_kernel = "fp32";    // the attention kernel in attention_ms
  std::vector<std::string> attention_rows;  // every kernel's timings, printed after the step table
  double total_ms() const { return gemm_ms + attention_ms + other_ms + head_ms + optim_ms; }
};

// verified[kernel]: whether that attention kernel matched the CPU kernel in this run (fp32 always counts).
StepEstimate bench_model(Context& ctx, const ModelShape& m, const bool (&verified)[std::size(kAttentionKernels)]) {
  const int64_t N = m.B * m.T, C = m.C, F = m.F, HD = m.H * m.D, KD = m.K * m.D;
  StepEstimate e;
  // One layer's weights (fp32 masters and their bf16 copy) and activations.
  struct Linear {
    int64_t out, in;
  };
  const Linear linears[] = {{HD, C}, {KD, C}, {KD, C}, {C, HD}, {F, C}, {F, C}, {C, F}};
  const int64_t widest = std::max({HD, F, C});
  DeviceArray<float> w(ctx, size_t(widest * widest)), dw(ctx, size_t(widest * widest));
  DeviceArray<bf16> w16(ctx, size_t(widest * widest)), x16(ctx, size_t(N * widest)), y16(ctx, size_t(N * widest));
  DeviceArray<float> x(ctx, size_t(N * widest)), y(ctx, size_t(N * widest)), dx(ctx, size_t(N * widest));
  cudaMemsetAsync(w.p, 0, w.n * sizeof(float), ctx.stream());
  cudaMemsetAsync(x.p, 0, x.n * sizeof(float), ctx.stream());
  cudaMemsetAsync(y.p, 0, y.n * sizeof(float), ctx.stream());
  cudaMemsetAsync(w16.p, 0, w16.n * sizeof(bf16), ctx.stream());
  cudaMemsetAsync(x16.p, 0, x16.n * sizeof(bf16), ctx.stream());
  cudaMemsetAsync(y16.p, 0, y16.n * sizeof(bf16), ctx.stream());
  for (const Linear& l : linears) {
    const WeightRef ref(w.p, w16.p);
    e.gemm_ms += time_ms(ctx, [&] {
      cuda::gemm(ctx, false, true, N, l.out, l.in, x.p, l.in, ref.f32, l.in, y.p, l.out, false, Precision::bf16, ref.b16);
      cuda::gemm(ctx, false, false, N, l.in, l.out, y.p, l.out, ref.f32, l.in, dx.p, l.in, false, Precision::bf16, ref.b16);
      cuda::gemm(ctx, true, false, l.out, l.in, N, y.p, l.out, x.p, l.in, dw.p, l.in, true, Precision::bf16);
    }, 5);
    e.gemm_bf16_ms += time_ms(ctx, [&] {
      cuda::gemm_bf16(ctx, false, true, N, l.out, l.in, x16.p, l.in, w16.p, l.in, y.p, l.out, false);
      cuda::gemm_bf16(ctx, false, false, N, l.in, l.out, y16.p, l.out, w16.p, l.in, dx.p, l.in, false);
      cuda::gemm_bf16(ctx, true, false, l.out, l.in, N, y16.p, l.out, x16.p, l.in, dw.p, l.in, true);
    }, 5);
    e.gemm_flops += double(m.L) * 3 * 2.0 * double(N) * double(l.out) * double(l.in);
  }

  // Attention: three sliding-window layers to one full layer, as OLMo 3 interleaves them. Every kernel is
  // timed (forward alone, then forward + backward); the step uses the fastest one among those verified.
  {
    DeviceArray<float> q(ctx, size_t(N * HD)), k(ctx, size_t(N * KD)), v(ctx, size_t(N * KD)), out(ctx, size_t(N * HD)),
        lse(ctx, size_t(m.B * m.H * m.T)), dout(ctx, size_t(N * HD)), dq(ctx, size_t(N * HD)), dk(ctx, size_t(N * KD)),
        dv(ctx, size_t(N * KD));
    for (DeviceArray<float>* a : {&q, &k, &v, &dout}) cudaMemsetAsync(a->p, 0, a->n * sizeof(float), ctx.stream());
    e.attention_ms = INFINITY;
    for (AttentionKernel kernel : kAttentionKernels) {
      const int reps = kernel == AttentionKernel::fp32 ? 1 : 3;  // the fp32 kernel takes seconds at these sizes
      double ms[2];
      for (int full = 0; full < 2; full++) {
        const AttentionShape s{m.B, m.T, m.H, m.K, m.D, full ? 0 : m.W};
        const auto forward = [&] { attention_forward_gpu(ctx, kernel, out.p, lse.p, q.p, k.p, v.p, s); };
        const double fwd_ms = time_ms(ctx, forward, reps);
        ms[full] = time_ms(ctx, [&] {
          forward();
          attention_backward_gpu(ctx, kernel, dq.p, dk.p, dv.p, dout.p, out.p, lse.p, q.p, k.p, v.p, s);
        }, reps);
        const double fwd_flops = 4.0 * attention_pairs(m.T, s.window) * double(m.D) * double(m.H) * double(m.B);
        char row[256];
        std::snprintf(row, sizeof row, "| %s | %lldx%lld | %lld | %s%s | %.2f | %.1f | %.2f | %.1f |", m.name,
                      (long long)m.B, (long long)m.T, (long long)s.window, name(kernel),
                      verified[int(kernel)] ? "" : " (**failed its check**)", fwd_ms,
                      fwd_flops / (fwd_ms * 1e-3) / 1e12, ms[full], 3.0 * fwd_flops / (ms[full] * 1e-3) / 1e12);
        e.attention_rows.push_back(row);
      }
      const double step_ms = m.L * (0.75 * ms[0] + 0.25 * ms[1]);
      if (verified[int(kernel)] && step_ms < e.attention_ms) {
        e.attention_ms = step_ms;
        e.attention_kernel = name(kernel);
      }
    }
    const double pairs = 0.75 * attention_pairs(m.T, m.W) + 0.25 * attention_pairs(m.T, 0);
    e.flops += double(m.L) * 3.0 * 4.0 * pairs * double(m.D) * double(m.H) * double(m.B);  // fwd + 2× bwd
  }
  e.gemm_ms *= double(m.L);
  e.gemm_bf16_ms *= double(m.L);
  e.flops += e.gemm_flops;

  // Norms (q, k, two block norms), RoPE on q and k, SwiGLU: forward and backward.
  {
    DeviceArray<float> a(ctx, size_t(N * std::max(F, HD))), b(ctx, size_t(N * std::max(F, HD))),
        c(ctx, size_t(N * std::max(F, HD))), d(ctx, size_t(N * std::max(F, HD))), wn(ctx, size_t(std::max(C, HD))),
        dwn(ctx, size_t(std::max(C, HD))), rstd(ctx, size_t(N)), cs(ctx, size_t(m.T * m.D / 2));
    for (DeviceArray<float>* p : {&a, &b, &c, &d, &wn, &cs}) cudaMemsetAsync(p->p, 0, p->n * sizeof(float), ctx.stream());
    e.other_ms = m.L * time_ms(ctx, [&] {
      for (int64_t width : {HD, KD, C, C}) {
        cuda::rmsnorm_forward(ctx, a.p, rstd.p, b.p, wn.p, N, width, 1e-6f);
        cuda::rmsnorm_backward(ctx, c.p, dwn.p, a.p, b.p, wn.p, rstd.p, N, width, false);
      }
      for (int64_t heads : {m.H, m.K}) {
        cuda::rope_forward(ctx, a.p, cs.p, cs.p, m.B, m.T, heads, m.D);
        cuda::rope_backward(ctx, a.p, cs.p, cs.p, m.B, m.T, heads, m.D);
      }
      cuda::swiglu_forward(ctx, a.p, b.p, c.p, N * F);
      cuda::swiglu_backward(ctx, d.p, a.p, b.p, c.p, d.p, N * F);
    }, 3);
  }

  // LM head + loss with its backward, bf16 GEMMs.
  {
    DeviceArray<float> hidden(ctx, size_t(N * C)), head(ctx, size_t(m.V * C)), dhead(ctx, size_t(m.V * C)),
        dhidden(ctx, size_t(N * C));
    DeviceArray<bf16> head16(ctx, size_t(m.V * C));
    DeviceArray<int32_t> targets(ctx, std::vector<int32_t>(static_cast<size_t>(N), 7));
    for (DeviceArray<float>* p : {&hidden, &head}) cudaMemsetAsync(p->p, 0, p->n * sizeof(float), ctx.stream());
    cudaMemsetAsync(head16.p, 0, head16.n * sizeof(bf16), ctx.stream());
    const LmHeadGrads grads{dhidden.p, dhead.p, 1.0f / float(N)};
    e.head_ms = time_ms(ctx, [&] {
      cuda::lm_head_loss(ctx, hidden.p, WeightRef(head.p, head16.p), targets.p, N, C, m.V, 1e-5f, Precision::bf16,
                         &grads);
    }, 2);
    e.flops += 3 * 2.0 * double(N) * double(C) * double(m.V);
  }

  // AdamW, the gradient norm and the per-step bf16 rounding of the weights, timed on 2^28 floats and scaled
  // to the model's parameter count.
  {
    const size_t n = size_t(1) << 28;
    DeviceArray<float> p(ctx, n), g(ctx, n), m1(ctx, n), m2(ctx, n);
    for (DeviceArray<float>* a : {&p, &g, &m1, &m2}) cudaMemsetAsync(a->p, 0, a->n * sizeof(float), ctx.stream());
    DeviceArray<bf16> p16(ctx, n);
    std::vector<AdamWChunk> chunks;
    append_chunks(chunks, 0, n, true);
    DeviceArray<AdamWChunk> d_chunks(ctx, chunks);
    const AdamWScalars s = adamw_scalars(0.9, 0.95, 1e-8, 0.1, 1, 3e-4);
    const double ms = time_ms(ctx, [&] {
      cuda::sum_of_squares(ctx, g.p, n);
      cuda::adamw_step(ctx, p.p, g.p, m1.p, m2.p, 0, d_chunks.p, int64_t(chunks.size()), s);
      cuda::convert_to_bf16(ctx, p.p, p16.p, int64_t(n));
    }, 3);
    e.optim_ms = ms * double(m.params()) / double(n);
  }
  return e;
}

int run_bench(Context& ctx) {
  cudaDeviceProp prop{};
  cuda::check_cuda(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  const double peak = measure_bf16_peak(ctx);
  const double spec = 989.4e12;  // H100/H200 SXM dense bf16, NVIDIA datasheet
  std::printf("GPU: %s, %d SMs; cuBLASLt bf16 8192^3: %.0f TFLOP/s (datasheet dense bf16: %.0f)\n", prop.name,
              prop.multiProcessorCount, peak / 1e12, spec / 1e12);
  // A tensor-core attention kernel enters the step only when it matches the CPU kernel in this run too.
  bool verified[std::size(kAttentionKernels)] = {true, false, false};
  const AttentionInputs in(kAttentionBf16Bench);
  const AttentionResult want = attention_cpu(in, kAttentionBf16Bench);
  for (AttentionKernel kernel : kTensorCoreAttentionKernels) {
    const AttentionResult got = attention_gpu(ctx, in, kAttentionBf16Bench, kernel);
    const double error = std::max({rel_error(got.out, want.out), rel_error(got.lse, want.lse),
                                   rel_error(got.dq, want.dq), rel_error(got.dk, want.dk), rel_error(got.dv, want.dv)});
    verified[int(kernel)] = error <= kAttentionBf16Bound;
    std::printf("attention %s vs CPU fp32 (%s): max rel. error %.2e, bound %.0e: %s\n", name(kernel),
                attention_shape_text(kAttentionBf16Bench).c_str(), error, kAttentionBf16Bound,
                verified[int(kernel)] ? "verified" : "**FAILED**, left out of the step");
  }
  const ModelShape models[] = {{"olmo3_1b", 2048, 8192, 16, 16, 16, 128, 100352, 4096, 1, 8192},
                               {"olmo3_7b", 4096, 11008, 32, 32, 32, 128, 100352, 4096, 1, 8192}};
  std::printf("\n| model | B×T | GEMMs ms (bf16 act. ms) | attention ms (kernel) | norms/rope/swiglu ms | LM head ms | "
              "optimizer ms | step ms | tokens/s | MFU (datasheet) | MFU (measured peak) | layer GEMMs alone (bf16 act.) |\n"
              "|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  std::vector<std::string> attention_rows;
  for (const ModelShape& m : models) {
    const StepEstimate e = bench_model(ctx, m, verified);
    const double s = e.total_ms() * 1e-3, tokens = double(m.B * m.T);
    const double gemm_rate = e.gemm_flops / (e.gemm_bf16_ms * 1e-3);
    std::printf("| %s | %lldx%lld | %.1f (%.1f) | %.1f (%s) | %.1f | %.1f | %.1f | %.1f | %.0f | %.1f%% | %.1f%% | %.1f%% |\n",
                m.name, (long long)m.B, (long long)m.T, e.gemm_ms, e.gemm_bf16_ms, e.attention_ms, e.attention_kernel,
                e.other_ms, e.head_ms, e.optim_ms, e.total_ms(), tokens / s, 100.0 * e.flops / s / spec,
                100.0 * e.flops / s / peak, 100.0 * gemm_rate / spec);
    std::fflush(stdout);
    attention_rows.insert(attention_rows.end(), e.attention_rows.begin(), e.attention_rows.end());
  }
  std::printf("\nstep = Σ of the timed pieces (no residual adds, embedding or data loading); FLOPs = GEMMs + attention "
              "(visible pairs) + LM head, ×3 for forward + backward. Last column: the layers' GEMM FLOPs over "
              "their time with bf16 activations, against the datasheet. Attention: the faster verified kernel "
              "(table below), 3 sliding-window layers : 1 full.\n");
  std::printf("\n| model | B×T | window | attention kernel | fwd ms | fwd TFLOP/s | fwd+bwd ms | fwd+bwd TFLOP/s |\n"
              "|---|---|---|---|---|---|---|---|\n");
  for (const std::string& row : attention_rows) std::printf("%s\n", row.c_str());
  std::printf("\nattention FLOPs: 4·D per visible (query, key) pair and head forward, ×3 forward + backward "
              "(the backward's recomputation not counted); window 0 = full causal.\n");
  return 0;
}

int run_checks(Context& ctx) {
  CheckTable t;
  check_gemm(ctx, t);
  check_rmsnorm(ctx, t);
  check_rope(ctx, t);
  check_attention(ctx, t);
  for (AttentionKernel kernel : kTensorCoreAttentionKernels) check_attention_bf16(ctx, t, kernel);
  check_swiglu(ctx, t);
  check_embedding(ctx, t);
  check_lm_head_loss(ctx, t);
  check_adamw(ctx, t);
  check_grad_norm(ctx, t);
  std::printf("\nCHECKS: %d of %d passed\n", t.rows - t.failures, t.rows);
  return t.failures == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode != "check" && mode != "bench") {
    std::fprintf(stderr, "usage: check_kernels check|bench\n");
    return 2;
  }
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::fprintf(stderr, "check_kernels: no CUDA device visible\n");
    return 2;
  }
  try {
    Context ctx(0);
    return mode == "check" ? run_checks(ctx) : run_bench(ctx);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "check_kernels: %s\n", e.what());
    return 2;
  }
}
