# make: configure + build everything.  make test: build + all tests.  make train: the embedded default run, building
# only the replica binary it runs (not the tests, benchmarks or CUDA checks).
BUILD ?= build
JOBS ?= $(shell nproc)

.PHONY: all build binary deps test train bench clean

all: build

$(BUILD)/build.ninja:
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release

build: $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS)

binary: $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS) --target replica

deps:
	scripts/install-deps.sh

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

train: deps
	$(MAKE) binary
	scripts/train-default.sh

bench: build
	bench/run.sh

clean:
	rm -rf $(BUILD)
