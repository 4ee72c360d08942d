package tests

import (
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// examples/go/train_mlp trains the C demo's model on its data with OneDevice, Mirrored (4
// replicas) and MultiWorkerMirrored (2 processes x 2 replicas started by distrun): the
// three must train the same weights to the last bit (one checksum), learn the task, and
// reach the C demo's own held-out accuracy and loss (build/bin/train_mlp, same flags).
func TestTrainMLPExample(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	bin := filepath.Join(t.TempDir(), "train_mlp")
	build := exec.Command("go", "build", "-o", bin, "./train_mlp")
	build.Dir = "../../examples/go"
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	distrun, err := exec.LookPath("distrun")
	if err != nil {
		t.Fatalf("distrun not on PATH (build/bin): %v", err)
	}
	re := regexp.MustCompile(`held-out loss ([0-9.]+) accuracy ([0-9.]+); weights ([0-9a-f]{16})`)
	runs := []struct {
		name string
		cmd  *exec.Cmd
		outs int
	}{
		{"one_device", exec.Command(bin, "--strategy", "one_device"), 1},
		{"mirrored", exec.Command(bin, "--strategy", "mirrored", "--replicas", "4"), 1},
		{"multi_worker", exec.Command(distrun, "-n", "2", "--replicas-per-worker", "2", bin, "--strategy", "multi_worker"), 2},
	}
	cDemo, err := exec.LookPath("train_mlp")
	if err != nil {
		t.Fatalf("the C demo train_mlp is not on PATH (build/bin): %v", err)
	}
	cOut, err := exec.Command(cDemo, "--strategy", "one_device", "--quick", "--epochs", "3").CombinedOutput()
	if err != nil {
		t.Fatalf("C train_mlp: %v\n%s", err, cOut)
	}
	cm := regexp.MustCompile(`held-out accuracy ([0-9.]+) \(chance 0.1\), loss ([0-9.]+)`).FindStringSubmatch(string(cOut))
	if cm == nil {
		t.Fatalf("C train_mlp printed no final line:\n%s", cOut)
	}
	var weights string
	for _, r := range runs {
		out, err := r.cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", r.name, err, out)
		}
		ms := re.FindAllStringSubmatch(string(out), -1)
		if len(ms) != r.outs {
			t.Fatalf("%s: %d result lines, want %d:\n%s", r.name, len(ms), r.outs, out)
		}
		for _, m := range ms {
			acc, _ := strconv.ParseFloat(m[2], 64)
			if acc < 0.6 { // chance is 0.1; 3 short epochs reach about 0.65
				t.Fatalf("%s: held-out accuracy %v", r.name, acc)
			}
			if m[2] != cm[1] || m[1] != cm[2] {
				t.Fatalf("%s: held-out accuracy %s loss %s, the C demo %s and %s", r.name, m[2], m[1], cm[1], cm[2])
			}
			if weights == "" {
				weights = m[3]
			} else if m[3] != weights {
				t.Fatalf("%s: weights %s differ from %s:\n%s", r.name, m[3], weights, out)
			}
		}
		t.Logf("%s: %s (C demo: accuracy %s, loss %s)", r.name, strings.TrimSpace(ms[0][0]), cm[1], cm[2])
	}
}
