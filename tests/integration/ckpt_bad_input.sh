#!/usr/bin/env bash
# Bad checkpoints and model directories: corrupted, truncated or missing files, a missing manifest, another
# model shape, a missing or misshaped tensor, a wrong dtype, changed data — each exits 2 with a message naming
# the file or tensor, and nothing is overwritten. Also the stage transition (init_from + optim.load_state).
set -euo pipefail
source "$(dirname "$0")/ckpt_lib.bash"

train "$work/run" train.max_steps=8 train.stop_at=4
good="$work/run/checkpoints/step00000004"
# .lock holds the pid of the last process that took the run directory, refused or not (docs/checkpoints.md).
snapshot() { (cd "$work/run" && find . -type f ! -path './tb/*' ! -name .lock -exec md5sum {} + | sort) >"$1"; }
snapshot "$work/before"
broken() {  # name: a copy of the good checkpoint to break
  rm -rf "$work/$1" && cp -r "$good" "$work/$1"
}
resume() { "$replica" train --config "$work/recipe.yaml" run.dir="$work/run" train.max_steps=8 "$@"; }

broken corrupt
printf 'X' | dd of="$work/corrupt/model.safetensors" bs=1 seek=5000 conv=notrunc status=none
expect_failure "corrupt/model.safetensors: checksum mismatch" resume train.resume_from="$work/corrupt"
expect_failure "corrupt/model.safetensors: checksum mismatch" \
  "$replica" export-hf --checkpoint "$work/corrupt" --out "$work/out"
test ! -e "$work/out" && test ! -e "$work/out.partial"

broken truncated
truncate -s -100 "$work/truncated/optim.safetensors"
expect_failure "truncated/optim.safetensors: " resume train.resume_from="$work/truncated"
grep -q "MANIFEST.json says" "$work/err"

broken nomanifest
rm "$work/nomanifest/MANIFEST.json"
expect_failure "nomanifest: missing MANIFEST.json" resume train.resume_from="$work/nomanifest"

broken nostate
rm "$work/nostate/train_state.json"
expect_failure "is not a replica checkpoint directory" resume train.resume_from="$work/nostate"

# Another model shape: the recipe's model is wider than the checkpoint's.
sed 's/hidden_size: 64/hidden_size: 32/' "$work/model.yaml" >"$work/narrow.yaml"
expect_failure "holds a different model: hidden_size: checkpoint 64, expected 32" \
  resume model.config="$work/narrow.yaml"
expect_failure "tensor 'model.embed_tokens.weight' has shape [512, 64], expected [512, 32]" \
  "$replica" train --config "$work/recipe.yaml" run.dir="$work/narrow" model.config="$work/narrow.yaml" model.init_from="$good"

# Changed data: refused unless data.allow_fingerprint_change.
expect_failure "data fingerprint changed" resume data.paths="[$work/other.npy]"
grep -q "data.allow_fingerprint_change=true" "$work/err"
snapshot "$work/after"
diff "$work/before" "$work/after"
echo "ok: the run directory is unchanged after every refused resume"

# HF directories: missing tensor, misshaped tensor, wrong dtype.
"$replica" export-hf --checkpoint "$good" --out "$work/hf" >/dev/null
hf_broken() {  # name, python statement on (config, params, dtype)
  $py - "$src/tools/reference" "$work/hf" "$work/$1" "$2" <<'PY'
import sys, json, struct
sys.path.insert(0, sys.argv[1])
import olmo3_ref as ref
config, params = ref.load_hf(sys.argv[2])
dtype = "F32"
exec(sys.argv[4])
ref.save_hf(sys.argv[3], config, params)
if dtype == "F64":  # patch the header: the reference cannot write F64
    path = f"{sys.argv[3]}/model.safetensors"
    data = open(path, "rb").read()
    open(path, "wb").write(data.replace(b'"dtype":"F32"', b'"dtype":"F64"', 1))
PY
}
hf_broken missing "del params['model.layers.1.mlp.down_proj.weight']"
expect_failure "missing tensor 'model.layers.1.mlp.down_proj.weight'" \
  "$replica" train --config "$work/recipe.yaml" run.dir="$work/r1" model.init_from="$work/missing"
hf_broken misshaped "params['model.layers.0.self_attn.k_proj.weight'] = params['model.layers.0.self_attn.k_proj.weight'][:16]"
expect_failure "tensor 'model.layers.0.self_attn.k_proj.weight' has shape [16, 64], expected [32, 64]" \
  "$replica" export-hf --checkpoint "$work/misshaped" --out "$work/out"
hf_broken f64 "dtype = 'F64'"
expect_failure "has dtype F64" "$replica" export-hf --checkpoint "$work/f64" --out "$work/out"
test ! -e "$work/out"

# export-hf never writes into a non-empty directory.
mkdir -p "$work/full" && echo keep >"$work/full/README"
expect_failure "exists and is not an empty directory" "$replica" export-hf --checkpoint "$good" --out "$work/full"
test "$(cat "$work/full/README")" = keep

# Stage transition: weights + Adam moments and step count from the stage-1 checkpoint; steps, schedule and
# data start afresh; the stage-1 run directory is not touched.
train "$work/stage2" model.init_from="$good" optim.load_state=true train.max_steps=3 schedule.type=constant \
  schedule.warmup_steps=0
grep -q "weights and optimizer state (step count" "$work/stage2.log"
$py - "$good" "$work/stage2" <<'PY'
import sys, json
s1 = json.load(open(f"{sys.argv[1]}/train_state.json"))
s2 = json.load(open(f"{sys.argv[2]}/checkpoints/step00000003/train_state.json"))
lines = [json.loads(l) for l in open(f"{sys.argv[2]}/metrics.jsonl") if '"loss"' in l]
assert [l["step"] for l in lines] == [1, 2, 3] and lines[0]["lr"] == 1.0e-2, lines[0]  # its own schedule from step 1
assert lines[0]["epoch"] == 1 and lines[0]["batch"] == 0  # fresh data loader
taken = sum(not l["skipped"] for l in lines)
assert s2["optimizer"]["adam_step_count"] == s1["optimizer"]["adam_step_count"] + taken, (s1["optimizer"], taken)
print("stage 2: Adam step", s1["optimizer"]["adam_step_count"], "->", s2["optimizer"]["adam_step_count"], "; steps 1..3, lr", lines[0]["lr"])
PY
expect_failure "is not a replica or OLMo-core checkpoint (an HF directory holds weights only)" \
  "$replica" train --config "$work/recipe.yaml" run.dir="$work/r2" model.init_from="$work/hf" optim.load_state=true
snapshot "$work/after"
diff "$work/before" "$work/after"
train "$work/run" train.max_steps=8 data.paths="[$work/other.npy]" data.allow_fingerprint_change=true
grep -q "resuming from $good" "$work/run.log"
echo "ok: data.allow_fingerprint_change=true resumes on other data"
echo "ckpt_bad_input: all checks passed"
