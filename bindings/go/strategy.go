package distribute

/*
#include "shim.h"
*/
import "C"

import (
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"unsafe"
)

// StrategyKind is a dist_strategy_kind_t.
type StrategyKind int32

// Strategy kinds.
const (
	StrategyDefault             StrategyKind = C.DIST_STRATEGY_DEFAULT
	StrategyOneDevice           StrategyKind = C.DIST_STRATEGY_ONE_DEVICE
	StrategyMirrored            StrategyKind = C.DIST_STRATEGY_MIRRORED
	StrategyCentralStorage      StrategyKind = C.DIST_STRATEGY_CENTRAL_STORAGE
	StrategyMultiWorkerMirrored StrategyKind = C.DIST_STRATEGY_MULTI_WORKER_MIRRORED
	StrategyParameterServer     StrategyKind = C.DIST_STRATEGY_PARAMETER_SERVER
)

// ReduceOp is a dist_reduce_op_t.
type ReduceOp int32

// Reduce ops.
const (
	Sum     ReduceOp = C.DIST_REDUCE_SUM
	Mean    ReduceOp = C.DIST_REDUCE_MEAN
	Min     ReduceOp = C.DIST_REDUCE_MIN
	Max     ReduceOp = C.DIST_REDUCE_MAX
	Product ReduceOp = C.DIST_REDUCE_PRODUCT
)

// Strategy is a dist_strategy_t reference. Close releases it (not from one of its own
// replica functions during Run); a reference you forget to Close is released by the
// garbage collector once it is unreachable. Releasing the last reference stops the
// strategy's threads (and a multi-worker strategy's server), so keep one reachable while
// the job needs them; its values and variables stay valid after it (strategy.h).
type Strategy struct {
	p        *C.dist_strategy_t
	borrowed bool // handed to a MergeFunc: not closed by the binding's user
}

func newStrategy(p *C.dist_strategy_t) *Strategy {
	if p == nil {
		return nil
	}
	s := &Strategy{p: p}
	runtime.SetFinalizer(s, finalizeStrategy)
	return s
}

func (s *Strategy) ptr() *C.dist_strategy_t {
	if s == nil {
		return nil
	}
	return s.p
}

// Handle is the raw dist_strategy_t* (borrowed: valid until Close, or until s is
// unreachable and released by the garbage collector: keep s reachable, with
// runtime.KeepAlive(s) after C code's last use), for C code that shares the strategy with
// Go in one process (e.g. examples/go/bench's C side).
func (s *Strategy) Handle() unsafe.Pointer { return unsafe.Pointer(s.ptr()) }

// Close releases this reference (dist_strategy_destroy). Safe on nil and twice.
func (s *Strategy) Close() {
	if s == nil || s.p == nil || s.borrowed {
		return
	}
	runtime.SetFinalizer(s, nil)
	C.dist_strategy_destroy(s.p)
	s.p = nil
}

// cStrings is a C array of C strings; free with freeCStrings.
func cStrings(ss []string) (**C.char, func()) {
	if len(ss) == 0 {
		return nil, func() {}
	}
	arr := (*[1 << 20]*C.char)(C.malloc(C.size_t(len(ss)) * C.size_t(unsafe.Sizeof((*C.char)(nil)))))[:len(ss):len(ss)]
	for i, s := range ss {
		arr[i] = C.CString(s)
	}
	return &arr[0], func() {
		for _, p := range arr {
			C.free(unsafe.Pointer(p))
		}
		C.free(unsafe.Pointer(&arr[0]))
	}
}

// NewOneDeviceStrategy is a OneDeviceStrategy on device (dist_strategy_create_one_device).
func NewOneDeviceStrategy(device string) (*Strategy, error) {
	dev := cStr(device)
	defer freeStr(dev)
	var out *C.dist_strategy_t
	err := call("dist_strategy_create_one_device", func() C.dist_status_t { return C.dist_strategy_create_one_device(dev, &out) })
	return newStrategy(out), err
}

// NewMirroredStrategy is a MirroredStrategy over devices (nil: every local device); ops may be nil
// (dist_strategy_create_mirrored).
func NewMirroredStrategy(devices []string, ops *CrossDeviceOps) (*Strategy, error) {
	devs, free := cStrings(devices)
	defer free()
	var out *C.dist_strategy_t
	err := call("dist_strategy_create_mirrored", func() C.dist_status_t {
		return C.dist_strategy_create_mirrored(devs, C.int32_t(len(devices)), ops.ptr(), &out)
	}, ops)
	return newStrategy(out), err
}

// NewCentralStorageStrategy is a CentralStorageStrategy (dist_strategy_create_central_storage);
// parameterDevice "" lets the library choose.
func NewCentralStorageStrategy(computeDevices []string, parameterDevice string) (*Strategy, error) {
	devs, free := cStrings(computeDevices)
	defer free()
	pd := cStr(parameterDevice)
	defer freeStr(pd)
	var out *C.dist_strategy_t
	err := call("dist_strategy_create_central_storage", func() C.dist_status_t {
		return C.dist_strategy_create_central_storage(devs, C.int32_t(len(computeDevices)), pd, &out)
	})
	return newStrategy(out), err
}

// NewMultiWorkerMirroredStrategy is a MultiWorkerMirroredStrategy (dist_strategy_create_multi_worker_mirrored);
// a nil cluster reads TF_CONFIG, nil options are the defaults. Blocks until every worker arrives.
func NewMultiWorkerMirroredStrategy(cluster *Cluster, options *CommunicationOptions) (*Strategy, error) {
	var out *C.dist_strategy_t
	err := call("dist_strategy_create_multi_worker_mirrored", func() C.dist_status_t {
		return C.dist_strategy_create_multi_worker_mirrored(cluster.ptr(), options.ptr(), &out)
	}, cluster, options)
	return newStrategy(out), err
}

// DefaultStrategy is a new reference to the default strategy (dist_strategy_get_default).
func DefaultStrategy() (*Strategy, error) {
	var out *C.dist_strategy_t
	err := call("dist_strategy_get_default", func() C.dist_status_t { return C.dist_strategy_get_default(&out) })
	return newStrategy(out), err
}

// CurrentStrategy is the current strategy of this OS thread (dist_get_strategy). Lock the
// goroutine to its thread (runtime.LockOSThread) when scopes are involved.
func CurrentStrategy() (*Strategy, error) {
	var out *C.dist_strategy_t
	err := call("dist_get_strategy", func() C.dist_status_t { return C.dist_get_strategy(&out) })
	return newStrategy(out), err
}

// HasStrategy: a non-default strategy is current on this OS thread (dist_has_strategy).
func HasStrategy() (bool, error) {
	var x C.int32_t
	err := call("dist_has_strategy", func() C.dist_status_t { return C.dist_has_strategy(&x) })
	return x != 0, err
}

// InCrossReplicaContext (dist_in_cross_replica_context), for this OS thread.
func InCrossReplicaContext() (bool, error) {
	var x C.int32_t
	err := call("dist_in_cross_replica_context", func() C.dist_status_t { return C.dist_in_cross_replica_context(&x) })
	return x != 0, err
}

// CurrentReplicaContext is this OS thread's replica context, or nil in cross-replica
// context (dist_current_replica_context). Borrowed; lock the OS thread while using it.
func CurrentReplicaContext() *ReplicaContext {
	p := C.dist_current_replica_context()
	if p == nil {
		return nil
	}
	return &ReplicaContext{p: p}
}

// ExperimentalSetStrategy makes s current on this OS thread without a scope (nil restores
// the default) (dist_experimental_set_strategy). Call runtime.LockOSThread first.
func ExperimentalSetStrategy(s *Strategy) error {
	return call("dist_experimental_set_strategy", func() C.dist_status_t { return C.dist_experimental_set_strategy(s.ptr()) }, s)
}

// LossReduction is the reduce op for losses (dist_get_loss_reduction).
func LossReduction() (ReduceOp, error) {
	var op C.dist_reduce_op_t
	err := call("dist_get_loss_reduction", func() C.dist_status_t { return C.dist_get_loss_reduction(&op) })
	return ReduceOp(op), err
}

// Kind (dist_strategy_kind).
func (s *Strategy) Kind() (StrategyKind, error) {
	var k C.dist_strategy_kind_t
	err := call("dist_strategy_kind", func() C.dist_status_t { return C.dist_strategy_kind(s.ptr(), &k) }, s)
	return StrategyKind(k), err
}

// NumReplicasInSync (dist_strategy_num_replicas_in_sync).
func (s *Strategy) NumReplicasInSync() (int, error) {
	var n C.int32_t
	err := call("dist_strategy_num_replicas_in_sync", func() C.dist_status_t { return C.dist_strategy_num_replicas_in_sync(s.ptr(), &n) }, s)
	return int(n), err
}

// WorkerDevice is the device of this process's replica i (dist_strategy_worker_device).
func (s *Strategy) WorkerDevice(i int) (string, error) {
	return callString("dist_strategy_worker_device", func(d **C.char) C.dist_status_t { return C.dist_strategy_worker_device(s.ptr(), C.int32_t(i), d) }, s)
}

// ParameterDeviceCount (dist_strategy_parameter_device_count).
func (s *Strategy) ParameterDeviceCount() (int, error) {
	var n C.int32_t
	err := call("dist_strategy_parameter_device_count", func() C.dist_status_t { return C.dist_strategy_parameter_device_count(s.ptr(), &n) }, s)
	return int(n), err
}

// ParameterDevice i (dist_strategy_parameter_device).
func (s *Strategy) ParameterDevice(i int) (string, error) {
	return callString("dist_strategy_parameter_device", func(d **C.char) C.dist_status_t { return C.dist_strategy_parameter_device(s.ptr(), C.int32_t(i), d) }, s)
}

// SetTimeoutMs bounds every blocking wait (dist_strategy_set_timeout_ms).
func (s *Strategy) SetTimeoutMs(ms int64) error {
	return call("dist_strategy_set_timeout_ms", func() C.dist_status_t { return C.dist_strategy_set_timeout_ms(s.ptr(), C.int64_t(ms)) }, s)
}

// ScopeEnter enters the strategy's scope on this OS THREAD (dist_strategy_scope_enter).
// Scopes are per OS thread: call runtime.LockOSThread before and keep the goroutine locked
// until ScopeExit. Prefer Scope, which does this.
func (s *Strategy) ScopeEnter() error {
	return call("dist_strategy_scope_enter", func() C.dist_status_t { return C.dist_strategy_scope_enter(s.ptr()) }, s)
}

// ScopeExit leaves the innermost scope, which must be s's (dist_strategy_scope_exit).
func (s *Strategy) ScopeExit() error {
	return call("dist_strategy_scope_exit", func() C.dist_status_t { return C.dist_strategy_scope_exit(s.ptr()) }, s)
}

// Scope runs fn inside the strategy's scope, with the goroutine locked to its OS thread.
func (s *Strategy) Scope(fn func() error) (err error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := s.ScopeEnter(); err != nil {
		return err
	}
	defer func() {
		if e := s.ScopeExit(); err == nil {
			err = e
		}
	}()
	return fn()
}

// ColocateVarsWithEnter places variables created on this OS thread on variable's devices
// until ColocateVarsWithExit (dist_strategy_colocate_vars_with_enter). Needs the scope and a
// locked OS thread.
func (s *Strategy) ColocateVarsWithEnter(variable *Value) error {
	return call("dist_strategy_colocate_vars_with_enter", func() C.dist_status_t {
		return C.dist_strategy_colocate_vars_with_enter(s.ptr(), variable.ptr())
	}, s, variable)
}

// ColocateVarsWithExit (dist_strategy_colocate_vars_with_exit).
func (s *Strategy) ColocateVarsWithExit() error {
	return call("dist_strategy_colocate_vars_with_exit", func() C.dist_status_t { return C.dist_strategy_colocate_vars_with_exit(s.ptr()) }, s)
}

// VariableCreatedInScope (dist_strategy_variable_created_in_scope).
func (s *Strategy) VariableCreatedInScope(variable *Value) (bool, error) {
	var x C.int32_t
	err := call("dist_strategy_variable_created_in_scope", func() C.dist_status_t {
		return C.dist_strategy_variable_created_in_scope(s.ptr(), variable.ptr(), &x)
	}, s, variable)
	return x != 0, err
}

// SaveVariables (dist_strategy_save_variables).
func (s *Strategy) SaveVariables(path string) error {
	p := C.CString(path)
	defer C.free(unsafe.Pointer(p))
	return call("dist_strategy_save_variables", func() C.dist_status_t { return C.dist_strategy_save_variables(s.ptr(), p) }, s)
}

// RestoreVariables (dist_strategy_restore_variables).
func (s *Strategy) RestoreVariables(path string) error {
	p := C.CString(path)
	defer C.free(unsafe.Pointer(p))
	return call("dist_strategy_restore_variables", func() C.dist_status_t { return C.dist_strategy_restore_variables(s.ptr(), p) }, s)
}

// ---- Running replicas ----

// ReplicaFunc is a replica function: called once per replica, concurrently, each on that
// replica's OS thread (replica 0 on the thread calling Run). args are borrowed for the
// call. Returned values pass to the library (do not Close them). A returned error or a
// panic fails that replica: Run returns an *Error whose Cause is it.
type ReplicaFunc func(ctx *ReplicaContext, args []*Value) ([]*Value, error)

// callbackState collects the first Go error of a callback that runs on several threads.
type callbackState struct {
	fn     interface{}
	parent *callbackState // the run a merge_call belongs to: its failure is the run's cause
	mu     sync.Mutex
	first  error
}

func (st *callbackState) fail(err error) C.dist_status_t {
	// The message travels with the status (dist_set_last_error_message, on this callback's
	// thread): the library passes it on to every caller the failure reaches, generator and
	// map functions' callers included.
	msg := C.CString(strings.ReplaceAll(err.Error(), "\x00", " "))
	C.dist_set_last_error_message(msg)
	C.free(unsafe.Pointer(msg))
	st.mu.Lock()
	if st.first == nil {
		st.first = err
	}
	st.mu.Unlock()
	if st.parent != nil {
		st.parent.fail(err)
	}
	if e, ok := err.(*Error); ok && e.Code != CodeOK {
		return C.dist_status_t(e.Code)
	}
	return C.DIST_UNKNOWN
}

// finish turns a failed call's status into the error: the callback's own error as Cause.
func (st *callbackState) finish(op string, err error) error {
	if err == nil {
		return nil
	}
	st.mu.Lock()
	first := st.first
	st.mu.Unlock()
	if first != nil {
		e := err.(*Error)
		e.Cause = first
		e.Msg = e.Msg + " (callback: " + first.Error() + ")"
	}
	return err
}

// protect runs a callback body, turning a panic into a PanicError.
func protect(f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &PanicError{Value: r, Stack: debug.Stack()}
		}
	}()
	return f()
}

func stateOf(h C.uintptr_t) *callbackState {
	v, ok := lookupCallback(uintptr(h))
	if !ok {
		return nil
	}
	st, _ := v.(*callbackState)
	return st
}

// Run calls fn once per replica (dist_strategy_run) with args (tensors, PerReplica or
// Mirrored values, variables) and returns numResults merged results (nil where no replica
// filled the slot), owned by the caller.
func (s *Strategy) Run(fn ReplicaFunc, args []*Value, numResults int) ([]*Value, error) {
	if numResults < 0 {
		return nil, argError("dist_strategy_run", "numResults %d is negative", numResults)
	}
	st := &callbackState{fn: fn}
	h := newCallback(st)
	defer freeCallback(h)
	a := cValues(args)
	res := make([]*C.dist_value_t, numResults)
	err := call("dist_strategy_run", func() C.dist_status_t {
		return C.distgo_run(s.ptr(), C.uintptr_t(h), firstPtr(a), C.int32_t(len(a)), firstPtr(res), C.int32_t(numResults))
	}, s, args)
	if err != nil {
		return nil, st.finish("dist_strategy_run", err)
	}
	return ownedValues(res), nil
}

//export goReplicaCall
func goReplicaCall(ctx *C.dist_context_t, args **C.dist_value_t, nargs C.int32_t, results **C.dist_value_t, nres C.int32_t, h C.uintptr_t) C.dist_status_t {
	st := stateOf(h)
	if st == nil {
		return C.DIST_INTERNAL
	}
	fn := st.fn.(ReplicaFunc)
	c := &ReplicaContext{p: ctx, run: st}
	err := protect(func() error {
		out, err := fn(c, borrowedValues(cArray(args, nargs)))
		if err != nil {
			CloseAll(out)
			return err
		}
		return storeResults("replica function", out, cArray(results, nres))
	})
	c.p = nil // the context is only valid during the call
	if err != nil {
		return st.fail(err)
	}
	return C.DIST_OK
}

// ValueFunc builds replica replicaID's component of a per-replica value.
type ValueFunc func(replicaID, numReplicas int) (*Value, error)

// DistributeValuesFromFunction (dist_strategy_distribute_values_from_function).
func (s *Strategy) DistributeValuesFromFunction(fn ValueFunc) (*Value, error) {
	st := &callbackState{fn: fn}
	h := newCallback(st)
	defer freeCallback(h)
	var out *C.dist_value_t
	err := call("dist_strategy_distribute_values_from_function", func() C.dist_status_t {
		return C.distgo_values_from_function(s.ptr(), C.uintptr_t(h), &out)
	}, s)
	return ownedValue(out), st.finish("", err)
}

//export goValueCall
func goValueCall(id, n C.int32_t, out **C.dist_value_t, h C.uintptr_t) C.dist_status_t {
	st := stateOf(h)
	if st == nil {
		return C.DIST_INTERNAL
	}
	err := protect(func() error {
		v, err := st.fn.(ValueFunc)(int(id), int(n))
		if err != nil {
			v.Close()
			return err
		}
		return storeResults("value function", []*Value{v}, unsafe.Slice(out, 1))
	})
	if err != nil {
		return st.fail(err)
	}
	return C.DIST_OK
}

// UpdateFunc is called once per component of a variable in Update, with that component
// (a plain variable) and the arguments for its device, all borrowed. It may return a new value.
type UpdateFunc func(variable *Value, args []*Value) (*Value, error)

// Update is StrategyExtended.update (dist_strategy_update); group merges the results.
func (s *Strategy) Update(variable *Value, fn UpdateFunc, args []*Value, group bool) (*Value, error) {
	st := &callbackState{fn: fn}
	h := newCallback(st)
	defer freeCallback(h)
	a := cValues(args)
	g := C.int32_t(0)
	if group {
		g = 1
	}
	var out *C.dist_value_t
	err := call("dist_strategy_update", func() C.dist_status_t {
		return C.distgo_update(s.ptr(), variable.ptr(), C.uintptr_t(h), firstPtr(a), C.int32_t(len(a)), g, &out)
	}, s, variable, args)
	return ownedValue(out), st.finish("", err)
}

//export goUpdateCall
func goUpdateCall(variable *C.dist_value_t, args **C.dist_value_t, n C.int32_t, out **C.dist_value_t, h C.uintptr_t) C.dist_status_t {
	st := stateOf(h)
	if st == nil {
		return C.DIST_INTERNAL
	}
	err := protect(func() error {
		v, err := st.fn.(UpdateFunc)(borrowedValue(variable), borrowedValues(cArray(args, n)))
		if err != nil {
			v.Close()
			return err
		}
		if v == nil {
			return nil
		}
		return storeResults("update function", []*Value{v}, unsafe.Slice(out, 1))
	})
	if err != nil {
		return st.fail(err)
	}
	return C.DIST_OK
}

// ValueContainer (dist_strategy_value_container).
func (s *Strategy) ValueContainer(v *Value) (*Value, error) {
	var out *C.dist_value_t
	err := call("dist_strategy_value_container", func() C.dist_status_t { return C.dist_strategy_value_container(s.ptr(), v.ptr(), &out) }, s, v)
	return ownedValue(out), err
}

// JoinReplica lets the calling OS thread act as replica id without Run
// (dist_strategy_join_replica). It locks the goroutine to its OS thread
// (runtime.LockOSThread); Leave on the returned context unlocks it. Leave from the same
// goroutine.
func (s *Strategy) JoinReplica(id int) (*ReplicaContext, error) {
	runtime.LockOSThread()
	var out *C.dist_context_t
	err := call("dist_strategy_join_replica", func() C.dist_status_t { return C.dist_strategy_join_replica(s.ptr(), C.int32_t(id), &out) }, s)
	if err != nil {
		runtime.UnlockOSThread()
		return nil, err
	}
	return &ReplicaContext{p: out, joined: true}, nil
}

// ---- Cross-replica ----

// Reduce (dist_strategy_reduce).
func (s *Strategy) Reduce(op ReduceOp, v *Value) (*Value, error) {
	var out *C.dist_value_t
	err := call("dist_strategy_reduce", func() C.dist_status_t { return C.dist_strategy_reduce(s.ptr(), C.dist_reduce_op_t(op), v.ptr(), &out) }, s, v)
	return ownedValue(out), err
}

// ReduceAxis (dist_strategy_reduce_axis).
func (s *Strategy) ReduceAxis(op ReduceOp, v *Value, axis int) (*Value, error) {
	var out *C.dist_value_t
	err := call("dist_strategy_reduce_axis", func() C.dist_status_t {
		return C.dist_strategy_reduce_axis(s.ptr(), C.dist_reduce_op_t(op), v.ptr(), C.int32_t(axis), &out)
	}, s, v)
	return ownedValue(out), err
}

// Gather (dist_strategy_gather).
func (s *Strategy) Gather(v *Value, axis int) (*Value, error) {
	var out *C.dist_value_t
	err := call("dist_strategy_gather", func() C.dist_status_t { return C.dist_strategy_gather(s.ptr(), v.ptr(), C.int32_t(axis), &out) }, s, v)
	return ownedValue(out), err
}

// ReduceTo (dist_strategy_reduce_to).
func (s *Strategy) ReduceTo(op ReduceOp, v, destinations *Value) (*Value, error) {
	var out *C.dist_value_t
	err := call("dist_strategy_reduce_to", func() C.dist_status_t {
		return C.dist_strategy_reduce_to(s.ptr(), C.dist_reduce_op_t(op), v.ptr(), destinations.ptr(), &out)
	}, s, v, destinations)
	return ownedValue(out), err
}

// ReduceToDevice (dist_strategy_reduce_to_device).
func (s *Strategy) ReduceToDevice(op ReduceOp, v *Value, device string) (*Value, error) {
	dev := cStr(device)
	defer freeStr(dev)
	var out *C.dist_value_t
	err := call("dist_strategy_reduce_to_device", func() C.dist_status_t {
		return C.dist_strategy_reduce_to_device(s.ptr(), C.dist_reduce_op_t(op), v.ptr(), dev, &out)
	}, s, v)
	return ownedValue(out), err
}

// BatchReduceTo (dist_strategy_batch_reduce_to): values[i] reduced to destinations[i].
func (s *Strategy) BatchReduceTo(op ReduceOp, values, destinations []*Value) ([]*Value, error) {
	if len(values) != len(destinations) {
		return nil, argError("dist_strategy_batch_reduce_to", "%d values, %d destinations", len(values), len(destinations))
	}
	a, d := cValues(values), cValues(destinations)
	outs := make([]*C.dist_value_t, len(values))
	err := call("dist_strategy_batch_reduce_to", func() C.dist_status_t {
		return C.dist_strategy_batch_reduce_to(s.ptr(), C.dist_reduce_op_t(op), firstPtr(a), firstPtr(d), C.int32_t(len(a)), firstPtr(outs))
	}, s, values, destinations)
	if err != nil {
		return nil, err
	}
	return ownedValues(outs), nil
}
