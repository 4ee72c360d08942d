package tests

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"unsafe"

	"distribute"
)

// 14 rows, global batch 8 over 2 replicas: step 1 splits 4 + 4, the partial last batch of
// 6 rows fills the replicas in order with the per-replica batch size (8 / 2): 4 + 2, as
// tests/c/test_distributed_input.c expects; the iterator then ends on every replica together.
func TestDistributedDatasetPartialBatch(t *testing.T) {
	s := mirrored(t, 2)
	defer s.Close()
	rows := make([]float32, 14)
	for i := range rows {
		rows[i] = float32(i)
	}
	x := f32(t, rows, []int64{14, 1}, "")
	defer x.Close()
	ds, err := distribute.DatasetFromTensorSlices(x)
	ok(t, err)
	defer ds.Close()
	b, err := ds.Batch(8, false)
	ok(t, err)
	defer b.Close()
	opts, err := distribute.NewInputOptions()
	ok(t, err)
	defer opts.Close()
	ok(t, opts.SetPrefetchDepth(2))
	ok(t, opts.SetReplicationMode(distribute.InputPerWorker))
	ok(t, opts.SetAutoShardPolicy(distribute.AutoShardAuto))
	ok(t, opts.SetFetchToDevice(true))
	ok(t, opts.SetPerReplicaBatches(false))
	dd, err := s.DistributeDataset(b, opts)
	ok(t, err)
	defer dd.Close()
	nc, err := dd.NumComponents()
	ok(t, err)
	if nc != 1 {
		t.Fatalf("components %d", nc)
	}
	it, err := dd.MakeIterator()
	ok(t, err)
	defer it.Close()
	want := [][][]float32{{{0, 1, 2, 3}, {4, 5, 6, 7}}, {{8, 9, 10, 11}, {12, 13}}}
	var sums []float32
	for step := 0; ; step++ {
		el, more, err := it.Next()
		ok(t, err)
		if !more {
			if step != 2 {
				t.Fatalf("%d steps, want 2", step)
			}
			break
		}
		got := componentsF32(t, el[0])
		if fmt.Sprint(got) != fmt.Sprint(want[step]) {
			t.Fatalf("step %d: %v, want %v", step, got, want[step])
		}
		// Run over the PerReplica batch: each replica sums its rows, then all-reduce.
		res, err := s.Run(func(ctx *distribute.ReplicaContext, args []*distribute.Value) ([]*distribute.Value, error) {
			d, err := args[0].Float32s()
			if err != nil {
				return nil, err
			}
			var local float32
			for _, v := range d {
				local += v
			}
			l, err := distribute.Scalar(local, "")
			if err != nil {
				return nil, err
			}
			defer l.Close()
			r, err := ctx.AllReduce(distribute.Sum, l)
			return []*distribute.Value{r}, err
		}, el, 1)
		ok(t, err)
		sums = append(sums, componentsF32(t, res[0])[0][0])
		// reduce with axis 0 over the (partial) batch: the mean of its rows.
		m, err := s.ReduceAxis(distribute.Mean, el[0], 0)
		ok(t, err)
		wantMean := []float32{3.5, 10.5}[step]
		if got := readF32(t, m); got[0] != wantMean {
			t.Fatalf("step %d mean %v want %v", step, got, wantMean)
		}
		m.Close()
		distribute.CloseAll(res)
		distribute.CloseAll(el)
	}
	if !eqF32(sums, []float32{28, 63}) {
		t.Fatalf("sums %v", sums)
	}
	// GetNext at the end: OUT_OF_RANGE.
	_, err = it.GetNext()
	wantErr(t, err, distribute.ErrOutOfRange, "")
}

func TestDatasetsAndTransformations(t *testing.T) {
	r, err := distribute.DatasetRange(0, 10, 1)
	ok(t, err)
	defer r.Close()
	var calls int32
	sq, err := r.Map(func(in []*distribute.Value) ([]*distribute.Value, error) {
		atomic.AddInt32(&calls, 1)
		x, err := in[0].ScalarInt64()
		if err != nil {
			return nil, err
		}
		v, err := distribute.Scalar(x*x, "")
		return []*distribute.Value{v}, err
	}, 1, 2)
	ok(t, err)
	defer sq.Close()
	sk, err := sq.Skip(2)
	ok(t, err)
	defer sk.Close()
	tk, err := sk.Take(5)
	ok(t, err)
	defer tk.Close()
	sh, err := tk.Shard(2, 0)
	ok(t, err)
	defer sh.Close()
	rp, err := sh.Repeat(2)
	ok(t, err)
	defer rp.Close()
	pf, err := rp.Prefetch(2)
	ok(t, err)
	defer pf.Close()
	it, err := pf.MakeIterator()
	ok(t, err)
	var got []int64
	for {
		el, more, err := it.Next()
		ok(t, err)
		if !more {
			break
		}
		x, err := el[0].ScalarInt64()
		ok(t, err)
		got = append(got, x)
		distribute.CloseAll(el)
	}
	it.Close()
	// squares of 2..6, every other one, twice.
	if fmt.Sprint(got) != "[4 16 36 4 16 36]" {
		t.Fatalf("pipeline gave %v", got)
	}
	// Shuffle keeps the elements.
	shuf, err := r.Shuffle(10, 42)
	ok(t, err)
	defer shuf.Close()
	it, err = shuf.MakeIterator()
	ok(t, err)
	var total int64
	for {
		el, more, err := it.Next()
		ok(t, err)
		if !more {
			break
		}
		x, _ := el[0].ScalarInt64()
		total += x
		distribute.CloseAll(el)
	}
	it.Close()
	if total != 45 {
		t.Fatalf("shuffled sum %d", total)
	}
	// A generator in Go, and a failing map function: the error reaches GetNext.
	gen, err := distribute.DatasetFromGenerator(2, func(i int64) ([]*distribute.Value, bool, error) {
		if i == 3 {
			return nil, true, nil
		}
		a, err := distribute.Scalar(float32(i), "")
		if err != nil {
			return nil, false, err
		}
		b, err := distribute.Scalar(int32(-i), "")
		return []*distribute.Value{a, b}, false, err
	})
	ok(t, err)
	defer gen.Close()
	n, err := gen.NumComponents()
	ok(t, err)
	if n != 2 {
		t.Fatalf("components %d", n)
	}
	it, err = gen.MakeIterator()
	ok(t, err)
	for i := 0; i < 3; i++ {
		el, err := it.GetNext()
		ok(t, err)
		a, _ := el[0].ScalarFloat32()
		b, _ := el[1].ScalarInt32()
		if a != float32(i) || b != int32(-i) {
			t.Fatalf("generator %d: %v %v", i, a, b)
		}
		distribute.CloseAll(el)
	}
	_, err = it.GetNext()
	wantErr(t, err, distribute.ErrOutOfRange, "")
	it.Close()
	bad, err := r.Map(func(in []*distribute.Value) ([]*distribute.Value, error) {
		return nil, &distribute.Error{Code: distribute.CodeDataLoss, Msg: "bad row"}
	}, 1, 1)
	ok(t, err)
	defer bad.Close()
	it, err = bad.MakeIterator()
	ok(t, err)
	_, err = it.GetNext()
	// The map function's own message travels with its status (dist_set_last_error_message).
	wantErr(t, err, distribute.ErrDataLoss, "bad row")
	it.Close()
	panicky, err := r.Map(func(in []*distribute.Value) ([]*distribute.Value, error) { panic("map panic") }, 1, 1)
	ok(t, err)
	defer panicky.Close()
	it, err = panicky.MakeIterator()
	ok(t, err)
	_, err = it.GetNext()
	if err == nil {
		t.Fatal("panicking map: no error")
	}
	it.Close()
}

func TestFileDatasets(t *testing.T) {
	dir := t.TempDir()
	ok(t, os.WriteFile(dir+"/a.txt", []byte("one\ntwo\r\nthree\n"), 0o644))
	ok(t, os.WriteFile(dir+"/r.bin", []byte("HHabcdefFF"), 0o644))
	txt, err := distribute.DatasetFromTextFiles(dir + "/a.txt")
	ok(t, err)
	defer txt.Close()
	it, err := txt.MakeIterator()
	ok(t, err)
	var lines []string
	for {
		el, more, err := it.Next()
		ok(t, err)
		if !more {
			break
		}
		b, err := el[0].Bytes()
		ok(t, err)
		lines = append(lines, string(b))
		distribute.CloseAll(el)
	}
	it.Close()
	if len(lines) != 3 {
		t.Fatalf("lines %q", lines)
	}
	fl, err := distribute.DatasetFromFixedLengthRecords([]string{dir + "/r.bin"}, 3, 2, 2)
	ok(t, err)
	defer fl.Close()
	it, err = fl.MakeIterator()
	ok(t, err)
	count := 0
	for {
		el, more, err := it.Next()
		ok(t, err)
		if !more {
			break
		}
		count++
		distribute.CloseAll(el)
	}
	it.Close()
	if count != 2 {
		t.Fatalf("records %d", count)
	}
	tf, err := distribute.DatasetFromTFRecordFiles(dir + "/nope.tfrecord")
	if err == nil {
		it, err := tf.MakeIterator()
		if err == nil {
			_, err = it.GetNext()
			it.Close()
		}
		tf.Close()
		if err == nil {
			t.Fatal("missing tfrecord file: no error")
		}
	}
}

func TestDatasetsFromFunctionAndInputContext(t *testing.T) {
	s := mirrored(t, 2)
	defer s.Close()
	var pipelines int32
	dd, err := s.DistributeDatasetsFromFunction(func(ctx *distribute.InputContext) (*distribute.Dataset, error) {
		atomic.AddInt32(&pipelines, 1)
		n, err := ctx.NumInputPipelines()
		if err != nil || n != 1 {
			return nil, fmt.Errorf("pipelines %d %v", n, err)
		}
		id, _ := ctx.InputPipelineID()
		nr, _ := ctx.NumReplicasInSync()
		per, err := ctx.PerReplicaBatchSize(4)
		if err != nil || id != 0 || nr != 2 || per != 2 {
			return nil, fmt.Errorf("context %d %d %d %v", id, nr, per, err)
		}
		r, err := distribute.DatasetRange(0, 8, 1)
		if err != nil {
			return nil, err
		}
		defer r.Close()
		return r.Batch(per, false)
	}, nil)
	ok(t, err)
	defer dd.Close()
	if pipelines != 1 {
		t.Fatalf("dataset fn called %d times", pipelines)
	}
	it, err := dd.MakeIterator()
	ok(t, err)
	el, err := it.GetNext()
	ok(t, err)
	k := kindOf(t, el[0])
	if k != distribute.KindPerReplica {
		t.Fatalf("kind %d", k)
	}
	distribute.CloseAll(el)
	it.Close()
	// A failing dataset function: its error is the Cause.
	boom := errors.New("no data here")
	_, err = s.DistributeDatasetsFromFunction(func(*distribute.InputContext) (*distribute.Dataset, error) { return nil, boom }, nil)
	if !errors.Is(err, boom) {
		t.Fatalf("want the dataset fn's error, got %v", err)
	}
	it, err = s.MakeInputFnIterator(func(ctx *distribute.InputContext) (*distribute.Dataset, error) {
		r, err := distribute.DatasetRange(0, 4, 1)
		if err != nil {
			return nil, err
		}
		defer r.Close()
		return r.Batch(2, false)
	}, 1)
	ok(t, err)
	el, err = it.GetNext()
	ok(t, err)
	distribute.CloseAll(el)
	it.Close()
	r, err := distribute.DatasetRange(0, 4, 1)
	ok(t, err)
	defer r.Close()
	b, err := r.Batch(2, true)
	ok(t, err)
	defer b.Close()
	it, err = s.MakeDatasetIterator(b)
	ok(t, err)
	el, err = it.GetNext()
	ok(t, err)
	if got := componentsF32ish(t, el[0]); got != "[[0] [1]]" {
		t.Fatalf("make_dataset_iterator %s", got)
	}
	distribute.CloseAll(el)
	it.Close()
	ic, err := distribute.NewInputContext(2, 1, 4)
	ok(t, err)
	defer ic.Close()
	_, err = ic.PerReplicaBatchSize(10)
	wantErr(t, err, distribute.ErrInvalidArgument, "")
	_, err = distribute.NewInputContext(1, 1, 1)
	wantErr(t, err, distribute.ErrInvalidArgument, "")
}

func componentsF32ish(t *testing.T, v *distribute.Value) string {
	n, err := v.NumComponents()
	ok(t, err)
	var parts []string
	for i := 0; i < n; i++ {
		c, err := v.ComponentTensor(i)
		ok(t, err)
		d, err := distribute.Data[int64](c)
		ok(t, err)
		parts = append(parts, fmt.Sprint(d))
		c.Close()
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// Tensors: Go slices in and out, dtypes, 64-bit dimensions, C memory wrapped without a copy.
func TestTensors(t *testing.T) {
	v, err := distribute.NewTensor([]float64{1, 2, 3, 4, 5, 6}, []int64{2, 3}, "CPU:1")
	ok(t, err)
	defer v.Close()
	shape, err := v.Shape()
	ok(t, err)
	rank, _ := v.Rank()
	n, _ := v.NumElements()
	bs, _ := v.ByteSize()
	dt, _ := v.DType()
	dev, _ := v.Device()
	if fmt.Sprint(shape) != "[2 3]" || rank != 2 || n != 6 || bs != 48 || dt != distribute.Float64 || !strings.HasSuffix(dev, "CPU:1") {
		t.Fatalf("tensor %v %d %d %d %v %q", shape, rank, n, bs, dt, dev)
	}
	d, err := distribute.Data[float64](v)
	ok(t, err)
	if fmt.Sprint(d) != "[1 2 3 4 5 6]" {
		t.Fatalf("data %v", d)
	}
	_, err = distribute.Data[float32](v)
	wantErr(t, err, distribute.ErrInvalidArgument, "float64")
	c, err := v.CopyToDevice("CPU:0")
	ok(t, err)
	cd, _ := c.Device()
	c.Close()
	if !strings.HasSuffix(cd, "CPU:0") {
		t.Fatalf("copy device %q", cd)
	}
	_, err = v.ScalarFloat64()
	wantErr(t, err, distribute.ErrInvalidArgument, "")
	for _, dtc := range []struct {
		dt   distribute.DType
		size int
		name string
	}{{distribute.Float32, 4, "float32"}, {distribute.Int64, 8, "int64"}, {distribute.Bool, 1, "bool"}, {distribute.BFloat16, 2, "bfloat16"}, {distribute.Float16, 2, "float16"}, {distribute.Uint8, 1, "uint8"}, {distribute.Int8, 1, "int8"}, {distribute.Int16, 2, "int16"}, {distribute.Int32, 4, "int32"}} {
		sz, err := dtc.dt.Size()
		ok(t, err)
		if sz != dtc.size || dtc.dt.String() != dtc.name {
			t.Fatalf("%v: size %d name %q", dtc.dt, sz, dtc.dt.String())
		}
	}
	if distribute.DType(77).String() != "invalid" {
		t.Fatal("dtype 77 name")
	}
	_, err = distribute.DType(77).Size()
	wantErr(t, err, distribute.ErrInvalidArgument, "")
	bt, err := distribute.NewTensor([]bool{true, false}, []int64{2}, "")
	ok(t, err)
	bd, err := distribute.Data[bool](bt)
	ok(t, err)
	bt.Close()
	if fmt.Sprint(bd) != "[true false]" {
		t.Fatalf("bools %v", bd)
	}
	h, err := distribute.NewTensorBytes(distribute.Float16, []int64{1}, []byte{0x00, 0x3c}, "")
	ok(t, err)
	h.Close()
	i32, err := distribute.Scalar(int32(-7), "")
	ok(t, err)
	x32, _ := i32.ScalarInt32()
	i32.Close()
	f, err := distribute.Scalar(2.5, "")
	ok(t, err)
	x64, _ := f.ScalarFloat64()
	f.Close()
	if x32 != -7 || x64 != 2.5 {
		t.Fatalf("scalars %v %v", x32, x64)
	}
	// Mirrored value over two devices.
	a := f32(t, []float32{1}, []int64{1}, "CPU:0")
	b := f32(t, []float32{1}, []int64{1}, "CPU:1")
	m, err := distribute.NewMirrored(a, b)
	ok(t, err)
	if k := kindOf(t, m); k != distribute.KindMirrored {
		t.Fatalf("kind %d", k)
	}
	m.Close()
	a.Close()
	b.Close()
}

// 64-bit dimensions stay 64-bit: a dimension above 2^31 (with an empty second axis).
func TestSixtyFourBitDimensions(t *testing.T) {
	big := int64(1)<<31 + 12345
	v, err := distribute.NewTensor[float32](nil, []int64{big, 0}, "")
	ok(t, err)
	defer v.Close()
	shape, err := v.Shape()
	ok(t, err)
	if shape[0] != big || shape[1] != 0 {
		t.Fatalf("shape %v, want [%d 0]", shape, big)
	}
	n, err := v.NumElements()
	ok(t, err)
	if n != 0 {
		t.Fatalf("elements %d", n)
	}
	// An overflowing shape is refused, not truncated.
	_, err = distribute.NewTensor[float32](nil, []int64{1 << 40, 1 << 40}, "")
	wantErr(t, err, distribute.ErrInvalidArgument, "")
	// A 64-bit dataset range.
	r, err := distribute.DatasetRange(1<<40, 1<<40+2, 1)
	ok(t, err)
	defer r.Close()
	it, err := r.MakeIterator()
	ok(t, err)
	defer it.Close()
	el, err := it.GetNext()
	ok(t, err)
	x, err := el[0].ScalarInt64()
	ok(t, err)
	distribute.CloseAll(el)
	if x != 1<<40 {
		t.Fatalf("range element %d", x)
	}
}

// C memory wrapped without a copy; release runs once when the last value is gone.
func TestWrapCMemory(t *testing.T) {
	var released int32
	buf := cMalloc(16)
	floats := unsafe.Slice((*float32)(buf), 4)
	copy(floats, []float32{1, 2, 3, 4})
	v, err := distribute.WrapC(distribute.Float32, []int64{4}, buf, 16, "", func() {
		atomic.AddInt32(&released, 1)
		cFree(buf)
	})
	ok(t, err)
	p, err := v.DataPointer()
	ok(t, err)
	if p != buf {
		t.Fatal("wrap copied the buffer")
	}
	if got := readF32(t, v); !eqF32(got, []float32{1, 2, 3, 4}) {
		t.Fatalf("wrapped %v", got)
	}
	v.Close()
	if atomic.LoadInt32(&released) != 1 {
		t.Fatalf("release ran %d times", released)
	}
	// A size mismatch fails and does not call release.
	buf2 := cMalloc(8)
	_, err = distribute.WrapC(distribute.Float32, []int64{4}, buf2, 8, "", func() { atomic.AddInt32(&released, 10) })
	wantErr(t, err, distribute.ErrInvalidArgument, "")
	cFree(buf2)
	if released != 1 {
		t.Fatalf("release after failure: %d", released)
	}
	// DLPack round trip.
	w := f32(t, []float32{5, 6}, []int64{2}, "")
	m, err := w.ToDLPack()
	ok(t, err)
	w.Close()
	back, err := distribute.FromDLPack(m)
	ok(t, err)
	if got := readF32(t, back); !eqF32(got, []float32{5, 6}) {
		t.Fatalf("dlpack %v", got)
	}
	back.Close()
	_, err = distribute.FromDLPack(nil)
	wantErr(t, err, distribute.ErrInvalidArgument, "")
}

// Bad input: a clear error, never a crash: nil and closed handles, bad names, bad sizes.
func TestBadInput(t *testing.T) {
	var nilS *distribute.Strategy
	_, err := nilS.NumReplicasInSync()
	wantErr(t, err, distribute.ErrInvalidArgument, "dist_strategy_num_replicas_in_sync")
	s, err := distribute.NewOneDeviceStrategy("CPU:0")
	ok(t, err)
	s.Close()
	s.Close() // twice is fine
	_, err = s.Run(func(*distribute.ReplicaContext, []*distribute.Value) ([]*distribute.Value, error) { return nil, nil }, nil, 0)
	wantErr(t, err, distribute.ErrInvalidArgument, "")
	m1 := mirrored(t, 2)
	_, err = m1.Run(func(*distribute.ReplicaContext, []*distribute.Value) ([]*distribute.Value, error) { return nil, nil }, nil, -1)
	wantErr(t, err, distribute.ErrInvalidArgument, "negative")
	m1.Close()
	_, err = distribute.NewOneDeviceStrategy("NOPE:0")
	wantErr(t, err, distribute.ErrInvalidArgument, "NOPE")
	_, err = distribute.NewOneDeviceStrategy("CPU:99")
	wantErr(t, err, distribute.ErrNotFound, "")
	_, err = distribute.NewMirroredStrategy([]string{"CPU:0", "CPU:0"}, nil)
	wantErr(t, err, distribute.ErrInvalidArgument, "")
	_, err = distribute.NewTensor([]float32{1, 2, 3}, []int64{2}, "")
	wantErr(t, err, distribute.ErrInvalidArgument, "")
	_, err = distribute.NewTensor([]float32{1}, []int64{-1}, "")
	wantErr(t, err, distribute.ErrInvalidArgument, "")
	_, err = distribute.NewTensorBytes(distribute.DType(99), nil, []byte{1}, "")
	wantErr(t, err, distribute.ErrInvalidArgument, "")
	var nilV *distribute.Value
	_, err = nilV.Kind()
	wantErr(t, err, distribute.ErrInvalidArgument, "")
	nilV.Close()
	v := scalar(t, 1, "")
	v.Close()
	_, err = v.Float32s()
	wantErr(t, err, distribute.ErrInvalidArgument, "")
	m := mirrored(t, 2)
	defer m.Close()
	x := scalar(t, 1, "")
	defer x.Close()
	_, err = m.Reduce(distribute.Sum, x) // a plain tensor under SUM with 2 replicas
	wantErr(t, err, distribute.ErrInvalidArgument, "")
	_, err = m.Reduce(distribute.ReduceOp(42), x)
	wantErr(t, err, distribute.ErrInvalidArgument, "")
	_, err = m.BatchReduceTo(distribute.Sum, []*distribute.Value{x}, nil)
	wantErr(t, err, distribute.ErrInvalidArgument, "")
	_, err = distribute.DatasetRange(0, 10, 0)
	wantErr(t, err, distribute.ErrInvalidArgument, "")
	var nilD *distribute.Dataset
	_, err = nilD.Batch(2, false)
	wantErr(t, err, distribute.ErrInvalidArgument, "")
	_, err = distribute.ParseDevice("/device:XPU:zz")
	wantErr(t, err, distribute.ErrInvalidArgument, "")
	wantErr(t, distribute.SetLogicalCPUDeviceCount(0), distribute.ErrInvalidArgument, "")
	_, err = distribute.ClusterFromTFConfig("{not json")
	wantErr(t, err, distribute.ErrInvalidArgument, "")
	o, err := distribute.NewCommunicationOptions()
	ok(t, err)
	defer o.Close()
	wantErr(t, o.SetImplementation(7), distribute.ErrInvalidArgument, "")
	wantErr(t, o.SetSharedMemory(3), distribute.ErrInvalidArgument, "shared memory mode 3")
	wantErr(t, o.SetTimeoutMs(-1), distribute.ErrInvalidArgument, "")
	var e *distribute.Error
	if !errors.As(o.SetBytesPerPack(-5), &e) || e.Code != distribute.CodeInvalidArgument || e.Code.String() != "INVALID_ARGUMENT" {
		t.Fatalf("error %v", e)
	}
	if errors.Is(e, distribute.ErrNotFound) {
		t.Fatal("INVALID_ARGUMENT matched NOT_FOUND")
	}
}

func TestDevicesClusterServer(t *testing.T) {
	if distribute.Version() != distribute.HeaderVersion || distribute.VersionNumber() != 100 {
		t.Fatalf("version %q %d, header %q", distribute.Version(), distribute.VersionNumber(), distribute.HeaderVersion)
	}
	d, err := distribute.ParseDevice("/job:worker/replica:0/task:1/device:GPU:2")
	ok(t, err)
	defer d.Close()
	name, _ := d.Name()
	job, _ := d.Job()
	rep, _ := d.Replica()
	task, _ := d.Task()
	typ, _ := d.Type()
	idx, _ := d.Index()
	if name != "/job:worker/replica:0/task:1/device:GPU:2" || job != "worker" || rep != 0 || task != 1 || typ != distribute.DeviceGPU || idx != 2 {
		t.Fatalf("device %q %q %d %d %d %d", name, job, rep, task, typ, idx)
	}
	n, err := distribute.LocalDeviceCount()
	ok(t, err)
	if n < numCPUs {
		t.Fatalf("local devices %d", n)
	}
	ld, err := distribute.LocalDevice(0)
	ok(t, err)
	ldn, _ := ld.Name()
	ld.Close()
	if !strings.HasSuffix(ldn, "CPU:0") {
		t.Fatalf("local device %q", ldn)
	}
	if n == numCPUs {
		reason, err := distribute.GPUUnavailableReason()
		ok(t, err)
		if reason == "" {
			t.Fatal("no reason for no GPU")
		}
	}
	c, err := distribute.ClusterFromTFConfig(`{"cluster":{"chief":["127.0.0.1:2000"],"worker":["127.0.0.1:2001","127.0.0.1:2002"]},"task":{"type":"worker","index":1}}`)
	ok(t, err)
	defer c.Close()
	tt, _ := c.TaskType()
	ti, _ := c.TaskIndex()
	chief, _ := c.IsChief()
	nw, _ := c.NumWorkers()
	nt, _ := c.NumTasks("worker")
	at, _ := c.TaskIndexAt("worker", 1)
	addr, _ := c.TaskAddress("worker", 1)
	if tt != "worker" || ti != 1 || chief || nw != 3 || nt != 2 || at != 1 || addr != "127.0.0.1:2002" {
		t.Fatalf("cluster %q %d %v %d %d %d %q", tt, ti, chief, nw, nt, at, addr)
	}
	// A one-worker cluster's server on a free loopback port.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	ok(t, err)
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	one, err := distribute.NewCluster()
	ok(t, err)
	defer one.Close()
	ok(t, one.AddTask("worker", 0, fmt.Sprintf("127.0.0.1:%d", port)))
	ok(t, one.SetTask("worker", 0))
	wantErr(t, one.SetTask("worker", 5), distribute.ErrInvalidArgument, "")
	so, err := distribute.NewServerOptions()
	ok(t, err)
	defer so.Close()
	ok(t, so.SetStartupTimeoutMs(5000))
	ok(t, so.SetHeartbeatIntervalMs(100))
	ok(t, so.SetHeartbeatTimeoutMs(2000))
	srv, err := distribute.NewServer(one, so)
	ok(t, err)
	defer srv.Close()
	p, err := srv.Port()
	ok(t, err)
	if p != port {
		t.Fatalf("port %d want %d", p, port)
	}
	ok(t, srv.KeyValueSet("k", []byte("hello")))
	got, err := srv.KeyValueGet("k", 1000)
	ok(t, err)
	if string(got) != "hello" {
		t.Fatalf("kv %q", got)
	}
	_, err = srv.KeyValueGet("missing", 0)
	if err == nil {
		t.Fatal("missing key: no error")
	}
	ok(t, srv.Barrier("b", 1000))
	ok(t, srv.PeerHealth())
	ok(t, srv.Stop())
	ok(t, srv.Join())
	// Communication options.
	o, err := distribute.NewCommunicationOptions()
	ok(t, err)
	defer o.Close()
	ok(t, o.SetImplementation(distribute.CommunicationRing))
	ok(t, o.SetSharedMemory(distribute.SharedMemoryOff))
	ok(t, o.SetSharedMemory(distribute.SharedMemoryOn))
	ok(t, o.SetBytesPerPack(1<<20))
	ok(t, o.SetTimeoutMs(30000))
	ok(t, o.SetReplicasPerWorker(2))
	// MultiWorkerMirrored without a cluster and TF_CONFIG unset, "" or "{}": one local
	// worker with the options' 2 replicas (TF's behaviour), no server and no error.
	for _, tfc := range []*string{nil, new(string), func() *string { s := "{}"; return &s }()} {
		if tfc == nil {
			unsetEnv(t, "TF_CONFIG")
		} else {
			t.Setenv("TF_CONFIG", *tfc)
		}
		mw, err := distribute.NewMultiWorkerMirroredStrategy(nil, o)
		ok(t, err)
		k, err := mw.Kind()
		ok(t, err)
		nr, err := mw.NumReplicasInSync()
		ok(t, err)
		mw.Close()
		if k != distribute.StrategyMultiWorkerMirrored || nr != 2 {
			t.Fatalf("TF_CONFIG %v: kind %d replicas %d, want multi-worker mirrored with 2", tfc, k, nr)
		}
	}
}

// unsetEnv unsets an environment variable for the test and restores it after.
func unsetEnv(t *testing.T, key string) {
	t.Helper()
	if old, had := os.LookupEnv(key); had {
		t.Cleanup(func() { os.Setenv(key, old) })
	}
	os.Unsetenv(key)
}

// Map with Autotune (DIST_AUTOTUNE) keeps the input order; a negative numParallelCalls
// other than Autotune is refused.
func TestMapAutotune(t *testing.T) {
	if distribute.Autotune != -1 {
		t.Fatalf("Autotune is %d, want -1 (tf.data.AUTOTUNE)", distribute.Autotune)
	}
	r, err := distribute.DatasetRange(0, 20, 1)
	ok(t, err)
	defer r.Close()
	triple := func(in []*distribute.Value) ([]*distribute.Value, error) {
		x, err := in[0].ScalarInt64()
		if err != nil {
			return nil, err
		}
		v, err := distribute.Scalar(3*x, "")
		return []*distribute.Value{v}, err
	}
	m, err := r.Map(triple, 1, distribute.Autotune)
	ok(t, err)
	defer m.Close()
	it, err := m.MakeIterator()
	ok(t, err)
	defer it.Close()
	for i := int64(0); i < 20; i++ {
		el, err := it.GetNext()
		ok(t, err)
		got, err := el[0].ScalarInt64()
		ok(t, err)
		el[0].Close()
		if got != 3*i {
			t.Fatalf("element %d: got %d, want %d", i, got, 3*i)
		}
	}
	_, err = r.Map(triple, 1, -2)
	wantErr(t, err, distribute.ErrInvalidArgument, "AUTOTUNE")
}
