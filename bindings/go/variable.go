package distribute

/*
#include "shim.h"
*/
import "C"

// Synchronization is a dist_variable_sync_t (tf.VariableSynchronization).
type Synchronization int32

// Synchronizations.
const (
	SyncAuto    Synchronization = C.DIST_SYNC_AUTO
	SyncNone    Synchronization = C.DIST_SYNC_NONE
	SyncOnWrite Synchronization = C.DIST_SYNC_ON_WRITE
	SyncOnRead  Synchronization = C.DIST_SYNC_ON_READ
)

// Aggregation is a dist_variable_aggregation_t (tf.VariableAggregation).
type Aggregation int32

// Aggregations.
const (
	AggregationNone             Aggregation = C.DIST_AGGREGATION_NONE
	AggregationSum              Aggregation = C.DIST_AGGREGATION_SUM
	AggregationMean             Aggregation = C.DIST_AGGREGATION_MEAN
	AggregationOnlyFirstReplica Aggregation = C.DIST_AGGREGATION_ONLY_FIRST_REPLICA
)

// NewVariable creates a variable with the current strategy of this OS thread
// (dist_variable_create): call it inside Strategy.Scope (or with the thread locked
// between ScopeEnter and ScopeExit). name "" lets the library choose.
func NewVariable(initial *Value, sync Synchronization, agg Aggregation, name string) (*Value, error) {
	n := cStr(name)
	defer freeStr(n)
	var out *C.dist_value_t
	err := call("dist_variable_create", func() C.dist_status_t {
		return C.dist_variable_create(initial.ptr(), C.dist_variable_sync_t(sync), C.dist_variable_aggregation_t(agg), n, &out)
	}, initial)
	return ownedValue(out), err
}

// Read reads the variable (dist_variable_read).
func (v *Value) Read() (*Value, error) {
	var out *C.dist_value_t
	err := call("dist_variable_read", func() C.dist_status_t { return C.dist_variable_read(v.ptr(), &out) }, v)
	return ownedValue(out), err
}

// MaxBatchVariables is DIST_MAX_BATCH_VARIABLES: the most variables ReadVariables and
// ApplyUpdates take.
const MaxBatchVariables = C.DIST_MAX_BATCH_VARIABLES

// ReadVariables reads 1 ... MaxBatchVariables variables at once, each as Read reads it
// (dist_variables_read): a ParameterServerStrategy's are fetched with one call per ps task,
// the tasks at once; others are read one by one. Each result is a new tensor (a snapshot of
// its variable, not of the batch), in the order of variables; on error there is none, and
// the message names the failing entry ("variables[2]: ...").
func ReadVariables(variables ...*Value) ([]*Value, error) {
	a := cValues(variables)
	outs := make([]*C.dist_value_t, len(a))
	err := call("dist_variables_read", func() C.dist_status_t {
		return C.dist_variables_read(firstPtr(a), C.int32_t(len(a)), firstPtr(outs))
	}, variables)
	if err != nil {
		return nil, err
	}
	return ownedValues(outs), nil
}

// Assign (dist_variable_assign).
func (v *Value) Assign(x *Value) error {
	return call("dist_variable_assign", func() C.dist_status_t { return C.dist_variable_assign(v.ptr(), x.ptr()) }, v, x)
}

// AssignAdd (dist_variable_assign_add).
func (v *Value) AssignAdd(x *Value) error {
	return call("dist_variable_assign_add", func() C.dist_status_t { return C.dist_variable_assign_add(v.ptr(), x.ptr()) }, v, x)
}

// AssignSub (dist_variable_assign_sub).
func (v *Value) AssignSub(x *Value) error {
	return call("dist_variable_assign_sub", func() C.dist_status_t { return C.dist_variable_assign_sub(v.ptr(), x.ptr()) }, v, x)
}

// Name is the variable's name (dist_variable_name).
func (v *Value) Name() (string, error) {
	return callString("dist_variable_name", func(s **C.char) C.dist_status_t { return C.dist_variable_name(v.ptr(), s) }, v)
}

// VariableDeviceCount (dist_variable_device_count).
func (v *Value) VariableDeviceCount() (int, error) {
	var n C.int32_t
	err := call("dist_variable_device_count", func() C.dist_status_t { return C.dist_variable_device_count(v.ptr(), &n) }, v)
	return int(n), err
}

// VariableDevice i (dist_variable_device).
func (v *Value) VariableDevice(i int) (string, error) {
	return callString("dist_variable_device", func(s **C.char) C.dist_status_t { return C.dist_variable_device(v.ptr(), C.int32_t(i), s) }, v)
}

// Synchronization (dist_variable_synchronization).
func (v *Value) Synchronization() (Synchronization, error) {
	var x C.dist_variable_sync_t
	err := call("dist_variable_synchronization", func() C.dist_status_t { return C.dist_variable_synchronization(v.ptr(), &x) }, v)
	return Synchronization(x), err
}

// Aggregation (dist_variable_aggregation).
func (v *Value) Aggregation() (Aggregation, error) {
	var x C.dist_variable_aggregation_t
	err := call("dist_variable_aggregation", func() C.dist_status_t { return C.dist_variable_aggregation(v.ptr(), &x) }, v)
	return Aggregation(x), err
}

// Version is the library's version string (dist_version).
func Version() string { return C.GoString(C.dist_version()) }

// VersionNumber is major*10000 + minor*100 + patch (dist_version_number).
func VersionNumber() int { return int(C.dist_version_number()) }

// HeaderVersion is the version of the header this binding was compiled against.
const HeaderVersion = C.DIST_VERSION_STRING
