package distribute

/*
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"runtime"
	"unsafe"
)

// ValueKind is a dist_value_kind_t.
type ValueKind int32

// Value kinds.
const (
	KindTensor             ValueKind = C.DIST_VALUE_TENSOR
	KindPerReplica         ValueKind = C.DIST_VALUE_PER_REPLICA
	KindMirrored           ValueKind = C.DIST_VALUE_MIRRORED
	KindMirroredVariable   ValueKind = C.DIST_VALUE_MIRRORED_VARIABLE
	KindSyncOnReadVariable ValueKind = C.DIST_VALUE_SYNC_ON_READ_VARIABLE
	KindVariable           ValueKind = C.DIST_VALUE_VARIABLE
)

// Value is a dist_value_t: a tensor, a distributed value or a variable. A Value you
// receive from a function is yours: Close it, or the garbage collector releases it once it
// is unreachable (Close releases it at once). Values handed to callbacks are borrowed
// (valid during the callback; Close is a no-op on them, and no finalizer releases them).
type Value struct {
	p     *C.dist_value_t
	owned bool
}

func ownedValue(p *C.dist_value_t) *Value {
	if p == nil {
		return nil
	}
	v := &Value{p: p, owned: true}
	runtime.SetFinalizer(v, finalizeValue)
	return v
}

func borrowedValue(p *C.dist_value_t) *Value {
	if p == nil {
		return nil
	}
	return &Value{p: p}
}

func (v *Value) ptr() *C.dist_value_t {
	if v == nil {
		return nil
	}
	return v.p
}

// Close releases the value (dist_value_destroy). Safe on nil, borrowed and closed values.
// The garbage collector runs it for an owned value you forget (see finalizer.go): a value
// may outlive its strategy and the values it came from (the library keeps what it uses
// alive), so the order in which handles are collected does not matter.
func (v *Value) Close() {
	if v == nil || !v.owned || v.p == nil {
		return
	}
	runtime.SetFinalizer(v, nil)
	C.dist_value_destroy(v.p)
	v.p = nil
}

// Borrowed reports whether the value is borrowed from a callback (not closed by you).
func (v *Value) Borrowed() bool { return v != nil && !v.owned }

// release hands an owned value's reference to the library (which takes ownership).
func (v *Value) release() *C.dist_value_t {
	runtime.SetFinalizer(v, nil)
	p := v.p
	v.p = nil
	return p
}

// CloseAll closes every value of vs.
func CloseAll(vs []*Value) {
	for _, v := range vs {
		v.Close()
	}
}

// cValues is a Go array of C pointers (allowed by the cgo rules: no Go pointers in it).
func cValues(vs []*Value) []*C.dist_value_t {
	out := make([]*C.dist_value_t, len(vs))
	for i, v := range vs {
		out[i] = v.ptr()
	}
	return out
}

func firstPtr(a []*C.dist_value_t) **C.dist_value_t {
	if len(a) == 0 {
		return nil
	}
	return &a[0]
}

// cArray views a C array of n value pointers.
func cArray(p **C.dist_value_t, n C.int32_t) []*C.dist_value_t {
	if p == nil || n <= 0 {
		return nil
	}
	return unsafe.Slice(p, int(n))
}

func ownedValues(a []*C.dist_value_t) []*Value {
	out := make([]*Value, len(a))
	for i, p := range a {
		out[i] = ownedValue(p)
	}
	return out
}

func borrowedValues(a []*C.dist_value_t) []*Value {
	out := make([]*Value, len(a))
	for i, p := range a {
		out[i] = borrowedValue(p)
	}
	return out
}

// storeResults moves Go-returned values into the library's result slots (ownership passes to
// the library). Borrowed values get a new reference through value_container is not
// possible here, so they are refused.
func storeResults(op string, vs []*Value, slots []*C.dist_value_t) error {
	if len(vs) > len(slots) {
		CloseAll(vs)
		return argError(op, "callback returned %d values, room for %d", len(vs), len(slots))
	}
	for _, v := range vs {
		if v != nil && !v.owned {
			CloseAll(vs)
			return argError(op, "callback returned a borrowed value; return a new one")
		}
	}
	for i, v := range vs {
		if v != nil {
			slots[i] = v.release()
		}
	}
	return nil
}

// Kind is the value's kind (dist_value_kind).
func (v *Value) Kind() (ValueKind, error) {
	var k C.dist_value_kind_t
	err := call("dist_value_kind", func() C.dist_status_t { return C.dist_value_kind(v.ptr(), &k) }, v)
	return ValueKind(k), err
}

// NumComponents is the number of components (dist_value_num_components).
func (v *Value) NumComponents() (int, error) {
	var n C.int32_t
	err := call("dist_value_num_components", func() C.dist_status_t { return C.dist_value_num_components(v.ptr(), &n) }, v)
	return int(n), err
}

// Component is component i as a new handle (dist_value_component).
func (v *Value) Component(i int) (*Value, error) {
	var out *C.dist_value_t
	err := call("dist_value_component", func() C.dist_status_t { return C.dist_value_component(v.ptr(), C.int32_t(i), &out) }, v)
	return ownedValue(out), err
}

// ComponentTensor is a copy of component i as a tensor (dist_value_component_tensor).
func (v *Value) ComponentTensor(i int) (*Value, error) {
	var out *C.dist_value_t
	err := call("dist_value_component_tensor", func() C.dist_status_t {
		return C.dist_value_component_tensor(v.ptr(), C.int32_t(i), &out)
	}, v)
	return ownedValue(out), err
}

// NewPerReplica is a PerReplica value sharing the given tensors (dist_value_create_per_replica).
func NewPerReplica(components ...*Value) (*Value, error) {
	a := cValues(components)
	var out *C.dist_value_t
	err := call("dist_value_create_per_replica", func() C.dist_status_t {
		return C.dist_value_create_per_replica(firstPtr(a), C.int32_t(len(a)), &out)
	}, components)
	return ownedValue(out), err
}

// NewMirrored is a Mirrored value over the given tensors (dist_value_create_mirrored).
func NewMirrored(components ...*Value) (*Value, error) {
	a := cValues(components)
	var out *C.dist_value_t
	err := call("dist_value_create_mirrored", func() C.dist_status_t {
		return C.dist_value_create_mirrored(firstPtr(a), C.int32_t(len(a)), &out)
	}, components)
	return ownedValue(out), err
}

func (v *Value) String() string {
	if v == nil || v.p == nil {
		return "Value(nil)"
	}
	k, err := v.Kind()
	if err != nil {
		return "Value(?)"
	}
	return fmt.Sprintf("Value(kind %d)", k)
}
