#!/usr/bin/env bash
# Checks the deployment examples (deploy/):
# 1. the Slurm batch script is valid bash and, run as sbatch would run it in a fake Slurm
#    environment (a stand-in srun starting the tasks on this machine, SLURM_* set as srun
#    sets them for 2 tasks on one node), trains train_mlp across both tasks through the
#    Slurm resolver (--quick, 1 epoch) and the chief writes the checkpoint;
# 2. the Kubernetes manifests parse as YAML and agree with the library (check_manifests.py).
#   deploy_test.sh DEPLOY_DIR TRAIN_MLP
set -euo pipefail
deploy=$(cd "${1:?usage: deploy_test.sh DEPLOY_DIR TRAIN_MLP}" && pwd)
train_mlp=${2:?usage: deploy_test.sh DEPLOY_DIR TRAIN_MLP}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
train_mlp=$(realpath "$train_mlp")
fail() { echo "FAIL: $*"; exit 1; }

bash -n "$deploy/slurm/train_mlp.sbatch" || fail "train_mlp.sbatch is not valid bash"

# The stand-in srun: drops srun's own options and runs the command once per task.
mkdir -p "$work/bin"
cat >"$work/bin/srun" <<'SRUN'
#!/usr/bin/env bash
while [[ $# -gt 0 && $1 == -* ]]; do shift; done
pids=()
for ((rank = 0; rank < SLURM_NTASKS; ++rank)); do
  SLURM_PROCID=$rank SLURM_STEP_NUM_TASKS=$SLURM_NTASKS SLURM_STEP_NODELIST=$SLURM_JOB_NODELIST \
    SLURM_STEP_TASKS_PER_NODE=$SLURM_NTASKS "$@" > "task$rank.log" 2>&1 &
  pids+=($!)
done
status=0
for pid in "${pids[@]}"; do wait "$pid" || status=$?; done
exit $status
SRUN
chmod +x "$work/bin/srun"

# Two free consecutive ports for the tasks.
base=$(python3 -c '
import socket
for base in range(20000, 60000, 7):
    try:
        s = [socket.socket() for _ in range(2)]
        for i, x in enumerate(s): x.bind(("127.0.0.1", base + i))
        for x in s: x.close()
        print(base); break
    except OSError:
        pass
')
cd "$work"
PATH="$work/bin:$PATH" SLURM_JOB_ID=42 SLURM_NTASKS=2 SLURM_JOB_NODELIST=localhost DIST_SLURM_PORT_BASE="$base" \
  TRAIN_MLP="$train_mlp" timeout 240 bash "$deploy/slurm/train_mlp.sbatch" --quick --epochs 1 ||
  { cat task*.log; fail "the batch script failed"; }
# The chief (task 0) reports and saves; both tasks trained (srun's status).
grep -q "epoch  1/1" task0.log || { cat task*.log; fail "the chief did not report an epoch"; }
grep -q "MultiWorkerMirroredStrategy: 4 replicas (2 workers)" task0.log || { cat task0.log; fail "not 2 workers x 2 replicas"; }
[[ -s distribute-train-42.safetensors ]] || { cat task*.log; fail "the chief wrote no checkpoint"; }
echo "the Slurm batch script trained on 2 tasks through the Slurm resolver"

python3 "$here/check_manifests.py" "$deploy"
