# make: configure + build build/replica.  make test: build + all tests.  make train: the embedded default run.
BUILD ?= build
JOBS ?= $(shell nproc)

.PHONY: all build deps test train bench clean

all: build

$(BUILD)/build.ninja:
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release

build: $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS)

deps:
	scripts/install-deps.sh

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

train: deps build
	scripts/train-default.sh

bench: build
	bench/run.sh

clean:
	rm -rf $(BUILD)
