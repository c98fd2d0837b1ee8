#!/usr/bin/env bash
# The CPU speed bars on this machine's CPU, on N distinct physical cores (default 2, as CI's machines have):
#
#   bash bench/cpu_bars.sh            # a lent GPU machine's host CPU (it may have AMX-BF16), or any Linux machine
#   CORES=4 bash bench/cpu_bars.sh
#
# 1. bench/steps_per_sec.py on the CPU (WRN-10-2, batch 16, 20 SGLD steps: the issue's bar, fastjem against the
#    eager reference, matched and at default precision);
# 2. bench/sgld_study.py on the CPU at the default precision: the SGLD step's variants (compiled against eager,
#    its graph called from C++ against from Python, channels_last against NCHW, weights cast once against autocast
#    at each forward);
# 3. bench/profile_step.py on the CPU: where an SGLD step's time goes, by operator category, for fastjem at
#    default and matched precision and for the reference (what a missed bar is explained with).
# The process is pinned (taskset) to one hardware thread on each of N physical cores: two threads of one core
# share its vector and AMX units, and a VM's CPUs 0 and 1 may be such a pair. Results go to bench/results/ and,
# flat, to $OUT when it is set. SMOKE=1: each script's --smoke (seconds); DRY_RUN=1: the commands, not run.
set -u
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
CORES=${CORES:-2}
unset TRITON_INTERPRET
if ! [[ $CORES =~ ^[1-9][0-9]*$ ]]; then
  echo "cpu_bars: CORES must be a positive count, got '$CORES'" >&2
  exit 2
fi
# one CPU per physical core, in CPU order (the sysfs topology env_info records, read by cpu_topology.py without
# torch; SYS_CPU: another copy of it)
if ! CPUS=$("$PY" bench/cpu_topology.py --one-cpu-per-core "$CORES" --sys-cpu "${SYS_CPU:-/sys/devices/system/cpu}"); then
  echo "cpu_bars: cannot pin $CORES threads to $CORES physical cores (above: why)" >&2
  exit 2
fi
OUT_DIR=${OUT:-bench/results}
# the default precision here, as training picks it (bf16 with AMX-BF16, or with AVX512-BF16 where the probe finds it
# faster: fastjem.engine.fast_bf16)
PRECISION=$("$PY" -c 'import torch
from fastjem.engine import fast_bf16
print("bf16" if fast_bf16(torch.device("cpu"))[0] else "fp32")') || exit 2
echo "cpu_bars: pinned to CPUs $CPUS (one per physical core), $CORES threads, default precision $PRECISION;" \
  "results to $OUT_DIR"
smoke=()
[[ -n ${SMOKE:-} ]] && smoke=(--smoke)
variants=default,eager-step,py-wrapper,cast-each-step,nchw
[[ -n ${SMOKE:-} ]] && variants=default,eager-step,nchw
# DRY_RUN=1: say the commands, run none
run() {
  if [[ -n ${DRY_RUN:-} ]]; then echo "$*"; else "$@"; fi
}
[[ -z ${DRY_RUN:-} ]] && mkdir -p "$OUT_DIR"
rc=0
run taskset -c "$CPUS" "$PY" bench/steps_per_sec.py --device cpu --threads "$CORES" "${smoke[@]}" \
  --out "$OUT_DIR" || rc=$?
run env OMP_NUM_THREADS="$CORES" taskset -c "$CPUS" "$PY" bench/sgld_study.py --device cpu --depth 10 --width 2 \
  --batch-size 16 --precision "$PRECISION" --variants "$variants" "${smoke[@]}" --out "$OUT_DIR" || rc=$?
run env OMP_NUM_THREADS="$CORES" taskset -c "$CPUS" "$PY" bench/profile_step.py --device cpu "${smoke[@]}" \
  --out "$OUT_DIR" || rc=$?
exit $rc
