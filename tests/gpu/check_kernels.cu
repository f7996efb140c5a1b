// The CUDA kernels' correctness checks: every CUDA kernel on random inputs against the CPU kernel, a table of the
// largest error relative to the reference's largest magnitude against a bound per dtype. Run on a GPU by
// bench/gpu/run.sh and on the CPU emulation of CUDA by the ctests cuda_emu.check_kernels and _reversed.
// Usage: check_kernels [--only=FAMILY,...] [--skip=FAMILY,...] [--list] (kFamilies below; all by default).
// Exit status: 0 when every check passes, 1 when one fails, 2 on a CUDA error or a bad argument.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "replica/core/bf16.h"
#include "replica/kernels/adamw.h"
#include "replica/kernels/attention.h"
#include "replica/kernels/cpu/adamw.h"
#include "replica/kernels/cpu/attention.h"
#include "replica/kernels/cpu/cached_attention.h"
#include "replica/kernels/cpu/embedding.h"
#include "replica/kernels/cpu/float8.h"
#include "replica/kernels/cpu/gemm.h"
#include "replica/kernels/cpu/lm_head_loss.h"
#include "replica/kernels/cpu/rmsnorm.h"
#include "replica/kernels/cpu/rope.h"
#include "replica/kernels/cpu/swiglu.h"
#include "replica/kernels/cuda/adamw.h"
#include "replica/kernels/cuda/attention.h"
#include "replica/kernels/cuda/cached_attention.h"
#include "replica/kernels/cuda/elementwise.h"
#include "replica/kernels/cuda/embedding.h"
#include "replica/kernels/cuda/float8.h"
#include "replica/kernels/cuda/gemm.h"
#include "replica/kernels/cuda/grad_norm.h"
#include "replica/kernels/cuda/lm_head_loss.h"
#include "replica/kernels/cuda/rmsnorm.h"
#include "replica/kernels/cuda/rope.h"
#include "replica/kernels/cuda/swiglu.h"
#include "replica/kernels/float8.h"
#include "replica/kernels/lm_head_loss.h"
#include "replica/kernels/precision.h"
#include "replica/kernels/rope_table.h"
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

// A device array owned for one scope (cudaMalloc, no Backend); copies go through the context's stream.
template <typename T>
struct GpuArray {
  Context& ctx;
  T* p = nullptr;
  size_t n;
  GpuArray(Context& c, size_t count) : ctx(c), n(count) {
    cuda::check_cuda(cudaMalloc(&p, std::max<size_t>(n, 1) * sizeof(T)), "cudaMalloc");
  }
  GpuArray(Context& c, const std::vector<T>& host) : GpuArray(c, host.size()) { upload(host); }
  ~GpuArray() { cudaFree(p); }
  GpuArray(const GpuArray&) = delete;
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

// 0 when a and b hold the same bits (reruns, fused kernels against the calls they fuse), else infinite.
template <typename T>
double same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0 ? 0.0 : INFINITY;
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
        GpuArray<float> dA(ctx, A), dB(ctx, B), dC(ctx, C0);
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
  GpuArray<float> dx(ctx, x), dw(ctx, w), dy(ctx, size_t(M * N));
  GpuArray<bf16> dw16(ctx, w.size());
  cuda::convert_to_bf16(ctx, dw.p, dw16.p, int64_t(w.size()));
  cuda::gemm(ctx, false, true, M, N, K, dx.p, K, dw.p, K, dy.p, N, false, Precision::bf16, dw16.p);
  t.row("linear_forward bf16 (B16)", shape_text({{"M", M}, {"N", N}, {"K", K}}), "y", rel_error(dy.download(), want),
        kBf16Bound);
  // Activations rounded once too (A16, and B16 for the weight gradient's input), as the model's bf16 path does,
  // against rounding inside the call (the same bf16 operands: equal unless cuBLASLt picks another algorithm).
  GpuArray<bf16> dx16(ctx, x.size());
  cuda::convert_to_bf16(ctx, dx.p, dx16.p, int64_t(x.size()));
  GpuArray<float> dy_pre(ctx, size_t(M * N));
  cuda::gemm(ctx, false, true, M, N, K, dx.p, K, dw.p, K, dy_pre.p, N, false, Precision::bf16, dw16.p, dx16.p);
  t.row("linear_forward bf16 (A16, B16)", shape_text({{"M", M}, {"N", N}, {"K", K}}), "y = in-call rounding",
        rel_error(dy_pre.download(), dy.download()), kBf16Bound);
  GpuArray<float> dW(ctx, w.size()), dW_pre(ctx, w.size());
  cuda::gemm(ctx, true, false, N, K, M, dy.p, N, dx.p, K, dW.p, K, false, Precision::bf16);
  GpuArray<bf16> dy16(ctx, size_t(M * N));
  cuda::convert_to_bf16(ctx, dy.p, dy16.p, M * N);
  cuda::gemm(ctx, true, false, N, K, M, dy.p, N, dx.p, K, dW_pre.p, K, false, Precision::bf16, dx16.p, dy16.p);
  t.row("linear_backward_weight bf16 (A16, B16)", shape_text({{"M", M}, {"N", N}, {"K", K}}), "dW = in-call rounding",
        rel_error(dW_pre.download(), dW.download()), kBf16Bound);
}

// The bound of a float8 GEMM's error relative to max |C|, from the accumulation Hopper's fp8 tensor cores do:
// about 14 significant bits kept in the accumulator (DeepSeek-V3's report, §3.3.2, measured on H800), with fast
// accumulation and, within cuBLASLt's promotion to fp32 every few k-blocks (each K here fits in one), without it
// too. Each addition may then lose up to u = 2^-13 of the running sum, so a K-term sum is off by at most
// γ(K-1) = (K-1)u / (1 - (K-1)u) times the sum of its terms' magnitudes, in any order (Higham, Accuracy and
// Stability of Numerical Algorithms, §3.1): the bound is that over the largest such sum of an element, which the
// CPU's product over the codes' magnitudes (the sign bit cleared) gives. It holds for any order and rounding of
// 14 bits or more; a wrong layout, scale or operand is off by O(1). (The emulation sums exactly: errors ~1e-7.)
double float8_accumulation_bound(bool ta, bool tb, int64_t M, int64_t N, int64_t K,
                                 const std::pair<std::vector<uint8_t>, float>& a, Float8Format fa,
                                 const std::pair<std::vector<uint8_t>, float>& b, Float8Format fb,
                                 const std::vector<float>& want) {
  auto magnitudes = [](const std::vector<uint8_t>& codes) {
    std::vector<uint8_t> m(codes);
    for (uint8_t& c : m) c &= 0x7f;  // e4m3 and e5m2 both keep the sign in the top bit
    return m;
  };
  const std::vector<uint8_t> abs_a = magnitudes(a.first), abs_b = magnitudes(b.first);
  std::vector<float> sums(size_t(M * N));
  cpu::gemm_float8(ta, tb, M, N, K, {abs_a.data(), fa, &a.second}, ta ? M : K, {abs_b.data(), fb, &b.second},
                   tb ? K : N, sums.data(), N, false);
  const double u = std::ldexp(1.0, -13), gamma = double(K - 1) * u / (1.0 - double(K - 1) * u);
  double largest_sum = 0.0, largest_c = 0.0;
  for (float x : sums) largest_sum = std::max(largest_sum, double(x));
  for (float x : want) largest_c = std::max(largest_c, std::fabs(double(x)));
  return gamma * largest_sum / largest_c;
}

// float8 linears (train.float8): the cast bit for bit (codes and inverse scale), from fp32 and from the bf16 copy, and the
// float8 GEMM in the three layouts of a Linear (forward with fast accumulation; dx; dW, whose K = tokens is not a
// multiple of 16 and so is padded) against the CPU's exact-operand product, within the bound of Hopper's fp8
// accumulation (float8_accumulation_bound). Needs compute capability 8.9.
void check_float8(Context& ctx, CheckTable& t) {
  cudaDeviceProp props{};
  cuda::check_cuda(cudaGetDeviceProperties(&props, ctx.device()), "cudaGetDeviceProperties");
  if (props.major * 10 + props.minor < 89) {
    std::printf("| float8 | | | skipped: compute capability %d.%d < 8.9 | | |\n", props.major, props.minor);
    return;
  }
  const int64_t M = 80, N = 48, K = 64;  // tokens, out features, in features
  std::vector<float> x = random_vector(size_t(M * K), 11), w = random_vector(size_t(N * K), 12, 0.02f),
                     dy = random_vector(size_t(M * N), 13, 1e-4f);
  for (size_t i = 0; i < x.size(); i += 7) x[i] *= 40.0f;  // outliers: the scale follows the amax
  std::vector<bf16> x16(x.size());
  convert_to_bf16(x.data(), x16.data(), x.size());
  auto quantized = [&](const std::vector<float>& v, const bf16* v16, Float8Format f, bool power_of_two) {
    std::pair<std::vector<uint8_t>, float> out{std::vector<uint8_t>(v.size()), 0.0f};
    cpu::quantize_float8(out.first.data(), &out.second, v.data(), v16, v.size(), f, power_of_two);
    return out;
  };
  for (Float8Format f : {Float8Format::e4m3, Float8Format::e5m2})
    for (bool power_of_two : {false, true})
      for (bool from16 : {false, true}) {
        const auto want = quantized(x, from16 ? x16.data() : nullptr, f, power_of_two);
        GpuArray<float> d_x(ctx, x), d_inverse(ctx, 1);
        GpuArray<bf16> d_x16(ctx, x16);
        GpuArray<uint8_t> d_codes(ctx, x.size());
        cuda::quantize_float8(ctx, d_codes.p, d_inverse.p, d_x.p, from16 ? d_x16.p : nullptr, int64_t(x.size()), f,
                              power_of_two);
        const std::string shape = shape_text({{"n", int64_t(x.size())}}) + (f == Float8Format::e4m3 ? " e4m3" : " e5m2") +
                                  (power_of_two ? " 2^k scale" : "") + (from16 ? " from bf16" : "");
        t.row("quantize_float8", shape, "codes", d_codes.download() == want.first ? 0.0 : INFINITY, kExact);
        t.row("quantize_float8", shape, "1/scale", rel_error(d_inverse.download()[0], want.second), kExact);
      }
  const auto x8 = quantized(x, nullptr, Float8Format::e4m3, true), w8 = quantized(w, nullptr, Float8Format::e4m3, false),
             g8 = quantized(dy, nullptr, Float8Format::e5m2, true);
  struct Product {
    const char* name;
    bool ta, tb;
    int64_t M, N, K;
    const std::pair<std::vector<uint8_t>, float>&a, &b;
    Float8Format fa, fb;
    bool accumulate, fast;
  };
  const Float8Format e4m3 = Float8Format::e4m3, e5m2 = Float8Format::e5m2;
  const Product products[] = {{"forward y = x·wᵀ", false, true, M, N, K, x8, w8, e4m3, e4m3, false, true},
                              {"dx += dy·w", false, false, M, K, N, g8, w8, e5m2, e4m3, true, false},
                              {"dw += dyᵀ·x", true, false, N, K, M, g8, x8, e5m2, e4m3, true, false}};
  for (const Product& p : products) {
    const int64_t lda = p.ta ? p.M : p.K, ldb = p.tb ? p.K : p.N;
    const std::vector<float> C0 = random_vector(size_t(p.M * p.N), 14, 1e-3f);
    std::vector<float> want = C0;
    cpu::gemm_float8(p.ta, p.tb, p.M, p.N, p.K, {p.a.first.data(), p.fa, &p.a.second}, lda,
                     {p.b.first.data(), p.fb, &p.b.second}, ldb, want.data(), p.N, p.accumulate);
    GpuArray<uint8_t> da(ctx, p.a.first), db(ctx, p.b.first);
    GpuArray<float> dsa(ctx, std::vector<float>{p.a.second}), dsb(ctx, std::vector<float>{p.b.second}), dC(ctx, C0);
    cuda::gemm_float8(ctx, p.ta, p.tb, p.M, p.N, p.K, {da.p, p.fa, dsa.p}, lda, {db.p, p.fb, dsb.p}, ldb, dC.p, p.N,
                      p.accumulate, p.fast);
    t.row(std::string("gemm_float8 ") + p.name, shape_text({{"M", p.M}, {"N", p.N}, {"K", p.K}}),
          "C (bound: 14-bit accumulation)", rel_error(dC.download(), want),
          float8_accumulation_bound(p.ta, p.tb, p.M, p.N, p.K, p.a, p.fa, p.b, p.fb, want));
  }
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
  GpuArray<float> d_x(ctx, x), d_w(ctx, w), d_dy(ctx, dy), d_dx(ctx, dx0), d_dw(ctx, dw0), d_y(ctx, x.size()),
      d_rstd(ctx, size_t(rows));
  cuda::rmsnorm_forward(ctx, d_y.p, d_rstd.p, d_x.p, d_w.p, rows, C, eps);
  cuda::rmsnorm_backward(ctx, d_dx.p, nullptr, d_dw.p, d_dy.p, d_x.p, d_w.p, d_rstd.p, rows, C, true);
  const std::string shape = shape_text({{"rows", rows}, {"C", C}});
  t.row("rmsnorm_forward", shape, "y", rel_error(d_y.download(), y), kFp32Bound);
  t.row("rmsnorm_forward", shape, "rstd", rel_error(d_rstd.download(), rstd), kFp32Bound);
  t.row("rmsnorm_backward", shape + " +=", "dx", rel_error(d_dx.download(), dx), kFp32Bound);
  t.row("rmsnorm_backward", shape, "dw", rel_error(d_dw.download(), dw), kFp32Bound);

  // The fused forms against the calls they fuse, on the GPU (bit for bit) and against the CPU's fused form.
  const std::vector<float> residual = random_vector(x.size(), 15);
  std::vector<float> out(x.size()), out_rstd(static_cast<size_t>(rows));
  cpu::rmsnorm_add_forward(out.data(), out_rstd.data(), residual.data(), x.data(), w.data(), rows, C, eps);
  GpuArray<float> d_residual(ctx, residual), d_out(ctx, x.size()), d_out_rstd(ctx, size_t(rows)), d_sum(ctx, x.size());
  GpuArray<bf16> d_out16(ctx, x.size()), d_sum16(ctx, x.size());
  cuda::rmsnorm_add_forward(ctx, d_out.p, d_out16.p, d_out_rstd.p, d_residual.p, d_x.p, d_w.p, rows, C, eps);
  cuda::add(ctx, d_sum.p, d_residual.p, d_y.p, rows * C);  // d_y, d_rstd: rmsnorm_forward's, above
  cuda::convert_to_bf16(ctx, d_sum.p, d_sum16.p, rows * C);
  t.row("rmsnorm_add_forward", shape, "out", rel_error(d_out.download(), out), kFp32Bound);
  t.row("rmsnorm_add_forward", shape + " = norm, add, round", "out", same_bits(d_out.download(), d_sum.download()),
        kExact);
  t.row("rmsnorm_add_forward", shape + " = norm, add, round", "rstd",
        same_bits(d_out_rstd.download(), d_rstd.download()), kExact);
  t.row("rmsnorm_add_forward", shape + " = norm, add, round", "out16",
        same_bits(d_out16.download(), d_sum16.download()), kExact);
  GpuArray<float> d_dx_fused(ctx, dx0), d_dw_fused(ctx, dw0);
  GpuArray<bf16> d_dx16(ctx, x.size()), d_rounded(ctx, x.size());
  cuda::rmsnorm_backward(ctx, d_dx_fused.p, d_dx16.p, d_dw_fused.p, d_dy.p, d_x.p, d_w.p, d_rstd.p, rows, C, true);
  cuda::convert_to_bf16(ctx, d_dx.p, d_rounded.p, rows * C);
  t.row("rmsnorm_backward (dx16)", shape + " += = backward, round", "dx",
        same_bits(d_dx_fused.download(), d_dx.download()), kExact);
  t.row("rmsnorm_backward (dx16)", shape + " += = backward, round", "dx16",
        same_bits(d_dx16.download(), d_rounded.download()), kExact);
}

// The vectorised rounding (four values per thread where aligned) against the CPU's to_bf16, with NaN payloads,
// infinities, subnormals and ties, at every alignment of the source and a length that leaves a tail.
void check_convert_to_bf16(Context& ctx, CheckTable& t) {
  std::vector<float> x = random_vector(100003, 16);
  const uint32_t specials[] = {0x7fc00001u, 0xffa00000u, 0x7f800000u, 0xff800000u, 0x00000001u,
                               0x80400000u, 0x3f808000u, 0x3f818000u, 0x7f7fffffu, 0x00000000u};
  for (size_t i = 0; i < std::size(specials); i++) std::memcpy(&x[i * 997], &specials[i], sizeof(float));
  GpuArray<float> d_x(ctx, x);
  for (int64_t first : {0, 1, 2, 3}) {
    const int64_t n = int64_t(x.size()) - first;
    std::vector<bf16> want(static_cast<size_t>(n));
    convert_to_bf16(x.data() + first, want.data(), size_t(n));
    GpuArray<bf16> d_y(ctx, size_t(n));
    cuda::convert_to_bf16(ctx, d_x.p + first, d_y.p, n);
    t.row("convert_to_bf16", shape_text({{"n", n}, {"first", first}}) + " NaN, ±inf, subnormal, ties", "bits",
          same_bits(d_y.download(), want), kExact);
  }
}

// Both tables a model rotates with: plain RoPE, and YaRN (OLMo 3 stage 3's settings, the original context scaled
// down so that T = 67 reaches past it and every band of the ramp is used).
void check_rope(Context& ctx, CheckTable& t) {
  const int64_t B = 2, T = 67, heads = 3, D = 64;
  YarnScaling yarn;
  yarn.original_max_position_embeddings = 32;
  const std::vector<std::pair<std::string, RopeTable>> tables = {{"plain", RopeTable(T, D, 500000.0)},
                                                                 {"yarn", RopeTable(T, D, 500000.0, yarn)}};
  const std::vector<float> x0 = random_vector(static_cast<size_t>(B * T * heads * D), 20);
  for (const auto& [name, table] : tables) {
    std::vector<float> fwd = x0, bwd = x0;
    cpu::rope_forward(fwd.data(), table.cos.data(), table.sin.data(), B, T, heads, D);
    cpu::rope_backward(bwd.data(), table.cos.data(), table.sin.data(), B, T, heads, D);
    GpuArray<float> d_cos(ctx, table.cos), d_sin(ctx, table.sin), d_fwd(ctx, x0), d_bwd(ctx, x0);
    cuda::rope_forward(ctx, d_fwd.p, d_cos.p, d_sin.p, B, T, heads, D);
    cuda::rope_backward(ctx, d_bwd.p, d_cos.p, d_sin.p, B, T, heads, D);
    const std::string shape = shape_text({{"B", B}, {"T", T}, {"heads", heads}, {"D", D}}) + " " + name;
    t.row("rope_forward", shape, "x", rel_error(d_fwd.download(), fwd), kFp32Bound);
    t.row("rope_backward", shape, "dx", rel_error(d_bwd.download(), bwd), kFp32Bound);

    // QK-norm with RoPE in one pass, against the two calls on the GPU (bit for bit) and on the CPU.
    const float eps = 1e-6f;
    const std::vector<float> w = random_vector(static_cast<size_t>(heads * D), 21);
    std::vector<float> normed(x0.size()), rstd(static_cast<size_t>(B * T));
    cpu::rmsnorm_forward(normed.data(), rstd.data(), x0.data(), w.data(), B * T, heads * D, eps);
    cpu::rope_forward(normed.data(), table.cos.data(), table.sin.data(), B, T, heads, D);
    GpuArray<float> d_w(ctx, w), d_x(ctx, x0), d_fused(ctx, x0.size()), d_fused_rstd(ctx, size_t(B * T)),
        d_two(ctx, x0.size()), d_two_rstd(ctx, size_t(B * T));
    GpuArray<bf16> d_fused16(ctx, x0.size()), d_two16(ctx, x0.size());
    cuda::rmsnorm_rope_forward(ctx, d_fused.p, d_fused16.p, d_fused_rstd.p, d_x.p, d_w.p, d_cos.p, d_sin.p, B, T, heads,
                               D, eps);
    cuda::rmsnorm_forward(ctx, d_two.p, d_two_rstd.p, d_x.p, d_w.p, B * T, heads * D, eps);
    cuda::rope_forward(ctx, d_two.p, d_cos.p, d_sin.p, B, T, heads, D);
    cuda::convert_to_bf16(ctx, d_two.p, d_two16.p, B * T * heads * D);
    t.row("rmsnorm_rope_forward", shape, "y", rel_error(d_fused.download(), normed), kFp32Bound);
    t.row("rmsnorm_rope_forward", shape + " = norm, rope", "y", same_bits(d_fused.download(), d_two.download()),
          kExact);
    t.row("rmsnorm_rope_forward", shape + " = norm, rope", "rstd",
          same_bits(d_fused_rstd.download(), d_two_rstd.download()), kExact);
    t.row("rmsnorm_rope_forward", shape + " = norm, rope, round", "y16",
          same_bits(d_fused16.download(), d_two16.download()), kExact);
  }
}

// Attention outputs of one run: forward (out, lse) and backward (dq, dk, dv) on the same inputs.
struct AttentionResult {
  std::vector<float> out, lse, dq, dk, dv;
};

// Random q, k, v, dout (q and dout for the shape's queries), and the packed rows' document offsets
// (kernels/attention.h), none by default.
struct AttentionInputs {
  std::vector<float> q, k, v, dout;
  std::vector<int32_t> doc_offsets;
  explicit AttentionInputs(const AttentionShape& s, std::vector<int32_t> offsets = {})
      : q(random_vector(size_t(s.B * s.rows_q() * s.H * s.D), 30)),
        k(random_vector(size_t(s.B * s.T * s.K * s.D), 31)), v(random_vector(size_t(s.B * s.T * s.K * s.D), 32)),
        dout(random_vector(size_t(s.B * s.rows_q() * s.H * s.D), 33)),
        doc_offsets(std::move(offsets)) {}
  DocumentOffsets documents(const int32_t* offsets) const {
    return doc_offsets.empty() ? DocumentOffsets{} : DocumentOffsets{offsets, int64_t(doc_offsets.size()) - 1};
  }
};

AttentionResult attention_cpu(const AttentionInputs& in, const AttentionShape& s) {
  AttentionResult r{std::vector<float>(in.q.size()), std::vector<float>(size_t(s.B * s.H * s.rows_q())),
                    std::vector<float>(in.q.size()), std::vector<float>(in.k.size()), std::vector<float>(in.k.size())};
  const DocumentOffsets docs = in.documents(in.doc_offsets.data());
  cpu::attention_forward(r.out.data(), r.lse.data(), in.q.data(), in.k.data(), in.v.data(), s, docs);
  cpu::attention_backward(r.dq.data(), r.dk.data(), r.dv.data(), in.dout.data(), r.out.data(), r.lse.data(),
                          in.q.data(), in.k.data(), in.v.data(), s, docs);
  return r;
}

// The tag of a tensor-core kernel's rows ("attention_forward_mma"): the attention kernels (kernels/attention.h) are
// fp32 on CUDA cores, and bf16 on tensor cores through mma.sync (what the backend runs by default) and Hopper's
// wgmma.
const char* suffix(AttentionKernel kernel) { return kernel == AttentionKernel::wgmma ? "_wgmma" : "_mma"; }

void attention_forward_gpu(Context& ctx, AttentionKernel kernel, float* out, float* lse, WeightRef q, WeightRef k,
                           WeightRef v, const AttentionShape& s, const DocumentOffsets& docs) {
  if (kernel == AttentionKernel::fp32) cuda::attention_forward(ctx, out, lse, q.f32, k.f32, v.f32, s, docs);
  if (kernel == AttentionKernel::mma) cuda::attention_forward_mma(ctx, out, lse, q, k, v, s, docs);
  if (kernel == AttentionKernel::wgmma) cuda::attention_forward_wgmma(ctx, out, lse, q, k, v, s, docs);
}

void attention_backward_gpu(Context& ctx, AttentionKernel kernel, float* dq, float* dk, float* dv, const float* dout,
                            const float* out, const float* lse, WeightRef q, WeightRef k, WeightRef v,
                            const AttentionShape& s, const DocumentOffsets& docs) {
  if (kernel == AttentionKernel::fp32)
    cuda::attention_backward(ctx, dq, dk, dv, dout, out, lse, q.f32, k.f32, v.f32, s, docs);
  if (kernel == AttentionKernel::mma) cuda::attention_backward_mma(ctx, dq, dk, dv, dout, out, lse, q, k, v, s, docs);
  if (kernel == AttentionKernel::wgmma)
    cuda::attention_backward_wgmma(ctx, dq, dk, dv, dout, out, lse, q, k, v, s, docs);
}

// One kernel's forward, then its backward on the GPU's own out and lse. `rounded_from`: q, k and v also given as
// bf16 copies (rounded on the host), as the model's QK-norm + RoPE pass hands them over, of these inputs' values.
AttentionResult attention_gpu(Context& ctx, const AttentionInputs& in, const AttentionShape& s, AttentionKernel kernel,
                              const AttentionInputs* rounded_from = nullptr) {
  const size_t nq = in.q.size(), nk = in.k.size(), nl = size_t(s.B * s.H * s.rows_q());
  GpuArray<float> q(ctx, in.q), k(ctx, in.k), v(ctx, in.v), dout(ctx, in.dout), out(ctx, nq), lse(ctx, nl),
      dq(ctx, nq), dk(ctx, nk), dv(ctx, nk);
  auto bf16_copy = [](const std::vector<float>& x) {
    std::vector<bf16> x16(x.size());
    convert_to_bf16(x.data(), x16.data(), x.size());
    return x16;
  };
  const AttentionInputs& from = rounded_from ? *rounded_from : in;
  GpuArray<bf16> q16(ctx, bf16_copy(from.q)), k16(ctx, bf16_copy(from.k)), v16(ctx, bf16_copy(from.v));
  const bool rounded = rounded_from != nullptr;
  const WeightRef q_in(q.p, rounded ? q16.p : nullptr), k_in(k.p, rounded ? k16.p : nullptr),
      v_in(v.p, rounded ? v16.p : nullptr);
  GpuArray<int32_t> offsets(ctx, in.doc_offsets);
  const DocumentOffsets docs = in.documents(offsets.p);
  attention_forward_gpu(ctx, kernel, out.p, lse.p, q_in, k_in, v_in, s, docs);
  attention_backward_gpu(ctx, kernel, dq.p, dk.p, dv.p, dout.p, out.p, lse.p, q_in, k_in, v_in, s, docs);
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

double bitwise(const std::vector<float>& a, const std::vector<float>& b) { return same_bits(a, b); }

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

// Both tensor-core variants (mma.sync, wgmma).
void check_attention_bf16(Context& ctx, CheckTable& t, AttentionKernel kernel) {
  const std::string tag = suffix(kernel);
  // Odd lengths (tails of the 64-row tiles), windows shorter and longer than a tile, GQA, a head dim that is not a
  // power of two, and the head dims above 128 (Q and dO fragments from shared memory, dK/dV in column halves; 192
  // only on mma.sync: wgmma's launcher hands it over).
  const AttentionShape shapes[] = {{2, 77, 8, 2, 64, 0},   {2, 300, 8, 2, 128, 16}, {1, 300, 8, 2, 128, 64},
                                   {1, 300, 4, 4, 128, 0}, {2, 300, 8, 2, 64, 64},  {1, 130, 6, 2, 48, 33},
                                   {2, 130, 4, 2, 256, 0}, {1, 200, 4, 2, 256, 48}, {1, 130, 4, 2, 192, 33}};
  for (const AttentionShape& s : shapes) {
    const AttentionInputs in(s);
    attention_rows(t, tag, attention_shape_text(s), attention_gpu(ctx, in, s, kernel), attention_cpu(in, s),
                   kAttentionBf16Bound, relative);
  }
  // wgmma's one-pass backward adds each key tile's share of dQ in key order, taking turns (turns.cuh): longer rows,
  // where up to 9 key tiles add to a query tile, the first of them, under a window over several tiles, not the row's
  // first, and 4 query heads share a KV head's key tiles; the same bits again on a rerun.
  if (kernel == AttentionKernel::wgmma) {
    for (const AttentionShape& s : {AttentionShape{1, 520, 8, 2, 128, 200}, AttentionShape{1, 530, 4, 1, 64, 0}}) {
      const AttentionInputs in(s);
      const AttentionResult got = attention_gpu(ctx, in, s, kernel);
      attention_rows(t, tag, attention_shape_text(s) + " dQ turns", got, attention_cpu(in, s), kAttentionBf16Bound,
                     relative);
      t.row("attention_backward" + tag, attention_shape_text(s) + " dQ turns, rerun", "dq",
            bitwise(attention_gpu(ctx, in, s, kernel).dq, got.dq), kExact);
    }
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
  for (const AttentionShape& s : {AttentionShape{2, 300, 8, 2, 128, 64}, AttentionShape{1, 130, 4, 2, 256, 64}}) {
    // Determinism: a second run gives the same bits.
    const AttentionInputs in(s);
    attention_rows(t, tag, attention_shape_text(s) + " rerun", attention_gpu(ctx, in, s, kernel),
                   attention_gpu(ctx, in, s, kernel), kExact, bitwise);
    // q, k and v handed over already rounded are what the kernel reads, with the bits of its own rounding: copies of
    // other values (q, k, v halved) give those values' results, whatever the fp32 arrays hold.
    AttentionInputs halved = in;
    for (std::vector<float>* x : {&halved.q, &halved.k, &halved.v})
      for (float& value : *x) value *= 0.5f;
    attention_rows(t, tag, attention_shape_text(s) + " rounded inputs", attention_gpu(ctx, in, s, kernel, &halved),
                   attention_gpu(ctx, halved, s, kernel), kExact, bitwise);
  }
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

// Decoding: new queries over a cache (a ring that has wrapped, a full layer, a chunk) against the CPU kernel. The
// cache holds random values in every slot, as a ring does with old positions in the slots no query reads.
void check_cached_attention(Context& ctx, CheckTable& t) {
  const CachedAttentionShape shapes[] = {
      {1, 300, 8, 2, 128, 64, 64}, {1, 300, 4, 4, 64, 0, 300}, {7, 90, 6, 2, 48, 33, 33}, {40, 0, 4, 1, 256, 0, 40}};
  for (const CachedAttentionShape& s : shapes) {
    const std::vector<float> q = random_vector(size_t(s.n * s.H * s.D), 34),
                             k = random_vector(size_t(s.n * s.K * s.D), 35), v = random_vector(k.size(), 36),
                             k_cache = random_vector(size_t(s.capacity * s.K * s.D), 37),
                             v_cache = random_vector(k_cache.size(), 38);
    std::vector<float> out(q.size());
    cpu::cached_attention(out.data(), q.data(), k.data(), v.data(), k_cache.data(), v_cache.data(), s);
    GpuArray<float> d_q(ctx, q), d_k(ctx, k), d_v(ctx, v), d_kc(ctx, k_cache), d_vc(ctx, v_cache), d_out(ctx, q.size());
    cuda::cached_attention(ctx, d_out.p, d_q.p, d_k.p, d_v.p, d_kc.p, d_vc.p, s);
    const std::string shape = shape_text({{"n", s.n}, {"p", s.position}, {"H", s.H}, {"K", s.K}, {"D", s.D},
                                          {"W", s.window}, {"slots", s.capacity}});
    t.row("cached_attention", shape, "out", rel_error(d_out.download(), out), kFp32Bound);
  }
}

// Document offsets over B rows of T tokens from per-row lengths (each row's summing to T), as model/document_offsets.h
// makes them.
std::vector<int32_t> offsets_of(const std::vector<std::vector<int32_t>>& rows, int64_t T) {
  std::vector<int32_t> offsets{0};
  for (size_t b = 0; b < rows.size(); b++) {
    int64_t end = int64_t(b) * T;
    for (int32_t length : rows[b]) offsets.push_back(int32_t(end += length));
  }
  return offsets;
}

// Packed rows (intra-document masking) on `kernel` against the CPU kernel: one-token documents, documents that
// start and end inside a 64-row tile, one that crosses several tiles, a padding tail, with and without a window.
void check_attention_documents(Context& ctx, CheckTable& t, AttentionKernel kernel) {
  const std::vector<std::vector<int32_t>> rows = {{1, 1, 70, 5, 1, 90, 40, 1, 91}, {300}, {150, 1, 149}};
  const bool fp32 = kernel == AttentionKernel::fp32;
  const std::string tag = fp32 ? "" : suffix(kernel);
  const AttentionShape shapes[] = {{3, 300, 4, 2, 64, 0}, {3, 300, 4, 4, 128, 33}, {3, 300, 2, 1, 256, 40}};
  for (const AttentionShape& s : shapes) {
    if (fp32 && s.D > 128) continue;  // the tensor-core kernels' own path above D = 128; fp32 has one path for all D
    const AttentionInputs in(s, offsets_of(rows, s.T));
    attention_rows(t, tag, attention_shape_text(s) + " docs", attention_gpu(ctx, in, s, kernel), attention_cpu(in, s),
                   fp32 ? kFp32Bound : kAttentionBf16Bound, relative);
  }
  // One document per row is the attention without documents, bit for bit.
  const AttentionShape s{2, 300, 4, 2, 64, 64};
  const AttentionInputs plain(s), one_per_row(s, offsets_of({{300}, {300}}, s.T));
  attention_rows(t, tag, attention_shape_text(s) + " one doc per row", attention_gpu(ctx, one_per_row, s, kernel),
                 attention_gpu(ctx, plain, s, kernel), kExact, bitwise);
}

void check_swiglu(Context& ctx, CheckTable& t) {
  const int64_t n = 100003;
  const std::vector<float> g = random_vector(static_cast<size_t>(n), 40, 3.0f), u = random_vector(static_cast<size_t>(n), 41),
                           ds = random_vector(static_cast<size_t>(n), 42);
  std::vector<float> s(static_cast<size_t>(n)), dg(static_cast<size_t>(n)), du(static_cast<size_t>(n));
  cpu::swiglu_forward(s.data(), g.data(), u.data(), n);
  cpu::swiglu_backward(dg.data(), du.data(), ds.data(), g.data(), u.data(), n);
  GpuArray<float> d_g(ctx, g), d_u(ctx, u), d_ds(ctx, ds), d_s(ctx, size_t(n)), d_dg(ctx, size_t(n)),
      d_du(ctx, size_t(n));
  GpuArray<bf16> d_s16(ctx, size_t(n)), d_dg16(ctx, size_t(n)), d_du16(ctx, size_t(n)), d_rounded(ctx, size_t(n));
  cuda::swiglu_forward(ctx, d_s.p, d_s16.p, d_g.p, d_u.p, n);
  cuda::swiglu_backward(ctx, d_dg.p, d_du.p, d_dg16.p, d_du16.p, d_ds.p, d_g.p, d_u.p, n);
  const std::string shape = shape_text({{"n", n}});
  t.row("swiglu_forward", shape, "s", rel_error(d_s.download(), s), kFp32Bound);
  t.row("swiglu_backward", shape, "dg", rel_error(d_dg.download(), dg), kFp32Bound);
  t.row("swiglu_backward", shape, "du", rel_error(d_du.download(), du), kFp32Bound);
  // The bf16 copies written beside the outputs: the outputs rounded, bit for bit, and the outputs as without them.
  const std::pair<const char*, std::pair<GpuArray<float>*, GpuArray<bf16>*>> copies[] = {
      {"s16", {&d_s, &d_s16}}, {"dg16", {&d_dg, &d_dg16}}, {"du16", {&d_du, &d_du16}}};
  for (const auto& [name, arrays] : copies) {
    cuda::convert_to_bf16(ctx, arrays.first->p, d_rounded.p, n);
    t.row(name[0] == 's' ? "swiglu_forward" : "swiglu_backward", shape + " = round", name,
          same_bits(arrays.second->download(), d_rounded.download()), kExact);
  }
  GpuArray<float> d_s_plain(ctx, size_t(n)), d_dg_plain(ctx, size_t(n)), d_du_plain(ctx, size_t(n));
  cuda::swiglu_forward(ctx, d_s_plain.p, nullptr, d_g.p, d_u.p, n);
  cuda::swiglu_backward(ctx, d_dg_plain.p, d_du_plain.p, nullptr, nullptr, d_ds.p, d_g.p, d_u.p, n);
  t.row("swiglu_forward", shape + " with s16 = without", "s", same_bits(d_s.download(), d_s_plain.download()), kExact);
  t.row("swiglu_backward", shape + " with dg16, du16 = without", "dg, du",
        std::max(same_bits(d_dg.download(), d_dg_plain.download()), same_bits(d_du.download(), d_du_plain.download())),
        kExact);
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
  GpuArray<int32_t> d_ids(ctx, ids);
  GpuArray<float> d_table(ctx, table), d_dout(ctx, dout), d_dtable(ctx, dtable0), d_out(ctx, size_t(N * C));
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
    GpuArray<float> d_hidden(ctx, hidden), d_weight(ctx, weight), d_dweight(ctx, dweight0),
        d_dhidden(ctx, size_t(N * C));
    GpuArray<int32_t> d_targets(ctx, targets);
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

// Step t's scalars; step 2 clipped (a gradient scale, applied as the gradient is read).
AdamWScalars check_scalars(int64_t step) {
  AdamWScalars s = adamw_scalars(0.9, 0.95, 1e-8, 0.1, step, 3e-4 * double(step));
  s.grad_scale = step == 2 ? 0.37f : 1.0f;
  return s;
}

void check_adamw(Context& ctx, CheckTable& t) {
  // An embedding (no decay), a matrix and a norm, with 16-float padding between them left untouched.
  std::vector<AdamWChunk> chunks;
  append_chunks(chunks, 0, 70000, false);
  append_chunks(chunks, 70016, 120017, true);
  append_chunks(chunks, 120032, 120065, true);
  const size_t n = 120080;
  std::vector<float> params = random_vector(n, 70, 0.02f), m(n, 0.0f), v(n, 0.0f);
  GpuArray<float> d_params(ctx, params), d_m(ctx, m), d_v(ctx, v), d_grads(ctx, n);
  GpuArray<AdamWChunk> d_chunks(ctx, chunks);
  for (int64_t step = 1; step <= 3; step++) {
    const std::vector<float> grads = random_vector(n, uint64_t(70 + step), 1e-3f);
    const AdamWScalars s = check_scalars(step);
    cpu::adamw_step(params.data(), grads.data(), m.data(), v.data(), 0, chunks.data(), int64_t(chunks.size()), s);
    d_grads.upload(grads);
    cuda::adamw_step(ctx, d_params.p, d_grads.p, d_m.p, d_v.p, 0, d_chunks.p, int64_t(chunks.size()), s);
  }
  const std::string shape = shape_text({{"n", int64_t(n)}, {"steps", 3}});
  t.row("adamw_step", shape, "params", rel_error(d_params.download(), params), kExact);
  t.row("adamw_step", shape, "exp_avg", rel_error(d_m.download(), m), kExact);
  t.row("adamw_step", shape, "exp_avg_sq", rel_error(d_v.download(), v), kExact);

  // The same steps with the moments in page-locked host memory, streamed through the device in slabs: of 40,000
  // floats (4 slabs over the buffer, the last one short, so both device buffers are reused) and of all of it, over
  // the whole buffer and over a shard that starts at the matrix (shard_begin 70016).
  const size_t shard = 70016, first_shard_chunk = 3;  // chunks 0-2 are the embedding's
  for (const size_t slab : {size_t(40000), n})
    for (const size_t begin : {size_t(0), shard}) {
      const size_t first = begin == 0 ? 0 : first_shard_chunk, count = n - begin;
      const std::span<const AdamWChunk> host_chunks(chunks.data() + first, chunks.size() - first);
      cuda::HostMomentPipeline pipeline(ctx, slab);
      float *host_m = nullptr, *host_v = nullptr;
      cuda::check_cuda(cudaMallocHost(&host_m, count * sizeof(float)), "cudaMallocHost");
      cuda::check_cuda(cudaMallocHost(&host_v, count * sizeof(float)), "cudaMallocHost");
      std::fill(host_m, host_m + count, 0.0f);
      std::fill(host_v, host_v + count, 0.0f);
      const std::vector<float> start = random_vector(n, 70, 0.02f);
      GpuArray<float> h_params(ctx, std::vector<float>(start.begin() + ptrdiff_t(begin), start.end()));
      GpuArray<float> h_grads(ctx, count);
      for (int64_t step = 1; step <= 3; step++) {
        const std::vector<float> grads = random_vector(n, uint64_t(70 + step), 1e-3f);
        h_grads.upload(std::vector<float>(grads.begin() + ptrdiff_t(begin), grads.end()));
        pipeline.step(h_params.p, h_grads.p, host_m, host_v, begin, d_chunks.p + first, host_chunks,
                      check_scalars(step));
      }
      ctx.synchronize();
      auto tail = [&](const std::vector<float>& x) {
        return std::vector<float>(x.begin() + ptrdiff_t(begin), x.end());
      };
      const std::string host_shape =
          shape_text({{"n", int64_t(count)}, {"shard_begin", int64_t(begin)}, {"slab", int64_t(slab)}, {"steps", 3}});
      t.row("adamw_step (host moments)", host_shape, "params", rel_error(h_params.download(), tail(params)), kExact);
      t.row("adamw_step (host moments)", host_shape, "exp_avg",
            rel_error(std::vector<float>(host_m, host_m + count), tail(m)), kExact);
      t.row("adamw_step (host moments)", host_shape, "exp_avg_sq",
            rel_error(std::vector<float>(host_v, host_v + count), tail(v)), kExact);
      cuda::check_cuda(cudaFreeHost(host_m), "cudaFreeHost");
      cuda::check_cuda(cudaFreeHost(host_v), "cudaFreeHost");
    }
}

void check_grad_norm(Context& ctx, CheckTable& t) {
  const size_t n = 1000123;
  const std::vector<float> g = random_vector(n, 80, 1e-2f);
  GpuArray<float> d_g(ctx, g);
  const std::string shape = shape_text({{"n", int64_t(n)}});
  t.row("sum_of_squares", shape, "Σ g²",
        rel_error(cuda::sum_of_squares(ctx, d_g.p, n), optim::sum_of_squares(g.data(), n)), 1e-12);
  const double first = cuda::sum_of_squares(ctx, d_g.p, n), again = cuda::sum_of_squares(ctx, d_g.p, n);
  t.row("sum_of_squares", shape + " rerun", "Σ g²", first == again ? 0.0 : INFINITY, kExact);
}

// A context-parallel rank's attention (distributed/context_parallel.h): the last queries of a packed row against all its
// keys, on a tile boundary and inside a tile, with a sliding window, on every kernel. On a boundary of the 64-row
// tiles (as every rank's slice starts: ContextParallelConfig::kSliceMultiple) the slice's out, lse and dq are the
// whole row's last rows bit for bit: the same tiles meet the same keys.
void check_attention_query_slice(Context& ctx, CheckTable& t, AttentionKernel kernel, const std::string& tag,
                                 const AttentionShape& whole, const std::vector<int32_t>& documents) {
  const bool fp32 = kernel == AttentionKernel::fp32;
  const AttentionInputs whole_in(whole, documents);
  const AttentionResult whole_out = attention_gpu(ctx, whole_in, whole, kernel);
  for (int64_t queries : {172, 101}) {
    AttentionShape s = whole;
    s.queries = queries;
    const std::string shape = attention_shape_text(s) + " docs, last " + std::to_string(queries) + " queries";
    const AttentionInputs in(s, documents);
    attention_rows(t, tag, shape, attention_gpu(ctx, in, s, kernel), attention_cpu(in, s),
                   fp32 ? kFp32Bound : kAttentionBf16Bound, relative);
    if ((whole.T - queries) % 64 != 0) continue;
    // The whole row's inputs, of which the slice holds the last queries' q and dout.
    const size_t row_floats = size_t(whole.H * whole.D), skipped = size_t(whole.T - queries);
    AttentionInputs slice_in = whole_in;
    slice_in.q.erase(slice_in.q.begin(), slice_in.q.begin() + skipped * row_floats);
    slice_in.dout.erase(slice_in.dout.begin(), slice_in.dout.begin() + skipped * row_floats);
    const AttentionResult got = attention_gpu(ctx, slice_in, s, kernel);
    auto last_rows = [&](const std::vector<float>& x) {
      return std::vector<float>(x.begin() + skipped * row_floats, x.end());
    };
    std::vector<float> last_lse;
    for (int64_t h = 0; h < whole.H; h++)
      last_lse.insert(last_lse.end(), whole_out.lse.begin() + (h + 1) * whole.T - queries,
                      whole_out.lse.begin() + (h + 1) * whole.T);
    const std::string same = attention_shape_text(s) + " docs, last " + std::to_string(queries) + " = whole row's";
    t.row("attention_forward" + tag, same, "out", bitwise(got.out, last_rows(whole_out.out)), kExact);
    t.row("attention_forward" + tag, same, "lse", bitwise(got.lse, last_lse), kExact);
    t.row("attention_backward" + tag, same, "dq", bitwise(got.dq, last_rows(whole_out.dq)), kExact);
  }
}

void check_attention_query_slice(Context& ctx, CheckTable& t, AttentionKernel kernel) {
  const bool fp32 = kernel == AttentionKernel::fp32;
  const std::string tag = fp32 ? "" : suffix(kernel);
  const std::vector<int32_t> documents = offsets_of({{1, 70, 5, 90, 134}}, 300);
  // At D = 64, and at D = 256 (the tensor-core kernels' path above 128) on the tensor-core kernels.
  for (const AttentionShape& whole : {AttentionShape{1, 300, 4, 2, 64, 33}, AttentionShape{1, 300, 2, 1, 256, 33}}) {
    if (fp32 && whole.D > 128) continue;
    check_attention_query_slice(ctx, t, kernel, tag, whole, documents);
  }
}

// The checks in families, each a name for check_kernels' selector (usage below) and the calls that make its rows:
// bench/gpu/run.sh runs the tensor-core attention families in processes of their own, so that a fault in one (a CUDA
// fault is sticky: the process can check nothing after it) loses only that family's rows.
struct Family {
  const char* name;
  std::function<void(Context&, CheckTable&)> run;
};

// The attention on one kernel: its own checks, then over packed documents and on a query slice.
void check_attention_kernel(Context& ctx, CheckTable& t, AttentionKernel kernel) {
  if (kernel == AttentionKernel::fp32) check_attention(ctx, t);
  else check_attention_bf16(ctx, t, kernel);
  check_attention_documents(ctx, t, kernel);
  check_attention_query_slice(ctx, t, kernel);
}

const Family kFamilies[] = {
    {"gemm", check_gemm},
    {"float8", check_float8},
    {"convert_to_bf16", check_convert_to_bf16},
    {"rmsnorm", check_rmsnorm},
    {"rope", check_rope},
    {"attention", [](Context& c, CheckTable& t) { check_attention_kernel(c, t, AttentionKernel::fp32); }},
    {"attention_mma", [](Context& c, CheckTable& t) { check_attention_kernel(c, t, AttentionKernel::mma); }},
    {"attention_wgmma", [](Context& c, CheckTable& t) { check_attention_kernel(c, t, AttentionKernel::wgmma); }},
    {"cached_attention", check_cached_attention},
    {"swiglu", check_swiglu},
    {"embedding", check_embedding},
    {"lm_head_loss", check_lm_head_loss},
    {"adamw", check_adamw},
    {"grad_norm", check_grad_norm},
};

int run_checks(Context& ctx, const std::vector<const Family*>& families) {
  CheckTable t;
  for (const Family* family : families) family->run(ctx, t);
  std::printf("\nCHECKS: %d of %d passed\n", t.rows - t.failures, t.rows);
  return t.failures == 0 ? 0 : 1;
}

// The comma-separated family names of `list`, each one of kFamilies'; empty when one is not.
std::vector<std::string> family_names(const std::string& list) {
  std::vector<std::string> names;
  for (size_t b = 0; b <= list.size();) {
    const size_t e = std::min(list.find(',', b), list.size());
    names.push_back(list.substr(b, e - b));
    b = e + 1;
  }
  for (const std::string& name : names)
    if (std::none_of(std::begin(kFamilies), std::end(kFamilies), [&](const Family& f) { return name == f.name; })) {
      std::fprintf(stderr, "check_kernels: unknown family '%s' (check_kernels --list names them)\n", name.c_str());
      return {};
    }
  return names;
}

constexpr const char* kUsage =
    "usage: check_kernels [--only=FAMILY,...] [--skip=FAMILY,...] [--list]\n"
    "  every family's checks by default; --list prints the family names, one a line\n";

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> only, skip;
  for (int i = 1; i < argc; i++) {
    const std::string arg = argv[i];
    if (arg == "--list") {
      for (const Family& f : kFamilies) std::printf("%s\n", f.name);
      return 0;
    }
    std::vector<std::string>* names = arg.starts_with("--only=") ? &only : arg.starts_with("--skip=") ? &skip : nullptr;
    if (names == nullptr || (*names = family_names(arg.substr(7))).empty()) {
      std::fprintf(stderr, "check_kernels: bad argument '%s'\n%s", arg.c_str(), kUsage);
      return 2;
    }
  }
  std::vector<const Family*> families;
  for (const Family& f : kFamilies) {
    auto named = [&](const std::vector<std::string>& names) {
      return std::find(names.begin(), names.end(), f.name) != names.end();
    };
    if ((only.empty() || named(only)) && !named(skip)) families.push_back(&f);
  }
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::fprintf(stderr, "check_kernels: no CUDA device visible\n");
    return 2;
  }
  try {
    Context ctx(0);
    return run_checks(ctx, families);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "check_kernels: %s\n", e.what());
    return 2;
  }
}
