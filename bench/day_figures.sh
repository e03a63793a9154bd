#!/usr/bin/env bash
# The day's figures of docs/performance.md on a quiet machine: make compare's
# script at the default ISA (thread adaptation on, its default) and held to
# AVX2, the quiet models again with adaptation off, adaptation on and off
# beside a busy co-tenant, the int8 QDQ exports, and the training step. About 8
# minutes on 2 cores. Usage: bench/day_figures.sh OUT_DIR (after make build).
set -u
cd "$(dirname "$0")/.."
OUT=${1:?usage: bench/day_figures.sh OUT_DIR}; mkdir -p "$OUT"
M=resnet50,mobilenet_v2,squeezenet1_1,efficientnet_b0,densenet121,inception_v3,bert4_seq128,gru_cell_residual,resnet18,vgg16
S=resnet50,bert4_seq128,efficientnet_b0,gru_cell_residual,resnet18,mobilenet_v2
C=/usr/bin/python3
R="bench/compare/compare.py --graft-runner build/bin/graft_runner --workdir build/compare"
uptime > $OUT/uptime_before.txt
$C $R --models $M --runtimes graft,ort --json $OUT/default.json > $OUT/default.txt 2>&1
ONEDNN_MAX_CPU_ISA=AVX2 GRAFT_JIT_LANES=8 $C $R --models $M --runtimes graft,ort --json $OUT/avx2.json > $OUT/avx2.txt 2>&1
GRAFT_ADAPT_THREADS=0 $C $R --models $S --runtimes graft,ort --json $OUT/quiet_noadapt.json > $OUT/quiet_noadapt.txt 2>&1
yes > /dev/null & YP=$!
GRAFT_ADAPT_THREADS=1 $C $R --models $S --runtimes graft,ort --runs 10 --json $OUT/cotenant_adapt.json > $OUT/cotenant_adapt.txt 2>&1
GRAFT_ADAPT_THREADS=0 $C $R --models $S --runtimes graft,ort --runs 10 --json $OUT/cotenant_noadapt.json > $OUT/cotenant_noadapt.txt 2>&1
kill $YP
$C $R --models mobilenet_v2_qdq,resnet18_qdq,resnet50_qdq,squeezenet1_1_qdq,bert4_seq128_qdq --runtimes graft,ort --json $OUT/qdq.json > $OUT/qdq.txt 2>&1
$C bench/training/training_step.py --json $OUT/training.json > $OUT/training.txt 2>&1
$C bench/training/training_step.py --update --models resnet18,bert4,gru --json $OUT/training_update.json > $OUT/training_update.txt 2>&1
uptime > $OUT/uptime_after.txt
