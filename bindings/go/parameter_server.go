package distribute

/*
#include "shim.h"
*/
import "C"

import (
	"math"
	"runtime"
	"unsafe"
)

// PlacementPolicy is a dist_placement_policy_t: how a ParameterServerStrategy assigns
// variables (or shards) to ps tasks.
type PlacementPolicy int32

// The placement policies of parameter_server.h.
const (
	PlacementRoundRobin  PlacementPolicy = C.DIST_PLACEMENT_ROUND_ROBIN
	PlacementGreedyBytes PlacementPolicy = C.DIST_PLACEMENT_GREEDY_BYTES
)

// ParameterServerOptions is a dist_parameter_server_options_t: placement and partitioner.
type ParameterServerOptions struct {
	p *C.dist_parameter_server_options_t
}

func (o *ParameterServerOptions) ptr() *C.dist_parameter_server_options_t {
	if o == nil {
		return nil
	}
	return o.p
}

func newParameterServerOptions(p *C.dist_parameter_server_options_t) *ParameterServerOptions {
	o := &ParameterServerOptions{p: p}
	runtime.SetFinalizer(o, finalizeParameterServerOptions)
	return o
}

// NewParameterServerOptions (dist_parameter_server_options_create): round-robin, no partitioner.
func NewParameterServerOptions() (*ParameterServerOptions, error) {
	var out *C.dist_parameter_server_options_t
	err := call("dist_parameter_server_options_create", func() C.dist_status_t {
		return C.dist_parameter_server_options_create(&out)
	})
	if err != nil {
		return nil, err
	}
	return newParameterServerOptions(out), nil
}

// Close (dist_parameter_server_options_destroy). Safe on nil and twice.
func (o *ParameterServerOptions) Close() {
	if o == nil || o.p == nil {
		return
	}
	runtime.SetFinalizer(o, nil)
	C.dist_parameter_server_options_destroy(o.p)
	o.p = nil
}

// SetPlacement (dist_parameter_server_options_set_placement).
func (o *ParameterServerOptions) SetPlacement(policy PlacementPolicy) error {
	return call("dist_parameter_server_options_set_placement", func() C.dist_status_t {
		return C.dist_parameter_server_options_set_placement(o.ptr(), C.dist_placement_policy_t(policy))
	}, o)
}

// SetFixedShards is fixed_size_partitioner (dist_parameter_server_options_set_fixed_shards).
func (o *ParameterServerOptions) SetFixedShards(numShards int64, axis int32) error {
	return call("dist_parameter_server_options_set_fixed_shards", func() C.dist_status_t {
		return C.dist_parameter_server_options_set_fixed_shards(o.ptr(), C.int64_t(numShards), C.int32_t(axis))
	}, o)
}

// SetMinMaxShards is min_max_variable_partitioner (dist_parameter_server_options_set_min_max_shards).
func (o *ParameterServerOptions) SetMinMaxShards(maxPartitions int64, axis int32, minSliceSize int64) error {
	return call("dist_parameter_server_options_set_min_max_shards", func() C.dist_status_t {
		return C.dist_parameter_server_options_set_min_max_shards(o.ptr(), C.int64_t(maxPartitions),
			C.int32_t(axis), C.int64_t(minSliceSize))
	}, o)
}

// SetMaxShardBytes is variable_axis_size_partitioner (dist_parameter_server_options_set_max_shard_bytes);
// maxShards 0: no limit.
func (o *ParameterServerOptions) SetMaxShardBytes(maxShardBytes int64, axis int32, maxShards int64) error {
	return call("dist_parameter_server_options_set_max_shard_bytes", func() C.dist_status_t {
		return C.dist_parameter_server_options_set_max_shard_bytes(o.ptr(), C.int64_t(maxShardBytes),
			C.int32_t(axis), C.int64_t(maxShards))
	}, o)
}

// ClearPartitioner (dist_parameter_server_options_clear_partitioner).
func (o *ParameterServerOptions) ClearPartitioner() error {
	return call("dist_parameter_server_options_clear_partitioner", func() C.dist_status_t {
		return C.dist_parameter_server_options_clear_partitioner(o.ptr())
	}, o)
}

// NewParameterServerStrategy (dist_strategy_create_parameter_server): a nil cluster reads
// TF_CONFIG (unset: local mode, variables in this process); nil options are the defaults.
func NewParameterServerStrategy(cluster *Cluster, communication *CommunicationOptions,
	options *ParameterServerOptions) (*Strategy, error) {
	var out *C.dist_strategy_t
	err := call("dist_strategy_create_parameter_server", func() C.dist_status_t {
		return C.dist_strategy_create_parameter_server(cluster.ptr(), communication.ptr(), options.ptr(), &out)
	}, cluster, communication, options)
	return newStrategy(out), err
}

// Hyperparameter is a named number of an update function: a declaration's default
// (math.NaN(): required), a call's override, or a resolved value handed to the function.
type Hyperparameter struct {
	Name  string
	Value float64
}

// Required is the default of a hyperparameter every call must give.
var Required = math.NaN()

// Slot is a slot variable of an update function, created beside the variable on its first
// update with every element InitialValue.
type Slot struct {
	Name         string
	InitialValue float64
}

// UpdateFunctionSpec declares what a registered update function takes.
type UpdateFunctionSpec struct {
	NumArgs         int
	Slots           []Slot
	Hyperparameters []Hyperparameter // defaults, in the order the function receives them
}

// RegisteredUpdateFunc is a dist_registered_update_fn: variables are the variable and then
// its slots, borrowed, whose buffers (DataPointer) are the stored values to write in place;
// args are borrowed; hyperparameters come resolved in declaration order. It runs on the
// thread that applies the update (a ps task's, or the caller's in local mode) and must not
// call back into strategies or variables. Return an error after writing nothing to refuse.
type RegisteredUpdateFunc func(variables, args []*Value, hyperparameters []Hyperparameter) error

// RegisterUpdateFunction (dist_function_register) registers fn as name in this process;
// the library keeps fn until UnregisterUpdateFunction.
func RegisterUpdateFunction(name string, spec UpdateFunctionSpec, fn RegisteredUpdateFunc) error {
	if fn == nil {
		return argError("dist_function_register", "fn is nil")
	}
	slotNames := make([]string, len(spec.Slots))
	slotValues := make([]C.double, len(spec.Slots))
	for i, s := range spec.Slots {
		slotNames[i], slotValues[i] = s.Name, C.double(s.InitialValue)
	}
	hyperNames := make([]string, len(spec.Hyperparameters))
	hyperDefaults := make([]C.double, len(spec.Hyperparameters))
	for i, h := range spec.Hyperparameters {
		hyperNames[i], hyperDefaults[i] = h.Name, C.double(h.Value)
	}
	cName := C.CString(name)
	defer C.free(unsafe.Pointer(cName))
	cSlots, freeSlots := cStrings(slotNames)
	defer freeSlots()
	cHypers, freeHypers := cStrings(hyperNames)
	defer freeHypers()
	h := newCallback(&callbackState{fn: fn})
	err := call("dist_function_register", func() C.dist_status_t {
		return C.distgo_function_register(cName, C.uintptr_t(h), C.int32_t(spec.NumArgs), cSlots,
			firstDouble(slotValues), C.int32_t(len(slotNames)), cHypers, firstDouble(hyperDefaults),
			C.int32_t(len(hyperNames)))
	})
	if err != nil {
		freeCallback(h) // refused: the library did not keep it
	}
	return err
}

// UnregisterUpdateFunction (dist_function_unregister): ErrNotFound when absent,
// ErrFailedPrecondition for a built-in.
func UnregisterUpdateFunction(name string) error {
	cName := C.CString(name)
	defer C.free(unsafe.Pointer(cName))
	return call("dist_function_unregister", func() C.dist_status_t { return C.dist_function_unregister(cName) })
}

// IsUpdateFunctionRegistered (dist_function_is_registered).
func IsUpdateFunctionRegistered(name string) (bool, error) {
	cName := C.CString(name)
	defer C.free(unsafe.Pointer(cName))
	var out C.int32_t
	err := call("dist_function_is_registered", func() C.dist_status_t { return C.dist_function_is_registered(cName, &out) })
	return out != 0, err
}

//export goRegisteredUpdateCall
func goRegisteredUpdateCall(variables **C.dist_value_t, numVariables C.int32_t, args **C.dist_value_t,
	numArgs C.int32_t, names **C.char, values *C.double, numHyperparameters C.int32_t, h C.uintptr_t) C.dist_status_t {
	st := stateOf(h)
	if st == nil {
		return C.DIST_INTERNAL
	}
	hyperparameters := make([]Hyperparameter, int(numHyperparameters))
	if numHyperparameters > 0 {
		cNames := unsafe.Slice(names, int(numHyperparameters))
		cValues := unsafe.Slice(values, int(numHyperparameters))
		for i := range hyperparameters {
			hyperparameters[i] = Hyperparameter{Name: C.GoString(cNames[i]), Value: float64(cValues[i])}
		}
	}
	err := protect(func() error {
		return st.fn.(RegisteredUpdateFunc)(borrowedValues(cArray(variables, numVariables)),
			borrowedValues(cArray(args, numArgs)), hyperparameters)
	})
	if err != nil {
		return st.fail(err)
	}
	return C.DIST_OK
}

// ApplyUpdate applies registered update function to a ParameterServerStrategy's variable
// where it lives (dist_variable_apply_update); hyperparameters override the defaults.
func (v *Value) ApplyUpdate(function string, args []*Value, hyperparameters ...Hyperparameter) error {
	cFunction := C.CString(function)
	defer C.free(unsafe.Pointer(cFunction))
	cNames, values, freeNames := cHyperparameters(hyperparameters)
	defer freeNames()
	a := cValues(args)
	return call("dist_variable_apply_update", func() C.dist_status_t {
		return C.dist_variable_apply_update(v.ptr(), cFunction, firstPtr(a), C.int32_t(len(a)), cNames,
			firstDouble(values), C.int32_t(len(values)))
	}, v, args)
}

// ApplyUpdates is ApplyUpdate on 1 ... MaxBatchVariables variables of
// ParameterServerStrategies at once (dist_variables_apply_update): variables[i] with its
// arguments args[i], every one with the same function and hyperparameters, each ps task
// getting one call for all the shards it holds. args has one row per variable, all of the
// same length (a function without arguments: rows of none); another shape is
// ErrInvalidArgument before anything is sent. Every update is attempted and the first
// failure is returned, naming its entry ("variables[2]: ..."); the others stay applied.
func ApplyUpdates(variables []*Value, function string, args [][]*Value, hyperparameters ...Hyperparameter) error {
	const op = "dist_variables_apply_update"
	if len(args) != len(variables) {
		return argError(op, "%d rows of args for %d variables: expected one row per variable", len(args), len(variables))
	}
	numArgs := 0
	if len(args) > 0 {
		numArgs = len(args[0])
	}
	// Row-major, as the C call reads it: variable i's arguments at i*numArgs.
	a := make([]*C.dist_value_t, 0, len(variables)*numArgs)
	for i, row := range args {
		if len(row) != numArgs {
			return argError(op, "args[%d] has %d values but args[0] has %d: every variable takes the same number of arguments",
				i, len(row), numArgs)
		}
		a = append(a, cValues(row)...)
	}
	vs := cValues(variables)
	cFunction := C.CString(function)
	defer C.free(unsafe.Pointer(cFunction))
	cNames, values, freeNames := cHyperparameters(hyperparameters)
	defer freeNames()
	return call(op, func() C.dist_status_t {
		return C.dist_variables_apply_update(firstPtr(vs), C.int32_t(len(vs)), cFunction, firstPtr(a),
			C.int32_t(numArgs), cNames, firstDouble(values), C.int32_t(len(values)))
	}, variables, args)
}

// cHyperparameters is hyperparameters as the C calls take them: a C array of C strings
// (free it with the function returned) and the values, a Go array without Go pointers.
func cHyperparameters(hyperparameters []Hyperparameter) (**C.char, []C.double, func()) {
	names := make([]string, len(hyperparameters))
	values := make([]C.double, len(hyperparameters))
	for i, h := range hyperparameters {
		names[i], values[i] = h.Name, C.double(h.Value)
	}
	cNames, free := cStrings(names)
	return cNames, values, free
}

// NumShards (dist_variable_num_shards): 1 for an unpartitioned variable.
func (v *Value) NumShards() (int, error) {
	var out C.int32_t
	err := call("dist_variable_num_shards", func() C.dist_status_t { return C.dist_variable_num_shards(v.ptr(), &out) }, v)
	return int(out), err
}

// ShardTask (dist_variable_shard_task): the ps task index holding shard index.
func (v *Value) ShardTask(index int) (int, error) {
	var out C.int32_t
	err := call("dist_variable_shard_task", func() C.dist_status_t {
		return C.dist_variable_shard_task(v.ptr(), C.int32_t(index), &out)
	}, v)
	return int(out), err
}

func firstDouble(a []C.double) *C.double {
	if len(a) == 0 {
		return nil
	}
	return &a[0]
}
