# make: configure + build everything.  make test: install the test tools, build, run all tests.  make test-quick:
# the same, but only the unit and parity tests (no end-to-end, fuzz or CUDA-emulation tests), for a contributor's
# inner loop.  make train: the tiny recipe's run (configs/recipes/tiny.yaml), installing only what building needs
# and building only the replica binary it runs (not the tests, benchmarks or CUDA checks).
# make test SANITIZE=1: everything under ASan + UBSan in build-sanitize/ (any report fails the test).
# CUDA=OFF: configure without the CUDA backend (otherwise built wherever CMake finds nvcc). `make train` leaves it out
# of a new build directory on a machine with no NVIDIA GPU: its tiny run trains on the CPU, and nvcc's ~130 CPU-s are a
# quarter of the binary's build. A later `make` or `make test` turns it back on and builds only what it adds.
# make fuzz: every libFuzzer harness of tests/fuzz for FUZZ_SECONDS each, in build/fuzz/ (clang).
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=
FUZZ_BUILD ?= $(BUILD)/fuzz
FUZZ_SECONDS ?= 60
CUDA ?= ON
# make train's: ON where nvidia-smi lists a GPU or $(BUILD) already has the backend, else OFF.
gpu_listed = $(shell nvidia-smi -L 2>/dev/null | grep '^GPU')
TRAIN_CUDA ?= $(if $(gpu_listed)$(shell grep -sx 'REPLICA_CUDA:BOOL=ON' $(BUILD)/CMakeCache.txt),ON,OFF)

ifeq ($(SANITIZE),1)
BUILD := build-sanitize
CMAKE_FLAGS += -DREPLICA_SANITIZE=ON
CUDA := OFF
# Open MPI and oneDNN keep allocations to exit on purpose: leaks are checked by the fuzz tree (sanitize.parsers),
# which links neither.
export ASAN_OPTIONS ?= halt_on_error=1:detect_leaks=0:abort_on_error=1
export UBSAN_OPTIONS ?= halt_on_error=1:print_stacktrace=1
endif

.PHONY: all build binary deps test test-quick train bench clean fuzz

all: build

# Configures $(BUILD) when it is new or was configured with the other CUDA setting.
configure = grep -qx 'REPLICA_CUDA:BOOL=$(CUDA)' $(BUILD)/CMakeCache.txt 2>/dev/null && [ -f $(BUILD)/build.ninja ] \
	|| cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release -DREPLICA_CUDA=$(CUDA) $(CMAKE_FLAGS)

build:
	$(configure)
	cmake --build $(BUILD) -j $(JOBS)

binary:
	$(configure)
	cmake --build $(BUILD) -j $(JOBS) --target replica

deps:
	scripts/install-deps.sh

# The tests need the test tools `make train` leaves out (PyTorch, Chromium, clang, Slurm, nginx): installed here first.
test: deps
	$(MAKE) build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

test-quick: deps
	$(MAKE) build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) -E '^(integration|fuzz|sanitize|cuda_emu)\.'

# The corpora download while the binary builds (their log is shown after the build's, not interleaved with it);
# train-default.sh's fetch-data.sh then only tokenizes them.
train:
	scripts/install-deps.sh --build
	mkdir -p data && { scripts/fetch-data.sh --text > data/fetch-text.log 2>&1 & fetch=$$!; \
	  $(MAKE) binary CUDA=$(TRAIN_CUDA); built=$$?; wait $$fetch; fetched=$$?; cat data/fetch-text.log; \
	  [ $$built = 0 ] && [ $$fetched = 0 ]; }
	scripts/train-default.sh

bench: build
	bench/run.sh

fuzz:
	JOBS=$(JOBS) tests/fuzz/build.sh . $(FUZZ_BUILD)
	tests/fuzz/run.sh $(FUZZ_BUILD) $(FUZZ_SECONDS)

clean:
	rm -rf $(BUILD)
