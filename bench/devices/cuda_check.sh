#!/usr/bin/env bash
# The CUDA backend on a machine with an NVIDIA GPU, in one go (builds
# nothing: run it from the repository root with a build made elsewhere):
#
#   bash bench/devices/cuda_check.sh [BUILD_DIR]     # default: build
#
# 1. `graft devices` (driver, NVRTC, cuBLAS, cuDNN, cuda:N) and nvidia-smi;
# 2. the CUDA tests (tests/cuda: NVRTC compiles, kernels against the
#    reference kernels, sessions, streams, allocation faults, zoo models
#    against the CPU at rtol 1e-4);
# 3. `graft run --repeat` of zoo resnet50 (batch 1 and 32), bert (batch 8,
#    seq 128) and the residual GRU on --device cuda and on the CPU backends:
#    median latency of each (the device run's copies and pool peak with
#    --stats), the first run with the PTX cache cold and warm, and the CUDA
#    runs' per-op profile (where the time goes).
# Each step has a time limit, so one hang does not take the rest.
set -u
B=${1:-build}
G="$B/bin/graft"
export LD_LIBRARY_PATH="$PWD/$B:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
[ -x "$G" ] || { echo "no $G: build graft first (cmake --build $B --target graft_cli cuda_tests)"; exit 2; }

echo "== devices"
nvidia-smi -L 2>&1 | head -4
"$G" devices | grep -E "^(cpu|backend cuda|cuda)"

echo "== tests/cuda"
timeout 300 "$B/tests/cuda_tests" --gtest_brief=1 2>&1 | tail -60
echo "cuda_tests exit: ${PIPESTATUS[0]}"

T=$(mktemp -d)
for m in resnet50 bert gru; do "$G" zoo "$m" -o "$T/$m.onnx" >/dev/null || echo "zoo $m failed"; done

# run LABEL MODEL SHAPE: median latency on the CPU backends and on cuda:0.
run() {
  local label=$1 model=$2 shape=$3 repeat=$4
  for dev in cpu cuda; do
    printf '%-22s %-5s ' "$label" "$dev"
    timeout 240 "$G" run "$T/$model.onnx" --shape "$shape" --device "$dev" --repeat "$repeat" --stats --show 0 2>&1 |
      grep -E "latency|device copies|rror" | tr '\n' ' '
    echo
  done
}
echo "== latency (graft run --repeat; CPU = graft's default CPU backends)"
run "resnet50 batch 1" resnet50 input=1,3,224,224 20
run "resnet50 batch 32" resnet50 input=32,3,224,224 5
run "bert batch 8 seq 128" bert input_ids=8,128 10
run "gru batch 100" gru input=2,100,500 20

echo "== NVRTC: bert's first run on cuda with GRAFT_CACHE_DIR cold, then warm (first run includes the compiles)"
for pass in cold warm; do
  printf '%-5s ' "$pass"
  GRAFT_CACHE_DIR="$T/cache" timeout 240 "$G" run "$T/bert.onnx" --shape input_ids=1,128 --device cuda --repeat 1 \
    --show 0 2>&1 | grep -E "latency|rror"
done

echo "== cuda profile, resnet50 batch 32 (top ops)"
timeout 240 "$G" run "$T/resnet50.onnx" --shape input=32,3,224,224 --device cuda --repeat 3 --profile --profile-top 12 --show 0 2>&1 | tail -30
rm -rf "$T"
