# Thin wrapper over CMake. `make run` and `make test` install missing Debian packages first.
BUILD ?= build
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
FUZZ_SECONDS ?= 20

.PHONY: all deps build install deb run run-args test test-contention test-load test-flavors test-slow test-asan fuzz e2b-suite peer-suites ci-kernels ci-suite bench clean

all: build

deps:
	@./scripts/deps.sh

build: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)

# cmake --install to PREFIX (README "Install"; DESTDIR works as usual), and the .deb in $(BUILD)/pkg.
PREFIX ?= /usr/local
install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

deb: build
	cpack --config $(BUILD)/CPackConfig.cmake -G DEB -B $(BUILD)/pkg

# The main job: every scenario against the embedded local platform, and the code-interpreter-v1
# (prebuilt: the built-in one), python-hello and node-web template folders (those two deployed
# first through serve's build API; scenarios/ alone does not descend into scenarios/templates/).
# `abxlua run scenarios/templates/` runs every template. Most of the suite's time is waiting (TTLs,
# pauses, keepalives), not CPU: -j 12 with 14 live sandboxes, and --slow-first (from the second run
# on, the files holding the longest tests, the 10 s pause/resume one, start first) let the waits
# overlap (issue 14: 29 s at -j 4 in collection order; issue 26: at -j 8 all 8 workers were busy
# to the end with CPU to spare, 13.6-16.1 s; at -j 12, 12.1-13.4 s).
RUN_ARGS = --slow-first -j 12 --max-sandboxes 14 scenarios/ scenarios/templates/code-interpreter-v1 \
  scenarios/templates/python-hello scenarios/templates/node-web
run: build
	./$(BUILD)/abxlua run $(RUN_ARGS)

# The arguments of `make run`, printed for tests/contention/run.sh (one list for both).
run-args:
	@echo $(RUN_ARGS)

# Every test of the project (unit, envd, platform, runner, scenarios) but the platform load
# tests, which need the machine to themselves (`make test-load`), and the tests labelled slow
# (real image builds from Debian's mirror: `make test-slow`).
test: build
	cd $(BUILD) && ctest --output-on-failure -j 2 --timeout 900 -LE "load|slow"

# The whole scenario suite once per local flavour (`abxlua run scenarios/ --flavor NAME`), with a
# table of passed and skipped per flavour; also part of `make test` (ctest scenarios_flavors).
test-flavors: build
	bash tests/scenarios/run_flavors.sh ./$(BUILD)/abxlua 40

# The slow tests: a real mmdebstrap build of a fromImage root (tests/platform/test_image_debian.py),
# the Dockerfile's steps built in bwrap roots (tests/install/dockerfile.py build), and a whole
# `abxlua accept skill-tools` run (tests/accept/test_skill_full.py: needs the npm registry).
test-slow: build
	cd $(BUILD) && ctest --output-on-failure -L slow --timeout 1500

# The platform load tests, alone on the machine: the load benchmark (200 sandboxes, 2,000 concurrent
# commands) and the ingress's 300 streams at once (platform_ingress_concurrency);
# --verbose so that its figures (latencies, CPU by side, peaks) are in the log even when it passes.
test-load: build
	cd $(BUILD) && ctest --verbose -L load --timeout 1500

# The contention harness (issue 22, tests/contention/run.sh): the `make run` selection
# CONTENTION_RUNS times (default 5), then the cached template run (`abxlua run scenarios/templates/`)
# once, while 2 x nproc CPU loops and a second, independent run of the same selection (its own
# platform, state dir and TMPDIR) load the machine as a shared CI runner would; prints a table of
# runs, failures and the slowest tests; exits 1 when a main run failed. CONTENTION_ARGS adds
# options: --skip-templates, --quiet (no load: the baseline wall times), --out DIR. Not part of
# `make test`; .ci/run runs it with 2 runs and no template run.
CONTENTION_RUNS ?= 5
CONTENTION_ARGS ?=
test-contention: build
	bash tests/contention/run.sh --runs $(CONTENTION_RUNS) $(CONTENTION_ARGS) ./$(BUILD)/abxlua

# The whole suite under AddressSanitizer and UBSan (valgrind cannot run an ASan binary: the
# memcheck test is left to `make test`).
test-asan: deps
	@cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DABX_SANITIZE=ON >/dev/null
	@cmake --build build-asan -j $(JOBS)
	cd build-asan && ASAN_OPTIONS=detect_leaks=1 ctest --output-on-failure -j 2 --timeout 900 -LE "valgrind|load|slow"

# libFuzzer targets of tests/fuzz (clang, ASan, UBSan), each run FUZZ_SECONDS on a scratch copy of
# its seed corpus; prints executions and coverage per target and fails when one crashes.
fuzz:
	@./scripts/deps.sh fuzz
	@cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=RelWithDebInfo -DABX_FUZZ=ON >/dev/null
	@cmake --build build-fuzz -j $(JOBS) --target fuzz_all
	./tests/fuzz/run.sh build-fuzz $(FUZZ_SECONDS)

# E2B's own JS SDK suite (e2b-dev/E2B packages/js-sdk, tests/sandbox and tests/api, unmodified,
# exported from the clone E2B_SDK_DIR names, not part of this repository) against one `abxlua
# serve`, file by file; prints the per-file table. E2B_SUITE_MODE=url for a serve without --tls.
# Set E2B_SDK_DIR to a clone of https://github.com/e2b-dev/E2B first. Not in `make test`.
E2B_SUITE_MODE ?= tls
e2b-suite: build
	bash tests/e2b_suite/run.sh $(BUILD)/abxlua $(E2B_SUITE_MODE)

# The peers' own suites as one command (tests/peer_suites/run.sh, docs/peer-suites.md): E2B's JS SDK
# suite, E2B's code-interpreter JS suite, E2B's CLI tests and OpenSandbox's JS SDK conformance run,
# each from a pinned upstream commit or package version fetched at run time, against the matching
# serve; one table of passed/failed/skipped with every failure classified. Set E2B_SDK_DIR (a clone
# of e2b-dev/E2B), CI_REPO_DIR (a clone of e2b-dev/code-interpreter) and OPENSANDBOX_SDK_DIR (a
# clone of opensandbox-group/OpenSandbox) first;
# PEER_SUITES="e2b-cli opensandbox-sdk" runs some. Exits 1 on a product-gap or setup failure. Not in
# `make test`.
PEER_SUITES ?=
peer-suites: build
	bash tests/peer_suites/run.sh $(BUILD)/abxlua $(PEER_SUITES)

# The code-interpreter-v1 template's kernels that come from npm (tslab: javascript, typescript);
# scripts/ci_kernels.sh. Not in `make deps` nor `make test`: their tests skip (77) without them.
ci-kernels:
	bash scripts/ci_kernels.sh

# E2B's code-interpreter JS suite (e2b-dev/code-interpreter js/tests, unmodified, exported from
# the clone CI_REPO_DIR names) against `abxlua serve --tls`; prints its table and a last
# `PEER-SUITE code-interpreter passed=N failed=N skipped=N` line. Not in `make test`.
ci-suite: build
	bash tests/peer_suites/code_interpreter.sh $(BUILD)/abxlua

# The benchmark (issue 14, tests/bench/bench.py): every workload three ways against one `abxlua
# serve` (abxlua, the e2b SDK 2.51.0 in Node, a libcurl floor), interleaved over rounds; prints the
# Markdown table and writes $(BUILD)/bench/report.md and report.json. About 15 minutes. Options in
# BENCH_ARGS, e.g. `make bench BENCH_ARGS="--only cmd,stream_collect --rounds 5"`,
# `--abxlua old/build/abxlua` (a "before" table), `--quick`. Not part of `make test`.
BENCH_ARGS ?=
bench: build
	@cmake --build $(BUILD) --target abx-bench-floor
	python3 tests/bench/bench.py --abxlua $(BUILD)/abxlua --build-dir $(BUILD) $(BENCH_ARGS)

clean:
	rm -rf $(BUILD) build-asan build-fuzz
