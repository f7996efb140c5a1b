// CPU kernels against naive double-precision implementations: forward values, and backward passes
// against central finite differences of the naive forward (in double).
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <bit>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <functional>
#include <random>
#include <vector>

#include "replica/core/bf16.h"
#include "replica/kernels/cpu/attention.h"
#include "replica/kernels/cpu/cached_attention.h"
#include "replica/kernels/cpu/embedding.h"
#include "replica/kernels/cpu/gemm.h"
#include "replica/kernels/cpu/lm_head_loss.h"
#include "replica/kernels/cpu/narrow_head.h"
#include "replica/kernels/cpu/rmsnorm.h"
#include "replica/kernels/cpu/rope.h"
#include "replica/kernels/cpu/simd.h"
#include "replica/kernels/cpu/stretch_softmax.h"
#include "replica/kernels/cpu/sum_of_squares.h"
#include "replica/kernels/cpu/swiglu.h"
#include "replica/kernels/rope_table.h"

namespace replica::cpu {
namespace {

using Vec = std::vector<double>;

std::vector<float> normal_floats(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

Vec to_double(const std::vector<float>& v) { return Vec(v.begin(), v.end()); }

// Gradient of the scalar f at x by central differences (in double).
Vec numerical_gradient(const std::function<double(const Vec&)>& f, Vec x, double h = 1e-6) {
  Vec grad(x.size());
  for (size_t i = 0; i < x.size(); i++) {
    double saved = x[i];
    x[i] = saved + h;
    double up = f(x);
    x[i] = saved - h;
    double down = f(x);
    x[i] = saved;
    grad[i] = (up - down) / (2 * h);
  }
  return grad;
}

double max_rel(const std::vector<float>& a, const Vec& b) {
  double diff = 0, scale = 0;
  for (size_t i = 0; i < b.size(); i++) {
    diff = std::max(diff, std::fabs(double(a[i]) - b[i]));
    scale = std::max(scale, std::fabs(b[i]));
  }
  return diff / scale;
}

// ---- attention -------------------------------------------------------------------------------------

// Naive attention in double over explicit scores: the definition the tiled kernel must match. `document`: each
// token's document (b · T + t → an id), empty when each row is one; a query sees only keys of its own.
Vec naive_attention(const Vec& q, const Vec& k, const Vec& v, const AttentionShape& s,
                    const std::vector<int64_t>& document = {}) {
  Vec out(size_t(s.B * s.T * s.H * s.D), 0.0);
  const double scale = 1.0 / std::sqrt(double(s.D));
  for (int64_t b = 0; b < s.B; b++)
    for (int64_t h = 0; h < s.H; h++) {
      const int64_t g = h / (s.H / s.K);
      for (int64_t i = 0; i < s.T; i++) {
        Vec scores;
        std::vector<int64_t> keys;
        for (int64_t j = 0; j <= i; j++) {
          if (s.window > 0 && j <= i - s.window) continue;
          if (!document.empty() && document[size_t(b * s.T + j)] != document[size_t(b * s.T + i)]) continue;
          double dotp = 0;
          for (int64_t d = 0; d < s.D; d++)
            dotp += q[size_t(((b * s.T + i) * s.H + h) * s.D + d)] * k[size_t(((b * s.T + j) * s.K + g) * s.D + d)];
          scores.push_back(dotp * scale);
          keys.push_back(j);
        }
        double m = *std::max_element(scores.begin(), scores.end()), z = 0;
        for (double& x : scores) z += (x = std::exp(x - m));
        for (size_t n = 0; n < keys.size(); n++)
          for (int64_t d = 0; d < s.D; d++)
            out[size_t(((b * s.T + i) * s.H + h) * s.D + d)] +=
                scores[n] / z * v[size_t(((b * s.T + keys[n]) * s.K + g) * s.D + d)];
      }
    }
  return out;
}

// The kernel's forward on random inputs (seeds from `seed`) against naive_attention (`document`: see there).
void expect_forward_matches_naive(const AttentionShape& s, const DocumentOffsets& docs,
                                  const std::vector<int64_t>& document, uint32_t seed) {
  const size_t nq = size_t(s.B * s.T * s.H * s.D), nk = size_t(s.B * s.T * s.K * s.D);
  auto q = normal_floats(nq, seed), k = normal_floats(nk, seed + 1), v = normal_floats(nk, seed + 2);
  std::vector<float> out(q.size()), lse(size_t(s.B * s.H * s.T));
  attention_forward(out.data(), lse.data(), q.data(), k.data(), v.data(), s, docs);
  EXPECT_LE(max_rel(out, naive_attention(to_double(q), to_double(k), to_double(v), s, document)), 2e-6);
}

// The kernel's forward and backward on random q, k, v, dout (seeds from `seed`).
struct AttentionRun {
  std::vector<float> q, k, v, dout, out, lse, dq, dk, dv;
  AttentionRun(const AttentionShape& s, const DocumentOffsets& docs, uint32_t seed)
      : q(normal_floats(size_t(s.B * s.rows_q() * s.H * s.D), seed)),
        k(normal_floats(size_t(s.B * s.T * s.K * s.D), seed + 1)),
        v(normal_floats(k.size(), seed + 2)),
        dout(normal_floats(q.size(), seed + 3)),
        out(q.size()),
        lse(size_t(s.B * s.H * s.rows_q())),
        dq(q.size()),
        dk(k.size()),
        dv(v.size()) {
    attention_forward(out.data(), lse.data(), q.data(), k.data(), v.data(), s, docs);
    attention_backward(dq.data(), dk.data(), dv.data(), dout.data(), out.data(), lse.data(), q.data(), k.data(),
                       v.data(), s, docs);
  }
};

// The kernel's backward against central differences of naive_attention, for the loss Σ out · dout.
void expect_backward_matches_finite_differences(const AttentionShape& s, const DocumentOffsets& docs,
                                                const std::vector<int64_t>& document, uint32_t seed) {
  const AttentionRun run(s, docs, seed);
  const std::vector<float>& dq = run.dq;
  const std::vector<float>& dk = run.dk;
  const std::vector<float>& dv = run.dv;
  const Vec qd = to_double(run.q), kd = to_double(run.k), vd = to_double(run.v), g = to_double(run.dout);
  auto loss = [&](const Vec& q2, const Vec& k2, const Vec& v2) {
    Vec o = naive_attention(q2, k2, v2, s, document);
    double total = 0;
    for (size_t i = 0; i < o.size(); i++) total += o[i] * g[i];
    return total;
  };
  EXPECT_LE(max_rel(dq, numerical_gradient([&](const Vec& x) { return loss(x, kd, vd); }, qd)), 1e-5);
  EXPECT_LE(max_rel(dk, numerical_gradient([&](const Vec& x) { return loss(qd, x, vd); }, kd)), 1e-5);
  EXPECT_LE(max_rel(dv, numerical_gradient([&](const Vec& x) { return loss(qd, kd, x); }, vd)), 1e-5);
}

class Attention : public ::testing::TestWithParam<AttentionShape> {};

TEST_P(Attention, ForwardMatchesNaive) { expect_forward_matches_naive(GetParam(), {}, {}, 1); }

TEST_P(Attention, BackwardMatchesFiniteDifferences) {
  expect_backward_matches_finite_differences(GetParam(), {}, {}, 4);
}

// Shapes: several tiles (T > 64) with windows smaller than a tile, spanning tiles, and ≥ T; MHA and GQA.
INSTANTIATE_TEST_SUITE_P(Shapes, Attention,
                         ::testing::Values(AttentionShape{1, 7, 2, 2, 4, 0}, AttentionShape{2, 70, 2, 1, 8, 0},
                                           AttentionShape{1, 150, 4, 2, 4, 5},
                                           AttentionShape{1, 131, 2, 2, 8, 70},
                                           AttentionShape{2, 33, 3, 1, 6, 100},
                                           AttentionShape{1, 70, 2, 1, 32, 0}, AttentionShape{1, 75, 1, 1, 48, 9},
                                           AttentionShape{1, 66, 1, 1, 80, 0}),
                         [](const auto& info) {
                           const AttentionShape& s = info.param;
                           return "B" + std::to_string(s.B) + "T" + std::to_string(s.T) + "H" + std::to_string(s.H) +
                                  "K" + std::to_string(s.K) + "W" + std::to_string(s.window);
                         });

TEST(Attention, ThreadCountDoesNotChangeBits) {
  const AttentionShape s{2, 100, 4, 2, 8, 30};
  auto q = normal_floats(size_t(s.B * s.T * s.H * s.D), 8), k = normal_floats(size_t(s.B * s.T * s.K * s.D), 9),
       v = normal_floats(size_t(s.B * s.T * s.K * s.D), 10), dout = normal_floats(q.size(), 11);
  auto run = [&](int threads) {
    omp_set_num_threads(threads);
    std::vector<float> out(q.size()), lse(size_t(s.B * s.H * s.T)), dq(q.size()), dk(k.size()), dv(v.size());
    attention_forward(out.data(), lse.data(), q.data(), k.data(), v.data(), s, {});
    attention_backward(dq.data(), dk.data(), dv.data(), dout.data(), out.data(), lse.data(), q.data(), k.data(),
                       v.data(), s, {});
    out.insert(out.end(), dq.begin(), dq.end());
    out.insert(out.end(), dk.begin(), dk.end());
    out.insert(out.end(), dv.begin(), dv.end());
    return out;
  };
  std::vector<float> one = run(1), two = run(2);
  omp_set_num_threads(2);
  EXPECT_EQ(one, two);
}

// Cached attention: n new queries at positions p … p + n − 1 see exactly what the same rows of a full causal
// attention over the p + n positions see, with the p earlier keys read from a cache laid out as the decoder keeps it
// (a ring of W slots on a sliding layer, every position on a full one).
struct CachedCase {
  int64_t position, n, H, K, D, window;
};

class CachedAttention : public ::testing::TestWithParam<CachedCase> {};

TEST_P(CachedAttention, MatchesTheRowsOfFullAttention) {
  const CachedCase c = GetParam();
  const int64_t T = c.position + c.n, KD = c.K * c.D;
  const AttentionShape full{1, T, c.H, c.K, c.D, c.window};
  auto q = normal_floats(size_t(T * c.H * c.D), 40), k = normal_floats(size_t(T * KD), 41),
       v = normal_floats(size_t(T * KD), 42);
  const Vec want = naive_attention(to_double(q), to_double(k), to_double(v), full);

  const int64_t capacity = c.window > 0 ? c.window : std::max<int64_t>(c.position, 1);
  std::vector<float> k_cache(size_t(capacity * KD), NAN), v_cache(k_cache.size(), NAN);  // unread slots poison
  for (int64_t j = std::max<int64_t>(0, c.position - capacity); j < c.position; j++)
    for (int64_t e = 0; e < KD; e++) {
      k_cache[size_t((j % capacity) * KD + e)] = k[size_t(j * KD + e)];
      v_cache[size_t((j % capacity) * KD + e)] = v[size_t(j * KD + e)];
    }
  const size_t new_q = size_t(c.position * c.H * c.D), new_kv = size_t(c.position * KD);
  std::vector<float> out(size_t(c.n * c.H * c.D));
  const CachedAttentionShape s{c.n, c.position, c.H, c.K, c.D, c.window, capacity};
  cached_attention(out.data(), q.data() + new_q, k.data() + new_kv, v.data() + new_kv, k_cache.data(),
                   v_cache.data(), s);
  EXPECT_LE(max_rel(out, Vec(want.begin() + int64_t(new_q), want.end())), 2e-6);
}

INSTANTIATE_TEST_SUITE_P(Shapes, CachedAttention,
                         ::testing::Values(CachedCase{0, 13, 4, 2, 8, 0},     // a prompt, nothing cached
                                           CachedCase{0, 13, 4, 2, 8, 5},     // a prompt longer than the window
                                           CachedCase{20, 1, 4, 4, 16, 0},    // one step, full layer
                                           CachedCase{20, 1, 4, 1, 8, 6},     // one step, the ring wrapped
                                           CachedCase{17, 4, 6, 2, 8, 7},     // a chunk after a wrapped ring
                                           CachedCase{3, 5, 4, 2, 40, 16}),   // ring not yet full, D = 40
                         [](const ::testing::TestParamInfo<CachedCase>& info) {
                           const CachedCase& c = info.param;
                           return "P" + std::to_string(c.position) + "N" + std::to_string(c.n) + "K" +
                                  std::to_string(c.K) + "D" + std::to_string(c.D) + "W" + std::to_string(c.window);
                         });
// ---- attention over packed rows (intra-document masking) -------------------------------------------------

// Packed rows: each row's document lengths (summing to T), their offsets as the kernels take them, and each token's
// document for the naive attention.
struct PackedRows {
  AttentionShape s;
  std::vector<std::vector<int32_t>> doc_lens;
  std::vector<int32_t> offsets{0};
  std::vector<int64_t> document;
  PackedRows(AttentionShape shape, std::vector<std::vector<int32_t>> lens) : s(shape), doc_lens(std::move(lens)) {
    for (size_t b = 0; b < doc_lens.size(); b++)
      for (int32_t length : doc_lens[b]) {
        offsets.push_back(offsets.back() + length);
        document.insert(document.end(), size_t(length), int64_t(offsets.size()));
      }
  }
  DocumentOffsets docs() const { return {offsets.data(), int64_t(offsets.size()) - 1}; }
};

// Every output of a forward and backward on random inputs: out, lse, dq, dk, dv one after the other.
std::vector<float> attention_outputs(const AttentionShape& s, const DocumentOffsets& docs, uint32_t seed) {
  AttentionRun run(s, docs, seed);
  for (const std::vector<float>* x : {&run.lse, &run.dq, &run.dk, &run.dv})
    run.out.insert(run.out.end(), x->begin(), x->end());
  return run.out;
}

class AttentionDocuments : public ::testing::TestWithParam<PackedRows> {};

TEST_P(AttentionDocuments, ForwardMatchesNaive) {
  const PackedRows& p = GetParam();
  expect_forward_matches_naive(p.s, p.docs(), p.document, 21);
}

TEST_P(AttentionDocuments, BackwardMatchesFiniteDifferences) {
  const PackedRows& p = GetParam();
  expect_backward_matches_finite_differences(p.s, p.docs(), p.document, 24);
}

// One-token documents (alone, in runs, first and last), documents inside one 64-query tile, one crossing several
// tiles, a tile whose queries start a new document after keys of an older one, windows shorter and longer than the
// documents, GQA, and rows of one document beside packed ones.
INSTANTIATE_TEST_SUITE_P(
    Layouts, AttentionDocuments,
    ::testing::Values(PackedRows({1, 7, 2, 2, 4, 0}, {{1, 1, 3, 1, 1}}),
                      PackedRows({1, 150, 2, 1, 8, 0}, {{1, 60, 5, 1, 83}}),
                      PackedRows({1, 200, 2, 1, 4, 30}, {{70, 1, 1, 1, 127}}),
                      PackedRows({1, 131, 2, 2, 8, 70}, {{130, 1}}),
                      PackedRows({2, 90, 2, 1, 8, 9}, {{10, 20, 30, 29, 1}, {90}})),
    [](const auto& info) { return "Case" + std::to_string(info.index); });

TEST(AttentionDocuments, OneDocumentPerRowGivesTheBitsOfNoDocuments) {
  const PackedRows p({2, 150, 4, 2, 8, 40}, {{150}, {150}});
  EXPECT_EQ(attention_outputs(p.s, p.docs(), 40), attention_outputs(p.s, {}, 40));
}

TEST(AttentionDocuments, ThreadCountDoesNotChangeBits) {
  const PackedRows p({2, 200, 4, 2, 8, 30}, {{1, 99, 64, 1, 35}, {130, 70}});
  omp_set_num_threads(1);
  const std::vector<float> one = attention_outputs(p.s, p.docs(), 50);
  omp_set_num_threads(2);
  EXPECT_EQ(one, attention_outputs(p.s, p.docs(), 50));
}

// Stage 3's length: a 65,536-token document is the plain causal attention, bit for bit (no T × T mask anywhere).
// Its last 1,024 queries (a context-parallel rank's slice, AttentionShape::queries) hold what is particular to the
// length: positions and offsets up to 65,535, every query seeing up to 1,024 key tiles, T × T past 2³¹, dK and dV
// over all 65,536 keys. That a whole row of one document gives the bits of none, tile for tile, is
// OneDocumentPerRowGivesTheBitsOfNoDocuments; the whole 65,536-token row here took 17 s, its last queries 0.6.
TEST(AttentionDocuments, A65536TokenDocumentIsThePlainCausalPath) {
  PackedRows p({1, 65536, 1, 1, 16, 0}, {{65536}});
  p.s.queries = 1024;
  EXPECT_EQ(attention_outputs(p.s, p.docs(), 60), attention_outputs(p.s, {}, 60));
}

// ---- a slice of the queries (context parallelism) -------------------------------------------------------------

// The queries [Q0, T) of a packed row against its keys [0, T) (AttentionShape::queries): what the whole row's attention
// gives those rows, bit for bit when Q0 starts a 64-query tile; dK and dV of the two slices add up to the row's.
void expect_query_slice_matches_whole_row(int64_t Q0) {
  const PackedRows p({1, 256, 4, 2, 8, 30}, {{1, 99, 64, 57, 35}});
  const AttentionShape& s = p.s;
  const int64_t Tq = s.T - Q0, HD = s.H * s.D, KD = s.K * s.D;
  const AttentionRun whole(s, p.docs(), 70);
  auto rows = [](const std::vector<float>& x, int64_t first, int64_t n, int64_t width) {
    return std::vector<float>(x.begin() + first * width, x.begin() + (first + n) * width);
  };
  AttentionShape tail = s;
  tail.queries = Tq;
  const std::vector<float> q = rows(whole.q, Q0, Tq, HD), dout = rows(whole.dout, Q0, Tq, HD);
  std::vector<float> out(q.size()), lse(size_t(s.H * Tq)), dq(q.size()), dk(whole.k.size()), dv(whole.v.size());
  attention_forward(out.data(), lse.data(), q.data(), whole.k.data(), whole.v.data(), tail, p.docs());
  attention_backward(dq.data(), dk.data(), dv.data(), dout.data(), out.data(), lse.data(), q.data(), whole.k.data(),
                     whole.v.data(), tail, p.docs());
  std::vector<float> lse_rows;
  for (int64_t h = 0; h < s.H; h++) {
    const std::vector<float> r = rows(whole.lse, h * s.T + Q0, Tq, 1);
    lse_rows.insert(lse_rows.end(), r.begin(), r.end());
  }
  if (Q0 % 64 == 0) {
    EXPECT_EQ(out, rows(whole.out, Q0, Tq, HD));
    EXPECT_EQ(lse, lse_rows);
    EXPECT_EQ(dq, rows(whole.dq, Q0, Tq, HD));
  } else {
    EXPECT_LE(max_rel(out, to_double(rows(whole.out, Q0, Tq, HD))), 1e-6);
    EXPECT_LE(max_rel(dq, to_double(rows(whole.dq, Q0, Tq, HD))), 1e-6);
  }
  // The head slice: the queries [0, Q0) over the keys [0, Q0), whose dK and dV add to the tail's.
  AttentionShape head = s;
  head.T = Q0;
  const std::vector<float> q0 = rows(whole.q, 0, Q0, HD), dout0 = rows(whole.dout, 0, Q0, HD);
  const std::vector<float> k0 = rows(whole.k, 0, Q0, KD), v0 = rows(whole.v, 0, Q0, KD);
  std::vector<int32_t> head_offsets;
  for (int32_t o : p.offsets)
    if (o < Q0) head_offsets.push_back(o);
  head_offsets.push_back(int32_t(Q0));
  const DocumentOffsets head_docs{head_offsets.data(), int64_t(head_offsets.size()) - 1};
  std::vector<float> out0(q0.size()), lse0(size_t(s.H * Q0)), dq0(q0.size()), dk0(k0.size()), dv0(v0.size());
  attention_forward(out0.data(), lse0.data(), q0.data(), k0.data(), v0.data(), head, head_docs);
  attention_backward(dq0.data(), dk0.data(), dv0.data(), dout0.data(), out0.data(), lse0.data(), q0.data(), k0.data(),
                     v0.data(), head, head_docs);
  for (size_t i = 0; i < dk0.size(); i++) {
    dk[i] += dk0[i];
    dv[i] += dv0[i];
  }
  EXPECT_LE(max_rel(dk, to_double(whole.dk)), 1e-5);
  EXPECT_LE(max_rel(dv, to_double(whole.dv)), 1e-5);
}

TEST(AttentionQuerySlice, OnATileBoundaryGivesTheBitsOfTheWholeRow) { expect_query_slice_matches_whole_row(128); }

TEST(AttentionQuerySlice, InsideATileMatchesTheWholeRow) { expect_query_slice_matches_whole_row(100); }

// ---- attention with bf16 products (attention_bf16.cc) -----------------------------------------------------

// Both kernels' outputs (out, lse, dq, dk, dv one after the other) on the same random inputs, rounded to bf16 first so
// that what differs is only the bf16 kernel's rounding of P, dout and dS where they enter a product.
struct KernelPair {
  std::vector<float> fp32, bf16;
  KernelPair(const AttentionShape& s, const DocumentOffsets& docs, uint32_t seed) {
    std::vector<float> q = normal_floats(size_t(s.B * s.rows_q() * s.H * s.D), seed),
                       k = normal_floats(size_t(s.B * s.T * s.K * s.D), seed + 1),
                       v = normal_floats(k.size(), seed + 2), dout = normal_floats(q.size(), seed + 3);
    for (std::vector<float>* x : {&q, &k, &v})
      for (float& value : *x) value = round_to_bf16(value);
    fp32 = outputs(s, docs, q, k, v, dout, attention_forward, attention_backward);
    bf16 = outputs(s, docs, q, k, v, dout, attention_forward_bf16, attention_backward_bf16);
  }
  template <typename Forward, typename Backward>
  static std::vector<float> outputs(const AttentionShape& s, const DocumentOffsets& docs, const std::vector<float>& q,
                                    const std::vector<float>& k, const std::vector<float>& v,
                                    const std::vector<float>& dout, Forward forward, Backward backward) {
    std::vector<float> out(q.size()), lse(size_t(s.B * s.H * s.rows_q())), dq(q.size()), dk(k.size()), dv(v.size());
    forward(out.data(), lse.data(), q.data(), k.data(), v.data(), s, docs);
    backward(dq.data(), dk.data(), dv.data(), dout.data(), out.data(), lse.data(), q.data(), k.data(), v.data(), s,
             docs);
    for (const std::vector<float>* x : {&lse, &dq, &dk, &dv}) out.insert(out.end(), x->begin(), x->end());
    return out;
  }
  // The largest difference of each output relative to that output's largest fp32 magnitude.
  std::vector<double> errors(const AttentionShape& s) const {
    const size_t nq = size_t(s.B * s.rows_q() * s.H * s.D), nk = size_t(s.B * s.T * s.K * s.D);
    const size_t sizes[] = {nq, size_t(s.B * s.H * s.rows_q()), nq, nk, nk};
    std::vector<double> result;
    size_t at = 0;
    for (size_t n : sizes) {
      const std::vector<float> got(bf16.begin() + long(at), bf16.begin() + long(at + n));
      result.push_back(max_rel(got, Vec(fp32.begin() + long(at), fp32.begin() + long(at + n))));
      at += n;
    }
    return result;
  }
};

void expect_bf16_close_to_fp32(const AttentionShape& s, const DocumentOffsets& docs, uint32_t seed) {
  const KernelPair pair(s, docs, seed);
  const std::vector<double> e = pair.errors(s);
  const char* names[] = {"out", "lse", "dq", "dk", "dv"};
  // bf16 has an 8-bit significand: one rounding is ≤ 2⁻⁹ relative; sums of many rounded terms stay near that.
  for (size_t i = 0; i < e.size(); i++) EXPECT_LE(e[i], 1.5e-2) << names[i];
  EXPECT_GT(e[0], 0.0) << "the bf16 kernel rounds P";
  EXPECT_GT(e[2], 0.0) << "the bf16 kernel rounds dout and dS";
}

class AttentionBf16 : public ::testing::TestWithParam<AttentionShape> {};

TEST_P(AttentionBf16, MatchesTheFp32KernelToBf16Precision) { expect_bf16_close_to_fp32(GetParam(), {}, 80); }

// Head sizes 16 to 128 (one to eight vectors of a product's columns), several tiles, windows, GQA, odd T.
INSTANTIATE_TEST_SUITE_P(Shapes, AttentionBf16,
                         ::testing::Values(AttentionShape{1, 7, 2, 2, 16, 0}, AttentionShape{2, 70, 2, 1, 32, 0},
                                           AttentionShape{1, 150, 4, 2, 16, 5},
                                           AttentionShape{1, 131, 2, 2, 48, 70},
                                           AttentionShape{2, 33, 3, 1, 64, 100},
                                           AttentionShape{1, 200, 2, 2, 64, 0}, AttentionShape{1, 66, 1, 1, 80, 0},
                                           AttentionShape{1, 129, 2, 1, 128, 64}),
                         [](const auto& info) {
                           const AttentionShape& s = info.param;
                           return "B" + std::to_string(s.B) + "T" + std::to_string(s.T) + "H" + std::to_string(s.H) +
                                  "K" + std::to_string(s.K) + "D" + std::to_string(s.D) + "W" +
                                  std::to_string(s.window);
                         });

TEST(AttentionBf16, PackedDocumentsMatchTheFp32Kernel) {
  for (const PackedRows& p : {PackedRows({1, 150, 2, 1, 16, 0}, {{1, 60, 5, 1, 83}}),
                              PackedRows({1, 200, 2, 1, 32, 30}, {{70, 1, 1, 1, 127}}),
                              PackedRows({2, 90, 2, 1, 16, 9}, {{10, 20, 30, 29, 1}, {90}})})
    expect_bf16_close_to_fp32(p.s, p.docs(), 81);
}

TEST(AttentionBf16, ThreadCountDoesNotChangeBitsAndOneDocumentIsNoDocuments) {
  const PackedRows p({2, 200, 4, 2, 32, 30}, {{1, 99, 64, 1, 35}, {130, 70}});
  omp_set_num_threads(1);
  const std::vector<float> one = KernelPair(p.s, p.docs(), 82).bf16;
  omp_set_num_threads(2);
  EXPECT_EQ(one, KernelPair(p.s, p.docs(), 82).bf16);
  const PackedRows whole({2, 150, 4, 2, 32, 40}, {{150}, {150}});
  EXPECT_EQ(KernelPair(whole.s, whole.docs(), 83).bf16, KernelPair(whole.s, {}, 83).bf16);
}

// A query slice starting on a tile boundary (context parallelism) gives the whole row's bits, as in the fp32 kernel.
TEST(AttentionBf16, AQuerySliceOnATileBoundaryGivesTheBitsOfTheWholeRow) {
  const PackedRows p({1, 256, 4, 2, 32, 30}, {{1, 99, 64, 57, 35}});
  const AttentionShape& s = p.s;
  const int64_t Q0 = 128, Tq = s.T - Q0, HD = s.H * s.D;
  const auto q = normal_floats(size_t(s.T * HD), 84), k = normal_floats(size_t(s.T * s.K * s.D), 85),
             v = normal_floats(k.size(), 86), dout = normal_floats(q.size(), 87);
  AttentionShape tail = s;
  tail.queries = Tq;
  const std::vector<float> q_tail(q.begin() + Q0 * HD, q.end()), dout_tail(dout.begin() + Q0 * HD, dout.end());
  const std::vector<float> whole =
      KernelPair::outputs(s, p.docs(), q, k, v, dout, attention_forward_bf16, attention_backward_bf16);
  const std::vector<float> slice =
      KernelPair::outputs(tail, p.docs(), q_tail, k, v, dout_tail, attention_forward_bf16, attention_backward_bf16);
  const size_t nq = size_t(Tq * HD);
  EXPECT_EQ(std::vector<float>(slice.begin(), slice.begin() + long(nq)),
            std::vector<float>(whole.begin() + Q0 * HD, whole.begin() + s.T * HD))
      << "out";
  const size_t dq_at = nq + size_t(s.H * Tq), whole_dq_at = size_t(s.T * HD + s.H * s.T);
  EXPECT_EQ(std::vector<float>(slice.begin() + long(dq_at), slice.begin() + long(dq_at + nq)),
            std::vector<float>(whole.begin() + long(whole_dq_at) + Q0 * HD, whole.begin() + long(whole_dq_at) + s.T * HD))
      << "dq";
}

// Each vector of 16 queries reads only the keys it sees (TileSpans): random packings with short and long documents,
// with and without windows, against the fp32 kernel, which computes every tile densely.
TEST(AttentionBf16, RandomPackingsAndWindowsMatchTheFp32Kernel) {
  std::mt19937 g(7);
  for (int rep = 0; rep < 8; rep++) {
    const int64_t T = 70 + int64_t(g() % 250), longest = rep % 2 ? 20 : 150;
    std::vector<int32_t> lens;
    for (int64_t left = T; left > 0;) {
      const int32_t n = int32_t(std::min<int64_t>(left, 1 + int64_t(g() % uint32_t(longest))));
      lens.push_back(n);
      left -= n;
    }
    const int64_t window = std::vector<int64_t>{0, 3, 5, 70}[size_t(rep % 4)];  // 1: dq = dk = 0 but for rounding
    const PackedRows p({1, T, 4, 2, rep % 3 ? 32 : 16, window}, {lens});
    SCOPED_TRACE("T " + std::to_string(T) + " window " + std::to_string(window) + " documents " +
                 std::to_string(lens.size()));
    expect_bf16_close_to_fp32(p.s, p.docs(), 90 + uint32_t(rep));
  }
}

// Documents starting on tile boundaries: each gets the bits it gets as a row of its own (what a tile skips for the
// other documents' queries and keys leaves nothing behind).
TEST(AttentionBf16, ADocumentOnTileBoundariesGivesTheBitsOfItsOwnRow) {
  const int64_t H = 2, K = 1, D = 32, window = 40;
  const std::vector<int32_t> lens{64, 128, 50};
  const PackedRows packed({1, 242, H, K, D, window}, {lens});
  const AttentionShape& s = packed.s;
  const auto q = normal_floats(size_t(s.T * H * D), 91), k = normal_floats(size_t(s.T * K * D), 92),
             v = normal_floats(k.size(), 93), dout = normal_floats(q.size(), 94);
  const std::vector<float> whole =
      KernelPair::outputs(s, packed.docs(), q, k, v, dout, attention_forward_bf16, attention_backward_bf16);
  int64_t start = 0;
  for (int32_t n : lens) {
    const AttentionShape one{1, n, H, K, D, window};
    const auto rows = [&](const std::vector<float>& x, int64_t width) {
      return std::vector<float>(x.begin() + start * width, x.begin() + (start + n) * width);
    };
    const std::vector<float> alone = KernelPair::outputs(one, {}, rows(q, H * D), rows(k, K * D), rows(v, K * D),
                                                         rows(dout, H * D), attention_forward_bf16,
                                                         attention_backward_bf16);
    // The whole row's outputs: out [T, H, D], lse [H, T], dq [T, H, D], dk and dv [T, K, D].
    std::vector<float> expected = rows(std::vector<float>(whole.begin(), whole.begin() + s.T * H * D), H * D);
    for (int64_t h = 0; h < H; h++)
      expected.insert(expected.end(), whole.begin() + s.T * H * D + h * s.T + start,
                      whole.begin() + s.T * H * D + h * s.T + start + n);
    size_t at = size_t(s.T * H * D + H * s.T);
    for (int64_t width : {H * D, K * D, K * D}) {
      const std::vector<float> part(whole.begin() + long(at), whole.begin() + long(at + size_t(s.T * width)));
      const std::vector<float> mine = rows(part, width);
      expected.insert(expected.end(), mine.begin(), mine.end());
      at += size_t(s.T * width);
    }
    EXPECT_EQ(alone, expected) << "the document at " << start;
    start += n;
  }
}

// simd.h: on AVX2 without AVX-512, max and exp have their own code, on 16 lanes and on one register
// (simd::native); both give the portable code's bits.
TEST(Simd, MaxAndExpGiveThePortableBits) {
  std::vector<uint32_t> patterns{0u,          0x80000000u, 0x7f800000u, 0xff800000u, 0x7fc00000u, 0xffc00001u,
                                 0x7f800001u, 1u,          0x80000001u, 0x3f800000u, 0xc2ae6666u, 0x42b16666u};
  for (uint64_t u = 0; u < (uint64_t(1) << 32); u += 40961) patterns.push_back(uint32_t(u));
  while (patterns.size() % simd::kWidth) patterns.push_back(0);
  std::mt19937 g(5);
  for (size_t i = 0; i < patterns.size(); i += simd::kWidth) {
    simd::f16v x, y;
    std::memcpy(&x, patterns.data() + i, sizeof(x));
    for (int lane = 0; lane < simd::kWidth; lane++) y[lane] = g() % 3 ? -x[lane] : std::bit_cast<float>(uint32_t(g()));
    const simd::f16v e = simd::exp(x), e_portable = simd::portable::exp(x);
    const simd::f16v m = simd::max(x, y), m_portable = simd::portable::max(x, y);
    ASSERT_EQ(std::memcmp(&e, &e_portable, sizeof(e)), 0) << "exp of the vector at " << i;
    ASSERT_EQ(std::memcmp(&m, &m_portable, sizeof(m)), 0) << "max of the vector at " << i;
    for (int p = 0; p < simd::kParts; p++) {
      const size_t at = size_t(p * simd::kNativeWidth);
      simd::native xp, yp;
      std::memcpy(&xp, reinterpret_cast<const float*>(&x) + at, sizeof(xp));
      std::memcpy(&yp, reinterpret_cast<const float*>(&y) + at, sizeof(yp));
      const simd::native ep = simd::exp(xp), mp = simd::max(xp, yp);
      ASSERT_EQ(std::memcmp(&ep, reinterpret_cast<const float*>(&e_portable) + at, sizeof(ep)), 0)
          << "exp of part " << p << " of the vector at " << i;
      ASSERT_EQ(std::memcmp(&mp, reinterpret_cast<const float*>(&m_portable) + at, sizeof(mp)), 0)
          << "max of part " << p << " of the vector at " << i;
    }
  }
}

// ---- RMSNorm, RoPE, SwiGLU, embedding ---------------------------------------------------------------

TEST(RmsNorm, ForwardAndBackward) {
  const int64_t rows = 70, C = 24;  // more rows than one reduction block
  const float eps = 1e-6f;
  auto x = normal_floats(size_t(rows * C), 12), w = normal_floats(size_t(C), 13), dy = normal_floats(x.size(), 14);
  for (float& wi : w) wi += 1.0f;
  std::vector<float> y(x.size()), rstd(rows), dx(x.size()), dw(size_t(C), 0.0f);
  rmsnorm_forward(y.data(), rstd.data(), x.data(), w.data(), rows, C, eps);
  auto naive = [&](const Vec& xs, const Vec& ws) {
    Vec out(xs.size());
    for (int64_t r = 0; r < rows; r++) {
      double ss = 0;
      for (int64_t c = 0; c < C; c++) ss += xs[size_t(r * C + c)] * xs[size_t(r * C + c)];
      double s = 1.0 / std::sqrt(ss / double(C) + double(eps));
      for (int64_t c = 0; c < C; c++) out[size_t(r * C + c)] = xs[size_t(r * C + c)] * s * ws[size_t(c)];
    }
    return out;
  };
  const Vec xd = to_double(x), wd = to_double(w), g = to_double(dy);
  EXPECT_LE(max_rel(y, naive(xd, wd)), 1e-6);
  rmsnorm_backward(dx.data(), dw.data(), dy.data(), x.data(), w.data(), rstd.data(), rows, C, false);
  auto loss = [&](const Vec& xs, const Vec& ws) {
    Vec o = naive(xs, ws);
    double t = 0;
    for (size_t i = 0; i < o.size(); i++) t += o[i] * g[i];
    return t;
  };
  EXPECT_LE(max_rel(dx, numerical_gradient([&](const Vec& v) { return loss(v, wd); }, xd)), 1e-6);
  EXPECT_LE(max_rel(dw, numerical_gradient([&](const Vec& v) { return loss(xd, v); }, wd)), 1e-6);
}

// The reordered block's h = x + norm(sublayer) in one call: the bits of rmsnorm_forward and then the sum, rounded
// separately (a contraction into an FMA would change them), also with out aliasing the residual (the decoder).
TEST(RmsNorm, AddForwardIsNormThenAddBitForBit) {
  const int64_t rows = 37, C = 200;
  const float eps = 1e-6f;
  const auto x = normal_floats(size_t(rows * C), 16), w = normal_floats(size_t(C), 17),
             residual = normal_floats(x.size(), 18);
  std::vector<float> y(x.size()), rstd(rows), want(x.size());
  rmsnorm_forward(y.data(), rstd.data(), x.data(), w.data(), rows, C, eps);
  for (size_t i = 0; i < x.size(); i++) want[i] = residual[i] + y[i];
  std::vector<float> out(x.size()), out_rstd(rows);
  rmsnorm_add_forward(out.data(), out_rstd.data(), residual.data(), x.data(), w.data(), rows, C, eps);
  EXPECT_EQ(0, std::memcmp(out.data(), want.data(), out.size() * sizeof(float)));
  EXPECT_EQ(0, std::memcmp(out_rstd.data(), rstd.data(), rstd.size() * sizeof(float)));
  std::vector<float> in_place = residual;
  rmsnorm_add_forward(in_place.data(), out_rstd.data(), in_place.data(), x.data(), w.data(), rows, C, eps);
  EXPECT_EQ(0, std::memcmp(in_place.data(), want.data(), want.size() * sizeof(float)));
}

TEST(Rope, RotatesHalvesAndInvertsExactly) {
  const int64_t B = 2, T = 9, heads = 3, D = 8;
  const double theta = 10000.0;
  RopeTable table(T, D, theta);
  auto x = normal_floats(size_t(B * T * heads * D), 15);
  std::vector<float> y = x;
  rope_forward(y.data(), table.cos.data(), table.sin.data(), B, T, heads, D);
  for (int64_t b = 0; b < B; b++)
    for (int64_t t = 0; t < T; t++)
      for (int64_t h = 0; h < heads; h++)
        for (int64_t i = 0; i < D / 2; i++) {
          const size_t base = size_t(((b * T + t) * heads + h) * D);
          const double angle = double(t) / std::pow(theta, 2.0 * double(i) / double(D));
          const double x1 = x[base + size_t(i)], x2 = x[base + size_t(i + D / 2)];
          EXPECT_NEAR(y[base + size_t(i)], x1 * std::cos(angle) - x2 * std::sin(angle), 1e-6);
          EXPECT_NEAR(y[base + size_t(i + D / 2)], x2 * std::cos(angle) + x1 * std::sin(angle), 1e-6);
        }
  // The backward pass is the transpose (inverse) rotation: it maps y back to x.
  rope_backward(y.data(), table.cos.data(), table.sin.data(), B, T, heads, D);
  for (size_t i = 0; i < x.size(); i++) EXPECT_NEAR(y[i], x[i], 1e-6);
}

TEST(Rope, AtAPositionRotatesAsTheFullSequenceDoes) {
  const int64_t T = 30, heads = 2, D = 16, position = 11, n = 5;
  const RopeTable table(T, D, 500000.0);
  auto x = normal_floats(size_t(T * heads * D), 16);
  std::vector<float> full = x;
  rope_forward(full.data(), table.cos.data(), table.sin.data(), 1, T, heads, D);
  // Decoding rotates new rows at `position` with the tables' rows from there on.
  const int64_t row = heads * D, half = D / 2;
  std::vector<float> part(x.begin() + position * row, x.begin() + (position + n) * row);
  rope_forward(part.data(), table.cos.data() + position * half, table.sin.data() + position * half, 1, n, heads, D);
  EXPECT_EQ(part, std::vector<float>(full.begin() + position * row, full.begin() + (position + n) * row));
}

TEST(SwiGlu, ForwardAndBackward) {
  const int64_t n = 257;
  auto g = normal_floats(size_t(n), 16, 2.0f), u = normal_floats(size_t(n), 17), ds = normal_floats(size_t(n), 18);
  std::vector<float> s(n), dg(n), du(n);
  swiglu_forward(s.data(), g.data(), u.data(), n);
  swiglu_backward(dg.data(), du.data(), ds.data(), g.data(), u.data(), n);
  for (int64_t i = 0; i < n; i++) {
    auto f = [&](double gi, double ui) { return gi / (1.0 + std::exp(-gi)) * ui; };
    const double h = 1e-6;
    EXPECT_NEAR(s[size_t(i)], f(g[size_t(i)], u[size_t(i)]), 1e-6);
    EXPECT_NEAR(dg[size_t(i)], ds[size_t(i)] * (f(g[size_t(i)] + h, u[size_t(i)]) - f(g[size_t(i)] - h, u[size_t(i)])) / (2 * h),
                1e-5);
    EXPECT_NEAR(du[size_t(i)], ds[size_t(i)] * f(g[size_t(i)], 1.0), 1e-6);
  }
}

// The kernels run a vector at a time: the elements of a last partial vector get the bits they get in a full one. Gates
// far out on either side, where exp clamps, give silu's limits: g · u above, zero (to 1e-30) below.
TEST(SwiGlu, APartialVectorHasTheBitsOfAFullOne) {
  const int64_t n = 64;
  std::vector<float> g = normal_floats(size_t(n), 31, 3.0f), u = normal_floats(size_t(n), 32),
                     ds = normal_floats(size_t(n), 33);
  g[5] = 100.0f, g[6] = -100.0f, g[7] = 89.0f, g[8] = -89.0f, g[9] = 0.0f;
  std::vector<float> s(n), dg(n), du(n);
  swiglu_forward(s.data(), g.data(), u.data(), n);
  swiglu_backward(dg.data(), du.data(), ds.data(), g.data(), u.data(), n);
  EXPECT_EQ(s[5], 100.0f * u[5]);
  EXPECT_NEAR(s[6], 0.0f, 1e-30f);
  EXPECT_EQ(s[9], 0.0f);
  for (int64_t offset : {1, 7, 13, 31})  // the elements from `offset` on, so vectors start elsewhere in them
    for (int64_t len : {1, 5, 17, 33}) {
      if (offset + len > n) continue;
      std::vector<float> s2(static_cast<size_t>(len)), dg2(s2.size()), du2(s2.size());
      swiglu_forward(s2.data(), g.data() + offset, u.data() + offset, len);
      swiglu_backward(dg2.data(), du2.data(), ds.data() + offset, g.data() + offset, u.data() + offset, len);
      for (int64_t i = 0; i < len; i++) {
        const size_t at = size_t(offset + i);
        ASSERT_EQ(std::bit_cast<uint32_t>(s2[size_t(i)]), std::bit_cast<uint32_t>(s[at])) << offset << " " << i;
        ASSERT_EQ(std::bit_cast<uint32_t>(dg2[size_t(i)]), std::bit_cast<uint32_t>(dg[at])) << offset << " " << i;
        ASSERT_EQ(std::bit_cast<uint32_t>(du2[size_t(i)]), std::bit_cast<uint32_t>(du[at])) << offset << " " << i;
      }
    }
}

TEST(Embedding, GatherAndScatterAddWithRepeatedIds) {
  const int64_t V = 5, C = 70, N = 6;
  auto table = normal_floats(size_t(V * C), 19), dout = normal_floats(size_t(N * C), 20);
  std::vector<int32_t> ids = {3, 1, 3, 0, 3, 4};
  std::vector<float> out(size_t(N * C)), dtable(size_t(V * C), 0.0f);
  embedding_forward(out.data(), ids.data(), table.data(), N, C);
  embedding_backward(dtable.data(), ids.data(), dout.data(), N, C);
  for (int64_t c = 0; c < C; c++) {
    EXPECT_EQ(out[size_t(2 * C + c)], table[size_t(3 * C + c)]);
    EXPECT_EQ(dtable[size_t(3 * C + c)], (dout[size_t(c)] + dout[size_t(2 * C + c)]) + dout[size_t(4 * C + c)]);
    EXPECT_EQ(dtable[size_t(2 * C + c)], 0.0f);
  }
}

// ---- GEMM and the fused LM head + loss ------------------------------------------------------------

TEST(Gemm, AllTransposesMatchNaive) {
  const int64_t M = 13, N = 17, K = 19;
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      auto A = normal_floats(size_t(M * K), 21), B = normal_floats(size_t(K * N), 22),
           C = normal_floats(size_t(M * N), 23);
      std::vector<float> out = C;
      gemm(ta, tb, M, N, K, A.data(), ta ? M : K, B.data(), tb ? K : N, out.data(), N, true, Precision::fp32);
      for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) {
          double sum = C[size_t(i * N + j)];
          for (int64_t k = 0; k < K; k++)
            sum += double(ta ? A[size_t(k * M + i)] : A[size_t(i * K + k)]) * (tb ? B[size_t(j * K + k)] : B[size_t(k * N + j)]);
          EXPECT_NEAR(out[size_t(i * N + j)], sum, 1e-5) << "trans_a=" << ta << " trans_b=" << tb;
        }
    }
}

TEST(Gemm, Bf16RoundsOperandsAndAccumulatesInFp32) {
  const int64_t M = 4, N = 5, K = 300;
  auto A = normal_floats(size_t(M * K), 24), B = normal_floats(size_t(N * K), 25);
  std::vector<float> out(size_t(M * N));
  gemm(false, true, M, N, K, A.data(), K, B.data(), K, out.data(), N, false, Precision::bf16);
  for (int64_t i = 0; i < M; i++)
    for (int64_t j = 0; j < N; j++) {
      double sum = 0;
      for (int64_t k = 0; k < K; k++)
        sum += double(round_to_bf16(A[size_t(i * K + k)])) * double(round_to_bf16(B[size_t(j * K + k)]));
      EXPECT_NEAR(out[size_t(i * N + j)], sum, 1e-4);
    }
}

TEST(LmHeadLoss, LossAndGradientsMatchNaive) {
  const int64_t N = 9, C = 12, V = 37;
  const float z_coef = 1e-2f;  // large, so the z-loss term is visible in the gradient
  auto hidden = normal_floats(size_t(N * C), 26), weight = normal_floats(size_t(V * C), 27);
  std::vector<int32_t> targets = {3, 0, 36, kIgnoreLabel, 5, 5, 17, 2, kIgnoreLabel};
  const float scale = 1.0f / 7.0f;
  std::vector<float> dhidden(size_t(N * C)), dweight(size_t(V * C), 0.0f);
  LmHeadGrads grads{dhidden.data(), dweight.data(), scale};
  LossSums sums = lm_head_loss(hidden.data(), weight.data(), targets.data(), N, C, V, z_coef, Precision::fp32, &grads);

  auto naive = [&](const Vec& h, const Vec& w, double* ce_out, double* z_out) {
    double ce = 0, z = 0;
    for (int64_t n = 0; n < N; n++) {
      if (targets[size_t(n)] == kIgnoreLabel) continue;
      Vec logits(V, 0.0);
      for (int64_t v = 0; v < V; v++)
        for (int64_t c = 0; c < C; c++) logits[size_t(v)] += h[size_t(n * C + c)] * w[size_t(v * C + c)];
      double m = *std::max_element(logits.begin(), logits.end()), s = 0;
      for (double l : logits) s += std::exp(l - m);
      double lse = m + std::log(s);
      ce += lse - logits[size_t(targets[size_t(n)])];
      z += lse * lse;
    }
    if (ce_out) *ce_out = ce;
    if (z_out) *z_out = z;
    return (ce + double(z_coef) * z) * double(scale);
  };
  double ce, z;
  const Vec hd = to_double(hidden), wd = to_double(weight);
  naive(hd, wd, &ce, &z);
  EXPECT_EQ(sums.n_labels, 7);
  EXPECT_NEAR(sums.ce, ce, 1e-5 * ce);
  EXPECT_NEAR(sums.z, z, 1e-5 * z);
  EXPECT_LE(max_rel(dhidden, numerical_gradient([&](const Vec& x) { return naive(x, wd, nullptr, nullptr); }, hd)),
            1e-5);
  EXPECT_LE(max_rel(dweight, numerical_gradient([&](const Vec& x) { return naive(hd, x, nullptr, nullptr); }, wd)),
            1e-5);
}

// An LM head problem for the bf16 tests: normal hidden states and weight (with its bf16 copy), and targets with
// ignored rows every 37 rows from row 5 and on both sides of row 64 (a group boundary where V = 2²⁰).
struct LmHeadProblem {
  LmHeadProblem(int64_t n, int64_t c, int64_t v, uint32_t seed)
      : N(n),
        C(c),
        V(v),
        hidden(normal_floats(size_t(n * c), seed)),
        weight(normal_floats(size_t(v * c), seed + 1)),
        weight16(weight.size()),
        targets(size_t(n)) {
    convert_to_bf16(weight.data(), weight16.data(), weight.size());
    for (int64_t i = 0; i < N; i++)
      targets[size_t(i)] = (i % 37 == 5 || i == 63 || i == 64) ? kIgnoreLabel : int32_t(i * 7919 % V);
  }
  int64_t N, C, V;
  std::vector<float> hidden, weight;
  std::vector<bf16> weight16;
  std::vector<int32_t> targets;
};

// In bf16 the logit gradients of several 16M-logit chunks are gathered and the backward GEMMs run once per group
// (lm_head_loss.cc): with V = 2²⁰ a chunk is 16 rows and a group 64, so 150 rows are three groups, the last one
// partial, with ignored rows on both sides of a boundary. Against the fp32 path: bf16 rounding of the operands only.
TEST(LmHeadLoss, Bf16GroupsOfChunksMatchTheFp32Path) {
  const LmHeadProblem problem(150, 4, int64_t(1) << 20, 28);
  const auto& [N, C, V, hidden, weight, weight16, targets] = problem;
  auto run = [&](Precision p, std::vector<float>& dhidden, std::vector<float>& dweight) {
    dhidden.assign(size_t(N * C), 0.0f);
    dweight.assign(size_t(V * C), 0.0f);
    const LmHeadGrads grads{dhidden.data(), dweight.data(), 1.0f / float(N)};
    const WeightRef w(weight.data(), p == Precision::bf16 ? weight16.data() : nullptr);
    return lm_head_loss(hidden.data(), w, targets.data(), N, C, V, 1e-4f, p, &grads);
  };
  std::vector<float> dh32, dw32, dh16, dw16;
  const LossSums fp32 = run(Precision::fp32, dh32, dw32), bf16 = run(Precision::bf16, dh16, dw16);
  EXPECT_EQ(bf16.n_labels, fp32.n_labels);
  EXPECT_NEAR(bf16.ce, fp32.ce, 1e-2 * fp32.ce);
  EXPECT_NEAR(bf16.z, fp32.z, 1e-2 * fp32.z);
  EXPECT_LE(max_rel(dh16, to_double(dh32)), 2e-2);
  EXPECT_LE(max_rel(dw16, to_double(dw32)), 2e-2);
  for (int64_t c = 0; c < C; c++) EXPECT_EQ(dh16[size_t(63 * C + c)], 0.0f) << "an ignored row has no gradient";
}

// The rounded bf16 path transposes dhidden and the narrow head's dWᵀ by 8 × 8 blocks in registers, the ragged edges
// element by element: shapes that are multiples of 8 in neither dimension, against the fp32 path (no transposes).
TEST(LmHeadLoss, Bf16TransposesOfRaggedShapesMatchTheFp32Path) {
  const LmHeadProblem problem(150, 20, 4101, 29);
  const auto& [N, C, V, hidden, weight, weight16, targets] = problem;
  auto run = [&](Precision p, std::vector<float>& dhidden, std::vector<float>& dweight) {
    dhidden.assign(size_t(N * C), 0.0f);
    dweight = normal_floats(size_t(V * C), 33, 1e-3f);  // accumulated onto
    const LmHeadGrads grads{dhidden.data(), dweight.data(), 1.0f / float(N)};
    return lm_head_loss(hidden.data(), weight.data(), targets.data(), N, C, V, 1e-4f, p, &grads,
                        LmHeadBf16Path::rounded_fp32);
  };
  std::vector<float> dh32, dw32, dh16, dw16;
  run(Precision::fp32, dh32, dw32);
  run(Precision::bf16, dh16, dw16);
  EXPECT_LE(max_rel(dh16, to_double(dh32)), 2e-2);
  EXPECT_LE(max_rel(dw16, to_double(dw32)), 2e-2);
}

// bf16 on a CPU without oneDNN's bf16 matmul rounds the LM head's operands once per call instead of per product
// (lm_head_loss.cc). Against the per-product path (gemm's widening there): the same loss and dhidden bits, and dW,
// accumulated onto what dweight held, with the same bits for a wide head and in another fp32 sum order for a narrow
// one (its dWᵀ form). The narrow case runs three groups of 64 rows (V = 2²⁰), the last partial, with ignored rows on
// both sides of a group boundary; both cases the forward alone too. Where oneDNN has a bf16 matmul the per-product path
// sums in its bf16 kernels' order, so there the results are compared within the sums' error only.
void expect_rounded_once_matches_rounding_per_product(const LmHeadProblem& problem, bool narrow) {
  const auto& [N, C, V, hidden, weight, weight16, targets] = problem;
  SCOPED_TRACE(::testing::Message() << "N " << N << ", C " << C << ", V " << V);
  // At the gradient's scale, so that the sums differ by their order, not by ulps of larger values.
  const std::vector<float> dweight_before = normal_floats(size_t(V * C), 32, 1e-3f);
  struct Result {
    LossSums sums, forward;
    std::vector<float> dhidden, dweight;
  };
  auto run = [&](LmHeadBf16Path path, bool pre_rounded) {
    Result r{.sums = {}, .forward = {}, .dhidden = std::vector<float>(size_t(N * C)), .dweight = dweight_before};
    const LmHeadGrads grads{r.dhidden.data(), r.dweight.data(), 1.0f / float(N)};
    const WeightRef w(weight.data(), pre_rounded ? weight16.data() : nullptr);
    r.sums = lm_head_loss(hidden.data(), w, targets.data(), N, C, V, 1e-4f, Precision::bf16, &grads, path);
    r.forward = lm_head_loss(hidden.data(), w, targets.data(), N, C, V, 1e-4f, Precision::bf16, nullptr, path);
    return r;
  };
  const Result per_product = run(LmHeadBf16Path::per_product, true);
  for (const bool pre_rounded : {true, false}) {
    const Result once = run(LmHeadBf16Path::rounded_fp32, pre_rounded);
    EXPECT_EQ(once.sums.n_labels, N - (N + 31) / 37 - 2);
    EXPECT_EQ(once.forward.ce, once.sums.ce);
    EXPECT_EQ(once.forward.z, once.sums.z);
    if (!native_bf16_gemm()) {
      EXPECT_EQ(once.sums.ce, per_product.sums.ce);
      EXPECT_EQ(once.sums.z, per_product.sums.z);
      EXPECT_EQ(once.dhidden, per_product.dhidden);
      if (!narrow) {
        EXPECT_EQ(once.dweight, per_product.dweight);
      }
    }
    EXPECT_NEAR(once.sums.ce, per_product.sums.ce, 1e-5 * per_product.sums.ce);
    EXPECT_LE(max_rel(once.dhidden, to_double(per_product.dhidden)), 1e-4);
    double largest = 0, worst = 0;
    for (size_t i = 0; i < once.dweight.size(); i++) {
      largest = std::max(largest, double(std::fabs(per_product.dweight[i] - dweight_before[i])));
      worst = std::max(worst, double(std::fabs(once.dweight[i] - per_product.dweight[i])));
    }
    EXPECT_GT(largest, 0.0);
    EXPECT_LE(worst, 1e-5 * largest) << "dW differs beyond fp32 sum order";
    for (int64_t c = 0; c < C; c++) EXPECT_EQ(once.dhidden[size_t(64 * C + c)], 0.0f) << "an ignored row";
  }
}

TEST(LmHeadLoss, Bf16RoundedOnceMatchesRoundingPerProduct) {
  expect_rounded_once_matches_rounding_per_product(LmHeadProblem(150, 4, int64_t(1) << 20, 30), true);
  expect_rounded_once_matches_rounding_per_product(LmHeadProblem(150, 260, 4096, 30), false);
}

// A narrow head's own bf16 logits (narrow_head.h), finished by stretches of the softmax, give what stretch_exps gives
// over oneDNN's bf16 matmul's logits, bit for bit: each stretch's largest logit, sum and exps, and the targets'
// logits; at every edge of the tiles (rows not a multiple of 4, vocabularies not a multiple of 16 or 96), at C = 64,
// 128 and 256, from W in fp32 or already rounded, with and without the exps, on 1 and 2 threads.
TEST(NarrowHead, LogitsHaveTheBitsOfOnednnBf16Matmul) {
  if (!narrow_head_available(128) || !native_bf16_gemm())
    GTEST_SKIP() << "needs AVX512-BF16 and oneDNN's bf16 matmul (on an AVX2 CPU oneDNN has no bf16 kernel)";
  const int threads_before = omp_get_max_threads();
  for (int64_t C : {64, 128, 256})
    for (int64_t rows : {1, 3, 6, 37, 167})
      for (int64_t V : {16, 100, 1000, 4099}) {
        SCOPED_TRACE(::testing::Message() << "C " << C << ", rows " << rows << ", V " << V);
        const std::vector<float> hidden = normal_floats(size_t(rows * C), uint32_t(rows + C), 2.0f);
        const std::vector<float> W = normal_floats(size_t(V * C), uint32_t(V), 0.1f);
        std::vector<bf16> W16(W.size());
        convert_to_bf16(W.data(), W16.data(), W.size());
        std::vector<int32_t> targets(static_cast<size_t>(rows));
        for (int64_t r = 0; r < rows; r++) targets[size_t(r)] = r % 5 == 4 ? kIgnoreLabel : int32_t((r * 7919) % V);
        const int64_t count = stretches_of(V);
        std::vector<float> want(size_t(rows * V)), want_max(size_t(rows * count)), want_sum(want_max.size());
        gemm(false, true, rows, V, C, hidden.data(), C, W.data(), C, want.data(), V, false, Precision::bf16);
        std::vector<float> want_target(size_t(rows), -1.0f);
        for (int64_t r = 0; r < rows; r++) {
          if (targets[size_t(r)] != kIgnoreLabel) want_target[size_t(r)] = want[size_t(r * V + targets[size_t(r)])];
          row_stretch_exps(want.data() + r * V, V, true,
                           {want_max.data() + r * count, want_sum.data() + r * count, count});
        }
        for (const bf16* pre : {static_cast<const bf16*>(nullptr), static_cast<const bf16*>(W16.data())}) {
          HugePageVector<bf16> packed;
          pack_narrow_weight(W.data(), pre, V, C, packed);
          for (int threads : {1, 2})
            for (bool with_exps : {true, false}) {
              omp_set_num_threads(threads);
              std::vector<float> got(want.size(), std::nanf("")), got_max(want_max.size(), std::nanf("")),
                  got_sum(want_sum.size(), std::nanf("")), got_target(size_t(rows), -1.0f);
              narrow_logits(hidden.data(), rows, packed.data(), V, C, targets.data(), with_exps ? got.data() : nullptr,
                            {got_max.data(), got_sum.data(), count}, got_target.data());
              SCOPED_TRACE(::testing::Message() << threads << " thread(s), exps " << with_exps);
              if (with_exps) {
                EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0);
              }
              EXPECT_EQ(got_max, want_max);
              EXPECT_EQ(got_sum, want_sum);
              EXPECT_EQ(got_target, want_target);
            }
        }
      }
  omp_set_num_threads(threads_before);
}

// The AVX-512 softmax's exp (stretch_softmax.h) is within 1 ulp of exp at every 97th float of [−104, 0], subnormal
// results included; exp(±0) = 1 exactly (a stretch's largest logit), exp(−inf) = 0, and NaN stays NaN.
TEST(StretchSoftmax, ExpIsWithinOneUlpDownToSubnormals) {
#if REPLICA_STRETCH512
  auto exp512 = [](float x) { return _mm512_cvtss_f32(stretch512::exp_nonpositive(_mm512_set1_ps(x))); };
  const uint32_t lowest = std::bit_cast<uint32_t>(-104.0f);
  int64_t subnormal = 0;
  for (uint32_t bits = 0x80000000u; bits <= lowest; bits += 97) {
    const float x = std::bit_cast<float>(bits), got = exp512(x), want = float(std::exp(double(x)));
    const int64_t ulps = std::abs(int64_t(std::bit_cast<int32_t>(got)) - int64_t(std::bit_cast<int32_t>(want)));
    ASSERT_LE(ulps, 1) << "exp(" << x << ") = " << got << ", not " << want;
    subnormal += want > 0.0f && want < FLT_MIN;
  }
  EXPECT_GT(subnormal, 0) << "the sweep reaches subnormal results";
  EXPECT_EQ(exp512(0.0f), 1.0f);
  EXPECT_EQ(exp512(-0.0f), 1.0f);
  EXPECT_EQ(exp512(-INFINITY), 0.0f);
  EXPECT_TRUE(std::isnan(exp512(NAN)));
#else
  GTEST_SKIP() << "needs AVX-512 (the portable build's softmax uses simd::exp, Simd.MaxAndExpGiveThePortableBits)";
#endif
}

// The narrow head's own dW += dlogitsᵀ · hidden gives oneDNN's bits up to 512 rows (the rows oneDNN's bf16 kernel
// sums in one chain; lm_head_loss's groups hold no more): odd row counts (the last row paired with zeros),
// vocabularies not a multiple of the 32-entry stripe, every C the kernel takes from its smallest, added onto what dW
// held, on 1 and 2 threads.
TEST(NarrowHead, DweightHasTheBitsOfOnednnBf16MatmulUpTo512Rows) {
  if (!narrow_head_available(128) || !native_bf16_gemm())
    GTEST_SKIP() << "needs AVX512-BF16 and oneDNN's bf16 matmul (on an AVX2 CPU oneDNN has no bf16 kernel)";
  const int threads_before = omp_get_max_threads();
  for (int64_t C : {8, 64, 128, 256})
    for (int64_t rows : {1, 2, 7, 64, 301, 512})
      for (int64_t V : {32, 45, 1000, 4099}) {
        const std::vector<float> hidden = normal_floats(size_t(rows * C), uint32_t(rows + C), 2.0f);
        const std::vector<float> dlogits = normal_floats(size_t(rows * V), uint32_t(V + rows), 1e-3f);
        std::vector<bf16> dlogits16(dlogits.size());
        convert_to_bf16(dlogits.data(), dlogits16.data(), dlogits.size());
        const std::vector<float> before = normal_floats(size_t(V * C), uint32_t(C), 1e-2f);
        std::vector<float> want = before;
        gemm(true, false, V, C, rows, dlogits.data(), V, hidden.data(), C, want.data(), C, true, Precision::bf16,
             nullptr, dlogits16.data());
        for (int threads : {1, 2}) {
          omp_set_num_threads(threads);
          std::vector<float> got = before;
          narrow_dweight(dlogits16.data(), rows, V, hidden.data(), C, got.data());
          EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0)
              << "C " << C << ", rows " << rows << ", V " << V << ", " << threads << " thread(s)";
        }
      }
  omp_set_num_threads(threads_before);
}

// lm_head_loss on the narrow head's own kernels against oneDNN's (per_product), forward and backward. 300 rows are one
// group either way: every bit equal, dW's too. 1,100 rows at V = 2¹⁶ are groups of 1,024 + 76 rows for oneDNN and
// three balanced groups of 367 (chunks of 184) here: the loss and dhidden keep their bits (a row's logits and its
// gradient do not depend on its neighbours), dW is summed over other groups of rows.
TEST(NarrowHead, LmHeadLossKeepsTheBitsOfOnednn) {
  if (!narrow_head_available(128) || !native_bf16_gemm())
    GTEST_SKIP() << "needs AVX512-BF16 and oneDNN's bf16 matmul (on an AVX2 CPU oneDNN has no bf16 kernel)";
  for (const auto& [rows, V] : {std::pair<int64_t, int64_t>{300, 4099}, {1100, int64_t(1) << 16}}) {
    const LmHeadProblem problem(rows, 128, V, 41);
    const auto& [N, C, V_, hidden, weight, weight16, targets] = problem;
    SCOPED_TRACE(::testing::Message() << "N " << N << ", V " << V);
    const std::vector<float> dweight_before = normal_floats(size_t(V * C), 42, 1e-3f);
    auto run = [&](LmHeadBf16Path path, std::vector<float>& dhidden, std::vector<float>& dweight, LossSums& forward) {
      dhidden.assign(size_t(N * C), 0.0f);
      dweight = dweight_before;
      const LmHeadGrads grads{dhidden.data(), dweight.data(), 1.0f / float(N)};
      forward = lm_head_loss(hidden.data(), {weight.data(), weight16.data()}, targets.data(), N, C, V, 1e-4f,
                             Precision::bf16, nullptr, path);
      return lm_head_loss(hidden.data(), {weight.data(), weight16.data()}, targets.data(), N, C, V, 1e-4f,
                          Precision::bf16, &grads, path);
    };
    std::vector<float> dh_onednn, dw_onednn, dh_own, dw_own;
    LossSums forward_onednn, forward_own;
    const LossSums onednn = run(LmHeadBf16Path::per_product, dh_onednn, dw_onednn, forward_onednn);
    const LossSums own = run(LmHeadBf16Path::narrow_head, dh_own, dw_own, forward_own);
    EXPECT_EQ(own.ce, onednn.ce);
    EXPECT_EQ(own.z, onednn.z);
    EXPECT_EQ(forward_own.ce, onednn.ce);
    EXPECT_EQ(forward_own.z, onednn.z);
    EXPECT_EQ(dh_own, dh_onednn);
    if (N <= 512) {
      EXPECT_EQ(dw_own, dw_onednn);
    } else {
      double largest = 0, worst = 0;
      for (size_t i = 0; i < dw_own.size(); i++) {
        largest = std::max(largest, double(std::fabs(dw_onednn[i] - dweight_before[i])));
        worst = std::max(worst, double(std::fabs(dw_own[i] - dw_onednn[i])));
      }
      EXPECT_GT(worst, 0.0) << "other groups, other sums";
      EXPECT_LE(worst, 1e-5 * largest) << "dW differs beyond fp32 sum order";
    }
  }
}

// The narrow head keeps its packed W between calls while the weight's generation stays (WeightRef): the same loss as
// packing anew; new values under a new generation, or another bf16 copy under the same one, are packed again; and
// generation 0 (not known) never reuses a packing.
TEST(NarrowHead, APackedWeightIsKeptOnlyForItsGeneration) {
  if (!narrow_head_available(128) || !native_bf16_gemm())
    GTEST_SKIP() << "needs AVX512-BF16 and oneDNN's bf16 matmul (on an AVX2 CPU oneDNN has no bf16 kernel)";
  const LmHeadProblem problem(130, 128, 1000, 43);
  const auto& [N, C, V, hidden, weight, weight16, targets] = problem;
  std::vector<bf16> changed16(weight16.size()), copy16 = weight16;
  std::vector<float> changed = weight;
  for (float& w : changed) w *= 1.5f;
  convert_to_bf16(changed.data(), changed16.data(), changed.size());
  auto ce = [&](const WeightRef& w) {
    return lm_head_loss(hidden.data(), w, targets.data(), N, C, V, 1e-4f, Precision::bf16, nullptr).ce;
  };
  const double want = ce({weight.data(), weight16.data()}), want_changed = ce({changed.data(), changed16.data()});
  ASSERT_NE(want, want_changed);
  EXPECT_EQ(ce({weight.data(), weight16.data(), 7}), want);
  EXPECT_EQ(ce({weight.data(), weight16.data(), 7}), want);                  // kept
  std::copy(changed16.begin(), changed16.end(), copy16.begin());             // other values behind another pointer
  EXPECT_EQ(ce({changed.data(), copy16.data(), 7}), want_changed);           // same generation, other copy: packed
  EXPECT_EQ(ce({changed.data(), copy16.data(), 8}), want_changed);           // a new generation: packed
  std::copy(weight16.begin(), weight16.end(), copy16.begin());
  EXPECT_EQ(ce({weight.data(), copy16.data(), 9}), want);                    // new values, new generation
  std::copy(changed16.begin(), changed16.end(), copy16.begin());
  EXPECT_EQ(ce({changed.data(), copy16.data(), 0}), want_changed);           // unknown: packed
  std::copy(weight16.begin(), weight16.end(), copy16.begin());
  EXPECT_EQ(ce({weight.data(), copy16.data(), 0}), want);                    // unknown again: packed again
}

// The gradient norm's block sums run eight whole blocks side by side; each block is still one chain of adds in index
// order, so every partial sum has the bits of summing the blocks one at a time: around the groups' edges (fewer than
// eight blocks, a short last block, exactly eight, groups then leftovers), on 1 and 2 threads.
TEST(SumOfSquares, BlocksSideBySideHaveTheBitsOfOneChainPerBlock) {
  const size_t B = kSquareSumBlock;
  const int threads_before = omp_get_max_threads();
  for (const size_t n : {size_t(0), size_t(5), B, 3 * B + 7, 8 * B, 8 * B + 1, 17 * B, 17 * B + 123, 24 * B - 1}) {
    const std::vector<float> x = normal_floats(n, uint32_t(n % 1000 + 1), 1e-2f);
    std::vector<double> want((n + B - 1) / B, 0.0);
    for (size_t i = 0; i < n; i++) want[i / B] += double(x[i]) * double(x[i]);
    for (int threads : {1, 2}) {
      omp_set_num_threads(threads);
      EXPECT_EQ(block_sums_of_squares(x.data(), n), want) << "n " << n << ", " << threads << " thread(s)";
    }
  }
  omp_set_num_threads(threads_before);
}

}  // namespace
}  // namespace replica::cpu
