package tests

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"distribute"
)

// Typed reads convert nothing (issue 42): Data[T], Float32s and the Scalar* reads (the
// library's getters) read only their own dtype, anything else is INVALID_ARGUMENT naming
// both (a float32 1.0 read as int32 once gave 1065353216 in another binding). A tensor in
// device memory is FAILED_PRECONDITION for Data, Float32s and Bytes: that case runs in a
// child process on the fake GPU plugin (DIST_CUDA_PLUGIN), whose device pointers fault
// when the host dereferences them, so the rest of the suite keeps its CPU-only devices.

// typedRead is one typed read and the dtype it reads; host: it reads the buffer from Go
// (the Scalar* reads are the library's, which copy a GPU tensor to the host themselves).
type typedRead struct {
	name  string
	dtype distribute.DType
	host  bool
	read  func(*distribute.Value) (string, error)
}

func dataRead[T distribute.Element]() typedRead {
	var zero T
	return typedRead{fmt.Sprintf("Data[%T]", zero), distribute.DTypeOf[T](), true, func(v *distribute.Value) (string, error) {
		d, err := distribute.Data[T](v)
		return fmt.Sprint(d), err
	}}
}

func scalarRead[T any](name string, dtype distribute.DType, read func(*distribute.Value) (T, error)) typedRead {
	return typedRead{name, dtype, false, func(v *distribute.Value) (string, error) {
		x, err := read(v)
		return fmt.Sprint(x), err
	}}
}

// Every typed read of the binding.
func typedReads() []typedRead {
	return []typedRead{
		dataRead[float32](), dataRead[float64](), dataRead[int32](), dataRead[uint8](),
		dataRead[int16](), dataRead[int8](), dataRead[int64](), dataRead[bool](),
		{"Float32s", distribute.Float32, true, func(v *distribute.Value) (string, error) {
			d, err := v.Float32s()
			return fmt.Sprint(d), err
		}},
		scalarRead("ScalarFloat32", distribute.Float32, (*distribute.Value).ScalarFloat32),
		scalarRead("ScalarFloat64", distribute.Float64, (*distribute.Value).ScalarFloat64),
		scalarRead("ScalarInt32", distribute.Int32, (*distribute.Value).ScalarInt32),
		scalarRead("ScalarInt64", distribute.Int64, (*distribute.Value).ScalarInt64),
	}
}

var allDTypes = []distribute.DType{distribute.Float32, distribute.Float64, distribute.Int32, distribute.Uint8,
	distribute.Int16, distribute.Int8, distribute.Int64, distribute.Bool, distribute.BFloat16, distribute.Float16}

// oneOf is a one-element tensor of dtype holding 1, as raw little-endian bytes written
// here (float32 0x3f800000, float64 0x3ff0..., bfloat16 0x3f80, float16 0x3c00).
func oneOf(dtype distribute.DType, device string) (*distribute.Value, error) {
	bytes := map[distribute.DType][]byte{
		distribute.Float32: {0, 0, 0x80, 0x3f}, distribute.Float64: {0, 0, 0, 0, 0, 0, 0xf0, 0x3f},
		distribute.Int32: {1, 0, 0, 0}, distribute.Uint8: {1}, distribute.Int16: {1, 0}, distribute.Int8: {1},
		distribute.Int64: {1, 0, 0, 0, 0, 0, 0, 0}, distribute.Bool: {1},
		distribute.BFloat16: {0x80, 0x3f}, distribute.Float16: {0, 0x3c},
	}[dtype]
	return distribute.NewTensorBytes(dtype, []int64{1}, bytes, device)
}

// The case: Data[int32] of float32 1.0 is refused, not 1065353216.
func TestIntReadOfFloatTensorIsRefused(t *testing.T) {
	f, err := distribute.Scalar(float32(1), "")
	ok(t, err)
	defer f.Close()
	got, err := distribute.Data[int32](f)
	if err == nil {
		t.Fatalf("Data[int32] of float32 1.0 read %v", got)
	}
	wantErr(t, err, distribute.ErrInvalidArgument, "")
	if err.Error() != "distribute: Data: INVALID_ARGUMENT: tensor is float32, asked for int32" {
		t.Fatalf("message %q", err.Error())
	}
	x, err := f.ScalarInt32()
	wantErr(t, err, distribute.ErrInvalidArgument, "int32")
	if x != 0 {
		t.Fatalf("ScalarInt32 of float32 1.0 gave %d with its error", x)
	}
	if d := readF32(t, f); !eqF32(d, []float32{1}) {
		t.Fatalf("the tensor reads as itself: %v", d)
	}
}

// Every typed read against every dtype: its own reads 1, every other is refused naming both.
func TestEveryTypedReadChecksTheDtype(t *testing.T) {
	reads := typedReads()
	refused, matching := 0, 0
	for _, have := range allDTypes {
		v, err := oneOf(have, "")
		ok(t, err)
		for _, r := range reads {
			got, err := r.read(v)
			if r.dtype == have {
				matching++
				want := map[bool]string{true: "[1]", false: "1"}[r.host]
				if have == distribute.Bool {
					want = "[true]"
				}
				if err != nil || got != want {
					t.Errorf("%s of %s: %q, %v; want %s", r.name, have, got, err, want)
				}
				continue
			}
			if err == nil {
				t.Errorf("%s of a %s tensor read %s", r.name, have, got)
				continue
			}
			var e *distribute.Error
			if !errors.Is(err, distribute.ErrInvalidArgument) || !errors.As(err, &e) {
				t.Errorf("%s of a %s tensor: %v, want INVALID_ARGUMENT", r.name, have, err)
				continue
			}
			if r.host {
				op := strings.SplitN(r.name, "[", 2)[0]
				if op == "Float32s" {
					op = "Data"
				}
				if want := fmt.Sprintf("distribute: %s: INVALID_ARGUMENT: tensor is %s, asked for %s", op, have, r.dtype); err.Error() != want {
					t.Errorf("%s of a %s tensor: %q, want %q", r.name, have, err.Error(), want)
				}
			} else if !strings.Contains(e.Msg, have.String()) || !strings.Contains(e.Msg, r.dtype.String()) {
				t.Errorf("%s of a %s tensor: %q names not both dtypes", r.name, have, e.Msg)
			}
			refused++
		}
		// Bytes is dtype-agnostic: the buffer, whatever the dtype.
		b, err := v.Bytes()
		ok(t, err)
		if size, _ := have.Size(); len(b) != size {
			t.Errorf("Bytes of %s: %d bytes", have, len(b))
		}
		v.Close()
	}
	// 10 dtypes x 13 reads; Data[T] matches 8 dtypes, Float32s and the 4 scalar reads one each.
	if matching != 13 || refused != 10*13-13 {
		t.Fatalf("%d reads matched, %d refused", matching, refused)
	}
}

const fakeGPUChildEnv = "DIST_GO_FAKE_GPU_CHILD"

// fakeGPUPlugin is libdist_fake_gpu.so: $DIST_FAKE_GPU_PLUGIN (tests/go/run.sh sets it),
// else the one in $DIST_GO_BUILD_DIR/lib.
func fakeGPUPlugin(t *testing.T) string {
	t.Helper()
	p := os.Getenv("DIST_FAKE_GPU_PLUGIN")
	if p == "" && os.Getenv("DIST_GO_BUILD_DIR") != "" {
		p = filepath.Join(os.Getenv("DIST_GO_BUILD_DIR"), "lib", "libdist_fake_gpu.so")
	}
	if p == "" {
		t.Fatal("DIST_FAKE_GPU_PLUGIN is unset: the fake GPU plugin (tests/go/run.sh sets it; " +
			"cmake --build <build dir> --target dist_fake_gpu builds it)")
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("the fake GPU plugin: %v (cmake --build <build dir> --target dist_fake_gpu)", err)
	}
	return p
}

// A tensor in device memory: every read from Go is refused with FAILED_PRECONDITION (the
// dtype is checked first) and the remedies work. Runs fakeGPUChild in a child process (this
// test binary, see TestMain) with DIST_CUDA_PLUGIN = the fake GPU plugin; a read of device
// memory there crashes the child instead of passing.
func TestDeviceMemoryIsRefused(t *testing.T) {
	plugin := fakeGPUPlugin(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), fakeGPUChildEnv+"=1", "DIST_CUDA_PLUGIN="+plugin, "DIST_FAKE_GPU_COUNT=1")
	out, err := cmd.CombinedOutput()
	log := string(out)
	if ctx.Err() != nil {
		t.Fatalf("the child did not finish in 60 s:\n%s", log)
	}
	if err != nil {
		t.Fatalf("child: %v\n%s", err, log)
	}
	lines := map[string]bool{}
	for _, l := range strings.Split(log, "\n") {
		lines[l] = true
	}
	expect := func(line string) {
		t.Helper()
		if !lines[line] {
			t.Errorf("missing line %q in the child's output:\n%s", line, log)
		}
	}
	const refusal = `FAILED_PRECONDITION: tensor on /device:GPU:0 is in device memory: CopyToDevice("CPU:0") first`
	hostReads := 0
	for _, r := range typedReads() {
		if r.host {
			op := strings.SplitN(strings.Replace(r.name, "Float32s", "Data", 1), "[", 2)[0]
			expect(fmt.Sprintf("%s of %s: distribute: %s: %s", r.name, r.dtype, op, refusal))
			hostReads++
		}
	}
	for _, d := range allDTypes {
		expect(fmt.Sprintf("Bytes of %s: distribute: Bytes: %s", d, refusal))
	}
	expect("Data[int32] of float32: distribute: Data: INVALID_ARGUMENT: tensor is float32, asked for int32")
	expect("after CopyToDevice: [1.5 -2 3.25]")
	expect("ScalarFloat32 of a GPU tensor: 7.5")
	expect("ScalarInt64 of a GPU tensor: -9")
	expect("fake GPU child: done")
	if hostReads != 9 {
		t.Fatalf("%d reads of host memory, want 9 (Data[T] x 8, Float32s)", hostReads)
	}
}

// fakeGPUChild runs in the child process of TestDeviceMemoryIsRefused: it makes tensors on
// the fake GPU and prints one line per read ("read of dtype: error" or what it read). It
// checks nothing itself; the parent reads the lines.
func fakeGPUChild() int {
	why, err := distribute.GPUUnavailableReason()
	if err != nil || why != "" {
		fmt.Printf("no fake GPU: %q %v\n", why, err)
		return 2
	}
	report := func(name string, got string, err error) {
		if err != nil {
			fmt.Printf("%s: %v\n", name, err)
		} else {
			fmt.Printf("%s: READ %s (device memory was read)\n", name, got)
		}
	}
	for _, r := range typedReads() {
		if !r.host {
			continue
		}
		g, err := oneOf(r.dtype, "GPU:0")
		if err != nil {
			fmt.Println("tensor on GPU:0:", err)
			return 2
		}
		got, err := r.read(g)
		report(fmt.Sprintf("%s of %s", r.name, r.dtype), got, err)
		g.Close()
	}
	for _, d := range allDTypes {
		g, err := oneOf(d, "GPU:0")
		if err != nil {
			fmt.Println("tensor on GPU:0:", err)
			return 2
		}
		b, err := g.Bytes()
		report(fmt.Sprintf("Bytes of %s", d), fmt.Sprint(b), err)
		g.Close()
	}
	g, err := distribute.NewTensor([]float32{1.5, -2, 3.25}, []int64{3}, "GPU:0")
	if err != nil {
		fmt.Println("tensor on GPU:0:", err)
		return 2
	}
	defer g.Close()
	d, err := distribute.Data[int32](g)
	report("Data[int32] of float32", fmt.Sprint(d), err)
	h, err := g.CopyToDevice("CPU:0")
	if err != nil {
		fmt.Println("CopyToDevice:", err)
		return 2
	}
	f, err := h.Float32s()
	h.Close()
	fmt.Printf("after CopyToDevice: %v%s\n", f, errText(err))
	s, err := distribute.Scalar(float32(7.5), "GPU:0")
	if err == nil {
		x, err := s.ScalarFloat32()
		fmt.Printf("ScalarFloat32 of a GPU tensor: %v%s\n", x, errText(err))
		s.Close()
	}
	i, err := distribute.Scalar(int64(-9), "GPU:0")
	if err == nil {
		x, err := i.ScalarInt64()
		fmt.Printf("ScalarInt64 of a GPU tensor: %v%s\n", x, errText(err))
		i.Close()
	}
	fmt.Println("fake GPU child: done")
	return 0
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return " (" + err.Error() + ")"
}
