package tests

// ParameterServerStrategy from Go: the placement options and their refusals, the registry
// of update functions (a Go function registered and unregistered, the built-ins kept), and
// a local-mode strategy (no TF_CONFIG) whose variable is updated by "sgd" and by a Go
// function, with the values the TF rules give.

import (
	"errors"
	"fmt"
	"testing"
	"unsafe"

	"distribute"
)

func TestParameterServerOptions(t *testing.T) {
	o, err := distribute.NewParameterServerOptions()
	ok(t, err)
	defer o.Close()
	ok(t, o.SetPlacement(distribute.PlacementGreedyBytes))
	ok(t, o.SetPlacement(distribute.PlacementRoundRobin))
	ok(t, o.SetFixedShards(1, 0))
	ok(t, o.SetFixedShards(4096, 2))
	ok(t, o.SetMinMaxShards(8, 0, 262144))
	ok(t, o.SetMaxShardBytes(1<<20, 0, 0))
	ok(t, o.ClearPartitioner())
	wantErr(t, o.SetPlacement(2), distribute.ErrInvalidArgument, "placement policy 2")
	wantErr(t, o.SetFixedShards(0, 0), distribute.ErrInvalidArgument, "num_shards")
	wantErr(t, o.SetFixedShards(4097, 0), distribute.ErrInvalidArgument, "4096")
	wantErr(t, o.SetFixedShards(2, -1), distribute.ErrInvalidArgument, "axis")
	wantErr(t, o.SetMinMaxShards(0, 0, 1), distribute.ErrInvalidArgument, "max_partitions")
	wantErr(t, o.SetMinMaxShards(2, 0, 0), distribute.ErrInvalidArgument, "min_slice_size")
	wantErr(t, o.SetMaxShardBytes(0, 0, 0), distribute.ErrInvalidArgument, "max_shard_bytes")
	wantErr(t, o.SetMaxShardBytes(64, 0, -1), distribute.ErrInvalidArgument, "max_shards")
	// Closed (and nil) options are a NULL handle to the library.
	o.Close()
	o.Close()
	wantErr(t, o.SetFixedShards(2, 0), distribute.ErrInvalidArgument, "options")
	var none *distribute.ParameterServerOptions
	wantErr(t, none.ClearPartitioner(), distribute.ErrInvalidArgument, "options")
}

func noopUpdate([]*distribute.Value, []*distribute.Value, []distribute.Hyperparameter) error {
	return nil
}

func TestRegisterAndUnregisterAGoUpdateFunction(t *testing.T) {
	const name = "go_registered"
	registered := func(n string) bool {
		t.Helper()
		r, err := distribute.IsUpdateFunctionRegistered(n)
		ok(t, err)
		return r
	}
	if registered(name) {
		t.Fatalf("%s registered before the test", name)
	}
	spec := distribute.UpdateFunctionSpec{
		NumArgs:         1,
		Slots:           []distribute.Slot{{Name: "m", InitialValue: 0}},
		Hyperparameters: []distribute.Hyperparameter{{Name: "lr", Value: 0.1}, {Name: "decay", Value: distribute.Required}},
	}
	ok(t, distribute.RegisterUpdateFunction(name, spec, noopUpdate))
	if !registered(name) {
		t.Fatalf("%s not registered", name)
	}
	wantErr(t, distribute.RegisterUpdateFunction(name, spec, noopUpdate), distribute.ErrAlreadyExists, name)
	ok(t, distribute.UnregisterUpdateFunction(name))
	if registered(name) {
		t.Fatalf("%s still registered", name)
	}
	wantErr(t, distribute.UnregisterUpdateFunction(name), distribute.ErrNotFound, name)
	for _, builtin := range []string{"sgd", "momentum", "nesterov_momentum", "adagrad", "adam"} {
		if !registered(builtin) {
			t.Errorf("built-in %s not registered", builtin)
		}
		wantErr(t, distribute.UnregisterUpdateFunction(builtin), distribute.ErrFailedPrecondition, builtin)
	}
	// Refusals register nothing.
	wantErr(t, distribute.RegisterUpdateFunction(name, distribute.UpdateFunctionSpec{NumArgs: 17}, noopUpdate),
		distribute.ErrInvalidArgument, "num_args")
	wantErr(t, distribute.RegisterUpdateFunction("", spec, noopUpdate), distribute.ErrInvalidArgument, "name")
	wantErr(t, distribute.RegisterUpdateFunction(name, spec, nil), distribute.ErrInvalidArgument, "fn")
	twice := distribute.UpdateFunctionSpec{Slots: []distribute.Slot{{Name: "m"}, {Name: "m"}}}
	wantErr(t, distribute.RegisterUpdateFunction(name, twice, noopUpdate), distribute.ErrInvalidArgument, "twice")
	if registered(name) {
		t.Fatalf("a refused registration registered %s", name)
	}
}

// f32s views a borrowed float32 tensor's stored buffer, to write it in place.
func f32s(v *distribute.Value) ([]float32, error) {
	p, err := v.DataPointer()
	if err != nil {
		return nil, err
	}
	n, err := v.NumElements()
	if err != nil {
		return nil, err
	}
	return unsafe.Slice((*float32)(p), n), nil
}

func TestLocalParameterServerStrategyAppliesSgdAndAGoFunction(t *testing.T) {
	var calls int
	var seen []string
	// variable += scale * arg; the slot "steps" counts the calls (starting at 10).
	scaledAdd := func(variables, args []*distribute.Value, hyper []distribute.Hyperparameter) error {
		calls++
		seen = append(seen, fmt.Sprint(hyper))
		if len(variables) != 2 || len(args) != 1 || len(hyper) != 1 {
			return fmt.Errorf("called with %d variables, %d args, %d hyperparameters", len(variables), len(args), len(hyper))
		}
		variable, err := f32s(variables[0])
		if err != nil {
			return err
		}
		steps, err := f32s(variables[1])
		if err != nil {
			return err
		}
		arg, err := args[0].Float32s()
		if err != nil {
			return err
		}
		for i := range arg {
			variable[i] += float32(hyper[0].Value) * arg[i]
			steps[i]++
		}
		return nil
	}
	spec := distribute.UpdateFunctionSpec{
		NumArgs:         1,
		Slots:           []distribute.Slot{{Name: "steps", InitialValue: 10}},
		Hyperparameters: []distribute.Hyperparameter{{Name: "scale", Value: 1}},
	}
	ok(t, distribute.RegisterUpdateFunction("go_scaled_add", spec, scaledAdd))
	defer func() { ok(t, distribute.UnregisterUpdateFunction("go_scaled_add")) }()
	refuse := errors.New("refused")
	ok(t, distribute.RegisterUpdateFunction("go_failing", distribute.UpdateFunctionSpec{},
		func([]*distribute.Value, []*distribute.Value, []distribute.Hyperparameter) error { return refuse }))
	defer func() { ok(t, distribute.UnregisterUpdateFunction("go_failing")) }()

	s, err := distribute.NewParameterServerStrategy(nil, nil, nil)
	ok(t, err)
	defer s.Close()
	initial := f32(t, []float32{1, 2}, []int64{2}, "")
	defer initial.Close()
	var w *distribute.Value
	ok(t, s.Scope(func() error {
		var err error
		w, err = distribute.NewVariable(initial, distribute.SyncAuto, distribute.AggregationNone, "w")
		return err
	}))
	defer w.Close()
	shards, err := w.NumShards()
	ok(t, err)
	task, err := w.ShardTask(0)
	ok(t, err)
	if shards != 1 || task != 0 {
		t.Fatalf("shards %d, task %d: want 1 shard on task 0", shards, task)
	}
	_, err = w.ShardTask(1)
	wantErr(t, err, distribute.ErrOutOfRange, "")

	// sgd: [1, 2] - 0.5 * [2, 4] = [0, 0].
	gradient := f32(t, []float32{2, 4}, []int64{2}, "")
	defer gradient.Close()
	ok(t, w.ApplyUpdate("sgd", []*distribute.Value{gradient}, distribute.Hyperparameter{Name: "learning_rate", Value: 0.5}))
	read := func() []float32 {
		t.Helper()
		v, err := w.Read()
		ok(t, err)
		defer v.Close()
		return readF32(t, v)
	}
	if got := read(); !eqF32(got, []float32{0, 0}) {
		t.Fatalf("after sgd: %v, want [0 0]", got)
	}
	// The Go function, its default scale then 3: [0,0] + [1,2] + 3*[1,2] = [4, 8].
	arg := f32(t, []float32{1, 2}, []int64{2}, "")
	defer arg.Close()
	ok(t, w.ApplyUpdate("go_scaled_add", []*distribute.Value{arg}))
	ok(t, w.ApplyUpdate("go_scaled_add", []*distribute.Value{arg}, distribute.Hyperparameter{Name: "scale", Value: 3}))
	if got := read(); !eqF32(got, []float32{4, 8}) {
		t.Fatalf("after go_scaled_add: %v, want [4 8]", got)
	}
	if calls != 2 || fmt.Sprint(seen) != "[[{scale 1}] [{scale 3}]]" {
		t.Fatalf("calls %d, hyperparameters seen %v", calls, seen)
	}
	// Refused before the function runs; a failing function writes nothing.
	wantErr(t, w.ApplyUpdate("go_scaled_add", []*distribute.Value{arg}, distribute.Hyperparameter{Name: "rate", Value: 1}),
		distribute.ErrInvalidArgument, "rate")
	wantErr(t, w.ApplyUpdate("no_such_function", []*distribute.Value{arg}), distribute.ErrNotFound, "no_such_function")
	wantErr(t, w.ApplyUpdate("go_failing", nil), distribute.ErrUnknown, "go_failing")
	if calls != 2 {
		t.Fatalf("refused updates called the function: %d calls", calls)
	}
	if got := read(); !eqF32(got, []float32{4, 8}) {
		t.Fatalf("after the refusals: %v, want [4 8]", got)
	}
}

func TestApplyUpdateRefusesAVariableOfAnotherStrategy(t *testing.T) {
	initial := f32(t, []float32{1, 2}, []int64{2}, "")
	defer initial.Close()
	v, err := distribute.NewVariable(initial, distribute.SyncAuto, distribute.AggregationNone, "not_on_a_ps")
	ok(t, err)
	defer v.Close()
	wantErr(t, v.ApplyUpdate("sgd", []*distribute.Value{initial}, distribute.Hyperparameter{Name: "learning_rate", Value: 0.5}),
		distribute.ErrInvalidArgument, "variable")
	_, err = v.NumShards()
	wantErr(t, err, distribute.ErrInvalidArgument, "variable")
}
