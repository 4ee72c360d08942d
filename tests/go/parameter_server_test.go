package tests

// ParameterServerStrategy from Go: the placement options and their refusals, the registry
// of update functions (a Go function registered and unregistered, the built-ins kept), and
// a local-mode strategy (no TF_CONFIG) whose variable is updated by "sgd" and by a Go
// function, with the values the TF rules give; batches of its variables read and updated
// at once (ReadVariables, ApplyUpdates) against one-by-one reads and sgd computed here.

import (
	"errors"
	"fmt"
	"math"
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

// psVariables is a local-mode ParameterServerStrategy (options may be nil) with one float32
// variable per entry of initial, named after its index.
func psVariables(t *testing.T, options *distribute.ParameterServerOptions, initial ...[]float32) (*distribute.Strategy, []*distribute.Value) {
	t.Helper()
	s, err := distribute.NewParameterServerStrategy(nil, nil, options)
	ok(t, err)
	vs := make([]*distribute.Value, len(initial))
	ok(t, s.Scope(func() error {
		for i, data := range initial {
			x := f32(t, data, []int64{int64(len(data))}, "")
			var err error
			vs[i], err = distribute.NewVariable(x, distribute.SyncAuto, distribute.AggregationNone, fmt.Sprintf("v%d", i))
			x.Close()
			if err != nil {
				return err
			}
		}
		return nil
	}))
	return s, vs
}

// readAllF32 reads vs with ReadVariables and returns their data, closing the results.
func readAllF32(t *testing.T, vs ...*distribute.Value) [][]float32 {
	t.Helper()
	read, err := distribute.ReadVariables(vs...)
	ok(t, err)
	defer distribute.CloseAll(read)
	if len(read) != len(vs) {
		t.Fatalf("ReadVariables returned %d values for %d variables", len(read), len(vs))
	}
	out := make([][]float32, len(read))
	for i, r := range read {
		if k := kindOf(t, r); k != distribute.KindTensor {
			t.Fatalf("result %d is of kind %d, want a tensor", i, k)
		}
		out[i] = readF32(t, r)
	}
	return out
}

func TestReadVariablesMatchesReadingEachVariable(t *testing.T) {
	// Two shards per variable of 2 or more rows, so the batch holds a sharded variable too.
	o, err := distribute.NewParameterServerOptions()
	ok(t, err)
	defer o.Close()
	ok(t, o.SetFixedShards(2, 0))
	initial := [][]float32{{1, 2, 3, 4}, {-5}, {0.5, 0.25, 8}}
	s, vs := psVariables(t, o, initial...)
	defer s.Close()
	defer distribute.CloseAll(vs)
	if n, err := vs[0].NumShards(); err != nil || n != 2 {
		t.Fatalf("variable 0 has %d shards (%v), want 2", n, err)
	}
	// A mirrored variable, read one by one by the library, in the same batch.
	m := mirrored(t, 2)
	defer m.Close()
	var mv *distribute.Value
	ok(t, m.Scope(func() error {
		x := f32(t, []float32{7, 9}, []int64{2}, "")
		defer x.Close()
		var err error
		mv, err = distribute.NewVariable(x, distribute.SyncOnWrite, distribute.AggregationSum, "mirrored")
		return err
	}))
	defer mv.Close()

	want := append(append([][]float32{}, initial...), []float32{7, 9})
	all := append(append([]*distribute.Value{}, vs...), mv)
	check := func(when string) {
		t.Helper()
		got := readAllF32(t, all...)
		for i, v := range all {
			one, err := v.Read()
			ok(t, err)
			single := readF32(t, one)
			one.Close()
			if !eqF32(got[i], want[i]) || !eqF32(single, want[i]) {
				t.Fatalf("%s: variable %d: ReadVariables %v, Read %v, want %v", when, i, got[i], single, want[i])
			}
		}
	}
	check("initially")
	// After assignments, and with a variable twice and another order.
	delta := f32(t, []float32{10, 20, 30, 40}, []int64{4}, "")
	defer delta.Close()
	ok(t, vs[0].AssignAdd(delta))
	want[0] = []float32{11, 22, 33, 44}
	check("after assign_add")
	got := readAllF32(t, vs[2], vs[0], vs[2])
	for i, w := range [][]float32{want[2], want[0], want[2]} {
		if !eqF32(got[i], w) {
			t.Fatalf("reordered batch: result %d is %v, want %v", i, got[i], w)
		}
	}
}

func TestApplyUpdatesAppliesSgdToEachVariable(t *testing.T) {
	s, vs := psVariables(t, nil, []float32{1, 2}, []float32{10, 20, 30})
	defer s.Close()
	defer distribute.CloseAll(vs)
	g0 := f32(t, []float32{2, 4}, []int64{2}, "")
	defer g0.Close()
	g1 := f32(t, []float32{1, -2, 4}, []int64{3}, "")
	defer g1.Close()
	lr := func(x float64) distribute.Hyperparameter {
		return distribute.Hyperparameter{Name: "learning_rate", Value: x}
	}
	// sgd, variable -= learning_rate * gradient, computed here in float64.
	want := [][]float64{{1, 2}, {10, 20, 30}}
	sgd := func(rate float64) {
		for i, g := range [][]float64{{2, 4}, {1, -2, 4}} {
			for j := range g {
				want[i][j] -= rate * g[j]
			}
		}
	}
	check := func(when string) {
		t.Helper()
		got := readAllF32(t, vs...)
		for i := range want {
			for j := range want[i] {
				if math.Abs(float64(got[i][j])-want[i][j]) > 1e-6 {
					t.Fatalf("%s: variable %d is %v, want %v", when, i, got[i], want[i])
				}
			}
		}
	}
	args := [][]*distribute.Value{{g0}, {g1}}
	ok(t, distribute.ApplyUpdates(vs, "sgd", args, lr(0.5)))
	sgd(0.5)
	check("after sgd 0.5") // [0, 0] and [9.5, 21, 28]
	ok(t, distribute.ApplyUpdates(vs, "sgd", args, lr(0.25)))
	sgd(0.25)
	check("after sgd 0.25")
	// One variable alone is ApplyUpdate.
	ok(t, distribute.ApplyUpdates(vs[1:], "sgd", args[1:], lr(1)))
	ok(t, vs[1].ApplyUpdate("sgd", []*distribute.Value{g1}, lr(1)))
	for j, g := range []float64{1, -2, 4} {
		want[1][j] -= 2 * g
	}
	check("after sgd on one variable")
}

func TestReadVariablesAndApplyUpdatesRefuseMisuse(t *testing.T) {
	s, vs := psVariables(t, nil, []float32{1, 2}, []float32{3, 4, 5}, []float32{6})
	defer s.Close()
	defer distribute.CloseAll(vs)
	w0, w1 := vs[0], vs[1]
	closed := vs[2]
	closed.Close()
	tensor := f32(t, []float32{1, 1}, []int64{2}, "")
	defer tensor.Close()
	g0 := f32(t, []float32{1, 1}, []int64{2}, "")
	defer g0.Close()
	g1 := f32(t, []float32{1, 1, 1}, []int64{3}, "")
	defer g1.Close()
	// A variable of another strategy kind.
	plain, err := distribute.NewVariable(g0, distribute.SyncAuto, distribute.AggregationNone, "not_on_a_ps")
	ok(t, err)
	defer plain.Close()
	lr := distribute.Hyperparameter{Name: "learning_rate", Value: 0.5}

	read := func(vs ...*distribute.Value) error {
		t.Helper()
		got, err := distribute.ReadVariables(vs...)
		if got != nil {
			t.Fatalf("ReadVariables returned %d values with error %v", len(got), err)
		}
		return err
	}
	wantErr(t, read(), distribute.ErrInvalidArgument, "count is 0")
	wantErr(t, read(w0, closed), distribute.ErrInvalidArgument, "variables[1]")
	wantErr(t, read(w0, nil), distribute.ErrInvalidArgument, "variables[1]")
	wantErr(t, read(w0, w1, tensor), distribute.ErrInvalidArgument, "variables[2]")

	apply := distribute.ApplyUpdates
	both := []*distribute.Value{w0, w1}
	wantErr(t, apply(nil, "sgd", nil, lr), distribute.ErrInvalidArgument, "count is 0")
	// The rows of args: one per variable, all as long.
	wantErr(t, apply(both, "sgd", [][]*distribute.Value{{g0}}, lr), distribute.ErrInvalidArgument, "1 rows of args for 2 variables")
	wantErr(t, apply(both, "sgd", [][]*distribute.Value{{g0}, {g1, g1}}, lr), distribute.ErrInvalidArgument, "args[1] has 2 values")
	wantErr(t, apply(both, "sgd", [][]*distribute.Value{{g0}, {}}, lr), distribute.ErrInvalidArgument, "args[1] has 0 values")
	// Bad entries, named.
	wantErr(t, apply([]*distribute.Value{w0, closed}, "sgd", [][]*distribute.Value{{g0}, {g1}}, lr),
		distribute.ErrInvalidArgument, "variables[1]")
	wantErr(t, apply([]*distribute.Value{w0, tensor}, "sgd", [][]*distribute.Value{{g0}, {g0}}, lr),
		distribute.ErrInvalidArgument, "variables[1]")
	wantErr(t, apply([]*distribute.Value{w0, plain}, "sgd", [][]*distribute.Value{{g0}, {g0}}, lr),
		distribute.ErrInvalidArgument, "variables[1]")
	wantErr(t, apply(both, "sgd", [][]*distribute.Value{{g0}, {g0}}, lr), distribute.ErrInvalidArgument, "variables[1]: args[0]")
	wantErr(t, apply(both, "sgd", [][]*distribute.Value{{g0}, {nil}}, lr), distribute.ErrInvalidArgument, "variables[1]")
	wantErr(t, apply(both, "sgd", [][]*distribute.Value{{g0}, {g1}}, distribute.Hyperparameter{Name: "rate", Value: 1}),
		distribute.ErrInvalidArgument, "rate")
	wantErr(t, apply(both, "no_such_function", [][]*distribute.Value{{g0}, {g1}}), distribute.ErrNotFound, "no_such_function")
	// Nothing was applied.
	got := readAllF32(t, w0, w1)
	if !eqF32(got[0], []float32{1, 2}) || !eqF32(got[1], []float32{3, 4, 5}) {
		t.Fatalf("refused updates changed the variables: %v", got)
	}
}
