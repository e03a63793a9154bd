# graft: `make demo` and `make test` do everything from a fresh Debian machine.
BUILD_DIR ?= build
ASAN_DIR ?= build-asan
JOBS ?= $(shell nproc)
GRAFT := $(BUILD_DIR)/bin/graft
CMAKE_FLAGS ?=
# ccache hits across clones: paths under the checkout are hashed relative to it.
export CCACHE_BASEDIR ?= $(CURDIR)
# The sanitizer build keeps line tables (-g1); without this ccache would hash the
# working directory into every debug-info object and miss in every new clone.
export CCACHE_NOHASHDIR ?= 1

.PHONY: all deps demo-deps build demo test unit-test asan-test fuzz tsan conformance compare ort-check install clean

all: build

# Every package (tests, benchmarks, Python module, sanitizer build), or only
# those the demo builds against (scripts/install_deps.sh says which).
deps:
	@bash scripts/install_deps.sh
demo-deps:
	@bash scripts/install_deps.sh demo

$(BUILD_DIR)/build.ninja:
	cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS)

# Configures again every time: after `make demo`, packages that only the tests
# need (pybind11 for the Python module, ...) have just been installed, and
# CMake looks again for what it did not find before.
build: deps
	cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS)
	cmake --build $(BUILD_DIR) -j $(JOBS)

# The demo needs the library, its JIT plugin and the graft tool only (graft_cli
# depends on the plugin), and the Python module when it is configured (python/);
# the tests and benchmarks build under `make test`.
demo: demo-deps $(BUILD_DIR)/build.ninja
	cmake --build $(BUILD_DIR) -j $(JOBS) --target graft_cli \
	  $$(ninja -C $(BUILD_DIR) -t targets all 2>/dev/null | grep -q '^graft_python:' && echo graft_python)
	$(GRAFT) zoo resnet50 -o $(BUILD_DIR)/resnet50.onnx
	$(GRAFT) run $(BUILD_DIR)/resnet50.onnx --repeat 5 --stats

# Every test: in the Release build, what the unit tests do not cover (whole
# models, the ONNX conformance suite, PyTorch comparisons, the Python module,
# installing, the benchmarks' smoke tests); then the unit tests under
# AddressSanitizer + UndefinedBehaviorSanitizer (asan-test). Each test program
# is compiled once: the unit test programs only in the sanitizer build (a
# cold `make test` took 40 minutes on 2 cores with both; docs/build.md).
# `make unit-test` runs the unit tests in the Release build too.
test: deps
	cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS)
	cmake --build $(BUILD_DIR) -j $(JOBS) --target graft_release_test_programs
	cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS) --timeout 900 -LE unit -E '_NOT_BUILT$$'
	$(MAKE) asan-test

unit-test: build
	cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS) --timeout 900 -L unit

# The sanitizer build is compiled by clang (ASAN_CXX) so that the fuzzers
# (fuzz/, docs/security.md) live in it: the library carries libFuzzer's
# coverage instrumentation besides ASan and UBSan, and it builds only what
# the unit tests and the fuzzers run (graft_unit_test_programs: no
# benchmarks, no Python module). After the unit tests, each fuzzer runs
# TEST_FUZZ_SECONDS on its corpus, FUZZ_JOBS at a time; what it finds is reported
# (build-asan/fuzz/findings/) but fails only `make fuzz`. The test programs
# compile unoptimized against the -O1 library, with precompiled headers
# (docs/build.md: together they halve the sanitizer build's test objects).
ASAN_CC ?= clang-14
ASAN_CXX ?= clang++-14
FUZZ_SECONDS ?= 60
# What `make test` gives each fuzzer (make fuzz gives FUZZ_SECONDS).
TEST_FUZZ_SECONDS ?= 30
FUZZ_JOBS ?= 2
ASAN_CONFIGURE = cmake -S . -B $(ASAN_DIR) -G Ninja -DCMAKE_BUILD_TYPE=None -DGRAFT_SANITIZE=ON \
  -DGRAFT_BUILD_BENCH=OFF -DGRAFT_WITH_PYTHON=OFF -DGRAFT_PRECOMPILE_HEADERS=ON \
  -DCMAKE_C_COMPILER=$(ASAN_CC) -DCMAKE_CXX_COMPILER=$(ASAN_CXX) $(CMAKE_FLAGS)
asan-test: deps
	$(ASAN_CONFIGURE)
	cmake --build $(ASAN_DIR) -j $(JOBS) --target graft_unit_test_programs
	cd $(ASAN_DIR) && ASAN_OPTIONS=detect_leaks=0 ctest --output-on-failure -j $(JOBS) -L unit --timeout 900
	@# A new finding of this short run is reported and kept in build-asan/fuzz/findings/
	@# without failing the target: it is a new bug, not a regression (the
	@# regression inputs fail the unit tests above, fuzz_replay_*). `make fuzz` fails on it.
	-/usr/bin/python3 fuzz/run_fuzzers.py --build $(ASAN_DIR) --seconds $(TEST_FUZZ_SECONDS) --jobs $(FUZZ_JOBS)

# The fuzzers alone, for longer: make fuzz FUZZ_SECONDS=3600 (each harness;
# FUZZ_JOBS at a time). FUZZERS="npy_fuzzer artifact_fuzzer" picks some.
FUZZERS ?=
fuzz: deps
	$(ASAN_CONFIGURE)
	cmake --build $(ASAN_DIR) -j $(JOBS) --target graft_fuzzers graft_cli
	/usr/bin/python3 fuzz/run_fuzzers.py --build $(ASAN_DIR) --seconds $(FUZZ_SECONDS) --jobs $(FUZZ_JOBS) $(FUZZERS)

# ThreadSanitizer on the runtime tests, with tests/runtime/concurrent_runs_test.cc
# at 8 threads x 500 runs on one Session (plans made while other threads run).
# Its own build folder, -O1 -g1, only runtime_tests and what it needs. One
# OpenMP thread (OMP_THREAD_LIMIT=1 also caps tests that ask for more): GCC's
# OpenMP runtime is not instrumented, so its barriers would read as races.
# The build is too slow for CI (docs/security.md gives its time).
TSAN_DIR ?= build-tsan
TSAN_FLAGS := -fsanitize=thread -fno-omit-frame-pointer -O1 -g1
tsan: deps
	cmake -S . -B $(TSAN_DIR) -G Ninja -DCMAKE_BUILD_TYPE=None -DGRAFT_BUILD_BENCH=OFF -DGRAFT_WITH_PYTHON=OFF \
	  "-DCMAKE_C_FLAGS=$(TSAN_FLAGS)" "-DCMAKE_CXX_FLAGS=$(TSAN_FLAGS)" \
	  -DCMAKE_EXE_LINKER_FLAGS=-fsanitize=thread -DCMAKE_SHARED_LINKER_FLAGS=-fsanitize=thread $(CMAKE_FLAGS)
	cmake --build $(TSAN_DIR) -j $(JOBS) --target runtime_tests
	cd $(TSAN_DIR) && TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" GRAFT_NUM_THREADS=1 OMP_NUM_THREADS=1 OMP_THREAD_LIMIT=1 \
	  GRAFT_TEST_CONCURRENT_RUNS=500 ./tests/runtime_tests

conformance: build
	cd $(BUILD_DIR) && ctest --output-on-failure -L conformance

# Side-by-side latency, first-inference time, memory and accuracy of graft,
# ONNX Runtime (npm onnxruntime-node) and PyTorch: bench/compare/compare.py.
# Options through COMPARE_ARGS, e.g. COMPARE_ARGS="--models resnet50 --runs 20 --backends dnnl,fuse".
COMPARE_ARGS ?=
compare: deps $(BUILD_DIR)/build.ninja
	cmake --build $(BUILD_DIR) -j $(JOBS) --target graft_runner graft_cli
	@command -v node >/dev/null && command -v npm >/dev/null || { echo "make compare needs node and npm (Node.js >= 16)"; exit 1; }
	cd bench/compare && { [ -d node_modules/onnxruntime-node ] || npm install --ignore-scripts --no-audit --no-fund; }
	/usr/bin/python3 bench/compare/compare.py --graft-runner $(BUILD_DIR)/bin/graft_runner \
	  --workdir $(BUILD_DIR)/compare --json $(BUILD_DIR)/compare/compare.json $(COMPARE_ARGS)

# graft against ONNX Runtime (npm onnxruntime-node, as `make compare`) on
# models ONNX Runtime judges: random ONNX graphs of pointwise ops (plain, and
# with NaN and infinities), one-op models with random attributes, the ops
# opsets 19 to 22 changed, and graft opt's
# files of the ONNX test suite. About 5 minutes on 2 cores; not part of
# `make test` (it needs the npm registry). tests/ort/*.py, docs/conformance.md.
ORT_CHECK_DIR := $(BUILD_DIR)/ort-check
ORT_TESTDATA := /usr/share/libonnx-testdata/data
ort-check: deps $(BUILD_DIR)/build.ninja
	cmake --build $(BUILD_DIR) -j $(JOBS) --target graft_cli
	@command -v node >/dev/null && command -v npm >/dev/null || { echo "make ort-check needs node and npm (Node.js >= 16)"; exit 1; }
	cd bench/compare && { [ -d node_modules/onnxruntime-node ] || npm install --ignore-scripts --no-audit --no-fund; }
	cd tests/ort && /usr/bin/python3 random_onnx_graphs.py --graft $(abspath $(GRAFT)) --workdir $(abspath $(ORT_CHECK_DIR))/random --models 300 --seed 1
	cd tests/ort && /usr/bin/python3 random_onnx_graphs.py --graft $(abspath $(GRAFT)) --workdir $(abspath $(ORT_CHECK_DIR))/special --models 300 --seed 2 --special
	cd tests/ort && /usr/bin/python3 random_onnx_graphs.py --graft $(abspath $(GRAFT)) --workdir $(abspath $(ORT_CHECK_DIR))/float16 --models 200 --seed 3 --float16 --special
	cd tests/ort && /usr/bin/python3 random_op_cases.py --graft $(abspath $(GRAFT)) --workdir $(abspath $(ORT_CHECK_DIR))/ops --cases 600 --seed 1
	cd tests/ort && /usr/bin/python3 opset_changes.py --graft $(abspath $(GRAFT)) --workdir $(abspath $(ORT_CHECK_DIR))/opsets
	cd tests/ort && /usr/bin/python3 opt_outputs.py --graft $(abspath $(GRAFT)) --workdir $(abspath $(ORT_CHECK_DIR))/opt \
	  $(ORT_TESTDATA)/node $(ORT_TESTDATA)/simple $(ORT_TESTDATA)/pytorch-converted $(ORT_TESTDATA)/pytorch-operator

# The headers, libgraft.so with its JIT plugin, the graft tool, a CMake package
# and a pkg-config file under PREFIX (docs/embedding.md).
PREFIX ?= /usr/local
install: deps $(BUILD_DIR)/build.ninja
	cmake --build $(BUILD_DIR) -j $(JOBS) --target graft_cli
	cmake --install $(BUILD_DIR) --prefix $(PREFIX)

clean:
	rm -rf $(BUILD_DIR) $(ASAN_DIR)
