// The names of the kernel layer's choices (precision, attention kernel), as recipes and the CLI spell them.
#include "replica/kernels/types.h"

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

const char* attention_kernel_name(AttentionKernel k) {
  switch (k) {
    case AttentionKernel::automatic: return "auto";
    case AttentionKernel::mma: return "mma";
    case AttentionKernel::wgmma: return "wgmma";
    case AttentionKernel::fp32: return "fp32";
    case AttentionKernel::cpu_bf16: return "cpu_bf16";
  }
  return "";
}

AttentionKernel parse_attention_kernel(const std::string& text) {
  using enum AttentionKernel;
  for (AttentionKernel k : {automatic, mma, wgmma, fp32, cpu_bf16})
    if (text == attention_kernel_name(k)) return k;
  fail("attention kernel must be 'auto', 'mma', 'wgmma', 'fp32' or 'cpu_bf16', got '{}'", text);
}

}  // namespace replica
