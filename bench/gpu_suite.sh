#!/usr/bin/env bash
# One command for a lent GPU machine (torch preinstalled, no package registry, no internet):
#
#   bash bench/gpu_suite.sh
#
# 1. installs fastjem without dependencies;  2. pytest -m gpu;  3. the kernel microbenchmarks;
# 4. steps_per_sec for WRN-28-10, then WRN-16-8 and WRN-10-2 as far as the stage's budget allows (batch 64,
#    20 SGLD steps; a config starts only with as long left as the slowest so far took, so usually WRN-28-10
#    alone);
# 5. a timed CIFAR-10 run on the real data;  6. the report (table + plot).
# Each stage has its own timeout, cut to what is left of SUITE_SECONDS (default 530 s, under 9 minutes);
# a failed or timed-out stage is recorded and the suite goes on. Results go to bench/results/ and, flat,
# to $OUT when it is set (at most 8 files): gpu_suite.json (stages + every result), gpu_suite.log,
# the steps / kernels / cifar JSONs, the sample grid, the plot and results.md. gpu_suite.json embeds every result
# (kernel configs and the SGLD study too): `python bench/report.py --unpack gpu_suite.json` writes them back as files.
#
# CIFAR-10 tarballs: $FASTJEM_CIFAR10_DIR, else .data/cifar10/ in the repository, else ../shared/data/cifar10.
# SKIP_CIFAR=1 leaves the CIFAR-10 run out, and its time to iterations/s (with CPU_BARS, what keeps the bars whole).
# Smaller CIFAR model if time demands: CIFAR_DEPTH=16 CIFAR_WIDTH=8 bash bench/gpu_suite.sh
# PYTHON=... picks the interpreter (default python3); SKIP_INSTALL=1 when fastjem is already installed.
# SGLD_STUDY=1 adds bench/sgld_study.py (where the SGLD time goes; SGLD_VARIANTS picks the variants) and
# bench/profile_step.py (the default engine's kernel time by category).
# CPU_BARS=1 runs bench/cpu_bars.sh (the CPU bars on this host's CPU, CPU_BARS_CORES physical cores, default 2)
# beside the GPU tests, which are pinned to the other cores; the timed GPU stages wait for it (at most
# CPU_BARS_SECONDS, default 240). Its results are packed into gpu_suite.json as cpu_steps, cpu_sgld_study and
# cpu_profile.
set -u
cd "$(dirname "$0")/.."
ROOT=$(pwd)
PY=${PYTHON:-python3}
SUITE_SECONDS=${SUITE_SECONDS:-530}
START=$(date +%s)
RESULTS=$ROOT/bench/results
mkdir -p "$RESULTS"
WORK=$(mktemp -d)
STAMP=$(date -u +%Y-%m-%dT%H%M%S)
LOG=$WORK/gpu_suite.log
STAGES=$WORK/stages.jsonl
: >"$STAGES"
export PYTHONUNBUFFERED=1 PY ROOT RESULTS WORK
# Kernels run compiled on the GPU, never under the interpreter.
unset TRITON_INTERPRET
# a GPU suite without a GPU would fail stage by stage and leave a results file named for no device
# and where there is one, what gpu_suite.json records of the machine (device and versions: STYLE.md item 7); one
# interpreter for both (each start imports torch, seconds): exit 3 (or no interpreter at all) where torch does not
# import, 1 where it finds no CUDA device
"$PY" -c "import json, platform, sys
try:
    import torch
except Exception:
    sys.exit(3)
ok = torch.cuda.is_available()
ok and json.dump({'device': {'type': 'cuda', 'name': torch.cuda.get_device_name(),
                             'capability': '.'.join(map(str, torch.cuda.get_device_capability()))},
                  'versions': {'python': platform.python_version(), 'torch': torch.__version__,
                               'cuda': torch.version.cuda}}, open(sys.argv[1], 'w'))
sys.exit(0 if ok else 1)" "$WORK/environment.json"
rc=$?
if ((rc != 0 && rc != 1)); then
  echo "gpu_suite: $PY cannot import torch: PYTHON=... names an interpreter that has it" >&2
  rm -rf "$WORK"
  exit 2
fi
if ((rc == 1)); then
  echo "gpu_suite: no CUDA device here (torch.cuda.is_available() is False): run it on a GPU machine" >&2
  rm -rf "$WORK"
  exit 2
fi
touch "$WORK/start_marker"
echo "gpu_suite $STAMP on $(hostname), repo $ROOT" | tee "$LOG"

left() { echo $((SUITE_SECONDS - ($(date +%s) - START))); }

# status_of RC TIMEOUT: how a stage ended, as stages.jsonl records it
status_of() {
  case $1 in
    0) echo ok ;;
    124 | 137) echo "timed out after ${2}s" ;;
    *) echo "failed (exit $1)" ;;
  esac
}

# run_stage NAME CAP RESERVE CMD...: timeout = min(CAP, time left - RESERVE kept for later stages)
run_stage() {
  local name=$1 cap=$2 reserve=$3
  shift 3
  local budget=$(($(left) - reserve))
  ((budget > cap)) && budget=$cap
  if ((budget < 10)); then
    echo "== $name: skipped (suite time budget spent)" | tee -a "$LOG"
    printf '{"stage": "%s", "rc": null, "seconds": 0, "status": "skipped: time budget"}\n' "$name" >>"$STAGES"
    return 0
  fi
  echo "== $name (timeout ${budget}s): $*" | tee -a "$LOG"
  local t0=$(date +%s)
  # Functions (exported with export -f) run through bash -c, since timeout runs commands only.
  if [[ $(type -t "$1") == function ]]; then
    STAGE_BUDGET=$budget timeout -k 10 "$budget" bash -c "$1" >>"$LOG" 2>&1
  else
    STAGE_BUDGET=$budget timeout -k 10 "$budget" "$@" >>"$LOG" 2>&1
  fi
  local rc=$? dt=$(($(date +%s) - t0))
  local status
  status=$(status_of "$rc" "$budget")
  echo "== $name: $status in ${dt}s" | tee -a "$LOG"
  printf '{"stage": "%s", "rc": %d, "seconds": %d, "timeout": %d, "status": "%s"}\n' \
    "$name" "$rc" "$dt" "$budget" "$status" >>"$STAGES"
  collect >/dev/null 2>&1
}

install_fastjem() {
  "$PY" -m pip install --no-deps --no-build-isolation --no-index -e . ||
    "$PY" -m pip install --no-deps --no-build-isolation --no-index . || {
    # No setuptools to build with: lay the package out by symlinks (fastjem/ + kernels/ as fastjem/kernels).
    echo "pip install failed: falling back to a symlinked package on PYTHONPATH"
    local site=$WORK/site
    mkdir -p "$site/fastjem"
    for f in "$ROOT"/fastjem/*; do ln -sf "$f" "$site/fastjem/"; done
    ln -sfn "$ROOT/kernels" "$site/fastjem/kernels"
    echo "$site" >"$WORK/pythonpath"
  }
  # Python run in the repository (pytest, the CPU bars' probe) imports ./fastjem before the installed or symlinked
  # package: without kernels/ there, fastjem.kernels was found only through an editable install's finder
  [[ -e $ROOT/fastjem/kernels ]] || ln -s ../kernels "$ROOT/fastjem/kernels"
  [[ -f $WORK/pythonpath ]] && export PYTHONPATH=$(cat "$WORK/pythonpath")
  (cd / && "$PY" -c "import fastjem, fastjem.kernels, torch; print('fastjem', fastjem.__version__, 'torch', \
torch.__version__, 'cuda', torch.cuda.is_available(), torch.cuda.get_device_name() if torch.cuda.is_available() else '')")
  # the machine and the engine the defaults resolve on it, with why (fastjem env)
  (cd / && "$PY" -m fastjem env) || true
}

export -f install_fastjem

# --- collect: one combined JSON, and the newest file of each kind, flat, into $OUT; after every stage as well
# as at the end, so that a command cut off by the machine's limit still leaves in $OUT what had finished
collect() {
# only files this run wrote (newer than the start marker), newest first
newest() { find "${2:-$RESULTS}" -maxdepth 1 -name "$1" -newer "$WORK/start_marker" -printf '%T@ %p\n' 2>/dev/null |
  sort -rn | head -n 1 | cut -d' ' -f2-; }
STEPS_JSON=$(newest "steps-*.json")
KERNELS_JSON=$(newest "kernels-*.json")
CIFAR_JSON=$(newest "cifar-2*.json")
CIFAR_PNG=$(newest "cifar-samples-*.png")
KCONF_JSON=$(newest "kernel-configs-*.json")
STUDY_JSON=$(newest "sgld-study-*.json")
PROFILE_JSON=$(newest "profile-*.json")
# the CPU bars' (CPU_BARS=1), from their own folder
CPU_STEPS_JSON=$(newest "steps-*.json" "$WORK/cpu_bars")
CPU_STUDY_JSON=$(newest "sgld-study-*.json" "$WORK/cpu_bars")
CPU_PROFILE_JSON=$(newest "profile-*.json" "$WORK/cpu_bars")
GIT_SHA=$(git -C "$ROOT" rev-parse HEAD 2>/dev/null) || GIT_SHA=
GIT_DIRTY=$(git -C "$ROOT" status --porcelain --untracked-files=no 2>/dev/null | head -c 1)
"$PY" - "$STAGES" "$WORK/gpu_suite.json" "$START" "$WORK/environment.json" "$GIT_SHA" "$GIT_DIRTY" "$STEPS_JSON" "$KERNELS_JSON" "$CIFAR_JSON" "$KCONF_JSON" \
  "$STUDY_JSON" "$PROFILE_JSON" "$CPU_STEPS_JSON" "$CPU_STUDY_JSON" "$CPU_PROFILE_JSON" <<'EOF'
import datetime, json, sys, time
stages_path, out_path, start, env_path, sha, dirty, *files = sys.argv[1:]
combined = {"suite": "bench/gpu_suite.sh", "seconds": time.time() - int(start),
            "date": datetime.datetime.fromtimestamp(int(start), datetime.timezone.utc).isoformat(),
            "git": {"sha": sha or None, "dirty": bool(dirty) if sha else None},
            "stages": [json.loads(line) for line in open(stages_path) if line.strip()]}
try:
    combined.update(json.load(open(env_path)))  # device, versions
except (OSError, ValueError) as err:
    combined["environment_error"] = str(err)
for key, path in zip(("steps", "kernels", "cifar", "kernel_configs", "sgld_study", "profile", "cpu_steps",
                      "cpu_sgld_study", "cpu_profile"), files):
    try:
        combined[key] = json.load(open(path)) if path else None
        if combined[key] is not None:
            combined[key]["_file"] = path.rsplit("/", 1)[-1]
    except (OSError, ValueError) as err:
        combined[key] = {"error": str(err)}
json.dump(combined, open(out_path, "w"), indent=2)
print(f"gpu_suite: {combined['seconds']:.0f} s;", ", ".join(f"{s['stage']} {s['status']}" for s in combined["stages"]))
EOF
cp "$WORK/gpu_suite.json" "$RESULTS/gpu_suite-$STAMP.json"
if [[ -n ${OUT:-} ]]; then
  mkdir -p "$OUT"
  for f in "$WORK/gpu_suite.json" "$LOG" "$STEPS_JSON" "$KERNELS_JSON" "$CIFAR_JSON" "$CIFAR_PNG" \
    "$RESULTS/steps_per_sec.png" "$WORK/results.md"; do
    [[ -n $f && -f $f ]] && cp "$f" "$OUT/"
  done
  echo "copied to $OUT: $(ls "$OUT" | tr '\n' ' ')"
fi
}

# --- 1. install (the fallback's PYTHONPATH must reach the later stages, so it is read back here)
if [[ -n ${SKIP_INSTALL:-} ]]; then
  echo "== install: skipped (SKIP_INSTALL set)" | tee -a "$LOG"
else
  run_stage install 90 420 install_fastjem
fi
[[ -f $WORK/pythonpath ]] && export PYTHONPATH=$(cat "$WORK/pythonpath")

# --- 2. GPU tests (177 took 113 s on an H100; 191 now): the slowest are listed, to size this stage
# With CPU_BARS: cpu_bars.sh starts first, on cores of its own; the tests run on the others (they time nothing).
PIN=()
BARS_PID=
if [[ -n ${CPU_BARS:-} ]]; then
  BARS_CORES=${CPU_BARS_CORES:-2}
  if ! BESIDE=$("$PY" bench/cpu_topology.py --cpus-beside "$BARS_CORES" --sys-cpu "${SYS_CPU:-/sys/devices/system/cpu}" \
    2>>"$LOG"); then
    BESIDE=
  fi
  if ! command -v taskset >/dev/null; then
    echo "== cpu_bars: skipped (no taskset here to pin with)" | tee -a "$LOG"
    printf '{"stage": "cpu_bars", "rc": null, "seconds": 0, "status": "skipped: no taskset"}\n' >>"$STAGES"
  elif [[ -z $BESIDE ]]; then
    echo "== cpu_bars: skipped (no CPUs left beside $BARS_CORES pinned cores for the GPU tests)" | tee -a "$LOG"
    printf '{"stage": "cpu_bars", "rc": null, "seconds": 0, "status": "skipped: no CPUs beside its cores"}\n' \
      >>"$STAGES"
  else
    mkdir -p "$WORK/cpu_bars"
    BARS_T0=$(date +%s)
    echo "== cpu_bars (timeout ${CPU_BARS_SECONDS:-240}s, beside pytest_gpu, which runs on CPUs $BESIDE)" |
      tee -a "$LOG"
    (
      OUT=$WORK/cpu_bars CORES=$BARS_CORES PYTHON=$PY timeout -k 10 "${CPU_BARS_SECONDS:-240}" \
        bash bench/cpu_bars.sh >"$WORK/cpu_bars.log" 2>&1
      echo $? >"$WORK/cpu_bars.rc"
    ) &
    BARS_PID=$!
    PIN=(taskset -c "$BESIDE")
  fi
fi
run_stage pytest_gpu 190 330 ${PIN[@]+"${PIN[@]}"} "$PY" -m pytest -m gpu -q -p no:cacheprovider --durations=15 tests
if [[ -n $BARS_PID ]]; then
  # nothing timed on the GPU runs beside it
  wait "$BARS_PID"
  rc=$(cat "$WORK/cpu_bars.rc" 2>/dev/null || echo 1)
  dt=$(($(date +%s) - BARS_T0))
  status=$(status_of "$rc" "${CPU_BARS_SECONDS:-240}")
  sed 's/^/cpu_bars| /' "$WORK/cpu_bars.log" >>"$LOG"
  echo "== cpu_bars: $status in ${dt}s" | tee -a "$LOG"
  printf '{"stage": "cpu_bars", "rc": %d, "seconds": %d, "timeout": %d, "status": "%s"}\n' \
    "$rc" "$dt" "${CPU_BARS_SECONDS:-240}" "$status" >>"$STAGES"
fi

# --- 3. kernel microbenchmarks (writes bench/results/kernels-*.json; 61 s on an H100 before the sweep timed
# orders of the loads as well: capped at 105 s)
# It keeps for later what iterations/s needs (~190 s for WRN-28-10) and the CIFAR-10 run's time; with SKIP_CIFAR
# that is less: a CPU-bars stage that ran to its timeout had left this stage 17 s (H200, 2026-11-30).
KERNELS_RESERVE=285
[[ -n ${SKIP_CIFAR:-} ]] && KERNELS_RESERVE=205
run_stage kernels 105 "$KERNELS_RESERVE" "$PY" -m pytest bench/bench_kernels.py -q -s -k cuda -p no:cacheprovider

# --- 4. iterations/s, the bar configuration first; configs not started within its budget are skipped
# The ablations measured in earlier suites (SGLD graph only, weights cast at each forward) are skipped so that the
# three sizes fit; STEPS_SKIP= (empty) times them again. The SGLD parts auto passed over (fastjem-one-part or
# fastjem-parts2) stay: they check auto's choice per size.
steps() {
  "$PY" bench/steps_per_sec.py --device cuda --configs wrn-28-10,wrn-16-8,wrn-10-2 --batch-size 64 \
    --windows 3 --window-s 1.0 --component-reps 2 --time-budget $((STAGE_BUDGET > 40 ? STAGE_BUDGET - 15 : 25)) \
    --skip "${STEPS_SKIP-fastjem-sgld-graph-only,fastjem-cast-each-step}" --out "$RESULTS"
}
export -f steps
STEPS_RESERVE=140 # the CIFAR-10 run's and the report's
[[ -n ${SKIP_CIFAR:-} ]] && STEPS_RESERVE=15
run_stage steps_per_sec 250 "$STEPS_RESERVE" steps

# --- 5. timed CIFAR-10 run on the real data: training gets what decoding leaves of the stage
cifar() {
  "$PY" bench/cifar_run.py --minutes "${CIFAR_MINUTES:-10}" --total-seconds $((STAGE_BUDGET - 15)) \
    --depth "${CIFAR_DEPTH:-28}" --width "${CIFAR_WIDTH:-10}" --batch-size 64 --out "$RESULTS"
}
export -f cifar
if [[ -n ${SKIP_CIFAR:-} ]]; then
  echo "== cifar10: skipped (SKIP_CIFAR set)" | tee -a "$LOG"
  printf '{"stage": "cifar10", "rc": null, "seconds": 0, "status": "skipped: SKIP_CIFAR"}\n' >>"$STAGES"
else
  run_stage cifar10 150 15 cifar
fi

# --- optional (SGLD_STUDY=1): the SGLD-step variant study (compiles WRN-28-10 once per variant: minutes)
if [[ -n ${SGLD_STUDY:-} ]]; then
  study() { "$PY" bench/sgld_study.py --variants "${SGLD_VARIANTS:-default,cast-each-step,one-part,split-4}" \
    --out "$RESULTS"; }
  export -f study
  run_stage sgld_study 240 20 study
  # where the default engine's SGLD step spends its kernel time (torch.profiler, by category)
  run_stage profile 60 15 "$PY" bench/profile_step.py --device cuda --engines default --out "$RESULTS"
fi

# --- 6. report: markdown + plot from every JSON in bench/results (the README itself is updated by the lead)
run_stage report 15 0 "$PY" bench/report.py --print --markdown "$WORK/results.md" --plot "$RESULTS/steps_per_sec.png"

collect
grep -E '^(cpu_bars\| )?(ratio_|ceiling_|mfu_|bar_config|cifar_|equivalence check)' "$LOG" |
  tee -a "$WORK/gpu_suite.summary"
cat "$WORK/gpu_suite.summary" 2>/dev/null
