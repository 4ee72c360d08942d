#!/usr/bin/env bash
# multiworker.file_shard: tf.data's auto-sharding across real worker processes (distrun,
# MultiWorkerMirroredStrategy), each worker reading fixed-length-record files whose records
# hold f * 1000 + i (file f, record i). What each worker's replicas get is compared with
# what TF gives, computed here on its own:
#   FILE (and AUTO, which is FILE for a source that reads files): worker w reads files
#     w, w + W, w + 2W ... whole, in order;
#   DATA: every worker reads every file, and keeps its rows of each global batch (worker
#     w's are rows w * B/W ... (w + 1) * B/W - 1, in order, a partial batch too);
#   OFF: every worker reads everything;
#   FILE with fewer files than workers: refused at distribute_dataset on every worker,
#     saying why; AUTO then falls back to DATA.
# Usage: file_shard_test.sh DISTRUN MW_FILE_SHARD
set -euo pipefail
distrun=$1 program=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
records=6

fail() { echo "FAIL: $*"; exit 1; }

# The ids of `files` files in order, one per line.
all_ids() { for ((f = 0; f < $1; ++f)); do for ((i = 0; i < records; ++i)); do echo $((f * 1000 + i)); done; done; }

file_ids() {  # worker w of W, files F
  local w=$1 W=$2 F=$3
  for ((f = w; f < F; f += W)); do for ((i = 0; i < records; ++i)); do echo $((f * 1000 + i)); done; done
}

data_ids() {  # worker w of W, files F, global batch B
  local w=$1 W=$2 F=$3 B=$4
  all_ids "$F" | awk -v w="$w" -v W="$W" -v B="$B" '{ r = (NR - 1) % B; if (int(r / (B / W)) == w) print }'
}

# run NAME WORKERS REPLICAS FILES BATCH POLICY: the ids of each worker in $work/NAME.<rank>
run() {
  local name=$1 workers=$2 replicas=$3 files=$4 batch=$5 policy=$6
  "$distrun" -n "$workers" --replicas-per-worker "$replicas" --timeout 100 -- \
    "$program" --read "$work/files" "$files" "$batch" "$policy" "$work/$name" >"$work/$name.log" 2>&1 ||
    { cat "$work/$name.log"; fail "$name: the job failed"; }
}

expect() {  # expect NAME RANK: compares $work/NAME.RANK with standard input
  if ! diff <(cat) "$work/$1.$2" >"$work/diff" 2>&1; then
    cat "$work/diff"; fail "$1: worker $2 did not get what TF gives it"
  fi
}

mkdir "$work/files"
"$program" --write "$work/files" 4 "$records"

for policy in file auto; do
  run "$policy" 2 1 4 4 "$policy"
  for w in 0 1; do file_ids "$w" 2 4 | expect "$policy" "$w"; done
done
echo "FILE and AUTO, 2 workers, 4 files: worker 0 read files 0 and 2, worker 1 files 1 and 3"

run data 2 1 4 4 data
for w in 0 1; do data_ids "$w" 2 4 4 | expect data "$w"; done
run off 2 1 4 4 off
for w in 0 1; do all_ids 4 | expect off "$w"; done
echo "DATA: each worker kept its half of every global batch; OFF: each read everything"

run three 3 1 4 6 file
for w in 0 1 2; do file_ids "$w" 3 4 | expect three "$w"; done
echo "FILE, 3 workers, 4 files: 0 and 3, 1, 2 (uneven shares end together)"

run replicas 2 2 4 4 file
# Per step, replica 0's row then replica 1's: the worker's files in order again.
for w in 0 1; do file_ids "$w" 2 4 | expect replicas "$w"; done
echo "FILE, 2 workers x 2 replicas: each worker's replicas shared its files"

run one_file 2 1 1 4 file
for w in 0 1; do
  [[ -f "$work/one_file.$w.error" ]] || fail "one_file: worker $w was not refused"
  grep -q "INVALID_ARGUMENT.*at least 2 files" "$work/one_file.$w.error" ||
    { cat "$work/one_file.$w.error"; fail "one_file: worker $w's refusal does not say why"; }
done
run one_file_auto 2 1 1 4 auto
for w in 0 1; do data_ids "$w" 2 1 4 | expect one_file_auto "$w"; done
echo "FILE with 1 file for 2 workers: refused on both ($(cut -c1-90 "$work/one_file.0.error")...); AUTO fell back to DATA"
