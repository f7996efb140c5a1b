// replica plan: parameter count, memory per component and FLOPs per token of a model, without running it; per rank,
// whether the step fits a GPU (and the nearest layout that does), and its time at a stated MFU.
#include <fmt/core.h>
#include <fmt/ranges.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "replica/ckpt/checkpoint.h"
#include "replica/ckpt/model_source.h"
#include "replica/ckpt/olmo_core_checkpoint.h"
#include "replica/cli/command.h"
#include "replica/core/error.h"
#include "replica/distributed/context_parallel.h"
#include "replica/distributed/data_parallel.h"
#include "replica/distributed/memory_plan.h"
#include "replica/metrics/peak.h"
#include "replica/model/flops.h"
#include "replica/model/transformer.h"
#include "replica/train/checkpointing.h"
#include "replica/optim/optimizers.h"
#include "replica/train/rank_plan.h"
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

// 1.07 → "1.07 s", 1.5e6 → "17.5 days", 9.7e7 → "1,121 days"
static std::string duration(double seconds) {
  if (seconds < 120) return fmt::format("{:.3g} s", seconds);
  if (seconds < 2 * 3600) return fmt::format("{:.3g} min", seconds / 60);
  if (seconds < 2 * 86400) return fmt::format("{:.3g} h", seconds / 3600);
  const double days = seconds / 86400;
  return days < 100 ? fmt::format("{:.3g} days", days) : grouped(std::llround(days)) + " days";
}

// The layout that needs the least memory of those the fit search tries.
static train::StepConfig sharded_block(train::StepConfig step) {
  step.remat = model::Remat::block;
  step.sharding.weights = true;
  return step;
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
  bool from_recipe = false;  // --config (else --model)
  bool remat_given = false;  // by the recipe or a train.remat override: marked, and the per-rank plan takes it (else
                             // block)
  int64_t max_steps = 0;     // train.max_steps: the length the time estimate is for
};

static Command plan_command("plan", "Memory per rank, fit on a GPU and time of a training step (a model or a recipe)",
                            [](CLI::App& app) {
  struct Options {
    std::string model, config, precision = "bf16", gpu_memory = "80GB";
    std::vector<std::string> overrides;
    int64_t seq_len = 8192, micro_batch = 1, ranks = 0, global_batch = 0;
    bool host_moments = false;
    distributed::ContextParallelConfig context;
    double mfu = 36, peak_tflops = 0;
  };
  auto o = std::make_shared<Options>();
  auto* model = app.add_option("--model", o->model,
                               "model YAML, config.json, HF directory, replica checkpoint or run directory (its "
                               "latest checkpoint)");
  auto* config = app.add_option("--config", o->config,
                                "a recipe instead: its model, data.seq_len, data.micro_batch_size, "
                                "data.global_batch_size, train.precision, train.remat, train.float8, ...");
  model->excludes(config);
  app.add_option("overrides", o->overrides,
                 "section.key=value overrides of the --config recipe (or of the default one --model describes)");
  for (CLI::Option* shape :
       {app.add_option("--seq-len", o->seq_len, "sequence length T (data.seq_len)")->check(positive_number),
        app.add_option("--micro-batch", o->micro_batch, "instances per micro-batch B (data.micro_batch_size)")
            ->check(positive_number),
        app.add_option("--global-batch", o->global_batch,
                       "instances per step over all ranks (data.global_batch_size; default: ranks × B)")
            ->check(non_negative_number),
        app.add_option("--precision", o->precision, "bf16 (default; keeps a bf16 copy of the weights) or fp32"),
        app.add_option("--context-parallel", o->context.degree,
                       "ranks sharing each sequence (train.context_parallel; --ranks counts all ranks)")
            ->check(positive_number),
        app.add_flag("--host-moments", o->host_moments,
                     "the Adam moments in host memory (optim.host_moments): the per-rank plan counts their staging"),
        app.add_option("--cp-head-stride", o->context.head_stride,
                       "KV heads gathered at once (train.cp_head_stride; 0: all)")
            ->check(non_negative_number)})
    shape->excludes(config);  // the recipe gives them
  app.add_option("--ranks", o->ranks,
                 "ranks (GPUs) the step runs on (default: train.context_parallel, one data-parallel replica)")
      ->check(non_negative_number);
  app.add_option("--gpu-memory", o->gpu_memory,
                 "memory of one GPU for the fit verdict: 80GB (default; GB = 10^9 bytes, 74.51 GiB) or e.g. 139GiB "
                 "(GiB = 2^30 bytes)");
  app.add_option("--mfu", o->mfu,
                 "model FLOPs utilization in % for the time estimate (default 36: OLMo 3 7B stage 1 as AI2 ran it, "
                 "in replica's FLOP convention)")
      ->check(CLI::Range(0.01, 100.0));
  app.add_option("--peak-tflops", o->peak_tflops,
                 "peak TFLOP/s of one GPU (default: H100/H200 dense, 989.4 in bf16, 66.9 in fp32)")
      ->check(non_negative_number);
  return std::function<int()>([o] {
    check(!o->model.empty() || !o->config.empty(), "plan: give --model MODEL or --config RECIPE");
    const double capacity = train::parse_memory_size(o->gpu_memory, "--gpu-memory");
    PlanInput in;
    if (!o->config.empty()) {
      const train::Recipe r = train::load_recipe(o->config, o->overrides, /*check_files=*/false);  // no data read
      in = {fmt::format("{} (recipe; model {})", o->config, r.model.config.empty() ? r.model.init_from : r.model.config),
            train::recipe_model_config(r), train::step_config(r), true, true, r.train.max_steps};
    } else {
      // The flags, then the overrides after them; the global batch defaults to one micro-batch per data rank.
      // A run directory is its latest checkpoint, whose config is stored with it, read as generate and eval read it
      // (an OLMo-core checkpoint has none: the error says to give the model file).
      const std::string source = ckpt::resolve_model_source(o->model);
      const bool checkpoint = ckpt::is_checkpoint_dir(source) || ckpt::is_olmo_core_checkpoint(source);
      const int64_t data_ranks = std::max<int64_t>(o->ranks / o->context.degree, 1);
      std::vector<std::string> flags = {
          "model.config=" + yaml_scalar(checkpoint ? "" : source),
          "model.init_from=" + yaml_scalar(checkpoint ? source : ""),
          fmt::format("data.seq_len={}", o->seq_len),
          fmt::format("data.micro_batch_size={}", o->micro_batch),
          fmt::format("data.global_batch_size={}", o->global_batch > 0 ? o->global_batch : data_ranks * o->micro_batch),
          "train.precision=" + yaml_scalar(o->precision),
          fmt::format("train.context_parallel={}", o->context.degree),
          fmt::format("train.cp_head_stride={}", o->context.head_stride),
          fmt::format("optim.host_moments={}", o->host_moments)};
      flags.insert(flags.end(), o->overrides.begin(), o->overrides.end());
      const train::Recipe r = train::load_recipe_text("", "replica plan", flags, /*check_files=*/false);
      in = {source == o->model ? o->model : fmt::format("{} (its latest checkpoint {})", o->model, source),
            train::recipe_model_config(r), train::step_config(r), false,
            std::any_of(o->overrides.begin(), o->overrides.end(),
                        [](const std::string& kv) { return kv.rfind("train.remat=", 0) == 0; }),
            r.train.max_steps};
    }
    const train::StepConfig& step = in.step;
    const int64_t N = step.context.degree, ranks = o->ranks > 0 ? o->ranks : N;
    check(ranks % N == 0, "{}: context parallel {} must divide the {} ranks", in.label, N, ranks);
    const int64_t data_ranks = ranks / N, B = step.micro_batch, T = step.seq_len, G = step.global_batch;
    if (G % (data_ranks * B) != 0)
      fail("{}: the global batch {} is not a multiple of the micro-batch {} times the {} data-parallel ranks{}",
           in.label, G, B, data_ranks, distributed::micro_batch_hint(G, B, data_ranks));
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
    // The optimizer's state: one fp32 array per state tensor it names (optim.name), in host memory with
    // optim.host_moments when the optimizer can keep it there.
    optim::OptimizerConfig on_host = step.optimizer;
    on_host.adamw.host_moments = true;
    const bool can_host = optim::state_in_host_memory(on_host);
    const std::vector<std::string> state_names = optim::state_names(step.optimizer);
    const double state_bytes = 4.0 * double(state_names.size()) * n;
    const char* optimizer = optim::optimizer_name(step.optimizer.name);
    if (state_names.empty())
      fmt::print("optimizer state  {}  ({} keeps none)\n", gib(state_bytes), optimizer);
    else
      fmt::print("optimizer state  {}  ({}: {}, fp32{})\n", gib(state_bytes), optimizer, fmt::join(state_names, " + "),
                 can_host ? "; host memory with optim.host_moments" : "");
    const double group = 4.0 * double(table.largest_group()) * (c.tie_embeddings ? 2 : 1);
    fmt::print("gradient group   {}  (a block, the head or the embedding, before it joins the sum)\n", gib(group));
    const Precision precision = step.precision;
    const double states = 8 * n + state_bytes + group + (precision == Precision::bf16 ? 2 * n : 0.0);
    if (precision == Precision::bf16)
      fmt::print("weights bf16     {}  (rounded once per step for the GEMMs)\n", gib(2 * n));
    fmt::print("activations      B={} T={}{}\n", B, T, step.float8 ? " (float8 Linears, train.float8)" : "");
    // optim.host_moments: the state leaves the device, its staging buffers take its place.
    const double states_host_moments = states - state_bytes + 4.0 * double(kHostMomentStagingFloats);
    using model::Remat;
    for (Remat r : {Remat::none, Remat::selective, Remat::keep_attention, Remat::block}) {
      train::StepConfig whole = step;  // one whole sequence on one rank under policy r
      whole.remat = r;
      whole.context.degree = 1;
      const double act = double(train::step_activation_bytes(c, whole));
      const bool marked = in.remat_given && step.remat == r;
      const std::string host = can_host ? fmt::format("; moments on the host: {}", gib(act + states_host_moments)) : "";
      fmt::print("  remat={:<15} {}  (total with states: {}{}){}\n", model::remat_name(r), gib(act), gib(act + states),
                 host,
                 !marked                                       ? ""
                 : optim::state_in_host_memory(step.optimizer) ? "  <- train.remat, optim.host_moments"
                                                               : "  <- train.remat");
    }
    fmt::print("FLOPs per token  {:.4g} (6·N_matmul = {:.4g}, attention = {:.4g})\n", fpt,
               6.0 * double(model::matmul_params(c)), fpt - 6.0 * double(model::matmul_params(c)));
    fmt::print("FLOPs per step   {:.4g} per micro-batch\n", fpt * double(B * T));
    // Per rank: this rank's slice of each sequence, as TrainStep allocates it.
    train::StepConfig as_run = step;
    if (!in.remat_given) as_run.remat = model::Remat::block;
    const std::string gpu = fmt::format("{:.4g} GB = {}", capacity / 1e9, gib(capacity));
    auto verdict = [&](double bytes) {  // of one layout's total
      return bytes <= capacity ? fmt::format("fits {}, {} spare", gpu, gib(capacity - bytes))
                               : fmt::format("does not fit {}: {} over", gpu, gib(bytes - capacity));
    };
    auto show = [&](const std::string& title, const train::StepConfig& layout) {
      const std::vector<distributed::MemoryItem> items = train::rank_memory(c, layout, ranks);
      fmt::print("{}{}\n", title, layout.sharding.weights == step.sharding.weights ? "  <- train.shard_weights" : "");
      for (const distributed::MemoryItem& item : items)
        fmt::print("  {:<22} {:>12}  {}\n", item.name, gib(item.bytes), item.note);
      fmt::print("  {:<22} {:>12}  {}\n", "total per rank", gib(distributed::total_bytes(items)),
                 verdict(distributed::total_bytes(items)));
    };
    train::StepConfig whole = as_run, sharded = as_run;
    whole.sharding.weights = false;
    sharded.sharding.weights = true;
    const int64_t L = G / (data_ranks * B);
    const std::string mesh =
        N > 1 ? fmt::format(" ({} data-parallel × {} context-parallel, {} tokens each)", data_ranks, N, T / N) : "";
    show(fmt::format("per rank, {} ranks{}, {} micro-batches each, remat={}, gradients and moments sharded:", ranks,
                     mesh, L, model::remat_name(as_run.remat)),
         whole);
    show("the same with the weights sharded too (train.shard_weights=true, FSDP):", sharded);

    // The verdict on the layout as given and, when it does not fit, the nearest one that does.
    auto per_rank = [&](const train::StepConfig& layout) {
      return distributed::total_bytes(train::rank_memory(c, layout, ranks));
    };
    const double needed = per_rank(as_run);
    fmt::print("fit              {}: {} per rank of {} ({:.4g} GB, --gpu-memory), {} layout: remat={}, weights {}, {} "
               "ranks\n",
               needed <= capacity ? "yes" : "no", gib(needed), gib(capacity), capacity / 1e9,
               in.from_recipe ? "the recipe's" : "the planned", model::remat_name(as_run.remat),
               as_run.sharding.weights ? "sharded" : "whole", ranks);
    if (needed > capacity) {
      if (const std::optional<train::StepConfig> nearest = train::nearest_layout_that_fits(c, as_run, ranks, capacity))
        fmt::print("                 fits with train.remat={} train.shard_weights={}: {} per rank\n",
                   model::remat_name(nearest->remat), nearest->sharding.weights, gib(per_rank(*nearest)));
      else
        fmt::print("                 nothing fits at {} ranks: the least is remat=block with sharded weights, {} per "
                   "rank\n",
                   ranks, gib(per_rank(sharded_block(as_run))));
    }

    // The time, from a stated MFU of the device's peak, in replica's FLOP convention (model/flops.h).
    const double peak = o->peak_tflops > 0 ? o->peak_tflops * 1e12 : metrics::hopper_peak_flops(precision);
    const double seconds = train::step_seconds(c, step, ranks, o->mfu / 100.0, peak);
    fmt::print("step time        {} at {:g}% MFU of {:.1f} TFLOP/s per GPU (--mfu, --peak-tflops): {:.4g} FLOPs over "
               "{} GPUs\n",
               duration(seconds), o->mfu, peak / 1e12, train::step_flops(c, step), ranks);
    fmt::print("to finish        {} for {} steps (train.max_steps) of {} tokens\n",
               duration(seconds * double(in.max_steps)), grouped(in.max_steps), grouped(G * T));
    return 0;
  });
});

}  // namespace replica::cli
