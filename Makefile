# tidepool: the two commands of the quick start are `make demo` and `make test`; both set up
# what they need first.
BUILD ?= build
BUILD_TYPE ?= RelWithDebInfo
JOBS ?= $(shell nproc)
TIDEPOOL := $(BUILD)/src/cli/tidepool

.PHONY: setup configure build testenv test demo bench fuzz clean

setup:
	@scripts/setup.sh

configure: setup
	@cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) >/dev/null

build: configure
	@cmake --build $(BUILD) -j $(JOBS)

# The real Kubernetes control plane for end-to-end tests (Go; the first build takes ~10 min,
# later ones reuse the Go build cache).
testenv: setup
	@testenv/build

test: build testenv
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)

# The main job on the built-in default: what tidepool decides for the example cluster now,
# then two simulated days of bursty training on its pools.
demo: build
	$(TIDEPOOL) plan --config examples/seed/config.yaml --state examples/seed/state.yaml -o text
	@echo
	$(TIDEPOOL) simulate --config examples/seed/config.yaml

bench: build
	@for b in $(BUILD)/bench/*_bench; do $$b; done

# Coverage-guided fuzzing (libFuzzer + ASan/UBSan, clang 16) of every parser, FUZZ_SECONDS per
# target (default 60), in build-fuzz/. Not part of `make test`, which replays the seed corpora.
fuzz: setup
	@fuzz/run.sh

clean:
	rm -rf $(BUILD)
