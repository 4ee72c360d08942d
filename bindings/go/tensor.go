package distribute

/*
#include "shim.h"
*/
import "C"

import (
	"runtime"
	"runtime/cgo"
	"strings"
	"unsafe"
)

// DType is a dist_dtype_t (TensorFlow's DataType numbers).
type DType int32

// Element types.
const (
	Float32  DType = C.DIST_FLOAT32
	Float64  DType = C.DIST_FLOAT64
	Int32    DType = C.DIST_INT32
	Uint8    DType = C.DIST_UINT8
	Int16    DType = C.DIST_INT16
	Int8     DType = C.DIST_INT8
	Int64    DType = C.DIST_INT64
	Bool     DType = C.DIST_BOOL
	BFloat16 DType = C.DIST_BFLOAT16
	Float16  DType = C.DIST_FLOAT16
)

// MaxRank is DIST_MAX_RANK.
const MaxRank = C.DIST_MAX_RANK

// String is the dtype's name (dist_dtype_name).
func (d DType) String() string { return C.GoString(C.dist_dtype_name(C.dist_dtype_t(d))) }

// Size is the size of one element in bytes (dist_dtype_size).
func (d DType) Size() (int, error) {
	var n C.size_t
	err := call("dist_dtype_size", func() C.dist_status_t { return C.dist_dtype_size(C.dist_dtype_t(d), &n) })
	return int(n), err
}

// Element is a Go type with a tensor dtype.
type Element interface {
	~float32 | ~float64 | ~int32 | ~uint8 | ~int16 | ~int8 | ~int64 | ~bool
}

// DTypeOf is the dtype of Go element type T.
func DTypeOf[T Element]() DType {
	var z T
	switch any(z).(type) {
	case float32:
		return Float32
	case float64:
		return Float64
	case int32:
		return Int32
	case uint8:
		return Uint8
	case int16:
		return Int16
	case int8:
		return Int8
	case int64:
		return Int64
	case bool:
		return Bool
	}
	return 0
}

func shapePtr(shape []int64) *C.int64_t {
	if len(shape) == 0 {
		return nil
	}
	return (*C.int64_t)(unsafe.Pointer(&shape[0]))
}

func sliceBytes[T Element](data []T) (unsafe.Pointer, int) {
	if len(data) == 0 {
		return nil, 0
	}
	return unsafe.Pointer(&data[0]), len(data) * int(unsafe.Sizeof(data[0]))
}

// NewTensor copies data into a new tensor of the given shape on device ("" is CPU:0)
// (dist_tensor_create). A nil shape is a scalar; nil data with a non-empty shape zero-fills.
func NewTensor[T Element](data []T, shape []int64, device string) (*Value, error) {
	p, n := sliceBytes(data)
	return newTensor(DTypeOf[T](), shape, p, n, device)
}

// NewTensorBytes copies raw row-major bytes into a tensor of any dtype (dist_tensor_create).
func NewTensorBytes(dtype DType, shape []int64, data []byte, device string) (*Value, error) {
	p, n := sliceBytes(data)
	return newTensor(dtype, shape, p, n, device)
}

// Scalar is a rank-0 tensor on device.
func Scalar[T Element](x T, device string) (*Value, error) {
	return NewTensor([]T{x}, nil, device)
}

func newTensor(dtype DType, shape []int64, data unsafe.Pointer, n int, device string) (*Value, error) {
	dev := cStr(device)
	defer freeStr(dev)
	var out *C.dist_value_t
	err := call("dist_tensor_create", func() C.dist_status_t {
		return C.dist_tensor_create(C.dist_dtype_t(dtype), shapePtr(shape), C.int32_t(len(shape)),
			data, C.size_t(n), dev, &out)
	})
	return ownedValue(out), err
}

// WrapC makes a host tensor borrowing C memory (not Go memory: the cgo rules forbid the
// library keeping a Go pointer) without a copy (dist_tensor_wrap). release (may be nil)
// runs once, on any thread, when the last value sharing the buffer is gone (closed, or
// released by the garbage collector); it must not call the library, nor block for long
// (it may run on the goroutine that releases forgotten handles). On error release is not
// called.
func WrapC(dtype DType, shape []int64, data unsafe.Pointer, byteSize int, device string, release func()) (*Value, error) {
	dev := cStr(device)
	defer freeStr(dev)
	var h uintptr
	if release != nil {
		h = newCallback(release)
	}
	var out *C.dist_value_t
	err := call("dist_tensor_wrap", func() C.dist_status_t {
		return C.distgo_tensor_wrap(C.dist_dtype_t(dtype), shapePtr(shape), C.int32_t(len(shape)), data,
			C.size_t(byteSize), dev, C.uintptr_t(h), &out)
	})
	if err != nil && h != 0 {
		freeCallback(h)
	}
	return ownedValue(out), err
}

//export goReleaseCall
func goReleaseCall(h C.uintptr_t) {
	defer func() { _ = recover() }()
	fn, ok := lookupCallback(uintptr(h))
	freeCallback(uintptr(h))
	if ok {
		fn.(func())()
	}
}

// DType is the tensor's dtype (dist_tensor_dtype).
func (v *Value) DType() (DType, error) {
	var d C.dist_dtype_t
	err := call("dist_tensor_dtype", func() C.dist_status_t { return C.dist_tensor_dtype(v.ptr(), &d) }, v)
	return DType(d), err
}

// Rank is the tensor's rank (dist_tensor_rank).
func (v *Value) Rank() (int, error) {
	var r C.int32_t
	err := call("dist_tensor_rank", func() C.dist_status_t { return C.dist_tensor_rank(v.ptr(), &r) }, v)
	return int(r), err
}

// Shape is the tensor's dimensions, 64-bit (dist_tensor_rank + dist_tensor_shape).
func (v *Value) Shape() ([]int64, error) {
	dims := make([]int64, MaxRank)
	var r C.int32_t
	err := call("dist_tensor_shape", func() C.dist_status_t {
		if rc := C.dist_tensor_rank(v.ptr(), &r); rc != C.DIST_OK {
			return rc
		}
		return C.dist_tensor_shape(v.ptr(), (*C.int64_t)(unsafe.Pointer(&dims[0])), C.int32_t(len(dims)))
	}, v)
	if err != nil {
		return nil, err
	}
	return dims[:r], nil
}

// NumElements is the number of elements (dist_tensor_num_elements).
func (v *Value) NumElements() (int64, error) {
	var n C.int64_t
	err := call("dist_tensor_num_elements", func() C.dist_status_t { return C.dist_tensor_num_elements(v.ptr(), &n) }, v)
	return int64(n), err
}

// ByteSize is the buffer's size in bytes (dist_tensor_byte_size).
func (v *Value) ByteSize() (int, error) {
	var n C.size_t
	err := call("dist_tensor_byte_size", func() C.dist_status_t { return C.dist_tensor_byte_size(v.ptr(), &n) }, v)
	return int(n), err
}

// DataPointer is the tensor's buffer, borrowed (dist_tensor_data): valid while a value
// sharing it lives, so keep v reachable while you use it (runtime.KeepAlive(v) after the
// last use: an unreachable Value may be released by the garbage collector). Use Bytes /
// Data for a Go copy. For a tensor on a GPU it is device memory, which Go code must not
// dereference (Bytes and Data refuse such a tensor).
func (v *Value) DataPointer() (unsafe.Pointer, error) {
	var p unsafe.Pointer
	err := call("dist_tensor_data", func() C.dist_status_t { return C.dist_tensor_data(v.ptr(), &p) }, v)
	return p, err
}

// hostOnly refuses to read a GPU tensor's buffer from Go (it is device memory): a
// tensor's canonical device name has "/device:GPU:" exactly when its buffer is device
// memory (a job name cannot hold a '/').
func (v *Value) hostOnly(op string) error {
	dev, err := v.Device()
	if err != nil {
		return err
	}
	if strings.Contains(dev, "/device:GPU:") {
		return &Error{Code: CodeFailedPrecondition, Op: op, Msg: "tensor on " + dev + " is in device memory: CopyToDevice(\"CPU:0\") first"}
	}
	return nil
}

// Bytes copies a host tensor's buffer into a new byte slice (any dtype); a tensor on a GPU
// is FAILED_PRECONDITION (CopyToDevice("CPU:0") first).
func (v *Value) Bytes() ([]byte, error) {
	if err := v.hostOnly("Bytes"); err != nil {
		return nil, err
	}
	n, err := v.ByteSize()
	if err != nil {
		return nil, err
	}
	p, err := v.DataPointer()
	if err != nil {
		return nil, err
	}
	out := make([]byte, n)
	if n > 0 && p != nil {
		copy(out, unsafe.Slice((*byte)(p), n))
	}
	runtime.KeepAlive(v) // p is v's buffer
	return out, nil
}

// Data copies a host tensor's elements into a new Go slice. T must be the tensor's dtype
// (nothing is converted), else INVALID_ARGUMENT naming both; a tensor on a GPU is
// FAILED_PRECONDITION (CopyToDevice("CPU:0") first, or ScalarFloat32 and the other scalar
// reads, which copy one element themselves). The dtype is checked first.
func Data[T Element](v *Value) ([]T, error) {
	d, err := v.DType()
	if err != nil {
		return nil, err
	}
	if want := DTypeOf[T](); d != want {
		return nil, argError("Data", "tensor is %s, asked for %s", d, want)
	}
	if err := v.hostOnly("Data"); err != nil {
		return nil, err
	}
	n, err := v.NumElements()
	if err != nil {
		return nil, err
	}
	out := make([]T, n)
	if n == 0 {
		return out, nil
	}
	p, err := v.DataPointer()
	if err != nil {
		return nil, err
	}
	copy(out, unsafe.Slice((*T)(p), n))
	runtime.KeepAlive(v) // p is v's buffer
	return out, nil
}

// Float32s copies a float32 tensor's elements.
func (v *Value) Float32s() ([]float32, error) { return Data[float32](v) }

// Device is the tensor's canonical device (dist_tensor_device).
func (v *Value) Device() (string, error) {
	return callString("dist_tensor_device", func(s **C.char) C.dist_status_t { return C.dist_tensor_device(v.ptr(), s) }, v)
}

func goStr(s *C.char) string {
	if s == nil {
		return ""
	}
	return C.GoString(s)
}

// CopyToDevice copies the tensor to device (dist_tensor_copy_to_device).
func (v *Value) CopyToDevice(device string) (*Value, error) {
	dev := cStr(device)
	defer freeStr(dev)
	var out *C.dist_value_t
	err := call("dist_tensor_copy_to_device", func() C.dist_status_t { return C.dist_tensor_copy_to_device(v.ptr(), dev, &out) }, v)
	return ownedValue(out), err
}

// ScalarFloat32 reads the one element of a float32 tensor (dist_tensor_scalar_float32).
func (v *Value) ScalarFloat32() (float32, error) {
	var x C.float
	err := call("dist_tensor_scalar_float32", func() C.dist_status_t { return C.dist_tensor_scalar_float32(v.ptr(), &x) }, v)
	return float32(x), err
}

// ScalarFloat64 reads the one element of a float64 tensor (dist_tensor_scalar_float64).
func (v *Value) ScalarFloat64() (float64, error) {
	var x C.double
	err := call("dist_tensor_scalar_float64", func() C.dist_status_t { return C.dist_tensor_scalar_float64(v.ptr(), &x) }, v)
	return float64(x), err
}

// ScalarInt32 reads the one element of an int32 tensor (dist_tensor_scalar_int32).
func (v *Value) ScalarInt32() (int32, error) {
	var x C.int32_t
	err := call("dist_tensor_scalar_int32", func() C.dist_status_t { return C.dist_tensor_scalar_int32(v.ptr(), &x) }, v)
	return int32(x), err
}

// ScalarInt64 reads the one element of an int64 tensor (dist_tensor_scalar_int64).
func (v *Value) ScalarInt64() (int64, error) {
	var x C.int64_t
	err := call("dist_tensor_scalar_int64", func() C.dist_status_t { return C.dist_tensor_scalar_int64(v.ptr(), &x) }, v)
	return int64(x), err
}

// ToDLPack exports the tensor as a DLManagedTensor* (dist_tensor_to_dlpack), returned as an
// unsafe.Pointer the caller owns (call its deleter, or FromDLPack it).
func (v *Value) ToDLPack() (unsafe.Pointer, error) {
	var out *C.DLManagedTensor
	err := call("dist_tensor_to_dlpack", func() C.dist_status_t { return C.dist_tensor_to_dlpack(v.ptr(), &out) }, v)
	return unsafe.Pointer(out), err
}

// FromDLPack imports a DLManagedTensor* without a copy (dist_tensor_from_dlpack); on
// success the tensor owns it.
func FromDLPack(managed unsafe.Pointer) (*Value, error) {
	var out *C.dist_value_t
	err := call("dist_tensor_from_dlpack", func() C.dist_status_t {
		return C.dist_tensor_from_dlpack((*C.DLManagedTensor)(managed), &out)
	})
	return ownedValue(out), err
}

// callbacks: runtime/cgo.Handle values passed as user_data; freeCallback is idempotent
// (the library's free_fn and a failed call's cleanup may both want to release one).
func newCallback(v interface{}) uintptr { return uintptr(cgo.NewHandle(v)) }

func lookupCallback(h uintptr) (v interface{}, ok bool) {
	defer func() {
		if recover() != nil {
			v, ok = nil, false
		}
	}()
	return cgo.Handle(h).Value(), true
}

func freeCallback(h uintptr) {
	defer func() { _ = recover() }() // already deleted
	cgo.Handle(h).Delete()
}

//export goFreeHandle
func goFreeHandle(h C.uintptr_t) { freeCallback(uintptr(h)) }
