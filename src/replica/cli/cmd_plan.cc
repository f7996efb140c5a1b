// replica plan: parameter count, memory per component and FLOPs per token of a model, without running it.
#include <fmt/core.h>

#include "replica/cli/command.h"
#include "replica/core/error.h"
#include "replica/dist/memory_plan.h"
#include "replica/model/flops.h"
#include "replica/model/transformer.h"

namespace replica::cli {

// 7298617344 → "7,298,617,344"
static std::string grouped(int64_t n) {
  std::string digits = std::to_string(n), out;
  for (size_t i = 0; i < digits.size(); i++) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

static std::string gib(double bytes) { return fmt::format("{:.2f} GiB", bytes / (1024.0 * 1024.0 * 1024.0)); }

static Command plan_command("plan", "Memory and FLOP plan of a model at a sequence length and micro-batch",
                            [](CLI::App& app) {
  struct Options {
    std::string model, precision = "bf16";
    int64_t seq_len = 8192, micro_batch = 1, ranks = 0, global_batch = 0, context_parallel = 1, cp_head_stride = 0;
  };
  auto o = std::make_shared<Options>();
  app.add_option("--model", o->model, "model YAML, config.json or HF directory")->required();
  app.add_option("--seq-len", o->seq_len, "sequence length T");
  app.add_option("--micro-batch", o->micro_batch, "instances per micro-batch B");
  app.add_option("--ranks", o->ranks, "data-parallel ranks: also show the memory per rank");
  app.add_option("--global-batch", o->global_batch,
                 "instances per step over all ranks (default: data-parallel ranks × B)");
  app.add_option("--context-parallel", o->context_parallel,
                 "ranks sharing each sequence (train.context_parallel; with --ranks, which counts all ranks)");
  app.add_option("--cp-head-stride", o->cp_head_stride, "KV heads gathered at once (train.cp_head_stride; 0: all)");
  app.add_option("--precision", o->precision, "bf16 (default; keeps a bf16 copy of the weights) or fp32");
  return std::function<int()>([o] {
    model::ModelConfig c = model::load_model_config(o->model);
    model::ParamTable table(c);
    const double n = double(table.count());
    const double fpt = model::training_flops_per_token(c, o->seq_len);
    fmt::print("model            {}\n", o->model);
    fmt::print("shape            C={} L={} H={} K={} D={} F={} V={} window={}\n", c.d_model, c.n_layers, c.n_heads,
               c.n_kv_heads, c.head_dim, c.ffn_hidden, c.vocab_size, c.sliding_window);
    fmt::print("parameters       {} ({} in matmuls)\n", grouped(int64_t(n)), grouped(model::matmul_params(c)));
    fmt::print("weights fp32     {}\n", gib(4 * n));
    fmt::print("gradients fp32   {}\n", gib(4 * n));
    fmt::print("adam moments     {}  (exp_avg + exp_avg_sq, fp32)\n", gib(8 * n));
    const double group = 4.0 * double(table.largest_group()) * (c.tie_embeddings ? 2 : 1);
    fmt::print("gradient group   {}  (a block, the head or the embedding, before it joins the sum)\n", gib(group));
    const Precision precision = parse_precision(o->precision.c_str());
    const double states = 16 * n + group + (precision == Precision::bf16 ? 2 * n : 0.0);
    if (precision == Precision::bf16)
      fmt::print("weights bf16     {}  (rounded once per step for the GEMMs)\n", gib(2 * n));
    fmt::print("activations      B={} T={}\n", o->micro_batch, o->seq_len);
    for (model::Remat r : {model::Remat::none, model::Remat::block, model::Remat::keep_attention}) {
      double act = double(model::Transformer::activation_bytes(c, r, o->micro_batch, o->seq_len, precision));
      fmt::print("  remat={:<15} {}  (total with states: {})\n", model::remat_name(r), gib(act), gib(act + states));
    }
    fmt::print("FLOPs per token  {:.4g} (6·N_matmul = {:.4g}, attention = {:.4g})\n", fpt,
               6.0 * double(model::matmul_params(c)), fpt - 6.0 * double(model::matmul_params(c)));
    fmt::print("FLOPs per step   {:.4g} per micro-batch\n", fpt * double(o->micro_batch * o->seq_len));
    if (o->ranks > 0) {
      const int64_t N = o->context_parallel;
      check(N >= 1 && o->ranks % N == 0, "--context-parallel {} must divide --ranks {}", N, o->ranks);
      check(N == 1 || (o->micro_batch == 1 && o->seq_len % N == 0),
            "--context-parallel {} needs --micro-batch 1 and a --seq-len it divides", N);
      const int64_t data_ranks = o->ranks / N;
      const int64_t G = o->global_batch > 0 ? o->global_batch : data_ranks * o->micro_batch;
      check(G % (data_ranks * o->micro_batch) == 0,
            "--global-batch {} is not a multiple of the data-parallel ranks × --micro-batch", G);
      const int64_t T_rank = o->seq_len / N;  // this rank's slice of each sequence
      const double act =
          double(model::Transformer::activation_bytes(c, model::Remat::block, o->micro_batch, T_rank, precision));
      auto show = [](const std::string& title, const std::vector<dist::MemoryItem>& items) {
        fmt::print("{}\n", title);
        for (const dist::MemoryItem& item : items)
          fmt::print("  {:<22} {:>12}  {}\n", item.name, gib(item.bytes), item.note);
        fmt::print("  {:<22} {:>12}\n", "total per rank", gib(dist::total_bytes(items)));
      };
      const int64_t L = G / (data_ranks * o->micro_batch);
      auto items = [&](bool shard_weights) {
        std::vector<dist::MemoryItem> all = dist::data_parallel_memory(c, o->ranks, act, precision, shard_weights);
        if (N > 1) all.push_back(dist::context_parallel_memory(c, o->seq_len, N, o->cp_head_stride));
        return all;
      };
      const std::string mesh = N > 1 ? fmt::format(" ({} data-parallel × {} context-parallel, {} tokens each)",
                                                   data_ranks, N, T_rank)
                                     : "";
      show(fmt::format("per rank, {} ranks{}, {} micro-batches each, remat=block, gradients and moments sharded:",
                       o->ranks, mesh, L),
           items(false));
      show(fmt::format("the same with the weights sharded too (train.shard_weights=true, FSDP):"), items(true));
    }
    return 0;
  });
});

}  // namespace replica::cli
