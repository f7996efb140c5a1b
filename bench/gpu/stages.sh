# The machinery of bench/gpu/run.sh's stages (sourced by it; tests/cuda_emu/gpu_run.sh runs it through run.sh):
# limits cut to the call's deadline, the summary table with the review's expected numbers beside each stage,
# tables copied to $OUT the moment they exist, the kernel-check processes and what their outcomes decide, and
# the checks of the tools, the CUDA libraries and the bundle's stamp. Needs `deadline` and `logs` set.

# limit SECONDS: the stage's limit, cut to what is left before the deadline (at least 1).
limit() { local left=$((deadline - SECONDS)); echo $(($1 < left ? $1 : (left > 1 ? left : 1))); }

# publish FILE...: copies these files of $logs to $OUT now, so that they come back even when the device tool's
# timeout cuts the call short (it returns what $OUT holds, and only the tail of stdout).
publish() {
  [ -n "${OUT:-}" ] || return 0
  local f
  for f; do [ -f "$logs/$f" ] && cp "$logs/$f" "$OUT/"; done
  tar -C "$logs" -czf "$OUT/logs.tar.gz" . 2>/dev/null || true
}

# row STAGE RESULT [EXPECTED]: a line of the summary table (summary.md, published at once).
summary=()
row() {
  summary+=("| $1 | $2 | ${3:-} |")
  echo "${summary[-1]}"
  { echo "| stage | result | expected (review of 2026-12-03, §5.2) |"
    echo "|---|---|---|"
    printf '%s\n' "${summary[@]}"; } >"$logs/summary.md"
  publish summary.md
}

# STAGES=a,b,... runs only those stages (all by default; the preflight always runs): a warm follow-up call can
# repeat one stage.
wanted() { [ -z "${STAGES:-}" ] || [[ ",$STAGES," == *",$1,"* ]]; }

# begin STAGE EXPECTED: the stage's heading, with what the review expects of it, on stdout.
begin() { echo; echo "=== $1 (expected: $2) [$SECONDS s of $deadline]"; }

# run_limited SECONDS NAME COMMAND...: COMMAND under `timeout` with the limit cut to the deadline; its status.
# REPLICA_GPU_RUN_FAULT=NAME,... (a rehearsal of failure handling, used by tests/cuda_emu/gpu_run.sh): the
# command named NAME is replaced by a process that dies of SIGSEGV, as a faulting kernel's process would.
run_limited() {
  local seconds=$1 name=$2
  shift 2
  if [[ ",${REPLICA_GPU_RUN_FAULT:-}," == *",$name,"* ]]; then
    echo "run.sh: REPLICA_GPU_RUN_FAULT names $name: a crash (SIGSEGV) instead of $*" >&2
    timeout "$(limit "$seconds")" bash -c 'kill -SEGV $$' 2>/dev/null
    return
  fi
  timeout "$(limit "$seconds")" "$@"
}

# describe_exit STATUS: what a process's exit status says, for the summary.
describe_exit() {
  case $1 in
    0) echo "ok" ;;
    124) echo "**TIMED OUT**" ;;
    13[0-9] | 14[0-9] | 15[0-9]) echo "**CRASHED** (signal $(($1 - 128)))" ;;
    *) echo "**exit $1**" ;;
  esac
}

# check_group NAME SECONDS CHECK_KERNELS_ARGS...: one check_kernels process over the families its arguments select
# (tests/gpu/check_kernels.cu), its table in check_NAME.md and appended to check.md; its exit status in
# check_rc[NAME]: 0 every row passed, 1 a row failed, anything else: it did not finish (a CUDA fault is sticky, so
# a process that faults checks nothing after it; a crash here loses this group's rows only); its summary in
# check_result.
declare -A check_rc
check_group() {
  local name=$1 seconds=$2 rc passed
  shift 2
  run_limited "$seconds" "checks_$name" "$check_kernels" "$@" >"$logs/check_$name.md" 2>"$logs/check_$name.err"
  rc=$?
  check_rc[$name]=$rc
  passed=$(sed -n 's/^CHECKS: //p' "$logs/check_$name.md")
  { [ -s "$logs/check.md" ] || printf '| kernel | shape | output | rel. error | bound | ok |\n|---|---|---|---|---|---|\n'
    grep '^| ' "$logs/check_$name.md" | grep -vE '^\| (kernel|---)' || true
    ran_to_the_end "$name" || echo "| **$name** | check_kernels $* | $(describe_exit $rc): $(tail -c 200 \
      "$logs/check_$name.err" | tr '\n|' ' /') | | | **NO** |"; } >>"$logs/check.md"
  publish check.md
  case $rc in
    0) check_result="ok: ${passed}" ;;
    1) check_result="**FAILED**: ${passed} (failing rows: grep NO check.md)" ;;
    *) check_result="$(describe_exit $rc) after $(grep -c '^| [a-z]' "$logs/check_$name.md") rows (check_$name.err)" ;;
  esac
}

# ran_to_the_end NAME: the check group's process finished (every row was computed, passing or not).
ran_to_the_end() { [ "${check_rc[$1]:-x}" = 0 ] || [ "${check_rc[$1]:-x}" = 1 ]; }

# find_library NAME DIR...: the first DIR holding NAME (a file or a link to one).
find_library() {
  local name=$1 dir
  shift
  for dir; do [ -e "$dir/$name" ] && { echo "$dir"; return 0; }; done
  return 1
}

# cuda_libraries NAME...: finds each library for the bundle's binaries in $cuda_home (the toolkit), else in the torch
# venv's nvidia/* wheels ($PYTHON's `nvidia` package: nvidia-cuda-runtime, nvidia-cublas, nvidia-nccl-cu13), else in
# the loader's cache; adds its directory to cuda_lib_dirs (for LD_LIBRARY_PATH), "NAME (where)" to cuda_lib_found,
# or NAME to cuda_lib_missing.
cuda_lib_dirs="" cuda_lib_found=() cuda_lib_missing=() wheel_lib_dirs=()
cuda_libraries() {
  local toolkit=("$cuda_home/lib64" "$cuda_home/lib" "$cuda_home"/targets/*/lib) name dir
  [ ${#wheel_lib_dirs[@]} -gt 0 ] || mapfile -t wheel_lib_dirs < <("${PYTHON:-python3}" -c \
    'import nvidia; print("\n".join(nvidia.__path__))' 2>/dev/null |
    while read -r root; do find "$root" -maxdepth 3 -name 'lib*.so*' -printf '%h\n' 2>/dev/null; done | sort -u)
  for name; do
    if dir=$(find_library "$name" "${toolkit[@]}"); then cuda_lib_found+=("$name (toolkit)")
    elif dir=$(find_library "$name" "${wheel_lib_dirs[@]}"); then cuda_lib_found+=("$name (torch's wheels)")
    elif dir=$(ldconfig -p 2>/dev/null | awk -v n="$name" '$1 == n {print $NF; exit}') && [ -n "$dir" ]; then
      dir=$(dirname "$dir")
      cuda_lib_found+=("$name (system)")
    else
      cuda_lib_missing+=("$name")
      continue
    fi
    [[ ":$cuda_lib_dirs:" == *":$dir:"* ]] || cuda_lib_dirs+=${cuda_lib_dirs:+:}$dir
  done
}

# unloadable BINARY...: "binary: library" for each library the loader cannot find for these binaries.
unloadable() {
  local bin
  for bin; do ldd "$bin" 2>&1 | awk -v b="${bin##*/}" '/not found/ {print b ": " $1}'; done
}

# stamp_of_bundle DIR: the sources hash in the bundle's STAMP (scripts/source-stamp.sh), empty if it has none.
stamp_of_bundle() { sed -n 's/^sources //p' "$1/STAMP" 2>/dev/null; }
