package tests

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"distribute"
)

const numCPUs = 4

func TestMain(m *testing.M) {
	// The child process of TestDeviceMemoryIsRefused (typed_read_test.go), on the fake GPU.
	if os.Getenv(fakeGPUChildEnv) != "" {
		os.Exit(fakeGPUChild())
	}
	if err := distribute.SetLogicalCPUDeviceCount(numCPUs); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

func ok(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("unexpected error: %v", err)
	}
}

// wantErr checks err is the library's *Error with code (errors.Is against the sentinel)
// and a message containing needle.
func wantErr(t testing.TB, err error, sentinel *distribute.Error, needle string) {
	t.Helper()
	if err == nil {
		t.Fatalf("want %v error, got nil", sentinel.Code)
	}
	if !errors.Is(err, sentinel) {
		t.Fatalf("want errors.Is(err, %v), got %v", sentinel.Code, err)
	}
	var e *distribute.Error
	if !errors.As(err, &e) {
		t.Fatalf("not a *distribute.Error: %T %v", err, err)
	}
	if e.Msg == "" {
		t.Fatalf("empty message: %v", err)
	}
	if needle != "" && !strings.Contains(err.Error(), needle) {
		t.Fatalf("error %q does not mention %q", err.Error(), needle)
	}
}

func mirrored(t testing.TB, n int) *distribute.Strategy {
	t.Helper()
	devs := make([]string, n)
	for i := range devs {
		devs[i] = fmt.Sprintf("CPU:%d", i)
	}
	s, err := distribute.NewMirroredStrategy(devs, nil)
	ok(t, err)
	ok(t, s.SetTimeoutMs(20000))
	return s
}

func f32(t testing.TB, data []float32, shape []int64, device string) *distribute.Value {
	t.Helper()
	v, err := distribute.NewTensor(data, shape, device)
	ok(t, err)
	return v
}

func scalar(t testing.TB, x float32, device string) *distribute.Value {
	t.Helper()
	v, err := distribute.Scalar(x, device)
	ok(t, err)
	return v
}

func readF32(t testing.TB, v *distribute.Value) []float32 {
	t.Helper()
	d, err := v.Float32s()
	ok(t, err)
	return d
}

func scalarOf(t testing.TB, v *distribute.Value) float32 {
	t.Helper()
	x, err := v.ScalarFloat32()
	ok(t, err)
	return x
}

func kindOf(t testing.TB, v *distribute.Value) distribute.ValueKind {
	t.Helper()
	k, err := v.Kind()
	ok(t, err)
	return k
}

func componentsF32(t testing.TB, v *distribute.Value) [][]float32 {
	t.Helper()
	n, err := v.NumComponents()
	ok(t, err)
	out := make([][]float32, n)
	for i := 0; i < n; i++ {
		c, err := v.ComponentTensor(i)
		ok(t, err)
		out[i] = readF32(t, c)
		c.Close()
	}
	return out
}

func eqF32(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
