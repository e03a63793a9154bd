#!/usr/bin/env bash
# Installs the Debian packages graft needs, only those that are missing.
# Idempotent; needs root (or sudo) only when something is missing.
#
#   install_deps.sh demo   what `make demo` needs: the compilers and the
#                          libraries the library, its JIT plugin and the graft
#                          tool build against (about 20 s of packages)
#   install_deps.sh        everything: also what the tests, the benchmarks, the
#                          Python module and the sanitizer build need (PyTorch,
#                          clang, the ONNX test data, ...; about a minute more)
set -euo pipefail
demo_packages=(
  build-essential cmake ninja-build ccache pkg-config
  libonnx-dev libprotobuf-dev protobuf-compiler
  # The tests' and benchmarks' libraries are small, and CMake configures the
  # one build folder that `make test` reuses with them.
  nlohmann-json3-dev libcli11-dev libgtest-dev libgmock-dev libbenchmark-dev
  libdnnl-dev llvm-14-dev libssl-dev zlib1g-dev libzstd-dev libtinfo-dev
  ocl-icd-opencl-dev opencl-headers libclblast-dev
  # .npz data (graft train --data) through libzip.
  libzip-dev
  python3
)
test_packages=(
  libonnx-testdata pocl-opencl-icd
  python3-numpy python3-torch python3-torchvision
  # `make ort-check` builds ONNX models by hand (tests/ort/) with it; the
  # Python module's tests run ONNX's backend test runner from it.
  python3-onnx
  # Training: the digits of tests/models/train_digits.py from scikit-learn.
  python3-sklearn
  # The Python module (python/, docs/python.md): pybind11 and the headers to
  # build it, pytest to test it, pip/venv/setuptools for `pip install .`.
  pybind11-dev python3-dev python3-pytest python3-pip python3-venv python3-setuptools python3-wheel
  # The BLAS that Debian recommends for python3-torch (libtorch1.13 Recommends
  # libopenblas0): without it, and with --no-install-recommends below, the
  # PyTorch peer of `make compare` multiplies matrices with the netlib
  # reference BLAS (bert4_seq128: 1.7 s a run instead of 36 ms). graft and
  # ONNX Runtime do not use it.
  libopenblas0-openmp
  # bench/gemm/gemm_libraries_bench measures single-precision GEMM through
  # OpenBLAS (above), BLIS and libxsmm besides oneDNN (docs/performance.md,
  # "GEMM libraries at the models' shapes"); graft itself links none of them.
  libblis4-openmp libxsmm-dev
  # The sanitizer build (`make asan-test`) and its fuzzers (fuzz/, `make fuzz`):
  # clang with its sanitizer runtimes, libFuzzer and the OpenMP runtime clang links.
  clang-14 libclang-rt-14-dev libfuzzer-14-dev libomp-14-dev
)
case "${1:-all}" in
  demo) packages=("${demo_packages[@]}") ;;
  all) packages=("${demo_packages[@]}" "${test_packages[@]}") ;;
  *) echo "usage: install_deps.sh [demo|all]" >&2; exit 2 ;;
esac
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "installing: ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
