// The names of the GEMM precisions, as recipes and the CLI spell them.
#include "replica/kernels/precision.h"

#include <string_view>

#include "replica/core/error.h"

namespace replica {

const char* precision_name(Precision p) { return p == Precision::fp32 ? "fp32" : "bf16"; }

Precision parse_precision(const char* text) {
  std::string_view t(text);
  if (t == "fp32") return Precision::fp32;
  if (t == "bf16") return Precision::bf16;
  fail("precision must be 'fp32' or 'bf16', got '{}'", t);
}

}  // namespace replica
