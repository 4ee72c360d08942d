//! Failing and panicking callbacks, bad input, 64-bit dimensions: clear errors, no crash,
//! and the strategy works again afterwards.

use std::sync::atomic::{AtomicUsize, Ordering};

use distribute::*;
use distribute_tests::*;

fn sum_of_ids(s: &Strategy) -> f32 {
    let out = s
        .run(&[], 1, |ctx, _| {
            let id = Value::scalar(ctx.replica_id()? as f32, Some(&ctx.device()?))?;
            Ok(vec![ctx.all_reduce(ReduceOp::Sum, &id)?])
        })
        .unwrap();
    s.reduce(ReduceOp::Mean, out[0].as_ref().unwrap()).unwrap().scalar_f32().unwrap()
}

#[test]
fn failing_replica_function_reaches_the_caller_and_the_next_run_works() {
    let s = mirrored(4);
    let calls = AtomicUsize::new(0);
    let err = s
        .run(&[], 0, |ctx, _| {
            calls.fetch_add(1, Ordering::SeqCst);
            let id = ctx.replica_id()?;
            if id == 2 {
                return Err(Error::new(Code::FailedPrecondition, "replica two refuses"));
            }
            // The others wait in a collective and are released with ABORTED.
            let v = Value::scalar(1.0f32, Some(&ctx.device()?))?;
            ctx.all_reduce(ReduceOp::Sum, &v)?;
            Ok(vec![])
        })
        .unwrap_err();
    assert_eq!(calls.load(Ordering::SeqCst), 4);
    assert_eq!(err.code(), Code::FailedPrecondition, "{}", err);
    assert!(err.message().contains("replica two refuses"), "{}", err);
    assert!(err.message().contains("replica 2"), "{}", err);
    // 0 + 1 + 2 + 3
    assert_eq!(sum_of_ids(&s), 6.0);
}

#[test]
fn a_library_error_inside_a_replica_keeps_the_library_message() {
    let s = mirrored(2);
    let err = s
        .run(&[], 0, |ctx, _| {
            // An invalid reduce op is rejected by the library on every replica.
            let v = Value::scalar(true as u8, Some(&ctx.device()?))?;
            let bad = Value::from_bytes(DType::Bool, &[], &[1], Some(&ctx.device()?))?;
            drop(v);
            ctx.all_reduce(ReduceOp::Sum, &bad)?;
            Ok(vec![])
        })
        .unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument, "{}", err);
    println!("{}", err);
    assert!(err.message().contains("dist_context_all_reduce"), "{}", err);
    assert!(err.message().contains("bool"), "{}", err);
    assert_eq!(sum_of_ids(&s), 1.0);
}

#[test]
fn panic_in_a_replica_function_becomes_that_replicas_error() {
    let s = mirrored(2);
    quiet_expected_panics();
    let err = s
        .run(&[], 0, |ctx, _| {
            if ctx.replica_id()? == 1 {
                panic!("boom in replica");
            }
            let v = Value::scalar(1.0f32, Some(&ctx.device()?))?;
            ctx.all_reduce(ReduceOp::Sum, &v)?;
            Ok(vec![])
        })
        .unwrap_err();
    assert_eq!(err.code(), Code::Unknown, "{}", err);
    assert!(err.message().contains("boom in replica"), "{}", err);
    assert!(err.message().contains("panicked"), "{}", err);
    assert!(err.message().contains("replica 1"), "{}", err);
    assert_eq!(sum_of_ids(&s), 1.0);
}

#[test]
fn panic_in_merge_and_update_functions() {
    let s = mirrored(2);
    quiet_expected_panics();
    let err = s
        .run(&[], 0, |ctx, _| {
            let v = Value::scalar(1.0f32, Some(&ctx.device()?))?;
            ctx.merge_call(&[&v], |_, _| panic!("merge boom"))?;
            Ok(vec![])
        })
        .unwrap_err();
    assert!(err.message().contains("merge boom"), "{}", err);
    let zero = Value::scalar(0.0f32, None).unwrap();
    let var = {
        let _scope = s.scope().unwrap();
        Value::new_variable(&zero, VariableSync::OnWrite, VariableAggregation::Mean, Some("w")).unwrap()
    };
    let err = s.update(&var, &[], true, |_, _| panic!("update boom")).unwrap_err();
    assert_eq!(err.code(), Code::Unknown);
    assert!(err.message().contains("update boom"), "{}", err);
    let err = s.update(&var, &[], true, |_, _| Err(Error::new(Code::OutOfRange, "update says no"))).unwrap_err();
    assert_eq!(err.code(), Code::OutOfRange);
    assert_eq!(err.message(), "update says no");
    assert_eq!(sum_of_ids(&s), 1.0);
}

#[test]
fn too_many_results_is_an_error() {
    let s = mirrored(2);
    let err = s
        .run(&[], 1, |ctx, _| {
            let d = ctx.device()?;
            Ok(vec![Value::scalar(1.0f32, Some(&d))?, Value::scalar(2.0f32, Some(&d))?])
        })
        .unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument);
    assert!(err.message().contains("room for 1"), "{}", err);
}

#[test]
fn bad_input_gives_clear_errors() {
    setup();
    // Unknown device, malformed device, duplicate devices.
    let e = Strategy::one_device("CPU:999").unwrap_err();
    assert_eq!(e.code(), Code::NotFound, "{}", e);
    let e = Strategy::one_device("not a device").unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument, "{}", e);
    let e = Strategy::mirrored(&["CPU:0", "CPU:0"], None).unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument, "{}", e);
    assert!(!e.message().is_empty());
    // A NUL byte in a string never reaches the library.
    let e = Strategy::one_device("CPU:0\0x").unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument);
    // Size mismatch, negative dimension.
    let e = Value::from_slice(&[1.0f32, 2.0], &[3], None).unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument, "{}", e);
    let e = Value::from_slice(&[1.0f32], &[-1], None).unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument, "{}", e);
    // Wrong dtype reads.
    let t = Value::scalar(1i32, None).unwrap();
    assert_eq!(t.scalar_f32().unwrap_err().code(), Code::InvalidArgument);
    assert_eq!(t.to_vec::<f32>().unwrap_err().code(), Code::InvalidArgument);
    assert_eq!(t.scalar_i32().unwrap(), 1);
    // An invalid raw dtype.
    let e = Value::from_bytes_raw(77, &[1], [0u8; 4].as_ptr() as *const _, 4, None).unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument, "{}", e);
    assert!(dtype_size_raw(77).is_err());
    // Out-of-range indexes.
    let s = mirrored(2);
    assert_eq!(s.worker_device(7).unwrap_err().code(), Code::OutOfRange);
    assert_eq!(t.component_tensor(3).unwrap_err().code(), Code::OutOfRange);
    // A plain tensor under SUM with several replicas, as TF.
    assert_eq!(s.reduce(ReduceOp::Sum, &t).unwrap_err().code(), Code::InvalidArgument);
    // Bad timeouts and options.
    assert_eq!(s.set_timeout_ms(0).unwrap_err().code(), Code::InvalidArgument);
    assert_eq!(Dataset::range(0, 10, 0).unwrap_err().code(), Code::InvalidArgument);
    assert_eq!(InputContext::new(2, 2, 1).unwrap_err().code(), Code::InvalidArgument);
    assert_eq!(CrossDeviceOps::hierarchical_copy(0).unwrap_err().code(), Code::InvalidArgument);
    assert!(Error::new(Code::Aborted, "x").to_string().contains("ABORTED"));
    // Cross-replica calls from a replica fail cleanly.
    let err = s
        .run(&[], 0, |ctx, _| {
            let st = ctx.strategy()?;
            let v = Value::scalar(1.0f32, Some(&ctx.device()?))?;
            st.reduce(ReduceOp::Mean, &v)?;
            Ok(vec![])
        })
        .unwrap_err();
    assert_eq!(err.code(), Code::FailedPrecondition, "{}", err);
}

#[test]
fn dimensions_above_2_pow_31_stay_64_bit() {
    setup();
    // A zero-element tensor with a huge dimension: no memory, but 64-bit shape arithmetic.
    let big: i64 = (1i64 << 31) + 5;
    let t = Value::zeros(DType::Float32, &[big, 0], None).unwrap();
    assert_eq!(t.shape().unwrap(), vec![big, 0]);
    assert_eq!(t.num_elements().unwrap(), 0);
    assert_eq!(t.byte_size().unwrap(), 0);
    let t = Value::zeros(DType::UInt8, &[0, 1i64 << 40], None).unwrap();
    assert_eq!(t.shape().unwrap(), vec![0, 1i64 << 40]);
    // An overflowing shape is rejected, not truncated.
    let e = Value::zeros(DType::Float32, &[1i64 << 62, 1i64 << 62], None).unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument, "{}", e);
    // int64 scalars and the range dataset keep 64 bits.
    let v = Value::scalar(big * 3, None).unwrap();
    assert_eq!(v.scalar_i64().unwrap(), big * 3);
    let mut it = Dataset::range(big, big + 2, 1).unwrap().make_iterator().unwrap();
    assert_eq!(it.get_next(1).unwrap()[0].scalar_i64().unwrap(), big);
    assert_eq!(it.get_next(1).unwrap()[0].scalar_i64().unwrap(), big + 1);
    assert_eq!(it.get_next(1).unwrap_err().code(), Code::OutOfRange);
}
