// The KV cache (model/kv_cache.h): a ring of W slots on sliding layers and every position on full ones, stores that
// land each position in slot position % capacity, wrapping, with only the last `capacity` of a long chunk, and the
// cache as a forward-only context attention.
#include <gtest/gtest.h>

#include <vector>

#include "replica/core/error.h"
#include "replica/model/kv_cache.h"

namespace replica::model {
namespace {

ModelConfig two_layers() {  // layer 0 sliding (W = 4), layer 1 full; K·D = 2 floats per position
  ModelConfig c;
  c.vocab_size = 16;
  c.d_model = 8;
  c.ffn_hidden = 8;
  c.n_layers = 2;
  c.n_heads = 2;
  c.n_kv_heads = 1;
  c.head_dim = 2;
  c.sliding_window = 4;
  c.sliding = {true, false};
  c.max_seq_len = 32;
  return c;
}

// Rows [position, position + n) of a sequence whose key element e at position j is 10·j + e (values: negative).
std::vector<float> rows(int64_t position, int64_t n, float sign) {
  std::vector<float> out;
  for (int64_t j = position; j < position + n; j++)
    for (int e = 0; e < 2; e++) out.push_back(sign * float(10 * j + e));
  return out;
}

TEST(KvCache, SlidingLayersKeepARingOfTheWindowAndFullLayersEveryPosition) {
  KvCache cache(two_layers(), 20, cpu_backend());
  EXPECT_EQ(cache.layer(0).capacity, 4);
  EXPECT_EQ(cache.layer(1).capacity, 20);
  EXPECT_EQ(cache.bytes(), (4 + 20) * 2 * 2 * sizeof(float));
  EXPECT_EQ(KvCache(two_layers(), 3, cpu_backend()).layer(0).capacity, 3);  // fewer positions than the window
}

TEST(KvCache, StoresWrapAroundTheRing) {
  KvCache cache(two_layers(), 20, cpu_backend());
  // A prompt of 6 (only positions 2..5 stay in the ring), then positions 6 and 7 one at a time.
  for (auto [position, n] : {std::pair<int64_t, int64_t>{0, 6}, {6, 1}, {7, 1}})
    for (int64_t l = 0; l < 2; l++)
      cache.store(l, rows(position, n, 1).data(), rows(position, n, -1).data(), position, n);
  const KvCache::Layer& ring = cache.layer(0);
  for (int64_t j = 4; j < 8; j++)
    for (int e = 0; e < 2; e++) {
      EXPECT_EQ(ring.k.data()[(j % 4) * 2 + e], float(10 * j + e)) << "position " << j;
      EXPECT_EQ(ring.v.data()[(j % 4) * 2 + e], -float(10 * j + e)) << "position " << j;
    }
  const KvCache::Layer& full = cache.layer(1);
  EXPECT_EQ(std::vector<float>(full.k.data(), full.k.data() + 16), rows(0, 8, 1));
}

// As the forward's context attention (model/context_attention.h): a pass starts where the stored positions end, the
// RoPE rows cover every position it has room for, and there is no backward.
TEST(KvCache, IsAForwardOnlyContextThatAdvancesByPass) {
  KvCache cache(two_layers(), 20, cpu_backend());
  EXPECT_EQ(cache.position(), 0);
  EXPECT_EQ(cache.rope_rows(5).first, 0);
  EXPECT_EQ(cache.rope_rows(5).end, 20);
  cache.advance(6);
  cache.advance(1);
  EXPECT_EQ(cache.position(), 7);
  EXPECT_THROW(cache.advance(14), Error);
  const AttentionShape one{1, 1, 2, 1, 2, 4};
  float x[4] = {};
  try {
    cache.backward(0, x, x, x, x, x, x, x, x, x, one, Precision::fp32, AttentionKernel::fp32);
    FAIL() << "a backward through the cache ran";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no backward"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace replica::model
