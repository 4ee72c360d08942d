// Package distribute is the Go binding of libdistribute, tf.distribute's strategies
// behind a C ABI. It is plain cgo over the C header: every C function is reachable (see
// README.md's coverage table), handles are types with Close (a handle a program forgets
// is released by the garbage collector: see finalizer.go), failed calls return *Error
// (errors.Is-friendly with one sentinel per status code), and callbacks are Go functions
// run on the library's threads through //export trampolines and runtime/cgo.Handle.
//
// Threads: the library keeps scopes, the current strategy, joined replicas and the last
// error message per OS thread. The binding reads the message on the thread of the failing
// call (runtime.LockOSThread around each call). Strategy.Scope and JoinReplica lock the
// goroutine to its OS thread for you; the raw ScopeEnter/ScopeExit and
// ExperimentalSetStrategy need runtime.LockOSThread from the caller.
package distribute

/*
#cgo pkg-config: distribute
#include "shim.h"
*/
import "C"
