#!/bin/sh
# Bad input to train_mlp: each case must exit with status 2 and print the usage and a
# message naming what was wrong. Usage: bad_input_test.sh PATH/TO/train_mlp
prog=$1
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
failed=0

expect() {
  want=$1
  shift
  out=$("$prog" "$@" 2>&1)
  status=$?
  if [ "$status" -ne 2 ]; then
    echo "FAIL: train_mlp $*: exit status $status, expected 2"
    failed=1
  fi
  case $out in
    *"$want"*) ;;
    *) echo "FAIL: train_mlp $*: the output does not say '$want'"; failed=1 ;;
  esac
  case $out in
    *"usage: train_mlp"*) ;;
    *) echo "FAIL: train_mlp $*: no usage message"; failed=1 ;;
  esac
  [ "$failed" -eq 0 ] || printf '%s\n' "$out"
}

expect "unknown option '--bogus'" --strategy one_device --bogus
expect "choose what to run: --all, --strategy S or --make-data DIR"
expect "--strategy 'tpu': expected one_device, mirrored, multi_worker, parameter_server or coordinator" --strategy tpu
expect "parameter_server and coordinator run 2 per worker" --strategy parameter_server --replicas 4
expect "--strategy coordinator needs a cluster: run it under distrun -n 3 --ps 2 --coordinator" --strategy coordinator
expect "--cluster 'mpi': expected tf_config, slurm or statefulset" --strategy multi_worker --cluster mpi
expect "--cluster goes with --strategy multi_worker" --strategy mirrored --cluster slurm
expect "--epochs 'zero': expected 1 to 10000" --strategy one_device --epochs zero
expect "--learning-rate '-1': expected a number > 0" --strategy one_device --learning-rate -1
expect "--batch needs a value" --strategy one_device --batch
expect "--replicas is for --strategy mirrored" --strategy one_device --replicas 2
expect "$tmp/missing/train.bin: No such file or directory" --strategy one_device --data "$tmp/missing"
mkdir "$tmp/garbage" && echo "not images" > "$tmp/garbage/train.bin" && cp "$tmp/garbage/train.bin" "$tmp/garbage/test.bin"
expect "$tmp/garbage/train.bin: not a glyphs file" --strategy mirrored --data "$tmp/garbage"
(unset TF_CONFIG; expect "needs TF_CONFIG" --strategy multi_worker --quick; exit "$failed") || failed=1

[ "$failed" -eq 0 ] && echo "all bad-input cases exit 2 with a usage message"
exit "$failed"
