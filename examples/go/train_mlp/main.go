// Command train_mlp is the Go version of examples/c/train_mlp, shortened: a multilayer
// perceptron (144-128-10) learns the demo's noisy digit glyphs data-parallel, with the
// same code under OneDeviceStrategy, MirroredStrategy and MultiWorkerMirroredStrategy:
//
//	train_mlp --strategy one_device
//	train_mlp --strategy mirrored --replicas 4
//	distrun -n 2 --replicas-per-worker 2 train_mlp --strategy multi_worker
//
// Each step: the dataset is distributed over the replicas; in Strategy.Run every replica
// computes the sum of its rows' gradients (the C demo's model code), the replicas
// all-reduce them with the row count in one BatchAllReduce, and a MergeCall applies
// -learning_rate * sum / rows to every copy of the mirrored variables with
// Strategy.Update. As in the C demo the strategies train the same weights to the last bit
// (the printed checksum), and so the same held-out accuracy.
package main

import (
	"flag"
	"fmt"
	"hash/fnv"
	"math"
	"os"
	"path/filepath"
	"unsafe"

	"distribute"
)

type options struct {
	strategy     string
	replicas     int
	epochs       int
	batch        int64
	hidden       int
	learningRate float64
	seed         uint64
	train, test  int64
}

func main() {
	var o options
	flag.StringVar(&o.strategy, "strategy", "mirrored", "one_device, mirrored or multi_worker")
	flag.IntVar(&o.replicas, "replicas", 4, "replicas of the mirrored strategy")
	flag.IntVar(&o.epochs, "epochs", 3, "passes over the training set")
	flag.Int64Var(&o.batch, "batch", 64, "global batch size")
	flag.IntVar(&o.hidden, "hidden", 128, "hidden units")
	flag.Float64Var(&o.learningRate, "learning-rate", 1.0, "SGD step size")
	flag.Uint64Var(&o.seed, "seed", 1, "data and initial weights")
	flag.Int64Var(&o.train, "train-images", 4096, "training images")
	flag.Int64Var(&o.test, "test-images", 1024, "held-out images")
	flag.Parse()
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "train_mlp:", err)
		os.Exit(1)
	}
}

func newStrategy(o options) (*distribute.Strategy, error) {
	switch o.strategy {
	case "one_device":
		return distribute.NewOneDeviceStrategy("CPU:0")
	case "mirrored":
		if err := distribute.SetLogicalCPUDeviceCount(o.replicas); err != nil {
			return nil, err
		}
		devs := make([]string, o.replicas)
		for i := range devs {
			devs[i] = fmt.Sprintf("CPU:%d", i)
		}
		return distribute.NewMirroredStrategy(devs, nil)
	case "multi_worker":
		// TF_CONFIG and DIST_REPLICAS_PER_WORKER come from distrun.
		return distribute.NewMultiWorkerMirroredStrategy(nil, nil)
	}
	return nil, fmt.Errorf("--strategy %q: expected one_device, mirrored or multi_worker", o.strategy)
}

func run(o options) error {
	dir, err := os.MkdirTemp("", "train_mlp_go")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	trainPath, testPath := filepath.Join(dir, "train.bin"), filepath.Join(dir, "test.bin")
	// The C demo's files: seeds seed*2 and seed*2+1.
	if err := writeGlyphs(trainPath, o.train, o.seed*2); err != nil {
		return err
	}
	if err := writeGlyphs(testPath, o.test, o.seed*2+1); err != nil {
		return err
	}
	s, err := newStrategy(o)
	if err != nil {
		return err
	}
	defer s.Close()
	replicas, err := s.NumReplicasInSync()
	if err != nil {
		return err
	}
	kind, _ := s.Kind()
	shape := modelShape(o.hidden)

	// The model's variables, created in the strategy's scope.
	vars := make([]*distribute.Value, numParams)
	defer distribute.CloseAll(vars)
	initial := initParams(shape, o.seed)
	err = s.Scope(func() error {
		for p := range vars {
			t, err := distribute.NewTensor(initial[p], paramShape(shape, p), "")
			if err != nil {
				return err
			}
			vars[p], err = distribute.NewVariable(t, distribute.SyncAuto, distribute.AggregationNone, paramName(p))
			t.Close()
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}

	var trainLoss, trainAcc float64
	for epoch := 0; epoch < o.epochs; epoch++ {
		it, err := makeInput(s, trainPath, o.train, o.batch, true, o.seed*1000003+uint64(epoch+1)) // the C demo counts epochs from 1
		if err != nil {
			return err
		}
		loss, correct, rows, err := pass(s, it, shape, vars, o.learningRate, true)
		it.Close()
		if err != nil {
			return err
		}
		trainLoss, trainAcc = loss/rows, correct/rows
	}
	it, err := makeInput(s, testPath, o.test, 4*o.batch, false, 0)
	if err != nil {
		return err
	}
	loss, correct, rows, err := pass(s, it, shape, vars, 0, false)
	it.Close()
	if err != nil {
		return err
	}
	sum, err := checksum(vars)
	if err != nil {
		return err
	}
	fmt.Printf("train_mlp (Go): strategy %d, %d replicas, %d epochs: train loss %.4f accuracy %.4f; held-out loss %.4f accuracy %.4f; weights %016x\n",
		kind, replicas, o.epochs, trainLoss, trainAcc, loss/rows, correct/rows, sum)
	return nil
}

// makeInput: records -> [shuffle] -> batch -> map(decode) -> distribute_dataset, as the C demo.
func makeInput(s *distribute.Strategy, path string, count, batch int64, training bool, seed uint64) (*distribute.Iterator, error) {
	records, err := distribute.DatasetFromFixedLengthRecords([]string{path}, recordBytes, headerBytes, 0)
	if err != nil {
		return nil, err
	}
	defer records.Close()
	src := records
	if training {
		if src, err = records.Shuffle(count, seed); err != nil {
			return nil, err
		}
		defer src.Close()
	}
	batches, err := src.Batch(batch, training) // training drops the partial batch
	if err != nil {
		return nil, err
	}
	defer batches.Close()
	decoded, err := batches.Map(decode, 2, 2)
	if err != nil {
		return nil, err
	}
	defer decoded.Close()
	dd, err := s.DistributeDataset(decoded, nil)
	if err != nil {
		return nil, err
	}
	defer dd.Close()
	return dd.MakeIterator()
}

// decode turns a batch of records into features [rows, 144] float32 and labels [rows] int32.
func decode(in []*distribute.Value) ([]*distribute.Value, error) {
	raw, err := in[0].Bytes()
	if err != nil {
		return nil, err
	}
	rows := len(raw) / recordBytes
	x := make([]float32, rows*pixels)
	y := make([]int32, rows)
	for r := 0; r < rows; r++ {
		rec := raw[r*recordBytes : (r+1)*recordBytes]
		y[r] = int32(rec[0])
		for p := 0; p < pixels; p++ {
			x[r*pixels+p] = float32(rec[1+p]) * (1.0 / 255.0)
		}
	}
	xt, err := distribute.NewTensor(x, []int64{int64(rows), pixels}, "")
	if err != nil {
		return nil, err
	}
	yt, err := distribute.NewTensor(y, []int64{int64(rows)}, "")
	if err != nil {
		xt.Close()
		return nil, err
	}
	return []*distribute.Value{xt, yt}, nil
}

// pass runs every step of one pass; the metrics are summed over all replicas.
func pass(s *distribute.Strategy, it *distribute.Iterator, shape shape, vars []*distribute.Value, lr float64, training bool) (loss, correct, rows float64, err error) {
	step := func(ctx *distribute.ReplicaContext, args []*distribute.Value) ([]*distribute.Value, error) {
		m, err := replicaStep(ctx, args, shape, lr, training)
		return []*distribute.Value{m}, err
	}
	for {
		el, more, err := it.Next()
		if err != nil || !more {
			return loss, correct, rows, err
		}
		res, err := s.Run(step, append(el, vars...), 1)
		distribute.CloseAll(el)
		if err != nil {
			return 0, 0, 0, err
		}
		total, err := s.Reduce(distribute.Sum, res[0])
		distribute.CloseAll(res)
		if err != nil {
			return 0, 0, 0, err
		}
		m, err := total.Float32s()
		total.Close()
		if err != nil {
			return 0, 0, 0, err
		}
		loss, correct, rows = loss+float64(m[0]), correct+float64(m[1]), rows+float64(m[2])
	}
}

func replicaStep(ctx *distribute.ReplicaContext, args []*distribute.Value, shape shape, lr float64, training bool) (*distribute.Value, error) {
	var owned []*distribute.Value
	defer func() { distribute.CloseAll(owned) }()
	keep := func(v *distribute.Value, err error) (*distribute.Value, error) {
		if v != nil {
			owned = append(owned, v)
		}
		return v, err
	}
	device, err := ctx.Device()
	if err != nil {
		return nil, err
	}
	dims, err := args[0].Shape()
	if err != nil {
		return nil, err
	}
	rows := dims[0]
	x, err := args[0].DataPointer()
	if err != nil {
		return nil, err
	}
	y, err := args[1].DataPointer()
	if err != nil {
		return nil, err
	}
	params := make([]unsafe.Pointer, numParams)
	var grads []*distribute.Value
	var gradPtrs []unsafe.Pointer
	for p := 0; p < numParams; p++ {
		w, err := keep(args[2+p].Read()) // in replica context: this replica's copy
		if err != nil {
			return nil, err
		}
		if params[p], err = w.DataPointer(); err != nil {
			return nil, err
		}
		if training {
			g, err := keep(distribute.NewTensor[float64](nil, paramShape(shape, p), device))
			if err != nil {
				return nil, err
			}
			ptr, err := g.DataPointer()
			if err != nil {
				return nil, err
			}
			grads, gradPtrs = append(grads, g), append(gradPtrs, ptr)
		}
	}
	lossSum, correct, err := forwardBackward(shape, params, x, y, rows, gradPtrs)
	if err != nil {
		return nil, err
	}
	if training {
		n, err := keep(distribute.Scalar(float64(rows), device))
		if err != nil {
			return nil, err
		}
		summed, err := ctx.BatchAllReduce(distribute.Sum, append(grads, n))
		owned = append(owned, summed...)
		if err != nil {
			return nil, err
		}
		globalRows, err := summed[numParams].ScalarFloat64()
		if err != nil {
			return nil, err
		}
		scale := 0.0
		if globalRows > 0 {
			scale = -lr / globalRows
		}
		mergeArgs := make([]*distribute.Value, 0, 2*numParams)
		for p := 0; p < numParams; p++ {
			sum, err := distribute.Data[float64](summed[p])
			if err != nil {
				return nil, err
			}
			upd := make([]float32, len(sum))
			for i, v := range sum {
				upd[i] = float32(scale * v)
			}
			u, err := keep(distribute.NewTensor(upd, paramShape(shape, p), device))
			if err != nil {
				return nil, err
			}
			mergeArgs = append(mergeArgs, u)
		}
		mergeArgs = append(mergeArgs, args[2:2+numParams]...)
		merged, err := ctx.MergeCall(applyUpdates, mergeArgs)
		merged.Close()
		if err != nil {
			return nil, err
		}
	}
	return distribute.NewTensor([]float32{float32(lossSum), float32(correct), float32(rows)}, []int64{3}, device)
}

// applyUpdates, in cross-replica context: args[0..3] are the replicas' (equal) updates,
// args[4..7] the variables; each update becomes a Mirrored value that Update adds to every
// copy of its variable.
func applyUpdates(s *distribute.Strategy, args []*distribute.Value) (*distribute.Value, error) {
	for p := 0; p < numParams; p++ {
		n, err := args[p].NumComponents()
		if err != nil {
			return nil, err
		}
		copies := make([]*distribute.Value, n)
		for i := range copies {
			if copies[i], err = args[p].Component(i); err != nil {
				distribute.CloseAll(copies)
				return nil, err
			}
		}
		m, err := distribute.NewMirrored(copies...)
		distribute.CloseAll(copies)
		if err != nil {
			return nil, err
		}
		out, err := s.Update(args[numParams+p], func(v *distribute.Value, a []*distribute.Value) (*distribute.Value, error) {
			return nil, v.AssignAdd(a[0])
		}, []*distribute.Value{m}, true)
		m.Close()
		out.Close()
		if err != nil {
			return nil, err
		}
	}
	return nil, nil
}

// checksum hashes the final weights (every copy of every variable must agree).
func checksum(vars []*distribute.Value) (uint64, error) {
	h := fnv.New64a()
	for _, v := range vars {
		n, err := v.NumComponents()
		if err != nil {
			return 0, err
		}
		var first []float32
		for i := 0; i < n; i++ {
			c, err := v.ComponentTensor(i)
			if err != nil {
				return 0, err
			}
			d, err := c.Float32s()
			c.Close()
			if err != nil {
				return 0, err
			}
			if i == 0 {
				first = d
			} else {
				for j := range d {
					if d[j] != first[j] {
						return 0, fmt.Errorf("copies of a variable differ")
					}
				}
			}
		}
		for _, f := range first {
			b := math.Float32bits(f)
			_, _ = h.Write([]byte{byte(b), byte(b >> 8), byte(b >> 16), byte(b >> 24)})
		}
	}
	return h.Sum64(), nil
}
