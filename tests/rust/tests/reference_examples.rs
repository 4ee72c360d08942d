//! The seed worked examples of tf.distribute.StrategyExtended's reference page (the Rust
//! version of tests/c/test_reference_examples.c), and reduce with an axis on a partial
//! batch (tests/c/test_reduce.c).

use std::sync::atomic::{AtomicUsize, Ordering};

use distribute::*;
use distribute_tests::*;

struct Counts {
    merges: usize,
    assigns: usize,
}

/// with strategy.scope(): v = tf.Variable(0.); strategy.run(step_fn, args=(v,)); return v
/// where step_fn merge_calls batch_reduce_to (or reduce_to) of tf.identity(1.) onto v and
/// assigns the result with extended.update.
fn run_example(s: &Strategy, use_reduce_to: bool) -> (Value, Counts) {
    let merges = AtomicUsize::new(0);
    let assigns = AtomicUsize::new(0);
    let zero = Value::scalar(0.0f32, None).unwrap();
    let scope = s.scope().unwrap();
    let v = Value::new_variable(&zero, VariableSync::Auto, VariableAggregation::None, None).unwrap();
    s.run(&[&v], 0, |ctx, args| {
        assert_eq!(args.len(), 1);
        let value = Value::scalar(1.0f32, Some(&ctx.device()?))?; // tf.identity(1.)
        ctx.merge_call(&[&value, &args[0]], |strategy, margs| {
            merges.fetch_add(1, Ordering::SeqCst);
            assert_eq!(margs.len(), 2);
            let reduced = if use_reduce_to {
                strategy.reduce_to(ReduceOp::Sum, &margs[0], &margs[1])?
            } else {
                strategy.batch_reduce_to(ReduceOp::Sum, &[(&margs[0], &margs[1])])?.remove(0)
            };
            strategy.update(&margs[1], &[&reduced], true, |var, uargs| {
                assigns.fetch_add(1, Ordering::SeqCst);
                var.assign(&uargs[0])?;
                Ok(None)
            })?;
            Ok(None)
        })?;
        Ok(vec![])
    })
    .unwrap();
    scope.exit().unwrap();
    (v, Counts { merges: merges.into_inner(), assigns: assigns.into_inner() })
}

fn check_mirrored(use_reduce_to: bool) {
    let s = mirrored(2);
    let (v, c) = run_example(&s, use_reduce_to);
    // Each of the 2 replicas contributes 1.0: SUM gives 2.0 on every copy.
    let expected = 2.0f32 * 1.0;
    assert_eq!(c.merges, 1);
    assert_eq!(c.assigns, 2);
    assert_eq!(v.kind().unwrap(), ValueKind::MirroredVariable);
    assert_eq!(v.num_components().unwrap(), 2);
    assert_eq!(v.variable_name().unwrap(), "Variable");
    for i in 0..2 {
        assert_eq!(component_f32(&v, i), vec![expected]);
    }
    assert_eq!(v.read().unwrap().scalar_f32().unwrap(), expected);
}

fn check_central_storage(use_reduce_to: bool) {
    setup();
    let s = Strategy::central_storage(&["CPU:0", "CPU:1"], Some("CPU:0")).unwrap();
    s.set_timeout_ms(TIMEOUT_MS).unwrap();
    let (v, c) = run_example(&s, use_reduce_to);
    assert_eq!(c.merges, 1);
    assert_eq!(c.assigns, 1);
    assert_eq!(v.kind().unwrap(), ValueKind::Variable);
    assert_eq!(v.num_components().unwrap(), 1);
    let read = v.read().unwrap();
    assert_eq!(read.scalar_f32().unwrap(), 2.0);
    assert_eq!(read.device().unwrap(), "/device:CPU:0");
}

fn check_one_device(use_reduce_to: bool) {
    setup();
    let s = Strategy::one_device("CPU:0").unwrap();
    let (v, c) = run_example(&s, use_reduce_to);
    assert_eq!(c.merges, 1);
    assert_eq!(c.assigns, 1);
    assert_eq!(v.kind().unwrap(), ValueKind::Variable);
    assert_eq!(v.num_components().unwrap(), 1);
    assert_eq!(v.read().unwrap().scalar_f32().unwrap(), 1.0);
}

#[test]
fn batch_reduce_to_example_mirrored() {
    check_mirrored(false);
}
#[test]
fn batch_reduce_to_example_central_storage() {
    check_central_storage(false);
}
#[test]
fn batch_reduce_to_example_one_device() {
    check_one_device(false);
}
#[test]
fn reduce_to_example_mirrored() {
    check_mirrored(true);
}
#[test]
fn reduce_to_example_central_storage() {
    check_central_storage(true);
}
#[test]
fn reduce_to_example_one_device() {
    check_one_device(true);
}

/// v = tf.Variable(5.0, aggregation=SUM); strategy.extended.update(v, lambda v: v.assign(1.0))
/// gives Mirrored {0: 1.0, 1: 1.0}.
#[test]
fn update_example() {
    let s = mirrored(2);
    let five = Value::scalar(5.0f32, None).unwrap();
    let v = {
        let _scope = s.scope().unwrap();
        Value::new_variable(&five, VariableSync::Auto, VariableAggregation::Sum, None).unwrap()
    };
    assert_eq!(v.aggregation().unwrap(), VariableAggregation::Sum);
    let calls = AtomicUsize::new(0);
    let result = s
        .update(&v, &[], true, |var, args| {
            assert!(args.is_empty());
            calls.fetch_add(1, Ordering::SeqCst);
            var.assign(&Value::scalar(1.0f32, None)?)?;
            Ok(Some(var.read()?))
        })
        .unwrap()
        .expect("a result");
    assert_eq!(calls.into_inner(), 2);
    assert_eq!(result.kind().unwrap(), ValueKind::Mirrored);
    assert_eq!(result.num_components().unwrap(), 2);
    for i in 0..2 {
        let c = result.component(i).unwrap();
        assert_eq!(c.scalar_f32().unwrap(), 1.0);
        assert_eq!(c.device().unwrap(), format!("/device:CPU:{}", i));
    }
    assert_eq!(v.read().unwrap().scalar_f32().unwrap(), 1.0);
    for i in 0..2 {
        assert_eq!(component_f32(&v, i), vec![1.0]);
    }
}

/// The last partial batch of 6 examples split [0, 1, 2, 3] and [4, 5]: reduce MEAN along
/// axis 0 divides by 6 (2.5), not the mean of the two means (3.0).
#[test]
fn reduce_axis_partial_batch() {
    let s = mirrored(2);
    let full: Vec<f32> = (0..8).map(|x| x as f32).collect();
    let a = Value::from_slice(&full[0..4], &[4], Some("CPU:0")).unwrap();
    let b = Value::from_slice(&full[4..6], &[2], Some("CPU:1")).unwrap();
    let partial = Value::per_replica(&[&a, &b]).unwrap();
    let total: f32 = full[0..6].iter().sum();
    let mean = total / 6.0;
    assert_eq!(mean, 2.5);
    let m = s.reduce_axis(ReduceOp::Mean, &partial, 0).unwrap();
    assert_eq!(m.kind().unwrap(), ValueKind::Tensor);
    assert_eq!(m.scalar_f32().unwrap(), mean);
    assert_ne!(m.scalar_f32().unwrap(), (1.5 + 4.5) / 2.0);
    assert_eq!(s.reduce_axis(ReduceOp::Mean, &partial, -1).unwrap().scalar_f32().unwrap(), mean);
    assert_eq!(s.reduce_axis(ReduceOp::Sum, &partial, 0).unwrap().scalar_f32().unwrap(), total);
    assert_eq!(s.reduce_axis(ReduceOp::Min, &partial, 0).unwrap().scalar_f32().unwrap(), 0.0);
    assert_eq!(s.reduce_axis(ReduceOp::Max, &partial, 0).unwrap().scalar_f32().unwrap(), 5.0);
    assert_eq!(s.reduce_axis(ReduceOp::Product, &partial, 0).unwrap().scalar_f32().unwrap(), 0.0);
    // Without an axis the shapes do not match.
    let e = s.reduce(ReduceOp::Sum, &partial).unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument);
    assert!(e.message().contains("dist_strategy_reduce"), "{}", e);
}
