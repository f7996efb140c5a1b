// replica plan: parameter count, memory per component and FLOPs per token of a model, without running it.
#include <fmt/core.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "replica/cli/command.h"
#include "replica/core/error.h"
#include "replica/dist/context_parallel.h"
#include "replica/dist/memory_plan.h"
#include "replica/model/flops.h"
#include "replica/model/transformer.h"
#include "replica/train/checkpointing.h"
#include "replica/train/recipe.h"
#include "replica/train/step.h"

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

// A YAML scalar holding `text` as it is (a path with ": " or a leading "[" stays a path).
static std::string yaml_scalar(const std::string& text) {
  YAML::Emitter out;
  out << YAML::DoubleQuoted << text;
  return out.c_str();
}

// What the plan is for: the run a recipe describes, from --config or from --model and the shape flags, which are
// overrides of the default recipe (--seq-len 4096 is data.seq_len=4096). Its memory is sized through the step config
// TrainStep is given (train::step_config), so float8, remat, host moments and context parallelism are planned as
// they run.
struct PlanInput {
  std::string label;  // the model file, or the recipe
  model::ModelConfig model;
  train::StepConfig step;
  bool from_recipe = false;  // its remat is marked, and the per-rank plan takes it (else block)
};

static Command plan_command("plan", "Memory and FLOP plan of a model at a sequence length and micro-batch",
                            [](CLI::App& app) {
  struct Options {
    std::string model, config, precision = "bf16";
    std::vector<std::string> overrides;
    int64_t seq_len = 8192, micro_batch = 1, ranks = 0, global_batch = 0;
    bool host_moments = false;
    dist::ContextParallelConfig context;
  };
  auto o = std::make_shared<Options>();
  auto* model = app.add_option("--model", o->model, "model YAML, config.json or HF directory");
  auto* config = app.add_option("--config", o->config,
                                "a recipe instead: its model, data.seq_len, data.micro_batch_size, "
                                "data.global_batch_size, train.precision, train.remat, train.float8, ...");
  model->excludes(config);
  app.add_option("overrides", o->overrides,
                 "section.key=value overrides of the --config recipe (or of the default one --model describes)");
  for (CLI::Option* shape :
       {app.add_option("--seq-len", o->seq_len, "sequence length T (data.seq_len)")->check(CLI::PositiveNumber),
        app.add_option("--micro-batch", o->micro_batch, "instances per micro-batch B (data.micro_batch_size)")
            ->check(CLI::PositiveNumber),
        app.add_option("--global-batch", o->global_batch,
                       "instances per step over all ranks (data.global_batch_size; default: ranks × B)")
            ->check(CLI::NonNegativeNumber),
        app.add_option("--precision", o->precision, "bf16 (default; keeps a bf16 copy of the weights) or fp32"),
        app.add_option("--context-parallel", o->context.degree,
                       "ranks sharing each sequence (train.context_parallel; --ranks counts all ranks)")
            ->check(CLI::PositiveNumber),
        app.add_flag("--host-moments", o->host_moments,
                     "the Adam moments in host memory (optim.host_moments): the per-rank plan counts their staging"),
        app.add_option("--cp-head-stride", o->context.head_stride,
                       "KV heads gathered at once (train.cp_head_stride; 0: all)")
            ->check(CLI::NonNegativeNumber)})
    shape->excludes(config);  // the recipe gives them
  app.add_option("--ranks", o->ranks, "ranks: also show the memory per rank (with --config: default 1)")
      ->check(CLI::NonNegativeNumber);
  return std::function<int()>([o] {
    check(!o->model.empty() || !o->config.empty(), "plan: give --model MODEL or --config RECIPE");
    const int64_t ranks = o->ranks > 0 ? o->ranks : !o->config.empty() ? 1 : 0;
    PlanInput in;
    if (!o->config.empty()) {
      const train::Recipe r = train::load_recipe(o->config, o->overrides, /*check_files=*/false);  // no data read
      in = {fmt::format("{} (recipe; model {})", o->config, r.model.config.empty() ? r.model.init_from : r.model.config),
            train::recipe_model_config(r), train::step_config(r), true};
    } else {
      // The flags, then the overrides after them; the global batch defaults to one micro-batch per data rank.
      const int64_t data_ranks = std::max<int64_t>(ranks / o->context.degree, 1);
      std::vector<std::string> flags = {
          "model.config=" + yaml_scalar(o->model),
          fmt::format("data.seq_len={}", o->seq_len),
          fmt::format("data.micro_batch_size={}", o->micro_batch),
          fmt::format("data.global_batch_size={}", o->global_batch > 0 ? o->global_batch : data_ranks * o->micro_batch),
          "train.precision=" + yaml_scalar(o->precision),
          fmt::format("train.context_parallel={}", o->context.degree),
          fmt::format("train.cp_head_stride={}", o->context.head_stride),
          fmt::format("optim.host_moments={}", o->host_moments)};
      flags.insert(flags.end(), o->overrides.begin(), o->overrides.end());
      const train::Recipe r = train::load_recipe_text("", "replica plan", flags, /*check_files=*/false);
      in = {o->model, train::recipe_model_config(r), train::step_config(r), false};
    }
    const train::StepConfig& step = in.step;
    const int64_t N = step.context.degree;
    check(ranks == 0 || ranks % N == 0, "{}: context parallel {} must divide the {} ranks", in.label, N, ranks);
    const int64_t data_ranks = ranks / N, B = step.micro_batch, T = step.seq_len, G = step.global_batch;
    check(ranks == 0 || G % (data_ranks * B) == 0,
          "{}: the global batch {} is not a multiple of the micro-batch {} times the {} data-parallel ranks", in.label,
          G, B, data_ranks);
    const model::ModelConfig& c = in.model;
    model::ParamTable table(c);
    const double n = double(table.count());
    const double fpt = model::training_flops_per_token(c, T);
    fmt::print("model            {}\n", in.label);
    fmt::print("shape            C={} L={} H={} K={} D={} F={} V={} window={}\n", c.d_model, c.n_layers, c.n_heads,
               c.n_kv_heads, c.head_dim, c.ffn_hidden, c.vocab_size, c.sliding_window);
    fmt::print("parameters       {} ({} in matmuls)\n", grouped(int64_t(n)), grouped(model::matmul_params(c)));
    fmt::print("weights fp32     {}\n", gib(4 * n));
    fmt::print("gradients fp32   {}\n", gib(4 * n));
    fmt::print("adam moments     {}  (exp_avg + exp_avg_sq, fp32; host memory with optim.host_moments)\n",
               gib(8 * n));
    const double group = 4.0 * double(table.largest_group()) * (c.tie_embeddings ? 2 : 1);
    fmt::print("gradient group   {}  (a block, the head or the embedding, before it joins the sum)\n", gib(group));
    const Precision precision = step.precision;
    const double states = 16 * n + group + (precision == Precision::bf16 ? 2 * n : 0.0);
    if (precision == Precision::bf16)
      fmt::print("weights bf16     {}  (rounded once per step for the GEMMs)\n", gib(2 * n));
    fmt::print("activations      B={} T={}{}\n", B, T, step.float8 ? " (float8 Linears, train.float8)" : "");
    // optim.host_moments: the moments leave the device, their staging buffers take their place.
    const double states_host_moments = states - 8 * n + 4.0 * double(kHostMomentStagingFloats);
    using model::Remat;
    for (Remat r : {Remat::none, Remat::selective, Remat::keep_attention, Remat::block}) {
      train::StepConfig whole = step;  // one whole sequence on one rank under policy r
      whole.remat = r;
      whole.context.degree = 1;
      const double act = double(train::step_activation_bytes(c, whole));
      const bool marked = in.from_recipe && step.remat == r;
      fmt::print("  remat={:<15} {}  (total with states: {}; moments on the host: {}){}\n", model::remat_name(r),
                 gib(act), gib(act + states), gib(act + states_host_moments),
                 !marked                   ? ""
                 : step.adamw.host_moments ? "  <- train.remat, optim.host_moments"
                                           : "  <- train.remat");
    }
    fmt::print("FLOPs per token  {:.4g} (6·N_matmul = {:.4g}, attention = {:.4g})\n", fpt,
               6.0 * double(model::matmul_params(c)), fpt - 6.0 * double(model::matmul_params(c)));
    fmt::print("FLOPs per step   {:.4g} per micro-batch\n", fpt * double(B * T));
    if (ranks > 0) {
      train::StepConfig as_run = step;  // this rank's slice of each sequence, as TrainStep allocates it
      if (!in.from_recipe) as_run.remat = model::Remat::block;
      const model::Remat remat = as_run.remat;
      const int64_t T_rank = T / N;
      const double act = double(train::step_activation_bytes(c, as_run));
      auto show = [](const std::string& title, const std::vector<dist::MemoryItem>& items) {
        fmt::print("{}\n", title);
        for (const dist::MemoryItem& item : items)
          fmt::print("  {:<22} {:>12}  {}\n", item.name, gib(item.bytes), item.note);
        fmt::print("  {:<22} {:>12}\n", "total per rank", gib(dist::total_bytes(items)));
      };
      const int64_t L = G / (data_ranks * B);
      auto items = [&](bool shard_weights) {
        std::vector<dist::MemoryItem> all =
            dist::data_parallel_memory(c, ranks, act, precision, shard_weights, step.adamw.host_moments);
        if (N > 1) all.push_back(dist::context_parallel_memory(c, T, N, step.context.head_stride));
        return all;
      };
      const std::string mesh =
          N > 1 ? fmt::format(" ({} data-parallel × {} context-parallel, {} tokens each)", data_ranks, N, T_rank) : "";
      show(fmt::format("per rank, {} ranks{}, {} micro-batches each, remat={}, gradients and moments sharded:", ranks,
                       mesh, L, model::remat_name(remat)),
           items(false));
      show(fmt::format("the same with the weights sharded too (train.shard_weights=true, FSDP):"), items(true));
    }
    return 0;
  });
});

}  // namespace replica::cli
