package tests

// Tests of the functions the header gained after 8fe93c1: the cluster's resolver fields,
// compressed TFRecord files, the partial-batch split, job tokens and unauthenticated jobs,
// and the integer-MEAN changes.

import (
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"net"
	"os"
	"strings"
	"testing"

	"distribute"
)

func TestClusterResolverFields(t *testing.T) {
	const worker1 = "127.0.0.1:2002"
	cases := []struct {
		json, rpc, env, master string
	}{
		{`{"cluster":{"chief":["127.0.0.1:2000"],"worker":["127.0.0.1:2001","` + worker1 + `"]},` +
			`"task":{"type":"worker","index":1},"rpc_layer":"grpc","environment":"cloud"}`, "grpc", "cloud", "grpc://" + worker1},
		{`{"cluster":{"chief":["127.0.0.1:2000"],"worker":["127.0.0.1:2001","` + worker1 + `"]},` +
			`"task":{"type":"worker","index":"1"}}`, "", "", worker1},
		// A single-task cluster has no master, as in TF.
		{`{"cluster":{"worker":["127.0.0.1:2001"]},"task":{"type":"worker","index":0},"rpc_layer":"grpc"}`, "grpc", "", ""},
	}
	for _, c := range cases {
		cl, err := distribute.ClusterFromTFConfig(c.json)
		ok(t, err)
		rpc, err := cl.RPCLayer()
		ok(t, err)
		env, err := cl.Environment()
		ok(t, err)
		master, err := cl.Master()
		ok(t, err)
		// The strings are copies: they outlive the cluster.
		cl.Close()
		if rpc != c.rpc || env != c.env || master != c.master {
			t.Fatalf("%s: rpc_layer %q environment %q master %q, want %q %q %q", c.json, rpc, env, master, c.rpc, c.env, c.master)
		}
	}
	// A cluster made by hand: no rpc_layer or environment; master is "" before a current
	// task is set, then host:port.
	cl, err := distribute.NewCluster()
	ok(t, err)
	defer cl.Close()
	ok(t, cl.AddTask("worker", 0, "127.0.0.1:3000"))
	ok(t, cl.AddTask("worker", 1, "127.0.0.1:3001"))
	for _, f := range []func() (string, error){cl.RPCLayer, cl.Environment, cl.Master} {
		s, err := f()
		ok(t, err)
		if s != "" {
			t.Fatalf("hand-made cluster: %q, want \"\"", s)
		}
	}
	ok(t, cl.SetTask("worker", 1))
	m, err := cl.Master()
	ok(t, err)
	if m != "127.0.0.1:3001" {
		t.Fatalf("master %q", m)
	}
}

func TestClusterResolverFieldsMisuse(t *testing.T) {
	var nilCluster *distribute.Cluster
	closed, err := distribute.NewCluster()
	ok(t, err)
	closed.Close()
	for _, c := range []*distribute.Cluster{nilCluster, closed} {
		for name, f := range map[string]func() (string, error){"RPCLayer": c.RPCLayer, "Environment": c.Environment, "Master": c.Master} {
			s, err := f()
			wantErr(t, err, distribute.ErrInvalidArgument, "")
			if s != "" {
				t.Fatalf("%s on a nil cluster returned %q", name, s)
			}
		}
	}
	// A top-level key other than the known ones is ignored (as TF does), a key inside
	// "task" is not; a non-string rpc_layer is refused.
	_, err = distribute.ClusterFromTFConfig(`{"cluster":{"worker":["127.0.0.1:2001"]},"task":{"type":"worker","idx":0}}`)
	wantErr(t, err, distribute.ErrInvalidArgument, "idx")
	_, err = distribute.ClusterFromTFConfig(`{"cluster":{"worker":["127.0.0.1:2001"]},"task":{"type":"worker","index":0},"rpc_layer":7}`)
	wantErr(t, err, distribute.ErrInvalidArgument, "rpc_layer")
	cl, err := distribute.ClusterFromTFConfig(`{"cluster":{"worker":["127.0.0.1:2001"]},"task":{"type":"worker","index":0},"other":1}`)
	ok(t, err)
	cl.Close()
}

// tfrecord is the TFRecord framing of records: length, masked CRC32C of the length, data,
// masked CRC32C of the data (as tf.io.TFRecordWriter writes it).
func tfrecord(records ...string) []byte {
	table := crc32.MakeTable(crc32.Castagnoli)
	mask := func(b []byte) uint32 {
		c := crc32.Checksum(b, table)
		return ((c >> 15) | (c << 17)) + 0xa282ead8
	}
	var out bytes.Buffer
	for _, r := range records {
		var l [8]byte
		binary.LittleEndian.PutUint64(l[:], uint64(len(r)))
		out.Write(l[:])
		binary.Write(&out, binary.LittleEndian, mask(l[:]))
		out.WriteString(r)
		binary.Write(&out, binary.LittleEndian, mask([]byte(r)))
	}
	return out.Bytes()
}

func compress(t *testing.T, c distribute.Compression, data []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	switch c {
	case distribute.CompressionNone:
		return data
	case distribute.CompressionZlib:
		w := zlib.NewWriter(&b)
		_, err := w.Write(data)
		ok(t, err)
		ok(t, w.Close())
	case distribute.CompressionGzip:
		// Two gzip members concatenated: the reader reads them as one stream.
		h := len(data) / 2
		for _, part := range [][]byte{data[:h], data[h:]} {
			w := gzip.NewWriter(&b)
			_, err := w.Write(part)
			ok(t, err)
			ok(t, w.Close())
		}
	}
	return b.Bytes()
}

func readRecords(t *testing.T, ds *distribute.Dataset) ([]string, error) {
	t.Helper()
	it, err := ds.MakeIterator()
	ok(t, err)
	defer it.Close()
	var got []string
	for {
		el, more, err := it.Next()
		if err != nil {
			return got, err
		}
		if !more {
			return got, nil
		}
		b, err := el[0].Bytes()
		ok(t, err)
		got = append(got, string(b))
		distribute.CloseAll(el)
	}
}

func TestCompressedTFRecordFiles(t *testing.T) {
	dir := t.TempDir()
	recA := []string{"alpha", "", strings.Repeat("b", 3000)}
	recB := []string{"gamma", "delta"}
	want := append(append([]string{}, recA...), recB...)
	for _, c := range []distribute.Compression{distribute.CompressionNone, distribute.CompressionZlib, distribute.CompressionGzip} {
		a, b := fmt.Sprintf("%s/a%d.tfrecord", dir, c), fmt.Sprintf("%s/b%d.tfrecord", dir, c)
		ok(t, os.WriteFile(a, compress(t, c, tfrecord(recA...)), 0o644))
		ok(t, os.WriteFile(b, compress(t, c, tfrecord(recB...)), 0o644))
		ds, err := distribute.DatasetFromCompressedTFRecordFiles(c, a, b)
		ok(t, err)
		got, err := readRecords(t, ds)
		ds.Close()
		ok(t, err)
		if fmt.Sprintf("%q", got) != fmt.Sprintf("%q", want) {
			t.Fatalf("compression %d: records %q, want %q", c, got, want)
		}
	}
	// No files: an empty dataset.
	ds, err := distribute.DatasetFromCompressedTFRecordFiles(distribute.CompressionGzip)
	ok(t, err)
	got, err := readRecords(t, ds)
	ds.Close()
	ok(t, err)
	if len(got) != 0 {
		t.Fatalf("no files: %q", got)
	}
}

func TestCompressedTFRecordFilesMisuse(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []distribute.Compression{-1, 3} {
		ds, err := distribute.DatasetFromCompressedTFRecordFiles(c, dir+"/x.tfrecord")
		wantErr(t, err, distribute.ErrInvalidArgument, "")
		if ds != nil {
			t.Fatalf("compression %d: a dataset was returned", c)
		}
	}
	plain := tfrecord("one", "two", "three")
	gz := compress(t, distribute.CompressionGzip, plain)
	ok(t, os.WriteFile(dir+"/g.tfrecord", gz, 0o644))
	// An uncompressed reader given a gzip file: the message says it looks GZIP-compressed.
	ds, err := distribute.DatasetFromTFRecordFiles(dir + "/g.tfrecord")
	ok(t, err)
	_, err = readRecords(t, ds)
	ds.Close()
	var e *distribute.Error
	if !errors.As(err, &e) || !strings.Contains(err.Error(), "GZIP") {
		t.Fatalf("plain reader of a gzip file: %v", err)
	}
	// A truncated compressed file: DATA_LOSS naming the file.
	zl := compress(t, distribute.CompressionZlib, plain)
	ok(t, os.WriteFile(dir+"/t.tfrecord", zl[:len(zl)-8], 0o644))
	ds, err = distribute.DatasetFromCompressedTFRecordFiles(distribute.CompressionZlib, dir+"/t.tfrecord")
	ok(t, err)
	_, err = readRecords(t, ds)
	ds.Close()
	wantErr(t, err, distribute.ErrDataLoss, "t.tfrecord")
	// A missing file is an error (at creation or at the first element).
	ds, err = distribute.DatasetFromCompressedTFRecordFiles(distribute.CompressionZlib, dir+"/missing.tfrecord")
	if err == nil {
		_, err = readRecords(t, ds)
		ds.Close()
	}
	if err == nil {
		t.Fatal("missing compressed tfrecord file: no error")
	}
}

// splitLastBatch distributes rows 0..n-1 batched by global over replicas with the split
// and returns each step's per-replica rows.
func splitLastBatch(t *testing.T, n, global, replicas int, split *distribute.PartialBatchSplit) [][][]float32 {
	t.Helper()
	s := mirrored(t, replicas)
	defer s.Close()
	rows := make([]float32, n)
	for i := range rows {
		rows[i] = float32(i)
	}
	x := f32(t, rows, []int64{int64(n)}, "")
	defer x.Close()
	ds, err := distribute.DatasetFromTensorSlices(x)
	ok(t, err)
	defer ds.Close()
	b, err := ds.Batch(int64(global), false)
	ok(t, err)
	defer b.Close()
	opts, err := distribute.NewInputOptions()
	ok(t, err)
	defer opts.Close()
	if split != nil {
		ok(t, opts.SetPartialBatchSplit(*split))
	}
	dd, err := s.DistributeDataset(b, opts)
	ok(t, err)
	defer dd.Close()
	it, err := dd.MakeIterator()
	ok(t, err)
	defer it.Close()
	var steps [][][]float32
	for {
		el, more, err := it.Next()
		ok(t, err)
		if !more {
			return steps
		}
		steps = append(steps, componentsF32(t, el[0]))
		distribute.CloseAll(el)
	}
}

// expectSplit computes the expected split independently: full batches in order by
// global/R rows; the partial batch of p rows by ceil(global/R) (in order) or ceil(p/R)
// (even) rows per replica.
func expectSplit(n, global, replicas int, even bool) [][][]float32 {
	var steps [][][]float32
	for start := 0; start < n; start += global {
		end := start + global
		if end > n {
			end = n
		}
		p := end - start
		per := (global + replicas - 1) / replicas
		if even && p < global {
			per = (p + replicas - 1) / replicas
		}
		step := make([][]float32, replicas)
		next := start
		for r := range step {
			step[r] = []float32{}
			for k := 0; k < per && next < end; k++ {
				step[r] = append(step[r], float32(next))
				next++
			}
		}
		steps = append(steps, step)
	}
	return steps
}

func TestPartialBatchSplit(t *testing.T) {
	inOrder, even := distribute.PartialBatchInOrder, distribute.PartialBatchEven
	for _, c := range []struct{ n, global, replicas int }{{10, 4, 2}, {14, 8, 2}, {11, 8, 4}} {
		for _, sp := range []*distribute.PartialBatchSplit{nil, &inOrder, &even} {
			got := splitLastBatch(t, c.n, c.global, c.replicas, sp)
			want := expectSplit(c.n, c.global, c.replicas, sp == &even)
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("range(%d).batch(%d) over %d, split %v: %v, want %v", c.n, c.global, c.replicas, sp, got, want)
			}
		}
	}
	// The examples of the header's doc comment.
	if got := fmt.Sprint(splitLastBatch(t, 10, 4, 2, &even)[2]); got != "[[8] [9]]" {
		t.Fatalf("even: %s", got)
	}
	if got := fmt.Sprint(splitLastBatch(t, 10, 4, 2, &inOrder)[2]); got != "[[8 9] []]" {
		t.Fatalf("in order: %s", got)
	}
}

func TestPartialBatchSplitMisuse(t *testing.T) {
	opts, err := distribute.NewInputOptions()
	ok(t, err)
	defer opts.Close()
	ok(t, opts.SetPartialBatchSplit(distribute.PartialBatchEven))
	for _, bad := range []distribute.PartialBatchSplit{-1, 2, 99} {
		wantErr(t, opts.SetPartialBatchSplit(bad), distribute.ErrInvalidArgument, "")
	}
	var nilOpts *distribute.InputOptions
	wantErr(t, nilOpts.SetPartialBatchSplit(distribute.PartialBatchEven), distribute.ErrInvalidArgument, "")
	// The refused values left the options EVEN: range(10).batch(4) over 2 ends [8] and [9].
	s := mirrored(t, 2)
	defer s.Close()
	ds, err := distribute.DatasetRange(0, 10, 1)
	ok(t, err)
	defer ds.Close()
	b, err := ds.Batch(4, false)
	ok(t, err)
	defer b.Close()
	dd, err := s.DistributeDataset(b, opts)
	ok(t, err)
	defer dd.Close()
	it, err := dd.MakeIterator()
	ok(t, err)
	defer it.Close()
	var last []string
	for {
		el, more, err := it.Next()
		ok(t, err)
		if !more {
			break
		}
		last = last[:0]
		n, err := el[0].NumComponents()
		ok(t, err)
		for i := 0; i < n; i++ {
			c, err := el[0].ComponentTensor(i)
			ok(t, err)
			d, err := distribute.Data[int64](c)
			ok(t, err)
			last = append(last, fmt.Sprint(d))
			c.Close()
		}
		distribute.CloseAll(el)
	}
	if fmt.Sprint(last) != "[[8] [9]]" {
		t.Fatalf("last step %v, want [[8] [9]]", last)
	}
}

// freePort is a free loopback TCP port.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	ok(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func oneTaskCluster(t *testing.T, address string) *distribute.Cluster {
	t.Helper()
	c, err := distribute.NewCluster()
	ok(t, err)
	ok(t, c.AddTask("worker", 0, address))
	ok(t, c.SetTask("worker", 0))
	return c
}

const goodToken = "0123456789abcdef" // 16 printable characters, the shortest allowed

func TestJobTokenAndUnauthenticated(t *testing.T) {
	unsetEnv(t, "DIST_JOB_TOKEN")
	unsetEnv(t, "DIST_ALLOW_UNAUTHENTICATED")
	so, err := distribute.NewServerOptions()
	ok(t, err)
	defer so.Close()
	ok(t, so.SetStartupTimeoutMs(5000))
	for _, tok := range []string{goodToken, strings.Repeat("~", 1024), "", goodToken} {
		ok(t, so.SetJobToken(tok))
	}
	// With a token, a loopback server runs.
	lo := oneTaskCluster(t, fmt.Sprintf("127.0.0.1:%d", freePort(t)))
	defer lo.Close()
	srv, err := distribute.NewServer(lo, so)
	ok(t, err)
	ok(t, srv.KeyValueSet("k", []byte("v")))
	srv.Close()
	// A task off loopback (TEST-NET-1, not an address of this machine): without a token
	// and without allow, FAILED_PRECONDITION before any listening; with a token, or with
	// allow, the token check passes and listening fails (UNAVAILABLE).
	far := oneTaskCluster(t, "192.0.2.1:2222")
	defer far.Close()
	plain, err := distribute.NewServerOptions()
	ok(t, err)
	defer plain.Close()
	ok(t, plain.SetStartupTimeoutMs(2000))
	_, err = distribute.NewServer(far, plain)
	wantErr(t, err, distribute.ErrFailedPrecondition, "")
	ok(t, plain.SetAllowUnauthenticated(true))
	_, err = distribute.NewServer(far, plain)
	wantErr(t, err, distribute.ErrUnavailable, "")
	ok(t, plain.SetAllowUnauthenticated(false))
	_, err = distribute.NewServer(far, plain)
	wantErr(t, err, distribute.ErrFailedPrecondition, "")
	ok(t, plain.SetJobToken(goodToken))
	_, err = distribute.NewServer(far, plain)
	wantErr(t, err, distribute.ErrUnavailable, "")
	// Communication options take the same tokens.
	co, err := distribute.NewCommunicationOptions()
	ok(t, err)
	defer co.Close()
	ok(t, co.SetJobToken(goodToken))
	ok(t, co.SetJobToken(""))
}

func TestJobTokenMisuse(t *testing.T) {
	bad := []string{
		goodToken[:15],            // too short
		strings.Repeat("a", 1025), // too long
		"0123456789 abcdef",       // a space
		"0123456789abcdef\n",      // a control character
		"0123456789abcdef\u00e9",  // not ASCII
	}
	so, err := distribute.NewServerOptions()
	ok(t, err)
	defer so.Close()
	co, err := distribute.NewCommunicationOptions()
	ok(t, err)
	defer co.Close()
	for _, tok := range bad {
		wantErr(t, so.SetJobToken(tok), distribute.ErrInvalidArgument, "")
		wantErr(t, co.SetJobToken(tok), distribute.ErrInvalidArgument, "")
	}
	var nilSO *distribute.ServerOptions
	var nilCO *distribute.CommunicationOptions
	wantErr(t, nilSO.SetJobToken(goodToken), distribute.ErrInvalidArgument, "")
	wantErr(t, nilSO.SetAllowUnauthenticated(true), distribute.ErrInvalidArgument, "")
	wantErr(t, nilCO.SetJobToken(goodToken), distribute.ErrInvalidArgument, "")
	// A refused token changes nothing: the options still have none, so a task off
	// loopback is still refused for want of one.
	unsetEnv(t, "DIST_JOB_TOKEN")
	unsetEnv(t, "DIST_ALLOW_UNAUTHENTICATED")
	far := oneTaskCluster(t, "192.0.2.1:2222")
	defer far.Close()
	_, err = distribute.NewServer(far, so)
	wantErr(t, err, distribute.ErrFailedPrecondition, "")
}

// MEAN over integer tensors is TF's true division: float64 for int32/int64, float32 for
// 8/16-bit integers; an integer variable with MEAN aggregation is refused.
func TestIntegerMean(t *testing.T) {
	s := mirrored(t, 2)
	defer s.Close()
	perReplica := func(a, b []int32) *distribute.Value {
		v, err := s.DistributeValuesFromFunction(func(id, _ int) (*distribute.Value, error) {
			return distribute.NewTensor([][]int32{a, b}[id], []int64{int64(len(a))}, fmt.Sprintf("CPU:%d", id))
		})
		ok(t, err)
		return v
	}
	pr := perReplica([]int32{2, 3}, []int32{3, 4})
	defer pr.Close()
	m, err := s.Reduce(distribute.Mean, pr)
	ok(t, err)
	dt, err := m.DType()
	ok(t, err)
	got, err := distribute.Data[float64](m)
	ok(t, err)
	m.Close()
	if dt != distribute.Float64 || fmt.Sprint(got) != fmt.Sprint([]float64{2.5, 3.5}) {
		t.Fatalf("MEAN of int32: %v %v, want float64 [2.5 3.5]", dt, got)
	}
	sum, err := s.Reduce(distribute.Sum, pr)
	ok(t, err)
	dt, err = sum.DType()
	ok(t, err)
	sg, err := distribute.Data[int32](sum)
	ok(t, err)
	sum.Close()
	if dt != distribute.Int32 || fmt.Sprint(sg) != "[5 7]" {
		t.Fatalf("SUM of int32: %v %v", dt, sg)
	}
	pr16, err := s.DistributeValuesFromFunction(func(id, _ int) (*distribute.Value, error) {
		return distribute.NewTensor([]int16{int16(1 + id)}, []int64{1}, fmt.Sprintf("CPU:%d", id))
	})
	ok(t, err)
	defer pr16.Close()
	m16, err := s.Reduce(distribute.Mean, pr16)
	ok(t, err)
	dt, err = m16.DType()
	ok(t, err)
	g16, err := distribute.Data[float32](m16)
	ok(t, err)
	m16.Close()
	if dt != distribute.Float32 || g16[0] != 1.5 {
		t.Fatalf("MEAN of int16: %v %v, want float32 1.5", dt, g16)
	}
}

func TestIntegerMeanVariableRefused(t *testing.T) {
	s := mirrored(t, 2)
	defer s.Close()
	init, err := distribute.NewTensor([]int32{1, 2}, []int64{2}, "")
	ok(t, err)
	defer init.Close()
	ok(t, s.Scope(func() error {
		v, err := distribute.NewVariable(init, distribute.SyncOnWrite, distribute.AggregationMean, "int_mean")
		wantErr(t, err, distribute.ErrInvalidArgument, "")
		if v != nil {
			t.Fatal("a variable was returned")
		}
		// SUM is fine for integers, MEAN for floats.
		w, err := distribute.NewVariable(init, distribute.SyncOnWrite, distribute.AggregationSum, "int_sum")
		ok(t, err)
		w.Close()
		fi := f32(t, []float32{1, 2}, []int64{2}, "")
		defer fi.Close()
		x, err := distribute.NewVariable(fi, distribute.SyncOnWrite, distribute.AggregationMean, "float_mean")
		ok(t, err)
		x.Close()
		return nil
	}))
}

// The cluster resolvers: a Slurm step's environment and a StatefulSet pod.
func TestClusterFromSlurmAndStatefulSet(t *testing.T) {
	t.Setenv("SLURM_PROCID", "3")
	t.Setenv("SLURM_STEP_NUM_TASKS", "4")
	t.Setenv("SLURM_STEP_NODELIST", "gpu[1-2]")
	t.Setenv("SLURM_STEP_TASKS_PER_NODE", "2(x2)")
	c, err := distribute.ClusterFromSlurm([]distribute.SlurmJob{{Name: "worker", Tasks: 3}, {Name: "chief", Tasks: 1}}, 9000, 0)
	ok(t, err)
	addr, err := c.TaskAddress("chief", 0)
	ok(t, err)
	if addr != "gpu1:9000" {
		t.Fatalf("chief at %q, want gpu1:9000", addr)
	}
	idx, err := c.TaskIndex()
	ok(t, err)
	if idx != 2 {
		t.Fatalf("rank 3 is worker %d, want 2", idx)
	}
	c.Close()
	_, err = distribute.ClusterFromSlurm([]distribute.SlurmJob{{Name: "worker", Tasks: 5}}, 0, 0)
	wantErr(t, err, distribute.ErrInvalidArgument, "the jobs ask for 5 tasks")

	s, err := distribute.ClusterFromStatefulSet("sim-2", "sim", 3, 0)
	ok(t, err)
	addr, err = s.TaskAddress("worker", 0)
	ok(t, err)
	if addr != "sim-0.sim:2222" {
		t.Fatalf("pod 0 at %q", addr)
	}
	s.Close()
	t.Setenv("POD_NAME", "sim-9")
	t.Setenv("DIST_K8S_SERVICE", "sim")
	t.Setenv("DIST_K8S_REPLICAS", "3")
	_, err = distribute.ClusterFromStatefulSet("", "", 0, 0)
	wantErr(t, err, distribute.ErrInvalidArgument, "has 3 replicas")
}
