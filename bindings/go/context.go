package distribute

/*
#include "shim.h"
*/
import "C"

import (
	"runtime"
)

// ReplicaContext is a dist_context_t: handed to a ReplicaFunc (borrowed, valid only during
// that call, on that OS thread), or returned by JoinReplica (then released with Leave).
// It has no finalizer: a borrowed context is the library's, and a joined one may only be
// left from the joining OS thread (dist_context_leave), which a finalizer cannot reach:
// Leave it explicitly.
// Its methods must be called from the replica's own OS thread: inside a ReplicaFunc that
// is the goroutine running it (do not hand the context to another goroutine: that fails
// with ErrFailedPrecondition).
type ReplicaContext struct {
	p      *C.dist_context_t
	joined bool
	run    *callbackState // the Run this context serves (nil for a joined replica)
}

func (c *ReplicaContext) ptr() *C.dist_context_t {
	if c == nil {
		return nil
	}
	return c.p
}

// ReplicaID (dist_context_replica_id).
func (c *ReplicaContext) ReplicaID() (int, error) {
	var x C.int32_t
	err := call("dist_context_replica_id", func() C.dist_status_t { return C.dist_context_replica_id(c.ptr(), &x) }, c)
	return int(x), err
}

// NumReplicasInSync (dist_context_num_replicas_in_sync).
func (c *ReplicaContext) NumReplicasInSync() (int, error) {
	var x C.int32_t
	err := call("dist_context_num_replicas_in_sync", func() C.dist_status_t { return C.dist_context_num_replicas_in_sync(c.ptr(), &x) }, c)
	return int(x), err
}

// Strategy is a new reference to the replica's strategy (dist_context_strategy); Close it.
func (c *ReplicaContext) Strategy() (*Strategy, error) {
	var out *C.dist_strategy_t
	err := call("dist_context_strategy", func() C.dist_status_t { return C.dist_context_strategy(c.ptr(), &out) }, c)
	return newStrategy(out), err
}

// Device is the replica's compute device (dist_context_device).
func (c *ReplicaContext) Device() (string, error) {
	return callString("dist_context_device", func(d **C.char) C.dist_status_t { return C.dist_context_device(c.ptr(), d) }, c)
}

// SetTimeoutMs (dist_context_set_timeout_ms).
func (c *ReplicaContext) SetTimeoutMs(ms int64) error {
	return call("dist_context_set_timeout_ms", func() C.dist_status_t { return C.dist_context_set_timeout_ms(c.ptr(), C.int64_t(ms)) }, c)
}

// AllReduce (dist_context_all_reduce). Collective.
func (c *ReplicaContext) AllReduce(op ReduceOp, v *Value) (*Value, error) {
	var out *C.dist_value_t
	err := call("dist_context_all_reduce", func() C.dist_status_t {
		return C.dist_context_all_reduce(c.ptr(), C.dist_reduce_op_t(op), v.ptr(), &out)
	}, c, v)
	return ownedValue(out), err
}

// AllReduceInto (dist_context_all_reduce_into) writes the all-reduce of v into out, an
// existing tensor of v's shape and of the result's dtype (it may be v itself): no new value
// is made. A wrong out is ErrInvalidArgument on every replica, and nothing is written.
// Collective.
func (c *ReplicaContext) AllReduceInto(op ReduceOp, v, out *Value) error {
	return call("dist_context_all_reduce_into", func() C.dist_status_t {
		return C.dist_context_all_reduce_into(c.ptr(), C.dist_reduce_op_t(op), v.ptr(), out.ptr())
	}, c, v, out)
}

// BatchAllReduce (dist_context_batch_all_reduce). Collective.
func (c *ReplicaContext) BatchAllReduce(op ReduceOp, vs []*Value) ([]*Value, error) {
	a := cValues(vs)
	outs := make([]*C.dist_value_t, len(vs))
	err := call("dist_context_batch_all_reduce", func() C.dist_status_t {
		return C.dist_context_batch_all_reduce(c.ptr(), C.dist_reduce_op_t(op), firstPtr(a), C.int32_t(len(a)), firstPtr(outs))
	}, c, vs)
	if err != nil {
		return nil, err
	}
	return ownedValues(outs), nil
}

// AllGather (dist_context_all_gather). Collective.
func (c *ReplicaContext) AllGather(v *Value, axis int) (*Value, error) {
	var out *C.dist_value_t
	err := call("dist_context_all_gather", func() C.dist_status_t {
		return C.dist_context_all_gather(c.ptr(), v.ptr(), C.int32_t(axis), &out)
	}, c, v)
	return ownedValue(out), err
}

// Broadcast (dist_context_broadcast). Collective.
func (c *ReplicaContext) Broadcast(v *Value, source int) (*Value, error) {
	var out *C.dist_value_t
	err := call("dist_context_broadcast", func() C.dist_status_t {
		return C.dist_context_broadcast(c.ptr(), v.ptr(), C.int32_t(source), &out)
	}, c, v)
	return ownedValue(out), err
}

// MergeFunc runs once in cross-replica context with the gathered arguments (borrowed); it
// may return one new value, of which each replica receives its part.
type MergeFunc func(s *Strategy, args []*Value) (*Value, error)

// MergeCall (dist_context_merge_call). Collective. The result (nil when fn returned nil)
// is the caller's.
func (c *ReplicaContext) MergeCall(fn MergeFunc, args []*Value) (*Value, error) {
	st := &callbackState{fn: fn}
	if c != nil {
		st.parent = c.run
	}
	h := newCallback(st)
	defer freeCallback(h)
	a := cValues(args)
	var out *C.dist_value_t
	err := call("dist_context_merge_call", func() C.dist_status_t {
		return C.distgo_merge_call(c.ptr(), C.uintptr_t(h), firstPtr(a), C.int32_t(len(a)), &out)
	}, c, args)
	return ownedValue(out), st.finish("", err)
}

//export goMergeCall
func goMergeCall(s *C.dist_strategy_t, args **C.dist_value_t, n C.int32_t, out **C.dist_value_t, h C.uintptr_t) C.dist_status_t {
	st := stateOf(h)
	if st == nil {
		return C.DIST_INTERNAL
	}
	err := protect(func() error {
		// The strategy is borrowed: wrap it without Close.
		v, err := st.fn.(MergeFunc)(&Strategy{p: s, borrowed: true}, borrowedValues(cArray(args, n)))
		if err != nil {
			v.Close()
			return err
		}
		if v == nil {
			return nil
		}
		return storeResults("merge function", []*Value{v}, cArray(out, 1))
	})
	if err != nil {
		return st.fail(err)
	}
	return C.DIST_OK
}

// Leave leaves a replica joined with JoinReplica and releases the context
// (dist_context_leave), then unlocks the OS thread JoinReplica locked. Call it from the
// goroutine that joined. On error the context stays valid and the thread stays locked.
func (c *ReplicaContext) Leave() error {
	err := call("dist_context_leave", func() C.dist_status_t { return C.dist_context_leave(c.ptr()) }, c)
	if err == nil && c != nil && c.p != nil {
		c.p = nil
		if c.joined {
			c.joined = false
			runtime.UnlockOSThread()
		}
	}
	return err
}
