#!/usr/bin/env bash
# Two versions of pcsos on the same shared instances, one instance at a time, alternating
# which goes first, so that both see the same conditions (issue 31, acceptance 5).
#
#   git worktree add /tmp/wt_base <commit> && (cd /tmp/wt_base && python setup.py build_ext --inplace)
#   benchmarks/ab_solve.sh /tmp/wt_base "iris wine seeds connectionist glass" 0
#   python benchmarks/compare_solve.py benchmarks/results/ab_solve.jsonl \
#       benchmarks/results/ab_solve.jsonl --runs bench_regression_base bench_regression_head
#
# Two settings of this checkout, the same way (base tree "."):
#
#   benchmarks/ab_solve.sh . glass 0 fine "--cp eps_violation_fine=None" "--cp eps_violation_fine=1e-5"
#
# Arguments: the "before" tree (a built checkout of another commit, or "."), the datasets
# (a word DATASET/STEM names one instance instead, e.g. ECG5000/ml_150_cl_0_1, run in the
# order given), the constraint draw (for the dataset words), a name for the results
# (default bench_regression), and options of bench_solve.py for the before and the after
# side (default none). "after" is this checkout. Rows go to
# benchmarks/results/ab_solve.jsonl (bench_solve.py's format), run NAME_base and NAME_head.
#
# AB_SIDE_BY_SIDE=1: both sides at once, one BLAS thread each (on 2 cores, half the wall
# time; for runs that compare statuses, nodes and bounds, e.g. with "--workers 1" on both).
# Each instance's two rows are appended once both sides are done, so a run stopped part
# way keeps the instances it finished.
set -u
base=$1
datasets=$2
draw=${3:-0}
name=${4:-bench_regression}
base_opts=${5:-}
head_opts=${6:-}
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
tmp=$(mktemp -d)
side_by_side=${AB_SIDE_BY_SIDE:-0}

# run_side INSTANCE TREE OPTIONS RUN OUT: one bench_solve.py call, the one both modes make
run_side() {
  # shellcheck disable=SC2086  # the options are words
  PYTHONPATH=$2 python benchmarks/bench_solve.py --instances "$1" --time-limit 3000 \
    --max-nodes 200 --workers 2 $3 --out "$5" --run "$4"
}

# the instances, one per line: a dataset's draws, or a named instance as given
instances() {
  for word in $datasets; do
    case $word in
      */*) echo "$word" ;;
      *) for f in ../shared/instances/"$word"/constraints/*_"$draw".txt; do
           [ -e "$f" ] || { echo "ab_solve.sh: $word has no draw $draw" >&2; continue; }
           echo "$word/$(basename "$f" .txt)"
         done ;;
    esac
  done
}

i=0
for inst in $(instances); do
  if [ $((i % 2)) -eq 0 ]; then order="base head"; else order="head base"; fi
  for side in $order; do
    if [ "$side" = base ]; then tree=$base; opts=$base_opts
    else tree=$here; opts=$head_opts; fi
    if [ "$side_by_side" = 1 ]; then
      # each side its own file, appended to the results once both are done
      OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 \
        run_side "$inst" "$tree" "$opts" "$name"_"$side" "$tmp/$side.jsonl" >/dev/null &
    else
      run_side "$inst" "$tree" "$opts" "$name"_"$side" benchmarks/results/ab_solve.jsonl \
        | grep -E "^$inst"
    fi
  done
  if [ "$side_by_side" = 1 ]; then
    wait
    cat "$tmp"/base.jsonl "$tmp"/head.jsonl >> benchmarks/results/ab_solve.jsonl
    rm -f "$tmp"/base.jsonl "$tmp"/head.jsonl
    echo "$inst"
  fi
  i=$((i + 1))
done
rm -rf "$tmp"
