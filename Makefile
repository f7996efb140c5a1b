# make: configure + build everything.  make test: install the test tools, build, run all tests.  make test-quick:
# the same, but only the unit and parity tests (no end-to-end, fuzz or CUDA-emulation tests), for a contributor's
# inner loop.  make train: the tiny recipe's run (configs/recipes/tiny.yaml), installing only what building needs
# and building only the replica binary it runs (not the tests, benchmarks or CUDA checks).
# make test SANITIZE=1: everything under ASan + UBSan in build-sanitize/ (any report fails the test).
# make fuzz: every libFuzzer harness of tests/fuzz for FUZZ_SECONDS each, in build/fuzz/ (clang).
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=
FUZZ_BUILD ?= $(BUILD)/fuzz
FUZZ_SECONDS ?= 60

ifeq ($(SANITIZE),1)
BUILD := build-sanitize
CMAKE_FLAGS += -DREPLICA_SANITIZE=ON -DREPLICA_CUDA=OFF
# Open MPI and oneDNN keep allocations to exit on purpose: leaks are checked by the fuzz tree (sanitize.parsers),
# which links neither.
export ASAN_OPTIONS ?= halt_on_error=1:detect_leaks=0:abort_on_error=1
export UBSAN_OPTIONS ?= halt_on_error=1:print_stacktrace=1
endif

.PHONY: all build binary deps test test-quick train bench clean fuzz

all: build

$(BUILD)/build.ninja:
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS)

build: $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS)

binary: $(BUILD)/build.ninja
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

train:
	scripts/install-deps.sh --build
	$(MAKE) binary
	scripts/train-default.sh

bench: build
	bench/run.sh

fuzz:
	JOBS=$(JOBS) tests/fuzz/build.sh . $(FUZZ_BUILD)
	tests/fuzz/run.sh $(FUZZ_BUILD) $(FUZZ_SECONDS)

clean:
	rm -rf $(BUILD)
