#!/usr/bin/env bash
# Issue 52's device checks (items 1-4) as one prepared run on a lent machine: one GPU and
# 16 cores, whose image has torch, numpy, scipy, networkx, cython and threadpoolctl but not
# highspy or array-api-compat, and which reaches nothing outside it. ../shared does not
# travel, so what the run reads is copied into .device/ (git-ignored) beforehand.
#
# Here, once (needs PyPI; copies the instances, downloads the two wheels for the image's
# Python 3.12):
#     bash benchmarks/device_run.sh prepare
# On the device machine (the device tool's run; one call of at most ~10 minutes):
#     run(command="bash benchmarks/device_run.sh run", carry=[".device"], timeout_s=600)
# Its rows come back in $OUT (bench_device.jsonl, bench_blas_timeout.jsonl, bench_solve.jsonl,
# log.txt); copy the rows into benchmarks/results/ and the figures into docs/benchmarks.md.
#
# Each part has a budget in seconds (its timeout), in the order of what the issue still
# lacks; a part cut by its budget says so in log.txt. A dry run on this machine, CPU only and
# tiny sizes, checks the script itself: bash benchmarks/device_run.sh dry
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
DEV=.device
mode=${1:-run}

if [ "$mode" = prepare ]; then
    mkdir -p "$DEV/instances" "$DEV/wheels"
    for ds in abalone glass ECG5000; do
        cp -r "../shared/instances/$ds" "$DEV/instances/"
    done
    python -m pip download -q --only-binary :all: --no-deps --python-version 3.12 \
        --platform manylinux_2_28_x86_64 --platform manylinux2014_x86_64 \
        -d "$DEV/wheels" "highspy>=1.7" "array-api-compat>=1.9"
    grep -qx "/$DEV/" .git/info/exclude 2>/dev/null || echo "/$DEV/" >> .git/info/exclude
    du -sh "$DEV"
    exit 0
fi

OUT=${OUT:-/tmp/device_out}
mkdir -p "$OUT"
log="$OUT/log.txt"
exec > >(tee -a "$log") 2>&1
export PYTHONUNBUFFERED=1
PY=${PY:-python3}
if [ "$mode" = dry ]; then
    big=0; PY=python
else
    big=1
    "$PY" -m pip install -q --no-deps --no-index "$DEV"/wheels/*.whl
    "$PY" setup.py -q build_ext --inplace > "$OUT/build.txt" 2>&1 || { echo "build failed"; exit 1; }
fi
export PYTHONPATH="$here${PYTHONPATH:+:$PYTHONPATH}"
INST="$here/$DEV/instances"  # the dry run reads ../shared, which holds iris too
[ "$mode" = dry ] && INST="$here/../shared/instances"
"$PY" - <<'PYEOF'
import pcsos
try:
    import torch
    gpu = f"torch {torch.__version__}, cuda {torch.cuda.is_available()}"
except ImportError:
    gpu = "no torch"
print("pcsos", pcsos.__version__, gpu)
PYEOF
nproc

part() {  # part NAME BUDGET COMMAND...: run COMMAND with a budget, say how it ended
    local name=$1 budget=$2; shift 2
    local t0=$SECONDS
    echo "== $name (budget ${budget} s) $(date -u +%H:%M:%S)"
    timeout "$budget" "$@"
    local rc=$?
    echo "== $name: exit $rc after $((SECONDS - t0)) s$([ $rc = 124 ] && echo ', cut by its budget')"
}

b=benchmarks
if [ "$big" = 1 ]; then
    # item 5's cause on 16 cores: 2 and 16 BLAS threads with OpenBLAS's spin 2**28 and 2**20
    part spin 85 "$PY" $b/bench_blas_timeout.py --cases overlap:1000:20 --threads 2 16 \
        --timeouts default 20 --time-limit 15 --out "$OUT/bench_blas_timeout.jsonl" \
        --run device_spin
    # item 2: abalone's full SDP root
    part abalone 60 "$PY" $b/bench_device.py root "$INST/abalone/data.txt" -k 3 \
        --ub 1005.068418 --target 0.99 --device cuda --cpu-threads 16 --time-limit 45 \
        --out "$OUT/bench_device.jsonl"
    # item 1: the whole iteration, the GPU against 2 CPU threads (the CPU to s = 2 000)
    part iteration 130 "$PY" $b/bench_device.py iteration --sizes 1000 2000 4000 10000 \
        --ks 3 20 --devices cuda cpu --cpu-threads 2 --cpu-max-s 2000 --iters 40 \
        --run-limit 20 --cpu-run-limit 12 --out "$OUT/bench_device.jsonl"
    # item 4: --workers 16 against --workers 2, the 8 glass and 4 ECG5000 draws that solve
    # fastest (run 'all' of bench_solve.jsonl)
    draws=glass/ml_100_cl_0_3,glass/ml_50_cl_0_0,glass/ml_100_cl_0_1,glass/ml_100_cl_0_2
    draws=$draws,glass/ml_100_cl_0_4,glass/ml_100_cl_0_0,glass/ml_50_cl_0_1,glass/ml_50_cl_0_2
    draws=$draws,ECG5000/ml_250_cl_0_2,ECG5000/ml_250_cl_0_3,ECG5000/ml_250_cl_0_4
    draws=$draws,ECG5000/ml_150_cl_0_3
    for w in 16 2; do
        part "workers $w" 75 "$PY" $b/bench_solve.py --folder "$INST" --instances "$draws" \
            --time-limit 60 --max-nodes 200 --workers $w --out "$OUT/bench_solve.jsonl" \
            --run "device_workers$w"
    done
    # item 3: the whole Peng-Wei bound at n = 10 000, 1 000 pairs, k = 3 and 20
    # (--ub: the incumbents of the earlier H100 rows; the issue allows 8 minutes a bound,
    # the run has 45 s each left)
    for k_ub in 3:1940096.8134127357 20:1466676.2630526207; do
        part "n = 10 000, k = ${k_ub%%:*}" 55 "$PY" $b/bench_device.py root --gen bench \
            --n 10000 -k "${k_ub%%:*}" --ub "${k_ub#*:}" --pairs 1000 --device cuda \
            --time-limit 45 --out "$OUT/bench_device.jsonl"
    done
    # several workers on one GPU: a CUDA stream per thread against the shared default stream
    part streams 30 "$PY" $b/bench_device.py streams --sizes 300 1000 -k 6 --threads 1 4 \
        --iters 60 --device cuda --out "$OUT/bench_device.jsonl"
else
    part spin 60 "$PY" $b/bench_blas_timeout.py --cases overlap:200:5 --threads 1 2 \
        --timeouts default 20 --time-limit 2 --max-iter 20 \
        --out "$OUT/bench_blas_timeout.jsonl" --run dry
    part abalone 60 "$PY" $b/bench_device.py root "$INST/iris/data.txt" -k 3 --ub 78.851441 \
        --target 0.99 --device cpu --time-limit 5 --out "$OUT/bench_device.jsonl"
    part iteration 60 "$PY" $b/bench_device.py iteration --sizes 200 --ks 3 --devices cpu \
        --iters 5 --run-limit 5 --cpu-run-limit 5 --out "$OUT/bench_device.jsonl"
    part "workers 2" 120 "$PY" $b/bench_solve.py --folder "$INST" \
        --instances iris/ml_50_cl_0_0 --time-limit 30 --workers 2 \
        --out "$OUT/bench_solve.jsonl" --run dry
    part "n = 500" 60 "$PY" $b/bench_device.py root --gen bench --n 500 -k 3 --pairs 50 \
        --device cpu --time-limit 5 --out "$OUT/bench_device.jsonl"
    part streams 60 "$PY" $b/bench_device.py streams --sizes 100 -k 3 --threads 1 2 \
        --iters 10 --device cpu --out "$OUT/bench_device.jsonl"
fi
ls -l "$OUT"
