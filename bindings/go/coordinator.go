package distribute

/*
#include "shim.h"
*/
import "C"

import (
	"runtime"
	"unsafe"
)

// ClosureArgKind is a dist_closure_arg_kind_t.
type ClosureArgKind int32

// The argument kinds of coordinator.h.
const (
	ClosureArgTensor   ClosureArgKind = C.DIST_CLOSURE_ARG_TENSOR
	ClosureArgVariable ClosureArgKind = C.DIST_CLOSURE_ARG_VARIABLE
	ClosureArgIterator ClosureArgKind = C.DIST_CLOSURE_ARG_ITERATOR
)

// ClosureFunc is a dist_closure_fn: it runs on a worker with the worker's strategy and the
// arguments (both borrowed for the call) and may return a tensor, which passes to the
// library (do not Close it) and becomes the remote value's result.
type ClosureFunc func(strategy *Strategy, args *ClosureArgs) (*Value, error)

// RegisterClosure (dist_closure_register) registers fn as name in this process.
func RegisterClosure(name string, fn ClosureFunc) error {
	if fn == nil {
		return argError("dist_closure_register", "fn is nil")
	}
	cName := C.CString(name)
	defer C.free(unsafe.Pointer(cName))
	h := newCallback(&callbackState{fn: fn})
	err := call("dist_closure_register", func() C.dist_status_t {
		return C.distgo_closure_register(cName, C.uintptr_t(h))
	})
	if err != nil {
		freeCallback(h)
	}
	return err
}

// UnregisterClosure (dist_closure_unregister): ErrNotFound when absent.
func UnregisterClosure(name string) error {
	cName := C.CString(name)
	defer C.free(unsafe.Pointer(cName))
	return call("dist_closure_unregister", func() C.dist_status_t { return C.dist_closure_unregister(cName) })
}

// IsClosureRegistered (dist_closure_is_registered).
func IsClosureRegistered(name string) (bool, error) {
	cName := C.CString(name)
	defer C.free(unsafe.Pointer(cName))
	var out C.int32_t
	err := call("dist_closure_is_registered", func() C.dist_status_t { return C.dist_closure_is_registered(cName, &out) })
	return out != 0, err
}

// RegisterDatasetFunction (dist_dataset_function_register) registers fn as name for
// per-worker datasets.
func RegisterDatasetFunction(name string, fn DatasetFunc) error {
	if fn == nil {
		return argError("dist_dataset_function_register", "fn is nil")
	}
	cName := C.CString(name)
	defer C.free(unsafe.Pointer(cName))
	h := newCallback(&callbackState{fn: fn})
	err := call("dist_dataset_function_register", func() C.dist_status_t {
		return C.distgo_dataset_function_register(cName, C.uintptr_t(h))
	})
	if err != nil {
		freeCallback(h)
	}
	return err
}

// UnregisterDatasetFunction (dist_dataset_function_unregister).
func UnregisterDatasetFunction(name string) error {
	cName := C.CString(name)
	defer C.free(unsafe.Pointer(cName))
	return call("dist_dataset_function_unregister", func() C.dist_status_t {
		return C.dist_dataset_function_unregister(cName)
	})
}

//export goClosureCall
func goClosureCall(strategy *C.dist_strategy_t, args *C.dist_closure_args_t, out **C.dist_value_t,
	h C.uintptr_t) C.dist_status_t {
	st := stateOf(h)
	if st == nil {
		return C.DIST_INTERNAL
	}
	err := protect(func() error {
		v, err := st.fn.(ClosureFunc)(&Strategy{p: strategy, borrowed: true}, &ClosureArgs{p: args, borrowed: true})
		if err != nil {
			v.Close()
			return err
		}
		if v != nil {
			*out = v.release()
		}
		return nil
	})
	if err != nil {
		return st.fail(err)
	}
	return C.DIST_OK
}

// ClosureArgs is a dist_closure_args_t: the arguments of a scheduled function. Schedule
// copies them, so they may be closed (or collected) once it has returned.
type ClosureArgs struct {
	p        *C.dist_closure_args_t
	borrowed bool // lent to a ClosureFunc
}

func (a *ClosureArgs) ptr() *C.dist_closure_args_t {
	if a == nil {
		return nil
	}
	return a.p
}

// NewClosureArgs (dist_closure_args_create).
func NewClosureArgs() (*ClosureArgs, error) {
	var out *C.dist_closure_args_t
	err := call("dist_closure_args_create", func() C.dist_status_t { return C.dist_closure_args_create(&out) })
	if err != nil {
		return nil, err
	}
	a := &ClosureArgs{p: out}
	runtime.SetFinalizer(a, finalizeClosureArgs)
	return a, nil
}

// Close (dist_closure_args_destroy); a no-op on borrowed arguments (which have no
// finalizer either: the library owns them).
func (a *ClosureArgs) Close() {
	if a == nil || a.p == nil || a.borrowed {
		return
	}
	runtime.SetFinalizer(a, nil)
	C.dist_closure_args_destroy(a.p)
	a.p = nil
}

// AddValue (dist_closure_args_add_value): a host tensor or a ParameterServerStrategy variable.
func (a *ClosureArgs) AddValue(v *Value) error {
	return call("dist_closure_args_add_value", func() C.dist_status_t {
		return C.dist_closure_args_add_value(a.ptr(), v.ptr())
	}, a, v)
}

// AddPerWorker (dist_closure_args_add_per_worker): a per-worker iterator.
func (a *ClosureArgs) AddPerWorker(v *PerWorker) error {
	return call("dist_closure_args_add_per_worker", func() C.dist_status_t {
		return C.dist_closure_args_add_per_worker(a.ptr(), v.ptr())
	}, a, v)
}

// Count (dist_closure_args_count).
func (a *ClosureArgs) Count() (int, error) {
	var out C.int32_t
	err := call("dist_closure_args_count", func() C.dist_status_t { return C.dist_closure_args_count(a.ptr(), &out) }, a)
	return int(out), err
}

// Kind (dist_closure_args_kind) of argument index.
func (a *ClosureArgs) Kind(index int) (ClosureArgKind, error) {
	var out C.dist_closure_arg_kind_t
	err := call("dist_closure_args_kind", func() C.dist_status_t {
		return C.dist_closure_args_kind(a.ptr(), C.int32_t(index), &out)
	}, a)
	return ClosureArgKind(out), err
}

// Value (dist_closure_args_value): argument index, borrowed for the call.
func (a *ClosureArgs) Value(index int) (*Value, error) {
	var out *C.dist_value_t
	err := call("dist_closure_args_value", func() C.dist_status_t {
		return C.dist_closure_args_value(a.ptr(), C.int32_t(index), &out)
	}, a)
	if err != nil {
		return nil, err
	}
	return borrowedValue(out), nil
}

// Iterator (dist_closure_args_iterator): in a ClosureFunc, this worker's iterator of
// argument index, whose elements have numComponents values; borrowed (do not Close it).
func (a *ClosureArgs) Iterator(index, numComponents int) (*BorrowedIterator, error) {
	var out *C.dist_iterator_t
	err := call("dist_closure_args_iterator", func() C.dist_status_t {
		return C.dist_closure_args_iterator(a.ptr(), C.int32_t(index), &out)
	}, a)
	if err != nil {
		return nil, err
	}
	return &BorrowedIterator{it: Iterator{p: out, n: numComponents}}, nil
}

// BorrowedIterator is an iterator lent to a ClosureFunc: GetNext, never Close. The
// library owns it: no finalizer releases it.
type BorrowedIterator struct{ it Iterator }

// GetNext (dist_iterator_get_next); ErrOutOfRange at the end.
func (b *BorrowedIterator) GetNext() ([]*Value, error) { return b.it.GetNext() }

// Coordinator is a dist_coordinator_t (ClusterCoordinator) on the chief. Close it when
// done; a forgotten coordinator is released by the garbage collector once neither it nor
// a RemoteValue or PerWorker it made is reachable (releasing it cancels the closures still
// queued, so those keep it alive).
type Coordinator struct{ p *C.dist_coordinator_t }

func (c *Coordinator) ptr() *C.dist_coordinator_t {
	if c == nil {
		return nil
	}
	return c.p
}

// NewCoordinator (dist_coordinator_create) over a ParameterServerStrategy.
func NewCoordinator(s *Strategy) (*Coordinator, error) {
	var out *C.dist_coordinator_t
	err := call("dist_coordinator_create", func() C.dist_status_t { return C.dist_coordinator_create(s.ptr(), &out) }, s)
	if err != nil {
		return nil, err
	}
	c := &Coordinator{p: out}
	runtime.SetFinalizer(c, finalizeCoordinator)
	return c, nil
}

// Close (dist_coordinator_destroy).
func (c *Coordinator) Close() {
	if c == nil || c.p == nil {
		return
	}
	runtime.SetFinalizer(c, nil)
	C.dist_coordinator_destroy(c.p)
	c.p = nil
}

// Schedule (dist_coordinator_schedule) registered closure function with args (may be nil).
func (c *Coordinator) Schedule(function string, args *ClosureArgs) (*RemoteValue, error) {
	cFunction := C.CString(function)
	defer C.free(unsafe.Pointer(cFunction))
	var out *C.dist_remote_value_t
	err := call("dist_coordinator_schedule", func() C.dist_status_t {
		return C.dist_coordinator_schedule(c.ptr(), cFunction, args.ptr(), &out)
	}, c, args)
	if err != nil {
		return nil, err
	}
	return newRemoteValue(out, c), nil
}

// Join (dist_coordinator_join).
func (c *Coordinator) Join() error {
	return call("dist_coordinator_join", func() C.dist_status_t { return C.dist_coordinator_join(c.ptr()) }, c)
}

// Done (dist_coordinator_done).
func (c *Coordinator) Done() (bool, error) {
	var out C.int32_t
	err := call("dist_coordinator_done", func() C.dist_status_t { return C.dist_coordinator_done(c.ptr(), &out) }, c)
	return out != 0, err
}

// NumWorkers (dist_coordinator_num_workers).
func (c *Coordinator) NumWorkers() (int, error) {
	var out C.int32_t
	err := call("dist_coordinator_num_workers", func() C.dist_status_t {
		return C.dist_coordinator_num_workers(c.ptr(), &out)
	}, c)
	return int(out), err
}

// CreatePerWorkerDataset (dist_coordinator_create_per_worker_dataset); options may be nil.
func (c *Coordinator) CreatePerWorkerDataset(function string, options *InputOptions) (*PerWorker, error) {
	cFunction := C.CString(function)
	defer C.free(unsafe.Pointer(cFunction))
	var out *C.dist_per_worker_t
	err := call("dist_coordinator_create_per_worker_dataset", func() C.dist_status_t {
		return C.dist_coordinator_create_per_worker_dataset(c.ptr(), cFunction, options.ptr(), &out)
	}, c, options)
	if err != nil {
		return nil, err
	}
	return newPerWorker(out, c), nil
}

// CreatePerWorkerDatasetFromFunction (dist_coordinator_create_per_worker_dataset_from_function).
func (c *Coordinator) CreatePerWorkerDatasetFromFunction(function string, options *InputOptions) (*PerWorker, error) {
	cFunction := C.CString(function)
	defer C.free(unsafe.Pointer(cFunction))
	var out *C.dist_per_worker_t
	err := call("dist_coordinator_create_per_worker_dataset_from_function", func() C.dist_status_t {
		return C.dist_coordinator_create_per_worker_dataset_from_function(c.ptr(), cFunction, options.ptr(), &out)
	}, c, options)
	if err != nil {
		return nil, err
	}
	return newPerWorker(out, c), nil
}

// RemoteValue is a dist_remote_value_t. It keeps its Coordinator reachable: the
// coordinator is not collected (which would cancel the closure) while its remote values
// are in use.
type RemoteValue struct {
	p           *C.dist_remote_value_t
	coordinator *Coordinator
}

func newRemoteValue(p *C.dist_remote_value_t, c *Coordinator) *RemoteValue {
	r := &RemoteValue{p: p, coordinator: c}
	runtime.SetFinalizer(r, finalizeRemoteValue)
	return r
}

func (r *RemoteValue) ptr() *C.dist_remote_value_t {
	if r == nil {
		return nil
	}
	return r.p
}

// Fetch (dist_remote_value_fetch): the result (nil when the function returned none).
func (r *RemoteValue) Fetch() (*Value, error) {
	var out *C.dist_value_t
	err := call("dist_remote_value_fetch", func() C.dist_status_t { return C.dist_remote_value_fetch(r.ptr(), &out) }, r)
	if err != nil {
		return nil, err
	}
	return ownedValue(out), nil
}

// IsReady (dist_remote_value_is_ready).
func (r *RemoteValue) IsReady() (bool, error) {
	var out C.int32_t
	err := call("dist_remote_value_is_ready", func() C.dist_status_t { return C.dist_remote_value_is_ready(r.ptr(), &out) }, r)
	return out != 0, err
}

// Close (dist_remote_value_destroy).
func (r *RemoteValue) Close() {
	if r == nil || r.p == nil {
		return
	}
	runtime.SetFinalizer(r, nil)
	C.dist_remote_value_destroy(r.p)
	r.p = nil
	r.coordinator = nil
}

// PerWorker is a dist_per_worker_t: a per-worker dataset or iterator. It keeps its
// Coordinator reachable, as a RemoteValue does (releasing the coordinator releases the
// per-worker resources on the workers).
type PerWorker struct {
	p           *C.dist_per_worker_t
	coordinator *Coordinator
}

func newPerWorker(p *C.dist_per_worker_t, c *Coordinator) *PerWorker {
	w := &PerWorker{p: p, coordinator: c}
	runtime.SetFinalizer(w, finalizePerWorker)
	return w
}

func (w *PerWorker) ptr() *C.dist_per_worker_t {
	if w == nil {
		return nil
	}
	return w.p
}

// MakeIterator (dist_per_worker_make_iterator) of a per-worker dataset.
func (w *PerWorker) MakeIterator() (*PerWorker, error) {
	var out *C.dist_per_worker_t
	err := call("dist_per_worker_make_iterator", func() C.dist_status_t {
		return C.dist_per_worker_make_iterator(w.ptr(), &out)
	}, w)
	if err != nil {
		return nil, err
	}
	return newPerWorker(out, w.coordinator), nil
}

// Close (dist_per_worker_destroy).
func (w *PerWorker) Close() {
	if w == nil || w.p == nil {
		return
	}
	runtime.SetFinalizer(w, nil)
	C.dist_per_worker_destroy(w.p)
	w.p = nil
	w.coordinator = nil
}
