// CPU emulation of nvcuda::wmma (tests/cuda_emu/README.md). A fragment's element-to-thread mapping is
// unspecified by CUDA, so the emulator gives every lane the whole tile (row-major); a kernel that only uses
// fragments through load / store / fill / mma — the portable way — computes the same values as on a GPU,
// up to the accumulation order of the products. Loads and stores are warp-collective, as on a GPU (every lane
// loads before any lane stores). The rules CUDA does specify are checked: fragment pointers 256-bit aligned,
// leading dimensions a multiple of 16 bytes, and every lane of the warp taking part.
#pragma once
#include <cstdint>
#include <string>
#include <type_traits>

#include "cuda_bf16.h"
#include "cuda_emu.h"

namespace nvcuda::wmma {

struct row_major;
struct col_major;
struct matrix_a;
struct matrix_b;
struct accumulator;
enum layout_t { mem_row_major, mem_col_major };

template <typename Use, int M, int N, int K>
struct fragment_shape;
template <int M, int N, int K>
struct fragment_shape<matrix_a, M, N, K> {
  static constexpr int rows = M, cols = K;
};
template <int M, int N, int K>
struct fragment_shape<matrix_b, M, N, K> {
  static constexpr int rows = K, cols = N;
};
template <int M, int N, int K>
struct fragment_shape<accumulator, M, N, K> {
  static constexpr int rows = M, cols = N;
};

template <typename Use, int M, int N, int K, typename T, typename Layout = void>
struct fragment {
  static constexpr int rows = fragment_shape<Use, M, N, K>::rows, cols = fragment_shape<Use, M, N, K>::cols;
  static constexpr int num_elements = rows * cols;
  T x[num_elements];  // row-major, the whole tile on every lane
};

namespace detail {

inline float to_float(float v) { return v; }
inline float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }

template <typename T>
void check_pointer(const T* p, unsigned ldm, const char* op) {
  if (reinterpret_cast<uintptr_t>(p) % 32 != 0)
    cuda_emu::fail((std::string(op) + ": pointer not 256-bit aligned").c_str());
  if ((ldm * sizeof(T)) % 16 != 0) cuda_emu::fail((std::string(op) + ": ldm not a multiple of 16 bytes").c_str());
  cuda_emu::warp_collective(op);
}

}  // namespace detail

template <typename Use, int M, int N, int K, typename T, typename Layout>
void fill_fragment(fragment<Use, M, N, K, T, Layout>& f, T value) {
  for (T& e : f.x) e = value;
}

// matrix_a / matrix_b: the layout is part of the fragment type.
template <typename Use, int M, int N, int K, typename T, typename Layout>
void load_matrix_sync(fragment<Use, M, N, K, T, Layout>& f, const T* p, unsigned ldm) {
  static_assert(std::is_same_v<Layout, row_major> || std::is_same_v<Layout, col_major>);
  detail::check_pointer(p, ldm, "wmma::load_matrix_sync");
  using F = fragment<Use, M, N, K, T, Layout>;
  for (int r = 0; r < F::rows; r++)
    for (int c = 0; c < F::cols; c++)
      f.x[r * F::cols + c] = std::is_same_v<Layout, row_major> ? p[size_t(r) * ldm + c] : p[size_t(c) * ldm + r];
}

template <int M, int N, int K>
void load_matrix_sync(fragment<accumulator, M, N, K, float>& f, const float* p, unsigned ldm, layout_t layout) {
  detail::check_pointer(p, ldm, "wmma::load_matrix_sync");
  for (int r = 0; r < M; r++)
    for (int c = 0; c < N; c++)
      f.x[r * N + c] = layout == mem_row_major ? p[size_t(r) * ldm + c] : p[size_t(c) * ldm + r];
}

template <int M, int N, int K>
void store_matrix_sync(float* p, const fragment<accumulator, M, N, K, float>& f, unsigned ldm, layout_t layout) {
  detail::check_pointer(p, ldm, "wmma::store_matrix_sync");
  for (int r = 0; r < M; r++)
    for (int c = 0; c < N; c++)
      (layout == mem_row_major ? p[size_t(r) * ldm + c] : p[size_t(c) * ldm + r]) = f.x[r * N + c];
}

// d = a·b + c with fp32 accumulation (products of bf16 operands are exact in fp32).
template <int M, int N, int K, typename T, typename LayoutA, typename LayoutB>
void mma_sync(fragment<accumulator, M, N, K, float>& d, const fragment<matrix_a, M, N, K, T, LayoutA>& a,
              const fragment<matrix_b, M, N, K, T, LayoutB>& b, const fragment<accumulator, M, N, K, float>& c) {
  float result[M * N];  // registers only: the loads and stores around it are the warp's meeting points
  for (int r = 0; r < M; r++)
    for (int col = 0; col < N; col++) {
      float acc = c.x[r * N + col];
      for (int k = 0; k < K; k++) acc += detail::to_float(a.x[r * K + k]) * detail::to_float(b.x[k * N + col]);
      result[r * N + col] = acc;
    }
  for (int i = 0; i < M * N; i++) d.x[i] = result[i];
}

}  // namespace nvcuda::wmma
