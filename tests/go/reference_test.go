package tests

import (
	"sync/atomic"
	"testing"

	"distribute"
)

// The worked examples of tf.distribute.StrategyExtended's reference page (the programs of
// tests/c/test_reference_examples.c): merge_call -> batch_reduce_to (or reduce_to) ->
// update(var.assign), giving 2.0, 2.0 (Mirrored), 2.0 (CentralStorage), 1.0 (OneDevice).
func runExample(t *testing.T, s *distribute.Strategy, useReduceTo bool) (*distribute.Value, int32, int32) {
	var merges, assigns int32
	assign := func(variable *distribute.Value, args []*distribute.Value) (*distribute.Value, error) {
		atomic.AddInt32(&assigns, 1)
		return nil, variable.Assign(args[0])
	}
	mergeFn := func(st *distribute.Strategy, args []*distribute.Value) (*distribute.Value, error) {
		atomic.AddInt32(&merges, 1)
		var reduced *distribute.Value
		var err error
		if useReduceTo {
			reduced, err = st.ReduceTo(distribute.Sum, args[0], args[1])
		} else {
			var outs []*distribute.Value
			outs, err = st.BatchReduceTo(distribute.Sum, args[:1], args[1:2])
			if err == nil {
				reduced = outs[0]
			}
		}
		if err != nil {
			return nil, err
		}
		defer reduced.Close()
		updated, err := st.Update(args[1], assign, []*distribute.Value{reduced}, true)
		updated.Close()
		return nil, err
	}
	step := func(ctx *distribute.ReplicaContext, args []*distribute.Value) ([]*distribute.Value, error) {
		dev, err := ctx.Device()
		if err != nil {
			return nil, err
		}
		value, err := distribute.Scalar(float32(1), dev) // tf.identity(1.)
		if err != nil {
			return nil, err
		}
		defer value.Close()
		merged, err := ctx.MergeCall(mergeFn, []*distribute.Value{value, args[0]})
		merged.Close()
		return nil, err
	}
	var v *distribute.Value
	ok(t, s.Scope(func() error {
		zero := scalar(t, 0, "")
		defer zero.Close()
		var err error
		v, err = distribute.NewVariable(zero, distribute.SyncAuto, distribute.AggregationNone, "")
		if err != nil {
			return err
		}
		_, err = s.Run(step, []*distribute.Value{v}, 0)
		return err
	}))
	return v, merges, assigns
}

func checkVariable(t *testing.T, v *distribute.Value, want float32) {
	t.Helper()
	r, err := v.Read()
	ok(t, err)
	defer r.Close()
	if got := scalarOf(t, r); got != want {
		t.Fatalf("variable reads %v, want %v", got, want)
	}
}

func TestReferenceExamples(t *testing.T) {
	for _, useReduceTo := range []bool{false, true} {
		name := "batch_reduce_to"
		if useReduceTo {
			name = "reduce_to"
		}
		t.Run(name+"/mirrored", func(t *testing.T) {
			s := mirrored(t, 2)
			defer s.Close()
			v, merges, assigns := runExample(t, s, useReduceTo)
			defer v.Close()
			if merges != 1 || assigns != 2 {
				t.Fatalf("merges %d assigns %d, want 1 and 2", merges, assigns)
			}
			if k := kindOf(t, v); k != distribute.KindMirroredVariable {
				t.Fatalf("kind %d", k)
			}
			name, err := v.Name()
			ok(t, err)
			if name != "Variable" {
				t.Fatalf("name %q", name)
			}
			comps := componentsF32(t, v)
			if len(comps) != 2 || !eqF32(comps[0], []float32{2}) || !eqF32(comps[1], []float32{2}) {
				t.Fatalf("MirroredVariable %v, want {0: 2.0, 1: 2.0}", comps)
			}
			checkVariable(t, v, 2)
		})
		t.Run(name+"/central_storage", func(t *testing.T) {
			s, err := distribute.NewCentralStorageStrategy([]string{"CPU:0", "CPU:1"}, "CPU:0")
			ok(t, err)
			defer s.Close()
			v, merges, assigns := runExample(t, s, useReduceTo)
			defer v.Close()
			if merges != 1 || assigns != 1 {
				t.Fatalf("merges %d assigns %d, want 1 and 1", merges, assigns)
			}
			if k := kindOf(t, v); k != distribute.KindVariable {
				t.Fatalf("kind %d", k)
			}
			checkVariable(t, v, 2)
			r, err := v.Read()
			ok(t, err)
			defer r.Close()
			dev, err := r.Device()
			ok(t, err)
			if dev != "/device:CPU:0" {
				t.Fatalf("device %q", dev)
			}
		})
		t.Run(name+"/one_device", func(t *testing.T) {
			s, err := distribute.NewOneDeviceStrategy("CPU:0")
			ok(t, err)
			defer s.Close()
			v, merges, assigns := runExample(t, s, useReduceTo)
			defer v.Close()
			if merges != 1 || assigns != 1 {
				t.Fatalf("merges %d assigns %d", merges, assigns)
			}
			if k := kindOf(t, v); k != distribute.KindVariable {
				t.Fatalf("kind %d", k)
			}
			checkVariable(t, v, 1)
		})
	}
}

// strategy.extended.update(v, lambda v: v.assign(1.0)) on Mirrored gives Mirrored {1.0, 1.0}.
func TestReferenceUpdate(t *testing.T) {
	s := mirrored(t, 2)
	defer s.Close()
	var v *distribute.Value
	ok(t, s.Scope(func() error {
		five := scalar(t, 5, "")
		defer five.Close()
		var err error
		v, err = distribute.NewVariable(five, distribute.SyncAuto, distribute.AggregationSum, "")
		return err
	}))
	defer v.Close()
	agg, err := v.Aggregation()
	ok(t, err)
	if agg != distribute.AggregationSum {
		t.Fatalf("aggregation %d", agg)
	}
	result, err := s.Update(v, func(variable *distribute.Value, args []*distribute.Value) (*distribute.Value, error) {
		one, err := distribute.Scalar(float32(1), "")
		if err != nil {
			return nil, err
		}
		defer one.Close()
		if err := variable.Assign(one); err != nil {
			return nil, err
		}
		return variable.Read()
	}, nil, true)
	ok(t, err)
	defer result.Close()
	if k := kindOf(t, result); k != distribute.KindMirrored {
		t.Fatalf("kind %d", k)
	}
	for i := 0; i < 2; i++ {
		c, err := result.Component(i)
		ok(t, err)
		if x := scalarOf(t, c); x != 1 {
			t.Fatalf("component %d = %v", i, x)
		}
		dev, err := c.Device()
		ok(t, err)
		if want := "/device:CPU:" + string(rune('0'+i)); dev != want {
			t.Fatalf("device %q want %q", dev, want)
		}
		c.Close()
	}
	if comps := componentsF32(t, v); !eqF32(comps[0], []float32{1}) || !eqF32(comps[1], []float32{1}) {
		t.Fatalf("v = %v", comps)
	}
}

// reduce with axis on a partial batch: [0 1 2 3] and [4 5]: MEAN over axis 0 is 15/6 = 2.5.
func TestReduceAxisPartialBatch(t *testing.T) {
	s := mirrored(t, 2)
	defer s.Close()
	a := f32(t, []float32{0, 1, 2, 3}, []int64{4}, "CPU:0")
	b := f32(t, []float32{4, 5}, []int64{2}, "CPU:1")
	defer a.Close()
	defer b.Close()
	partial, err := distribute.NewPerReplica(a, b)
	ok(t, err)
	defer partial.Close()
	_, err = s.Reduce(distribute.Sum, partial)
	wantErr(t, err, distribute.ErrInvalidArgument, "dist_strategy_reduce")
	cases := []struct {
		op   distribute.ReduceOp
		axis int
		want float32
	}{
		{distribute.Mean, 0, 15.0 / 6.0}, {distribute.Mean, -1, 2.5}, {distribute.Sum, 0, 15},
		{distribute.Min, 0, 0}, {distribute.Max, 0, 5}, {distribute.Product, 0, 0},
	}
	for _, c := range cases {
		out, err := s.ReduceAxis(c.op, partial, c.axis)
		ok(t, err)
		if got := scalarOf(t, out); got != c.want {
			t.Fatalf("op %d axis %d: %v, want %v", c.op, c.axis, got, c.want)
		}
		out.Close()
	}
}
