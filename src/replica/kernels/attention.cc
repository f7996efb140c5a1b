// The names of the attention kernels, as recipes (train.attention) and the CLI spell them.
#include "replica/kernels/attention.h"

#include "replica/core/error.h"

namespace replica {

const char* attention_kernel_name(AttentionKernel k) {
  switch (k) {
    case AttentionKernel::automatic:
      return "auto";
    case AttentionKernel::mma:
      return "mma";
    case AttentionKernel::wgmma:
      return "wgmma";
    case AttentionKernel::fp32:
      return "fp32";
    case AttentionKernel::cpu_bf16:
      return "cpu_bf16";
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
