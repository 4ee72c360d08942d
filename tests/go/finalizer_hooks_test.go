//go:build distribute_testhooks

package tests

// With the binding's test hook (tests/go/run.sh builds with -tags distribute_testhooks):
// distribute.FinalizedHandles counts, by type, the handles their finalizer released. Every
// type a caller can own is released once forgotten and never once closed, and a child
// works after its parent's Go handle was released.

import (
	"fmt"
	"reflect"
	"testing"

	"distribute"
)

// settled runs collections until the finalizer counts stop changing, and returns them.
func settled() map[string]int64 {
	prev := distribute.FinalizedHandles()
	for same := 0; same < 3; {
		collect()
		cur := distribute.FinalizedHandles()
		if reflect.DeepEqual(prev, cur) {
			same++
		} else {
			same = 0
		}
		prev = cur
	}
	return prev
}

// handlesOfEveryType makes a handle of every type a caller can own, counted by type, and
// closes them when closeThem; otherwise they are forgotten when it returns.
func handlesOfEveryType(t *testing.T, psStrategy *distribute.Strategy, closeThem bool) map[string]int64 {
	t.Helper()
	made := map[string]int64{}
	var closers []func()
	add := func(kind string, err error, close func()) {
		t.Helper()
		ok(t, err)
		made[kind]++
		closers = append(closers, close)
	}
	v, err := distribute.Scalar(float32(1), "")
	add("Value", err, v.Close)
	s, err := distribute.NewOneDeviceStrategy("CPU:0")
	add("Strategy", err, s.Close)
	d, err := distribute.DatasetRange(0, 4, 1)
	add("Dataset", err, d.Close)
	b, err := d.Batch(2, true)
	add("Dataset", err, b.Close)
	it, err := d.MakeIterator()
	add("Iterator", err, it.Close)
	io, err := distribute.NewInputOptions()
	add("InputOptions", err, io.Close)
	dd, err := s.DistributeDataset(b, io)
	add("DistributedDataset", err, dd.Close)
	ic, err := distribute.NewInputContext(1, 0, 1)
	add("InputContext", err, ic.Close)
	dev, err := distribute.ParseDevice("/job:worker/replica:0/task:1/device:CPU:0")
	add("Device", err, dev.Close)
	cdo, err := distribute.NewHierarchicalCopy(1)
	add("CrossDeviceOps", err, cdo.Close)
	co, err := distribute.NewCommunicationOptions()
	add("CommunicationOptions", err, co.Close)
	cl, err := distribute.NewCluster()
	add("Cluster", err, cl.Close)
	ok(t, cl.AddTask("worker", 0, fmt.Sprintf("127.0.0.1:%d", freePort(t))))
	ok(t, cl.SetTask("worker", 0))
	so, err := distribute.NewServerOptions()
	add("ServerOptions", err, so.Close)
	srv, err := distribute.NewServer(cl, so)
	add("Server", err, srv.Close)
	pso, err := distribute.NewParameterServerOptions()
	add("ParameterServerOptions", err, pso.Close)
	args, err := distribute.NewClosureArgs()
	add("ClosureArgs", err, args.Close)
	c, err := distribute.NewCoordinator(psStrategy)
	add("Coordinator", err, c.Close)
	rv, err := c.Schedule("go_finalizer_nothing", nil)
	add("RemoteValue", err, rv.Close)
	pw, err := c.CreatePerWorkerDataset("go_none", nil)
	add("PerWorker", err, pw.Close)
	if closeThem {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}
	return made
}

func TestEveryOwnedHandleTypeIsFinalizedOnceForgottenOnly(t *testing.T) {
	ok(t, distribute.RegisterClosure("go_finalizer_nothing",
		func(*distribute.Strategy, *distribute.ClosureArgs) (*distribute.Value, error) { return nil, nil }))
	defer distribute.UnregisterClosure("go_finalizer_nothing")
	psStrategy, stop := psJob(t)
	defer stop()
	before := settled()

	made := handlesOfEveryType(t, psStrategy, true)
	if after := settled(); !reflect.DeepEqual(after, before) {
		t.Fatalf("closed handles were finalized: counts %v, before %v", after, before)
	}

	made = handlesOfEveryType(t, psStrategy, false)
	if len(made) != len(before) {
		t.Fatalf("made %d types of handle, the binding has finalizers for %d: %v", len(made), len(before), before)
	}
	collectUntil(t, "every type of handle", func() bool {
		now := distribute.FinalizedHandles()
		for kind, n := range made {
			if now[kind] < before[kind]+n {
				return false
			}
		}
		return true
	})
	after := settled()
	for kind, n := range made {
		if after[kind] != before[kind]+n {
			t.Errorf("%s: %d finalized, want %d", kind, after[kind]-before[kind], n)
		}
	}
}

func TestIteratorWorksAfterItsDatasetWasFinalized(t *testing.T) {
	before := settled()
	it := func() *distribute.Iterator {
		d, err := distribute.DatasetRange(10, 13, 1)
		ok(t, err)
		it, err := d.MakeIterator()
		ok(t, err)
		return it // d is forgotten
	}()
	collectUntil(t, "a dataset", func() bool { return distribute.FinalizedHandles()["Dataset"] > before["Dataset"] })
	for want := int64(10); want < 13; want++ {
		e, err := it.GetNext()
		ok(t, err)
		if got, err := e[0].ScalarInt64(); err != nil || got != want {
			t.Fatalf("element %v %v, want %d", got, err, want)
		}
		distribute.CloseAll(e)
	}
	it.Close()
}
