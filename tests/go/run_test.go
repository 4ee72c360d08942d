package tests

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"

	"distribute"
)

func TestStrategiesAndProperties(t *testing.T) {
	one, err := distribute.NewOneDeviceStrategy("CPU:0")
	ok(t, err)
	defer one.Close()
	m := mirrored(t, 4)
	defer m.Close()
	cs, err := distribute.NewCentralStorageStrategy([]string{"CPU:0", "CPU:1"}, "")
	ok(t, err)
	defer cs.Close()
	def, err := distribute.DefaultStrategy()
	ok(t, err)
	defer def.Close()
	for _, c := range []struct {
		s    *distribute.Strategy
		kind distribute.StrategyKind
		n    int
	}{{one, distribute.StrategyOneDevice, 1}, {m, distribute.StrategyMirrored, 4}, {cs, distribute.StrategyCentralStorage, 2}, {def, distribute.StrategyDefault, 1}} {
		k, err := c.s.Kind()
		ok(t, err)
		n, err := c.s.NumReplicasInSync()
		ok(t, err)
		if k != c.kind || n != c.n {
			t.Fatalf("kind %d n %d, want %d %d", k, n, c.kind, c.n)
		}
	}
	dev, err := m.WorkerDevice(3)
	ok(t, err)
	if dev != "/job:localhost/replica:0/task:0/device:CPU:3" && !strings.HasSuffix(dev, "CPU:3") {
		t.Fatalf("worker device %q", dev)
	}
	_, err = m.WorkerDevice(4)
	wantErr(t, err, distribute.ErrOutOfRange, "")
	np, err := cs.ParameterDeviceCount()
	ok(t, err)
	pd, err := cs.ParameterDevice(0)
	ok(t, err)
	if np != 1 || !strings.HasSuffix(pd, "CPU:0") {
		t.Fatalf("parameter devices %d %q", np, pd)
	}
	op, err := distribute.LossReduction()
	ok(t, err)
	if op != distribute.Sum {
		t.Fatalf("loss reduction %d", op)
	}
	// Cross-device ops.
	for _, mk := range []func() (*distribute.CrossDeviceOps, error){
		func() (*distribute.CrossDeviceOps, error) { return distribute.NewReductionToOneDevice("") },
		func() (*distribute.CrossDeviceOps, error) { return distribute.NewHierarchicalCopy(1) },
		func() (*distribute.CrossDeviceOps, error) { return distribute.NewSharedMemory(1 << 20) },
	} {
		ops, err := mk()
		ok(t, err)
		_, err = ops.Kind()
		ok(t, err)
		s, err := distribute.NewMirroredStrategy([]string{"CPU:0", "CPU:1"}, ops)
		ok(t, err)
		ops.Close()
		res, err := s.Run(func(ctx *distribute.ReplicaContext, _ []*distribute.Value) ([]*distribute.Value, error) {
			id, _ := ctx.ReplicaID()
			x, err := distribute.Scalar(float32(id+1), "")
			if err != nil {
				return nil, err
			}
			defer x.Close()
			r, err := ctx.AllReduce(distribute.Sum, x)
			return []*distribute.Value{r}, err
		}, nil, 1)
		ok(t, err)
		if got := componentsF32(t, res[0]); !eqF32(got[0], []float32{3}) || !eqF32(got[1], []float32{3}) {
			t.Fatalf("all-reduce %v", got)
		}
		distribute.CloseAll(res)
		s.Close()
	}
	_, err = distribute.NewHierarchicalCopy(0)
	wantErr(t, err, distribute.ErrInvalidArgument, "")
}

// NcclAllReduce: created and typed without a GPU; a strategy over CPU replicas refuses it.
func TestNcclAllReduceOnlyOnGPUs(t *testing.T) {
	for _, packs := range []int{0, 2} {
		ops, err := distribute.NewNcclAllReduce(packs)
		ok(t, err)
		kind, err := ops.Kind()
		ok(t, err)
		if kind != distribute.NcclAllReduce {
			t.Fatalf("kind %d, want %d", kind, distribute.NcclAllReduce)
		}
		s, err := distribute.NewMirroredStrategy([]string{"CPU:0", "CPU:1"}, ops)
		wantErr(t, err, distribute.ErrFailedPrecondition, "NcclAllReduce")
		if s != nil {
			t.Fatalf("a strategy came back with the error")
		}
		ops.Close()
	}
	_, err := distribute.NewNcclAllReduce(-1)
	wantErr(t, err, distribute.ErrInvalidArgument, "num_packs")
}

// Collectives inside a Go replica function, against values computed here.
func TestCollectives(t *testing.T) {
	const n = 4
	s := mirrored(t, n)
	defer s.Close()
	var mu sync.Mutex
	seen := map[int]bool{}
	results, err := s.Run(func(ctx *distribute.ReplicaContext, args []*distribute.Value) ([]*distribute.Value, error) {
		id, err := ctx.ReplicaID()
		if err != nil {
			return nil, err
		}
		nr, err := ctx.NumReplicasInSync()
		if err != nil || nr != n {
			return nil, fmt.Errorf("num replicas %d %v", nr, err)
		}
		mu.Lock()
		seen[id] = true
		mu.Unlock()
		dev, err := ctx.Device()
		if err != nil {
			return nil, err
		}
		x, err := distribute.NewTensor([]float32{float32(id), float32(10 * id)}, []int64{2}, dev)
		if err != nil {
			return nil, err
		}
		defer x.Close()
		sum, err := ctx.AllReduce(distribute.Sum, x)
		if err != nil {
			return nil, err
		}
		outs, err := ctx.BatchAllReduce(distribute.Max, []*distribute.Value{x, x})
		if err != nil {
			return nil, err
		}
		defer distribute.CloseAll(outs)
		g, err := ctx.AllGather(x, 0)
		if err != nil {
			return nil, err
		}
		b, err := ctx.Broadcast(x, 2)
		if err != nil {
			return nil, err
		}
		st, err := ctx.Strategy()
		if err != nil {
			return nil, err
		}
		st.Close()
		return []*distribute.Value{sum, g, b}, nil
	}, nil, 3)
	ok(t, err)
	defer distribute.CloseAll(results)
	if len(seen) != n {
		t.Fatalf("replicas seen %v", seen)
	}
	for i, c := range componentsF32(t, results[0]) {
		if !eqF32(c, []float32{6, 60}) {
			t.Fatalf("all_reduce replica %d: %v", i, c)
		}
	}
	for _, c := range componentsF32(t, results[1]) {
		if !eqF32(c, []float32{0, 0, 1, 10, 2, 20, 3, 30}) {
			t.Fatalf("all_gather %v", c)
		}
	}
	for _, c := range componentsF32(t, results[2]) {
		if !eqF32(c, []float32{2, 20}) {
			t.Fatalf("broadcast %v", c)
		}
	}
	// Cross-replica: reduce, gather, reduce_to_device.
	red, err := s.Reduce(distribute.Mean, results[0])
	ok(t, err)
	if got := readF32(t, red); !eqF32(got, []float32{6, 60}) {
		t.Fatalf("reduce %v", got)
	}
	red.Close()
	pr, err := s.DistributeValuesFromFunction(func(id, nr int) (*distribute.Value, error) {
		return distribute.NewTensor([]float32{float32(id)}, []int64{1}, fmt.Sprintf("CPU:%d", id))
	})
	ok(t, err)
	defer pr.Close()
	if k := kindOf(t, pr); k != distribute.KindPerReplica {
		t.Fatalf("kind %d", k)
	}
	g, err := s.Gather(pr, 0)
	ok(t, err)
	if got := readF32(t, g); !eqF32(got, []float32{0, 1, 2, 3}) {
		t.Fatalf("gather %v", got)
	}
	g.Close()
	rd, err := s.ReduceToDevice(distribute.Sum, pr, "CPU:1")
	ok(t, err)
	if got := readF32(t, rd); !eqF32(got, []float32{6}) {
		t.Fatalf("reduce_to_device %v", got)
	}
	rd.Close()
	vc, err := s.ValueContainer(pr)
	ok(t, err)
	vc.Close()
}

// AllReduceInto: the sum written into a separate tensor, then into the input itself, on a
// 2-replica Mirrored strategy, against sums computed here.
func TestAllReduceInto(t *testing.T) {
	const n = 2
	s := mirrored(t, n)
	defer s.Close()
	var separate, input, inPlace [n][]float32
	_, err := s.Run(func(ctx *distribute.ReplicaContext, args []*distribute.Value) ([]*distribute.Value, error) {
		id, err := ctx.ReplicaID()
		if err != nil {
			return nil, err
		}
		dev, err := ctx.Device()
		if err != nil {
			return nil, err
		}
		x, err := distribute.NewTensor([]float32{float32(id + 1), float32(10 * id), float32(-id)}, []int64{3}, dev)
		if err != nil {
			return nil, err
		}
		defer x.Close()
		out, err := distribute.NewTensor(make([]float32, 3), []int64{3}, dev)
		if err != nil {
			return nil, err
		}
		defer out.Close()
		if err := ctx.AllReduceInto(distribute.Sum, x, out); err != nil {
			return nil, err
		}
		if separate[id], err = out.Float32s(); err != nil {
			return nil, err
		}
		if input[id], err = x.Float32s(); err != nil {
			return nil, err
		}
		if err := ctx.AllReduceInto(distribute.Sum, x, x); err != nil {
			return nil, err
		}
		inPlace[id], err = x.Float32s()
		return nil, err
	}, nil, 0)
	ok(t, err)
	// Replica r contributes {r + 1, 10 r, -r}: the sum over r = 0, 1.
	want := []float32{1 + 2, 0 + 10, 0 - 1}
	for r := 0; r < n; r++ {
		if !eqF32(separate[r], want) {
			t.Errorf("replica %d into a separate tensor: %v, want %v", r, separate[r], want)
		}
		if in := []float32{float32(r + 1), float32(10 * r), float32(-r)}; !eqF32(input[r], in) {
			t.Errorf("replica %d's input changed: %v, want %v", r, input[r], in)
		}
		if !eqF32(inPlace[r], want) {
			t.Errorf("replica %d in place: %v, want %v", r, inPlace[r], want)
		}
	}
}

// A wrong-shape out on one replica fails AllReduceInto on every replica with
// ErrInvalidArgument, nothing is written, and a right call after it works.
func TestAllReduceIntoWrongShape(t *testing.T) {
	const n = 2
	s := mirrored(t, n)
	defer s.Close()
	var errs [n]error
	var after, retried [n][]float32
	_, err := s.Run(func(ctx *distribute.ReplicaContext, args []*distribute.Value) ([]*distribute.Value, error) {
		id, err := ctx.ReplicaID()
		if err != nil {
			return nil, err
		}
		x, err := distribute.NewTensor([]float32{1}, []int64{1}, "")
		if err != nil {
			return nil, err
		}
		defer x.Close()
		out, err := distribute.NewTensor([]float32{-7}, []int64{1}, "")
		if err != nil {
			return nil, err
		}
		defer out.Close()
		wrong, err := distribute.NewTensor([]float32{0, 0}, []int64{2}, "")
		if err != nil {
			return nil, err
		}
		defer wrong.Close()
		target := out
		if id == 1 {
			target = wrong
		}
		errs[id] = ctx.AllReduceInto(distribute.Sum, x, target)
		if after[id], err = out.Float32s(); err != nil {
			return nil, err
		}
		if err := ctx.AllReduceInto(distribute.Sum, x, out); err != nil {
			return nil, err
		}
		retried[id], err = out.Float32s()
		return nil, err
	}, nil, 0)
	ok(t, err)
	for r := 0; r < n; r++ {
		wantErr(t, errs[r], distribute.ErrInvalidArgument, "replica 1: out is float32[2]")
		if !eqF32(after[r], []float32{-7}) {
			t.Errorf("replica %d's out was written by a failed call: %v", r, after[r])
		}
		if !eqF32(retried[r], []float32{2}) {
			t.Errorf("replica %d after the failure: %v, want [2]", r, retried[r])
		}
	}
}

// A replica function that fails: the error (with the Go error as Cause) reaches the
// caller, the others are released, and the next run works.
func TestReplicaErrorThenNextRunWorks(t *testing.T) {
	s := mirrored(t, 2)
	defer s.Close()
	boom := errors.New("boom in replica 1")
	_, err := s.Run(func(ctx *distribute.ReplicaContext, _ []*distribute.Value) ([]*distribute.Value, error) {
		id, _ := ctx.ReplicaID()
		if id == 1 {
			return nil, boom
		}
		x, err := distribute.Scalar(float32(1), "")
		if err != nil {
			return nil, err
		}
		defer x.Close()
		r, err := ctx.AllReduce(distribute.Sum, x) // released with ABORTED
		r.Close()
		return nil, err
	}, nil, 0)
	if err == nil || !errors.Is(err, boom) {
		t.Fatalf("want the replica's error, got %v", err)
	}
	if !strings.Contains(err.Error(), "boom in replica 1") {
		t.Fatalf("message %q", err)
	}
	// A library error returned by the callback keeps its code.
	_, err = s.Run(func(ctx *distribute.ReplicaContext, _ []*distribute.Value) ([]*distribute.Value, error) {
		_, err := ctx.AllGather(nil, 0)
		return nil, err
	}, nil, 0)
	wantErr(t, err, distribute.ErrInvalidArgument, "dist_context_all_gather")
	res, err := s.Run(func(ctx *distribute.ReplicaContext, _ []*distribute.Value) ([]*distribute.Value, error) {
		x, err := distribute.Scalar(float32(2), "")
		if err != nil {
			return nil, err
		}
		defer x.Close()
		r, err := ctx.AllReduce(distribute.Sum, x)
		return []*distribute.Value{r}, err
	}, nil, 1)
	ok(t, err)
	if got := componentsF32(t, res[0]); !eqF32(got[0], []float32{4}) {
		t.Fatalf("next run %v", got)
	}
	distribute.CloseAll(res)
}

func TestReplicaPanicIsRecovered(t *testing.T) {
	s := mirrored(t, 2)
	defer s.Close()
	_, err := s.Run(func(ctx *distribute.ReplicaContext, _ []*distribute.Value) ([]*distribute.Value, error) {
		id, _ := ctx.ReplicaID()
		if id == 1 {
			var m map[string]int
			m["x"] = 1 // panics: assignment to entry in nil map
		}
		return nil, nil
	}, nil, 0)
	var pe *distribute.PanicError
	if !errors.As(err, &pe) {
		t.Fatalf("want a PanicError cause, got %v", err)
	}
	if !strings.Contains(err.Error(), "nil map") {
		t.Fatalf("message %q", err)
	}
	// Panics in merge_call and update functions too.
	_, err = s.Run(func(ctx *distribute.ReplicaContext, _ []*distribute.Value) ([]*distribute.Value, error) {
		_, err := ctx.MergeCall(func(*distribute.Strategy, []*distribute.Value) (*distribute.Value, error) { panic("merge boom") }, nil)
		return nil, err
	}, nil, 0)
	if !errors.As(err, &pe) || !strings.Contains(err.Error(), "merge boom") {
		t.Fatalf("merge panic: %v", err)
	}
	res, err := s.Run(func(ctx *distribute.ReplicaContext, _ []*distribute.Value) ([]*distribute.Value, error) {
		x, err := distribute.Scalar(int32(7), "")
		return []*distribute.Value{x}, err
	}, nil, 1)
	ok(t, err)
	distribute.CloseAll(res)
}

// Returning too many values, or a borrowed argument, is a clear error, not a crash.
func TestReplicaResultMisuse(t *testing.T) {
	s := mirrored(t, 2)
	defer s.Close()
	x := scalar(t, 1, "")
	defer x.Close()
	_, err := s.Run(func(ctx *distribute.ReplicaContext, args []*distribute.Value) ([]*distribute.Value, error) {
		return args, nil
	}, []*distribute.Value{x}, 1)
	wantErr(t, err, distribute.ErrInvalidArgument, "borrowed")
	_, err = s.Run(func(ctx *distribute.ReplicaContext, args []*distribute.Value) ([]*distribute.Value, error) {
		a, _ := distribute.Scalar(float32(1), "")
		b, _ := distribute.Scalar(float32(2), "")
		return []*distribute.Value{a, b}, nil
	}, nil, 1)
	wantErr(t, err, distribute.ErrInvalidArgument, "room for 1")
	// Run from inside a replica function: FAILED_PRECONDITION.
	_, err = s.Run(func(ctx *distribute.ReplicaContext, args []*distribute.Value) ([]*distribute.Value, error) {
		_, err := s.Run(func(*distribute.ReplicaContext, []*distribute.Value) ([]*distribute.Value, error) { return nil, nil }, nil, 0)
		return nil, err
	}, nil, 0)
	wantErr(t, err, distribute.ErrFailedPrecondition, "")
}

// Using a replica context from another goroutine (another OS thread) fails cleanly.
func TestContextFromAnotherGoroutine(t *testing.T) {
	s, err := distribute.NewOneDeviceStrategy("CPU:0")
	ok(t, err)
	defer s.Close()
	_, err = s.Run(func(ctx *distribute.ReplicaContext, _ []*distribute.Value) ([]*distribute.Value, error) {
		x, err := distribute.Scalar(float32(1), "")
		if err != nil {
			return nil, err
		}
		defer x.Close()
		errc := make(chan error)
		go func() {
			runtime.LockOSThread() // certainly another OS thread than the replica's
			defer runtime.UnlockOSThread()
			r, err := ctx.AllReduce(distribute.Sum, x)
			r.Close()
			errc <- err
		}()
		return nil, <-errc
	}, nil, 0)
	wantErr(t, err, distribute.ErrFailedPrecondition, "")
}

// Scopes are per OS thread: Scope locks the goroutine; a variable created inside is
// distributed, one created outside is plain.
func TestScopeAndThreads(t *testing.T) {
	s := mirrored(t, 2)
	defer s.Close()
	init := scalar(t, 3, "")
	defer init.Close()
	var v *distribute.Value
	ok(t, s.Scope(func() error {
		has, err := distribute.HasStrategy()
		if err != nil || !has {
			return fmt.Errorf("has strategy %v %v", has, err)
		}
		cross, err := distribute.InCrossReplicaContext()
		if err != nil || !cross {
			return fmt.Errorf("cross %v %v", cross, err)
		}
		if distribute.CurrentReplicaContext() != nil {
			return errors.New("replica context inside a scope")
		}
		cur, err := distribute.CurrentStrategy()
		if err != nil {
			return err
		}
		k, _ := cur.Kind()
		cur.Close()
		if k != distribute.StrategyMirrored {
			return fmt.Errorf("current kind %d", k)
		}
		v, err = distribute.NewVariable(init, distribute.SyncOnWrite, distribute.AggregationMean, "w")
		if err != nil {
			return err
		}
		ok(t, s.ColocateVarsWithEnter(v))
		w, err := distribute.NewVariable(init, distribute.SyncAuto, distribute.AggregationNone, "w2")
		ok(t, err)
		w.Close()
		return s.ColocateVarsWithExit()
	}))
	defer v.Close()
	in, err := s.VariableCreatedInScope(v)
	ok(t, err)
	if !in {
		t.Fatal("variable not created in scope")
	}
	n, err := v.VariableDeviceCount()
	ok(t, err)
	d1, err := v.VariableDevice(1)
	ok(t, err)
	if n != 2 || !strings.HasSuffix(d1, "CPU:1") {
		t.Fatalf("devices %d %q", n, d1)
	}
	sync, err := v.Synchronization()
	ok(t, err)
	if sync != distribute.SyncOnWrite {
		t.Fatalf("sync %d", sync)
	}
	// Assignments in cross-replica context.
	two := scalar(t, 2, "")
	defer two.Close()
	ok(t, v.AssignAdd(two))
	checkVariable(t, v, 5)
	ok(t, v.AssignSub(two))
	ok(t, v.AssignSub(two))
	checkVariable(t, v, 1)
	// Exiting a scope that was never entered: FAILED_PRECONDITION.
	runtime.LockOSThread()
	wantErr(t, s.ScopeExit(), distribute.ErrFailedPrecondition, "")
	ok(t, distribute.ExperimentalSetStrategy(s))
	has, err := distribute.HasStrategy()
	ok(t, err)
	ok(t, distribute.ExperimentalSetStrategy(nil))
	runtime.UnlockOSThread()
	if !has {
		t.Fatal("experimental_set_strategy had no effect")
	}
	// Save and restore.
	path := t.TempDir() + "/vars.safetensors"
	ok(t, s.SaveVariables(path))
	ok(t, v.Assign(two))
	ok(t, s.RestoreVariables(path))
	checkVariable(t, v, 1)
	wantErr(t, s.RestoreVariables(t.TempDir()+"/missing"), distribute.ErrNotFound, "")
}

// Bring your own threads: goroutines join as replicas (JoinReplica locks each to its OS
// thread), all-reduce, and leave.
func TestJoinReplica(t *testing.T) {
	const n = 3
	s := mirrored(t, n)
	defer s.Close()
	var wg sync.WaitGroup
	got := make([][]float32, n)
	errs := make([]error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			ctx, err := s.JoinReplica(i)
			if err != nil {
				errs[i] = err
				return
			}
			defer func() {
				if err := ctx.Leave(); err != nil && errs[i] == nil {
					errs[i] = err
				}
			}()
			ok := distribute.CurrentReplicaContext() != nil
			if !ok {
				errs[i] = errors.New("no current replica context on the joined thread")
				return
			}
			x, err := distribute.Scalar(float32(i), "")
			if err != nil {
				errs[i] = err
				return
			}
			defer x.Close()
			r, err := ctx.AllReduce(distribute.Sum, x)
			if err != nil {
				errs[i] = err
				return
			}
			got[i], errs[i] = r.Float32s()
			r.Close()
		}(i)
	}
	wg.Wait()
	for i := 0; i < n; i++ {
		ok(t, errs[i])
		if !eqF32(got[i], []float32{3}) {
			t.Fatalf("replica %d: %v", i, got[i])
		}
	}
	_, err := s.JoinReplica(n)
	wantErr(t, err, distribute.ErrInvalidArgument, "")
}
