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

// Code is a dist_status_t: the library's status codes, numbered as Abseil's and gRPC's.
type Code int32

// The status codes of status.h.
const (
	CodeOK                 Code = C.DIST_OK
	CodeCancelled          Code = C.DIST_CANCELLED
	CodeUnknown            Code = C.DIST_UNKNOWN
	CodeInvalidArgument    Code = C.DIST_INVALID_ARGUMENT
	CodeDeadlineExceeded   Code = C.DIST_DEADLINE_EXCEEDED
	CodeNotFound           Code = C.DIST_NOT_FOUND
	CodeAlreadyExists      Code = C.DIST_ALREADY_EXISTS
	CodePermissionDenied   Code = C.DIST_PERMISSION_DENIED
	CodeResourceExhausted  Code = C.DIST_RESOURCE_EXHAUSTED
	CodeFailedPrecondition Code = C.DIST_FAILED_PRECONDITION
	CodeAborted            Code = C.DIST_ABORTED
	CodeOutOfRange         Code = C.DIST_OUT_OF_RANGE
	CodeUnimplemented      Code = C.DIST_UNIMPLEMENTED
	CodeInternal           Code = C.DIST_INTERNAL
	CodeUnavailable        Code = C.DIST_UNAVAILABLE
	CodeDataLoss           Code = C.DIST_DATA_LOSS
	CodeUnauthenticated    Code = C.DIST_UNAUTHENTICATED
)

// String is the library's name of the code (dist_status_name).
func (c Code) String() string { return C.GoString(C.dist_status_name(C.dist_status_t(c))) }

// Error is a failed library call: the status code, the C function that failed and the
// library's message. Compare with errors.Is against the Err* sentinels (one per code).
type Error struct {
	Code Code
	Op   string // the C function (or binding step) that failed
	Msg  string // dist_last_error_message(), or the Go error of a callback
	// Cause is the Go error (or recovered panic) of a callback that failed the call.
	Cause error
}

func (e *Error) Error() string {
	if e.Op == "" {
		return fmt.Sprintf("distribute: %s: %s", e.Code, e.Msg)
	}
	return fmt.Sprintf("distribute: %s: %s: %s", e.Op, e.Code, e.Msg)
}

// Is matches any *Error with the same code, so errors.Is(err, ErrInvalidArgument) works.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code && (t.Op == "" && t.Msg == "" || t == e)
}

// Unwrap gives the callback's own error, when a callback failed the call.
func (e *Error) Unwrap() error { return e.Cause }

// Sentinels, one per status code, for errors.Is.
var (
	ErrCancelled          = &Error{Code: CodeCancelled}
	ErrUnknown            = &Error{Code: CodeUnknown}
	ErrInvalidArgument    = &Error{Code: CodeInvalidArgument}
	ErrDeadlineExceeded   = &Error{Code: CodeDeadlineExceeded}
	ErrNotFound           = &Error{Code: CodeNotFound}
	ErrAlreadyExists      = &Error{Code: CodeAlreadyExists}
	ErrPermissionDenied   = &Error{Code: CodePermissionDenied}
	ErrResourceExhausted  = &Error{Code: CodeResourceExhausted}
	ErrFailedPrecondition = &Error{Code: CodeFailedPrecondition}
	ErrAborted            = &Error{Code: CodeAborted}
	ErrOutOfRange         = &Error{Code: CodeOutOfRange}
	ErrUnimplemented      = &Error{Code: CodeUnimplemented}
	ErrInternal           = &Error{Code: CodeInternal}
	ErrUnavailable        = &Error{Code: CodeUnavailable}
	ErrDataLoss           = &Error{Code: CodeDataLoss}
	ErrUnauthenticated    = &Error{Code: CodeUnauthenticated}
)

// PanicError is the Cause of the error of a call whose Go callback panicked.
type PanicError struct {
	Value interface{}
	Stack []byte
}

func (p *PanicError) Error() string { return fmt.Sprintf("panic in callback: %v", p.Value) }

// check is the one place that maps a dist_status_t to a Go error. It must run on the OS
// thread of the call that returned rc (the message is thread-local): call() guarantees it.
func check(op string, rc C.dist_status_t) error {
	if rc == C.DIST_OK {
		return nil
	}
	return &Error{Code: Code(rc), Op: op, Msg: C.GoString(C.dist_last_error_message())}
}

// call runs f, one or more C calls, and reads the library's message on the same OS thread.
// Lock/UnlockOSThread nest, so it is safe inside a callback or a caller's own lock.
//
// keep lists the Go handles (and slices of them) whose C pointers f passes: they stay
// reachable until f has returned, so the garbage collector cannot run their finalizers,
// which destroy the C objects, while a C call still uses them.
func call(op string, f func() C.dist_status_t, keep ...interface{}) error {
	runtime.LockOSThread()
	err := check(op, f())
	runtime.UnlockOSThread()
	runtime.KeepAlive(keep)
	return err
}

// callString is call for a C function that returns a string owned by a handle (valid while
// the handle lives): the string is copied before keep may be released.
func callString(op string, f func(out **C.char) C.dist_status_t, keep ...interface{}) (string, error) {
	var s *C.char
	err := call(op, func() C.dist_status_t { return f(&s) })
	str := goStr(s)
	runtime.KeepAlive(keep)
	return str, err
}

// argError is a binding-side INVALID_ARGUMENT (a Go argument the C API cannot express).
func argError(op, format string, a ...interface{}) error {
	return &Error{Code: CodeInvalidArgument, Op: op, Msg: fmt.Sprintf(format, a...)}
}

// cStr makes an optional C string: "" is NULL. Free with freeStr.
func cStr(s string) *C.char {
	if s == "" {
		return nil
	}
	return C.CString(s)
}

func freeStr(p *C.char) {
	if p != nil {
		C.free(unsafe.Pointer(p))
	}
}
