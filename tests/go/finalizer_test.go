package tests

// Handles a program forgets to Close are released by the garbage collector, seen through
// what the library does when it releases them: a wrapped C buffer's release callback
// runs, a server's or a strategy's port is free again, a strategy takes a new coordinator,
// a dataset's Go map function is let go. Closed handles are not released again; a child
// keeps what it uses alive (an iterator its dataset, a remote value its coordinator), and a
// variable outlives its strategy; and collections while calls are in flight break none of
// them (the suite runs under -race with GODEBUG=cgocheck=2 too).

import (
	"errors"
	"fmt"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"distribute"
)

// collect runs a few collections and gives the releases their finalizers queue time to run.
func collect() {
	for i := 0; i < 5; i++ {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
}

// collectUntil runs collections until done holds, failing the test after 20 s.
func collectUntil(t *testing.T, what string, done func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !done() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not released after 20 s of collections", what)
		}
		runtime.GC()
		time.Sleep(5 * time.Millisecond)
	}
}

// wrapCounted is a float32 tensor over C memory holding data (dist_tensor_wrap, no copy)
// whose release callback frees the memory and adds 1 to *released.
func wrapCounted(t *testing.T, data []float32, released *int32) *distribute.Value {
	t.Helper()
	n := len(data) * 4
	p := cMalloc(n)
	copy(unsafe.Slice((*float32)(p), len(data)), data)
	v, err := distribute.WrapC(distribute.Float32, []int64{int64(len(data))}, p, n, "", func() {
		cFree(p)
		atomic.AddInt32(released, 1)
	})
	if err != nil {
		cFree(p)
		t.Fatal(err)
	}
	return v
}

// portFree: nothing listens on 127.0.0.1:port.
func portFree(port int) bool {
	l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		return false
	}
	l.Close()
	return true
}

func TestForgottenValuesAreReleased(t *testing.T) {
	var released int32
	func() {
		a := wrapCounted(t, []float32{1, 2}, &released)
		b := wrapCounted(t, []float32{3, 4}, &released)
		pr, err := distribute.NewPerReplica(a, b)
		ok(t, err)
		c, err := pr.Component(1)
		ok(t, err)
		if got := readF32(t, c); !eqF32(got, []float32{3, 4}) {
			t.Fatalf("component 1 is %v", got)
		}
		// a, b, pr and c are forgotten: four handles over two buffers.
	}()
	collectUntil(t, "two wrapped buffers", func() bool { return atomic.LoadInt32(&released) == 2 })
	collect()
	if n := atomic.LoadInt32(&released); n != 2 {
		t.Fatalf("%d releases of 2 buffers", n)
	}
}

func TestClosedHandlesAreNotReleasedAgain(t *testing.T) {
	const n = 200
	var released int32
	func() {
		for i := 0; i < n; i++ {
			v := wrapCounted(t, []float32{float32(i)}, &released)
			d, err := distribute.DatasetFromTensorSlices(v)
			ok(t, err)
			it, err := d.MakeIterator()
			ok(t, err)
			v.Close()
			d.Close()
			it.Close()
			it.Close() // idempotent
			v.Close()
		}
	}()
	// Close releases at once (an iterator's background threads may take a moment to let
	// go of their element): no collection needed.
	for start := time.Now(); atomic.LoadInt32(&released) != n; time.Sleep(time.Millisecond) {
		if time.Since(start) > 10*time.Second {
			t.Fatalf("%d releases after closing %d buffers' last handles", atomic.LoadInt32(&released), n)
		}
	}
	collect()
	if got := atomic.LoadInt32(&released); got != n {
		t.Fatalf("%d releases of %d buffers after collections", got, n)
	}
}

func TestIteratorKeepsItsForgottenDataset(t *testing.T) {
	var released int32
	it := func() *distribute.Iterator {
		v := wrapCounted(t, []float32{1, 2, 3, 4}, &released)
		defer v.Close() // the dataset holds the buffer
		d, err := distribute.DatasetFromTensorSlices(v)
		ok(t, err)
		batched, err := d.Batch(2, false)
		ok(t, err)
		it, err := batched.MakeIterator()
		ok(t, err)
		return it // d and batched are forgotten
	}()
	collect()
	if atomic.LoadInt32(&released) != 0 {
		t.Fatal("the buffer was released while an iterator over it lives")
	}
	for _, want := range [][]float32{{1, 2}, {3, 4}} {
		got, err := it.GetNext()
		ok(t, err)
		if x := readF32(t, got[0]); !eqF32(x, want) {
			t.Fatalf("element %v, want %v", x, want)
		}
		distribute.CloseAll(got)
	}
	_, err := it.GetNext()
	wantErr(t, err, distribute.ErrOutOfRange, "")
	it = nil // forgotten too
	collectUntil(t, "a dataset's buffer after its iterator", func() bool { return atomic.LoadInt32(&released) == 1 })
}

func TestForgottenMapDatasetLetsItsGoFunctionGo(t *testing.T) {
	let := make(chan struct{})
	func() {
		token := new([64]byte) // referenced by the map function only
		runtime.SetFinalizer(token, func(*[64]byte) { close(let) })
		d, err := distribute.DatasetRange(0, 3, 1)
		ok(t, err)
		defer d.Close()
		m, err := d.Map(func(in []*distribute.Value) ([]*distribute.Value, error) {
			_ = token[0]
			x, err := in[0].ScalarInt64()
			if err != nil {
				return nil, err
			}
			v, err := distribute.Scalar(2*x, "")
			return []*distribute.Value{v}, err
		}, 1, 2)
		ok(t, err)
		it, err := m.MakeIterator()
		ok(t, err)
		got, err := it.GetNext()
		ok(t, err)
		if x, err := got[0].ScalarInt64(); err != nil || x != 0 {
			t.Fatalf("first element %v %v", x, err)
		}
		// m, it and the element are forgotten: the library lets the function go when the
		// last of them is released.
	}()
	collectUntil(t, "a map function", func() bool {
		select {
		case <-let:
			return true
		default:
			return false
		}
	})
}

func TestDistributedDatasetKeepsItsForgottenStrategyAndInput(t *testing.T) {
	var released int32
	it := func() *distribute.Iterator {
		v := wrapCounted(t, []float32{1, 2, 3, 4, 5, 6, 7, 8}, &released)
		defer v.Close()
		d, err := distribute.DatasetFromTensorSlices(v)
		ok(t, err)
		batched, err := d.Batch(4, true)
		ok(t, err)
		dd, err := mirrored(t, 2).DistributeDataset(batched, nil)
		ok(t, err)
		it, err := dd.MakeIterator()
		ok(t, err)
		return it // the strategy, the datasets and the distributed dataset are forgotten
	}()
	collect()
	for _, want := range [][][]float32{{{1, 2}, {3, 4}}, {{5, 6}, {7, 8}}} {
		got, err := it.GetNext()
		ok(t, err)
		if c := componentsF32(t, got[0]); len(c) != 2 || !eqF32(c[0], want[0]) || !eqF32(c[1], want[1]) {
			t.Fatalf("per-replica batch %v, want %v", c, want)
		}
		distribute.CloseAll(got)
	}
	if atomic.LoadInt32(&released) != 0 {
		t.Fatal("the buffer was released while an iterator over it lives")
	}
	it = nil
	collectUntil(t, "a distributed dataset's buffer after its iterator", func() bool { return atomic.LoadInt32(&released) == 1 })
}

func TestVariableOutlivesItsForgottenStrategy(t *testing.T) {
	// A one-worker MultiWorkerMirroredStrategy listens on its task's port until its last
	// reference is released; its values and variables may outlive it (strategy.h).
	port := freePort(t)
	variable := func() *distribute.Value {
		c := oneTaskCluster(t, fmt.Sprintf("127.0.0.1:%d", port))
		s, err := distribute.NewMultiWorkerMirroredStrategy(c, nil)
		ok(t, err)
		if portFree(port) {
			t.Fatal("the strategy does not listen on its port")
		}
		var v *distribute.Value
		ok(t, s.Scope(func() error {
			init := scalar(t, 1, "")
			defer init.Close()
			var err error
			v, err = distribute.NewVariable(init, distribute.SyncAuto, distribute.AggregationSum, "go_finalizer_v")
			return err
		}))
		return v // the cluster and the strategy are forgotten
	}()
	collectUntil(t, "a strategy", func() bool { return portFree(port) })
	two := scalar(t, 2, "")
	defer two.Close()
	ok(t, variable.AssignAdd(two))
	read, err := variable.Read()
	ok(t, err)
	defer read.Close()
	if x := scalarOf(t, read); x != 3 {
		t.Fatalf("variable is %v, want 3", x)
	}
}

func TestForgottenServerStops(t *testing.T) {
	port := freePort(t)
	func() {
		c := oneTaskCluster(t, fmt.Sprintf("127.0.0.1:%d", port))
		srv, err := distribute.NewServer(c, nil)
		ok(t, err)
		ok(t, srv.KeyValueSet("k", []byte("v")))
	}()
	collectUntil(t, "a server", func() bool { return portFree(port) })
}

func TestRemoteValuesAndPerWorkerKeepTheirForgottenCoordinator(t *testing.T) {
	ok(t, distribute.RegisterClosure("go_finalizer_slow",
		func(*distribute.Strategy, *distribute.ClosureArgs) (*distribute.Value, error) {
			time.Sleep(100 * time.Millisecond)
			return distribute.NewTensor([]float32{7}, nil, "CPU:0")
		}))
	defer distribute.UnregisterClosure("go_finalizer_slow")
	strategy, stop := psJob(t)
	defer stop()
	values, perWorker := func() ([]*distribute.RemoteValue, *distribute.PerWorker) {
		c, err := distribute.NewCoordinator(strategy)
		ok(t, err)
		var values []*distribute.RemoteValue
		for i := 0; i < 3; i++ { // one worker: the second and third wait in the queue
			rv, err := c.Schedule("go_finalizer_slow", nil)
			ok(t, err)
			values = append(values, rv)
		}
		pw, err := c.CreatePerWorkerDataset("go_none", nil)
		ok(t, err)
		return values, pw // the coordinator is forgotten
	}()
	alreadyExists := func() bool {
		c, err := distribute.NewCoordinator(strategy)
		if err == nil {
			c.Close()
			return false
		}
		if !errors.Is(err, distribute.ErrAlreadyExists) {
			t.Fatalf("a second coordinator: %v", err)
		}
		return true
	}
	collect()
	if !alreadyExists() {
		t.Fatal("the coordinator was released while its remote values live")
	}
	for i, rv := range values { // none cancelled
		r, err := rv.Fetch()
		ok(t, err)
		if x := scalarOf(t, r); x != 7 {
			t.Fatalf("closure %d returned %v", i, x)
		}
		r.Close()
	}
	values = nil
	collect()
	if !alreadyExists() {
		t.Fatal("the coordinator was released while a per-worker dataset of it lives")
	}
	it, err := perWorker.MakeIterator()
	ok(t, err)
	perWorker = nil
	collect()
	if !alreadyExists() {
		t.Fatal("the coordinator was released while a per-worker iterator of it lives")
	}
	runtime.KeepAlive(it) // the last use: now all are forgotten
	collectUntil(t, "a coordinator after its remote values and per-worker handles", func() bool { return !alreadyExists() })
}

// Collections while calls are in flight: every call keeps the handles it passes to C
// reachable, so a finalizer never releases one mid-call (results stay right, and -race and
// cgocheck stay quiet).
func TestCollectionsDuringCalls(t *testing.T) {
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
				runtime.GC()
			}
		}
	}()
	defer func() {
		close(stop)
		wg.Wait()
	}()
	s := mirrored(t, 2)
	defer s.Close()
	for i := 0; i < 300; i++ {
		x := float32(i)
		// Handles used once and forgotten, their last use inside a call.
		if got := readF32(t, f32(t, []float32{x, x + 1}, []int64{2}, "CPU:1")); !eqF32(got, []float32{x, x + 1}) {
			t.Fatalf("step %d: read %v", i, got)
		}
		dev, err := f32(t, []float32{x}, nil, "CPU:1").Device()
		ok(t, err)
		if dev != "/device:CPU:1" {
			t.Fatalf("step %d: device %q", i, dev)
		}
		out, err := s.Run(func(ctx *distribute.ReplicaContext, args []*distribute.Value) ([]*distribute.Value, error) {
			runtime.GC()
			sum, err := ctx.AllReduce(distribute.Sum, args[0])
			return []*distribute.Value{sum}, err
		}, []*distribute.Value{scalar(t, x, "")}, 1)
		ok(t, err)
		total, err := s.Reduce(distribute.Mean, out[0])
		ok(t, err)
		if got := scalarOf(t, total); got != 2*x {
			t.Fatalf("step %d: all-reduce %v, want %v", i, got, 2*x)
		}
		d, err := distribute.DatasetRange(int64(i), int64(i)+3, 1)
		ok(t, err)
		it, err := d.MakeIterator()
		ok(t, err)
		e, err := it.GetNext()
		ok(t, err)
		if got, err := e[0].ScalarInt64(); err != nil || got != int64(i) {
			t.Fatalf("step %d: element %v %v", i, got, err)
		}
	}
}
