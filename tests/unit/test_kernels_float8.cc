// The float8 casts (kernels/float8.h) against the exact-rational oracle written from the OCP 8-bit floating point
// specification (tools/reference/float8_ref.py, run at test time on /usr/bin/python3): every input of its table bit
// for bit, all 256 codes of both formats, torchao's scales; and the published bit patterns as fixed vectors. Then the
// CPU kernels (kernels/cpu/float8.h): the cast with its amax scale, and the scaled product against a naive one in
// double.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "replica/core/file.h"
#include "replica/kernels/cpu/float8.h"
#include "replica/kernels/float8.h"
#include "scratch_dir.h"

namespace replica {
namespace {

constexpr Float8Format kE4m3 = Float8Format::e4m3, kE5m2 = Float8Format::e5m2;

uint32_t bits_of(float x) { return float8_float_bits(x); }
float float_of(uint32_t b) { return float8_bits_float(b); }

// The oracle's table, one stream of lines (its docstring says what each line holds).
std::istringstream oracle_table() {
  const std::string out = (testing::scratch_dir("float8") / "table.txt").string();
  const std::string command =
      "/usr/bin/python3 " + std::string(REPLICA_SOURCE_DIR) + "/tools/reference/float8_ref.py table > " + out;
  EXPECT_EQ(std::system(command.c_str()), 0) << command;
  return std::istringstream(read_text_file(out));
}

// A value as the oracle writes it: float.hex, or nan, inf, -inf.
float parse_value(const std::string& text) {
  if (text == "nan") return NAN;
  if (text == "inf") return INFINITY;
  if (text == "-inf") return -INFINITY;
  return float(std::strtod(text.c_str(), nullptr));
}

bool same_value(float a, float b) { return (std::isnan(a) && std::isnan(b)) || bits_of(a) == bits_of(b); }

TEST(Float8, EveryCastTheOracleListsGivesItsCode) {
  std::istringstream table = oracle_table();
  std::string kind;
  int64_t casts = 0, codes = 0, scales = 0;
  while (table >> kind) {
    if (kind == "cast") {
      std::string hex;
      int e4m3, e5m2;
      table >> hex >> e4m3 >> e5m2;
      const float x = float_of(uint32_t(std::stoul(hex, nullptr, 16)));
      ASSERT_EQ(int(to_float8(x, kE4m3)), e4m3) << "e4m3 of float32 bits " << hex;
      ASSERT_EQ(int(to_float8(x, kE5m2)), e5m2) << "e5m2 of float32 bits " << hex;
      casts++;
    } else if (kind == "decode") {
      int code;
      std::string e4m3, e5m2;
      table >> code >> e4m3 >> e5m2;
      EXPECT_TRUE(same_value(from_float8(uint8_t(code), kE4m3), parse_value(e4m3))) << "e4m3 code " << code;
      EXPECT_TRUE(same_value(from_float8(uint8_t(code), kE5m2), parse_value(e5m2))) << "e5m2 code " << code;
      codes++;
    } else {
      ASSERT_EQ(kind, "scale");
      std::string amax, s[4];
      table >> amax >> s[0] >> s[1] >> s[2] >> s[3];
      const float a = float_of(uint32_t(std::stoul(amax, nullptr, 16)));
      int i = 0;
      for (Float8Format f : {kE4m3, kE5m2})
        for (bool power_of_two : {false, true}) {
          const float want = float_of(uint32_t(std::stoul(s[i++], nullptr, 16)));
          EXPECT_TRUE(same_value(float8_scale(a, f, power_of_two), want))
              << "scale of amax bits " << amax << " (" << (f == kE4m3 ? "e4m3" : "e5m2")
              << (power_of_two ? ", power of two)" : ")");
        }
      scales++;
    }
  }
  EXPECT_GT(casts, 100000);
  EXPECT_EQ(codes, 256);
  EXPECT_GT(scales, 2000);
}

TEST(Float8, PublishedBitPatternsOfE4m3) {
  EXPECT_EQ(to_float8(448.0f, kE4m3), 0x7E);  // max = S.1111.110
  EXPECT_EQ(to_float8(-448.0f, kE4m3), 0xFE);
  EXPECT_EQ(from_float8(0x7E, kE4m3), 448.0f);
  EXPECT_TRUE(std::isnan(from_float8(0x7F, kE4m3)));  // NaN = S.1111.111, the only NaNs
  EXPECT_TRUE(std::isnan(from_float8(0xFF, kE4m3)));
  EXPECT_EQ(from_float8(0x78, kE4m3), 256.0f);  // S.1111.000 is a number: no infinities
  EXPECT_EQ(to_float8(NAN, kE4m3), 0x7F);
  EXPECT_EQ(to_float8(-NAN, kE4m3), 0xFF);
  EXPECT_EQ(to_float8(INFINITY, kE4m3), 0x7E);  // torchao saturates before the cast
  EXPECT_EQ(to_float8(-1e30f, kE4m3), 0xFE);
  EXPECT_EQ(to_float8(1.0f, kE4m3), 0x38);
  EXPECT_EQ(to_float8(std::ldexp(1.0f, -6), kE4m3), 0x08);   // smallest normal
  EXPECT_EQ(to_float8(std::ldexp(1.0f, -9), kE4m3), 0x01);   // smallest subnormal
  EXPECT_EQ(to_float8(std::ldexp(1.0f, -10), kE4m3), 0x00);  // half of it: a tie, to even (zero)
  EXPECT_EQ(to_float8(std::ldexp(3.0f, -10), kE4m3), 0x02);  // 1.5 subnormal steps: a tie, to even (2)
  EXPECT_EQ(to_float8(-0.0f, kE4m3), 0x80);
  EXPECT_EQ(to_float8(1.0625f, kE4m3), 0x38);  // between 1 (0x38) and 1.125 (0x39): even
  EXPECT_EQ(to_float8(1.1875f, kE4m3), 0x3A);  // between 1.125 (0x39) and 1.25 (0x3A): even
  EXPECT_EQ(to_float8(std::nextafter(1.0625f, 2.0f), kE4m3), 0x39);
}

TEST(Float8, PublishedBitPatternsOfE5m2) {
  EXPECT_EQ(to_float8(57344.0f, kE5m2), 0x7B);  // max = S.11110.11
  EXPECT_EQ(from_float8(0x7B, kE5m2), 57344.0f);
  EXPECT_EQ(from_float8(0x7C, kE5m2), INFINITY);  // S.11111.00
  EXPECT_EQ(from_float8(0xFC, kE5m2), -INFINITY);
  for (uint8_t code : {0x7D, 0x7E, 0x7F, 0xFD, 0xFE, 0xFF}) EXPECT_TRUE(std::isnan(from_float8(code, kE5m2)));
  EXPECT_EQ(to_float8(NAN, kE5m2), 0x7F);
  EXPECT_EQ(to_float8(INFINITY, kE5m2), 0x7B);  // saturated, not 0x7C
  EXPECT_EQ(to_float8(-INFINITY, kE5m2), 0xFB);
  EXPECT_EQ(to_float8(1.0f, kE5m2), 0x3C);
  EXPECT_EQ(to_float8(std::ldexp(1.0f, -14), kE5m2), 0x04);  // smallest normal
  EXPECT_EQ(to_float8(std::ldexp(1.0f, -16), kE5m2), 0x01);  // smallest subnormal
  EXPECT_EQ(to_float8(1.125f, kE5m2), 0x3C);                 // between 1 (0x3C) and 1.25 (0x3D): even
  EXPECT_EQ(to_float8(1.375f, kE5m2), 0x3E);                 // between 1.25 (0x3D) and 1.5 (0x3E): even
}

TEST(Float8, EveryFiniteCodeRoundTrips) {
  for (Float8Format f : {kE4m3, kE5m2})
    for (int code = 0; code < 256; code++) {
      const float x = from_float8(uint8_t(code), f);
      if (!std::isfinite(x)) continue;
      EXPECT_EQ(to_float8(x, f), code) << code;
    }
}

std::vector<float> wide_range_floats(size_t n, uint32_t seed, float spread) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(n);
  for (float& v : x) v = normal(rng) * std::exp2(spread * normal(rng));  // many binades, as activations have
  return x;
}

TEST(Float8Kernels, QuantizeCastsEveryValueWithTheScaleOfTheTensorsAmax) {
  const std::vector<float> x = wide_range_floats(1000, 1, 4.0f);
  float amax = 0.0f;
  for (float v : x) amax = std::max(amax, std::fabs(v));
  for (Float8Format f : {kE4m3, kE5m2})
    for (bool power_of_two : {false, true}) {
      std::vector<uint8_t> codes(x.size());
      float inverse = 0.0f;
      cpu::quantize_float8(codes.data(), &inverse, x.data(), nullptr, x.size(), f, power_of_two);
      const float scale = float8_scale(amax, f, power_of_two);
      EXPECT_EQ(inverse, 1.0f / scale);
      for (size_t i = 0; i < x.size(); i++) ASSERT_EQ(codes[i], to_float8(x[i] * scale, f)) << i;
    }
}

TEST(Float8Kernels, QuantizeReadsTheBf16CopyWhenGiven) {
  const std::vector<float> x = wide_range_floats(300, 2, 2.0f);
  std::vector<bf16> x16(x.size());
  convert_to_bf16(x.data(), x16.data(), x.size());
  std::vector<uint8_t> from16(x.size()), from32(x.size());
  float inverse16, inverse32;
  std::vector<float> rounded(x.size());
  for (size_t i = 0; i < x.size(); i++) rounded[i] = to_float(x16[i]);
  cpu::quantize_float8(from16.data(), &inverse16, x.data(), x16.data(), x.size(), kE4m3, true);
  cpu::quantize_float8(from32.data(), &inverse32, rounded.data(), nullptr, x.size(), kE4m3, true);
  EXPECT_EQ(from16, from32);
  EXPECT_EQ(inverse16, inverse32);
}

TEST(Float8Kernels, ANanAnywhereMakesTheScaleNan) {
  std::vector<float> x = wide_range_floats(64, 3, 1.0f);
  x[40] = NAN;
  std::vector<uint8_t> codes(x.size());
  float inverse = 0.0f;
  cpu::quantize_float8(codes.data(), &inverse, x.data(), nullptr, x.size(), kE4m3, true);
  EXPECT_TRUE(std::isnan(inverse));
  EXPECT_EQ(codes[0] & 0x7F, 0x7F);  // torch: x · NaN is NaN everywhere
}

// C = sa·sb · op(A)·op(B) (+ C) against the decoded values multiplied in double, every transpose, with accumulation.
TEST(Float8Kernels, GemmIsTheScaledProductOfTheDecodedCodes) {
  const int64_t M = 19, N = 24, K = 40;
  std::mt19937 rng(4);
  std::uniform_int_distribution<int> code(0, 255);
  auto random_codes = [&](size_t n, Float8Format f) {
    std::vector<uint8_t> c(n);
    for (uint8_t& v : c) do
        v = uint8_t(code(rng));
      while (!std::isfinite(from_float8(v, f)));
    return c;
  };
  const std::vector<uint8_t> a = random_codes(size_t(M * K), kE5m2), b = random_codes(size_t(N * K), kE4m3);
  const float sa = 0.25f, sb = 1.0f / 3.0f;
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (bool accumulate : {false, true}) {
        const int64_t lda = ta ? M : K, ldb = tb ? K : N;
        std::vector<float> c(size_t(M * N), 0.5f);
        cpu::gemm_float8(ta, tb, M, N, K, {a.data(), kE5m2, &sa}, lda, {b.data(), kE4m3, &sb}, ldb, c.data(), N,
                         accumulate);
        for (int64_t i = 0; i < M; i++)
          for (int64_t j = 0; j < N; j++) {
            double sum = 0.0, magnitude = 0.0;
            for (int64_t l = 0; l < K; l++) {
              const double term = double(from_float8(a[size_t(ta ? l * lda + i : i * lda + l)], kE5m2)) *
                                  double(from_float8(b[size_t(tb ? j * ldb + l : l * ldb + j)], kE4m3));
              sum += term;
              magnitude += std::fabs(term);
            }
            const double want = double(sa * sb) * sum + (accumulate ? 0.5 : 0.0);
            // fp32 accumulation of K exact products: within K ulps of the magnitudes summed, plus the scaling
            EXPECT_NEAR(c[size_t(i * N + j)], want,
                        double(K) * 6e-8 * double(sa * sb) * magnitude + 1e-6 * std::fabs(want))
                << ta << tb << accumulate << " " << i << "," << j;
          }
      }
}

}  // namespace
}  // namespace replica
