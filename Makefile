# tidepool: the two commands of the quick start are `make demo` and `make test`; both set up
# what they need first.
BUILD ?= build
BUILD_TYPE ?= RelWithDebInfo
JOBS ?= $(shell nproc)
TIDEPOOL := $(BUILD)/src/cli/tidepool

.PHONY: setup configure build testenv testenv-addons test demo demo-hpa demo-offline bench fuzz \
	soak overload tsan asan clean

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

# Every ctest test except those labelled soak (minutes each; `make overload`) or addons.
test: build testenv
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS) -LE 'soak|addons'

# testenv's add-ons Kueue and Cluster API (`testenv/up --with kueue|cluster-api`): builds them
# (cold: ~25 and ~10 min more, testenv/README.md) and runs the ctest tests labelled addons
# (their smoke tests, and tests/e2e/kueue_test.sh, which needs tidepool built).
testenv-addons: build testenv
	@testenv/build --with kueue,cluster-api
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS) -L addons

# The main job on the built-in default: a real control plane (testenv), tidepool running on the
# example cluster's pools, the source documents' training workloads, and a timeline from
# pending to scale-up from zero to running to drained and back to zero. A few minutes.
demo: build testenv
	@scripts/live-demo.sh $(TIDEPOOL)

# The source document's HPA beside tidepool on real metrics (metrics-server in testenv): the load
# rises, the HPA scales 2 -> 5 and tidepool adds the nodes; the load falls, both scale back. ~2 min.
demo-hpa: build testenv
	@scripts/hpa-demo.sh $(TIDEPOOL)

# The same example offline: one planning decision on a cluster snapshot, then two simulated
# days of bursty training on its pools.
demo-offline: build
	$(TIDEPOOL) plan --config examples/seed/config.yaml --state examples/seed/state.yaml -o text
	@echo
	$(TIDEPOOL) simulate --config examples/seed/config.yaml

bench: build
	@for b in $(BUILD)/bench/*_bench; do $$b; done

# Coverage-guided fuzzing (libFuzzer + ASan/UBSan, clang 16) of every parser, FUZZ_SECONDS per
# target (default 60), in build-fuzz/. Not part of `make test`, which replays the seed corpora.
fuzz: setup
	@fuzz/run.sh

# The reliability soak (docs/reliability.md): tidepool SIGKILLed 50 times during scale-ups, gang
# scale-ups, spot fallbacks and scale-downs on its own testenv; ~16 min. SOAK_SEED=N replays a run.
soak: build testenv
	@tests/e2e/soak_kill_test.sh $(TIDEPOOL) 50

# API server overload (docs/reliability.md): kube-apiserver with APF off and in-flight limits of
# 2 / 1 answers 429s while 2,000 pods are created at once; every pod must run on about the
# minimum of nodes. Its own testenv; 2.5-4.5 minutes. Also `ctest -L soak`.
overload: build testenv
	@tests/e2e/api_overload_test.sh $(TIDEPOOL)

# The container image without a Docker daemon (docs/install.md): localhost/tidepool:VERSION, FROM
# scratch with the binary and its shared libraries, built with buildah into the default containers
# store. `ctest -R ops.image` builds it into a private store and runs it on testenv with the chart.
.PHONY: image
image: build
	@deploy/build-image.sh $(TIDEPOOL)

# Sanitizer builds (build-tsan/, build-asan/): every unit test and the live tests of the threaded
# code (API client, informers, leader election, `tidepool run` in the kwok e2e scenarios) under
# ThreadSanitizer, or AddressSanitizer + UBSan. A full build each, so not part of `make test`;
# run and reported in docs/reliability.md.
tsan: setup testenv
	@scripts/sanitize.sh thread

asan: setup testenv
	@scripts/sanitize.sh address

clean:
	rm -rf $(BUILD)
