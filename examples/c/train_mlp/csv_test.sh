#!/bin/sh
# train_mlp --all --csv: the file holds the header and one row per epoch for each of the
# five strategies, in the order they ran, with loss and accuracies that are numbers in
# range. Usage: csv_test.sh PATH/TO/train_mlp
prog=$1
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
epochs=2

if ! "$prog" --all --quick --epochs "$epochs" --csv "$tmp/curves.csv" > "$tmp/out.txt" 2>&1; then
  cat "$tmp/out.txt"
  echo "FAIL: train_mlp --all --quick --epochs $epochs --csv exited non-zero"
  exit 1
fi
awk -F, -v epochs="$epochs" '
  NR == 1 {
    if ($0 != "strategy,epoch,loss,accuracy,held_out_accuracy,examples_per_sec") {
      print "FAIL: header is \"" $0 "\""; bad = 1
    }
    next
  }
  {
    if (NF != 6) { print "FAIL: line " NR " has " NF " fields: " $0; bad = 1; next }
    if (seen[$1] == 0) order = order " " $1
    seen[$1]++
    if ($2 != seen[$1]) { print "FAIL: line " NR ": " $1 " epoch " $2 ", expected " seen[$1]; bad = 1 }
    if (!($3 > 0) || !($4 >= 0 && $4 <= 1) || !($5 >= 0 && $5 <= 1) || !($6 >= 0)) {
      print "FAIL: line " NR ": a value out of range: " $0; bad = 1
    }
  }
  END {
    want = " one_device mirrored multi_worker parameter_server coordinator"
    if (order != want) { print "FAIL: strategies in order" order ", expected" want; bad = 1 }
    for (s in seen) if (seen[s] != epochs) { print "FAIL: " s " has " seen[s] " rows, expected " epochs; bad = 1 }
    exit bad
  }' "$tmp/curves.csv" || { cat "$tmp/curves.csv"; exit 1; }

# The epoch lines printed are the CSV rows, rounded (OneDevice's first epoch).
row=$(sed -n 2p "$tmp/curves.csv")
printed=$(grep -m1 '^epoch  1/' "$tmp/out.txt")
loss=$(printf '%s\n' "$row" | awk -F, '{ printf "%.4f", $3 }')
case $printed in
  *"loss $loss "*) ;;
  *) echo "FAIL: the first epoch line '$printed' does not show the CSV's loss $loss"; exit 1 ;;
esac
echo "train_mlp --csv wrote $(($(wc -l < "$tmp/curves.csv") - 1)) rows: $epochs epochs x 5 strategies"
