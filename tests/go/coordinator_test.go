package tests

// The coordinator from Go: registration round trips and refusals, closure arguments, a
// coordinator refused over a local-mode strategy, and one job in this process (a ps task,
// a worker task whose server runs a Go closure, and the chief's strategy and coordinator
// on free loopback ports) whose closures add to a ps variable and return their argument.

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"testing"

	"distribute"
)

func TestClosureRegistrationAndArgs(t *testing.T) {
	fn := func(*distribute.Strategy, *distribute.ClosureArgs) (*distribute.Value, error) { return nil, nil }
	ok(t, distribute.RegisterClosure("go_noop", fn))
	defer distribute.UnregisterClosure("go_noop")
	if err := distribute.RegisterClosure("go_noop", fn); !errors.Is(err, distribute.ErrAlreadyExists) {
		t.Fatalf("second registration: %v", err)
	}
	yes, err := distribute.IsClosureRegistered("go_noop")
	ok(t, err)
	if !yes {
		t.Fatal("go_noop is not registered")
	}
	if err := distribute.UnregisterClosure("go_absent"); !errors.Is(err, distribute.ErrNotFound) {
		t.Fatalf("unregistering an absent closure: %v", err)
	}
	data := func(*distribute.InputContext) (*distribute.Dataset, error) { return distribute.DatasetRange(0, 4, 1) }
	ok(t, distribute.RegisterDatasetFunction("go_data", data))
	ok(t, distribute.UnregisterDatasetFunction("go_data"))

	args, err := distribute.NewClosureArgs()
	ok(t, err)
	defer args.Close()
	x, err := distribute.NewTensor([]float32{1, 2}, []int64{2}, "CPU:0")
	ok(t, err)
	defer x.Close()
	ok(t, args.AddValue(x))
	n, err := args.Count()
	ok(t, err)
	kind, err := args.Kind(0)
	ok(t, err)
	if n != 1 || kind != distribute.ClosureArgTensor {
		t.Fatalf("count %d kind %d", n, kind)
	}
	if _, err := args.Kind(1); !errors.Is(err, distribute.ErrOutOfRange) {
		t.Fatalf("kind of a missing argument: %v", err)
	}
	v, err := args.Value(0)
	ok(t, err)
	got, err := v.Float32s()
	ok(t, err)
	if fmt.Sprint(got) != "[1 2]" {
		t.Fatalf("argument 0 is %v", got)
	}
	if _, err := args.Iterator(0, 1); !errors.Is(err, distribute.ErrInvalidArgument) {
		t.Fatalf("iterator of a tensor argument: %v", err)
	}
	if err := args.AddPerWorker(nil); !errors.Is(err, distribute.ErrInvalidArgument) {
		t.Fatalf("nil per-worker value: %v", err)
	}

	local, err := distribute.NewParameterServerStrategy(nil, nil, nil)
	ok(t, err)
	defer local.Close()
	if _, err := distribute.NewCoordinator(local); !errors.Is(err, distribute.ErrInvalidArgument) {
		t.Fatalf("a coordinator over a local-mode strategy: %v", err)
	}
}

func TestCoordinatorRunsGoClosuresOnAWorker(t *testing.T) {
	ok(t, distribute.RegisterClosure("go_add_and_echo",
		func(s *distribute.Strategy, args *distribute.ClosureArgs) (*distribute.Value, error) {
			counter, err := args.Value(0)
			if err != nil {
				return nil, err
			}
			x, err := args.Value(1)
			if err != nil {
				return nil, err
			}
			one, err := distribute.NewTensor([]float32{1}, nil, "CPU:0")
			if err != nil {
				return nil, err
			}
			defer one.Close()
			if err := counter.AssignAdd(one); err != nil {
				return nil, err
			}
			f, err := x.ScalarFloat32()
			if err != nil {
				return nil, err
			}
			return distribute.NewTensor([]float32{2 * f}, nil, "CPU:0")
		}))
	defer distribute.UnregisterClosure("go_add_and_echo")
	strategy, stop := psJob(t)
	defer stop()
	coordinator, err := distribute.NewCoordinator(strategy)
	ok(t, err)
	defer coordinator.Close()
	zero, err := distribute.NewTensor([]float32{0}, nil, "CPU:0")
	ok(t, err)
	defer zero.Close()
	ok(t, strategy.ScopeEnter())
	counter, err := distribute.NewVariable(zero, distribute.SyncAuto, distribute.AggregationSum, "go_counter")
	ok(t, strategy.ScopeExit())
	ok(t, err)
	defer counter.Close()
	var values []*distribute.RemoteValue
	for i := 0; i < 10; i++ {
		args, err := distribute.NewClosureArgs()
		ok(t, err)
		x, err := distribute.NewTensor([]float32{float32(i)}, nil, "CPU:0")
		ok(t, err)
		ok(t, args.AddValue(counter))
		ok(t, args.AddValue(x))
		rv, err := coordinator.Schedule("go_add_and_echo", args)
		ok(t, err)
		values = append(values, rv)
		args.Close()
		x.Close()
	}
	ok(t, coordinator.Join())
	for i, rv := range values {
		r, err := rv.Fetch()
		ok(t, err)
		f, err := r.ScalarFloat32()
		ok(t, err)
		if f != float32(2*i) {
			t.Fatalf("closure %d returned %v", i, f)
		}
		r.Close()
		rv.Close()
	}
	total, err := counter.Read()
	ok(t, err)
	defer total.Close()
	f, err := total.ScalarFloat32()
	ok(t, err)
	if f != 10 {
		t.Fatalf("the counter is %v after 10 closures", f)
	}
	workers, err := coordinator.NumWorkers()
	ok(t, err)
	done, err := coordinator.Done()
	ok(t, err)
	if workers != 1 || !done {
		t.Fatalf("workers %d done %v", workers, done)
	}
	if _, err := coordinator.Schedule("go_unknown", nil); err != nil {
		t.Fatal(err)
	}
	if err := coordinator.Join(); !errors.Is(err, distribute.ErrNotFound) {
		t.Fatalf("an unknown function: %v", err)
	}
	ds, err := coordinator.CreatePerWorkerDataset("go_none", nil)
	ok(t, err)
	it, err := ds.MakeIterator()
	ok(t, err)
	ready, err := values[0].IsReady()
	if err == nil || ready {
		t.Fatalf("a closed remote value: %v %v", ready, err)
	}
	it.Close()
	ds.Close()
	ds2, err := coordinator.CreatePerWorkerDatasetFromFunction("go_none", nil)
	ok(t, err)
	ds2.Close()
}

// psJob runs one parameter-server job in this process on free loopback ports: a worker
// task and a ps task (their servers) and the chief's ParameterServerStrategy. Register the
// job's closures before. stop closes the strategy, then the servers.
func psJob(t *testing.T) (strategy *distribute.Strategy, stop func()) {
	t.Helper()
	ports := distinctFreePorts(t, 3) // chief, worker 0, ps 0
	clusterAs := func(job string) *distribute.Cluster {
		c, err := distribute.NewCluster()
		ok(t, err)
		ok(t, c.AddTask("chief", 0, fmt.Sprintf("localhost:%d", ports[0])))
		ok(t, c.AddTask("worker", 0, fmt.Sprintf("localhost:%d", ports[1])))
		ok(t, c.AddTask("ps", 0, fmt.Sprintf("localhost:%d", ports[2])))
		ok(t, c.SetTask(job, 0))
		return c
	}
	var wg sync.WaitGroup
	servers := make([]*distribute.Server, 2)
	errs := make([]error, 2)
	for i, job := range []string{"worker", "ps"} {
		wg.Add(1)
		go func(i int, job string) {
			defer wg.Done()
			c := clusterAs(job)
			defer c.Close()
			servers[i], errs[i] = distribute.NewServer(c, nil)
		}(i, job)
	}
	chief := clusterAs("chief")
	strategy, err := distribute.NewParameterServerStrategy(chief, nil, nil)
	wg.Wait()
	stop = func() {
		strategy.Close()
		for _, s := range servers {
			s.Close()
		}
		chief.Close()
	}
	for _, e := range errs {
		if err == nil {
			err = e
		}
	}
	if err != nil {
		stop()
		t.Fatalf("unexpected error: %v", err)
	}
	return strategy, stop
}

// distinctFreePorts is n loopback ports free now, all different (one at a time, a port
// just closed may come back).
func distinctFreePorts(t *testing.T, n int) []int {
	t.Helper()
	ports := make([]int, n)
	for i := range ports {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		ok(t, err)
		defer l.Close()
		ports[i] = l.Addr().(*net.TCPAddr).Port
	}
	return ports
}
