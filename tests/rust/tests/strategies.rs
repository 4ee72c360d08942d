//! Strategies, replica-context collectives, cross-replica calls, variables, scopes,
//! joined replicas and cross-device ops.

use std::sync::Mutex;

use distribute::*;
use distribute_tests::*;

#[test]
fn every_strategy_kind_and_its_devices() {
    setup();
    let one = Strategy::one_device("CPU:1").unwrap();
    assert_eq!(one.kind().unwrap(), StrategyKind::OneDevice);
    assert_eq!(one.num_replicas_in_sync().unwrap(), 1);
    assert_eq!(one.worker_device(0).unwrap(), "/device:CPU:1");
    let m = mirrored(3);
    assert_eq!(m.kind().unwrap(), StrategyKind::Mirrored);
    assert_eq!(m.num_replicas_in_sync().unwrap(), 3);
    for i in 0..3 {
        assert_eq!(m.worker_device(i).unwrap(), format!("/device:CPU:{}", i));
    }
    assert_eq!(m.parameter_device_count().unwrap(), 3);
    assert_eq!(m.parameter_device(2).unwrap(), "/device:CPU:2");
    let all = Strategy::mirrored(&[], None).unwrap();
    assert_eq!(all.num_replicas_in_sync().unwrap(), local_device_count().unwrap());
    let cs = Strategy::central_storage(&["CPU:0", "CPU:1"], None).unwrap();
    assert_eq!(cs.kind().unwrap(), StrategyKind::CentralStorage);
    assert_eq!(cs.parameter_device_count().unwrap(), 1);
    assert_eq!(cs.parameter_device(0).unwrap(), "/device:CPU:0");
    let d = Strategy::default_strategy().unwrap();
    assert_eq!(d.kind().unwrap(), StrategyKind::Default);
    assert_eq!(d.num_replicas_in_sync().unwrap(), 1);
    // Current strategy, scopes, cross-replica context.
    assert!(!has_strategy().unwrap());
    assert_eq!(Strategy::current().unwrap().kind().unwrap(), StrategyKind::Default);
    assert!(!in_cross_replica_context().unwrap());
    {
        let _scope = m.scope().unwrap();
        assert!(has_strategy().unwrap());
        assert!(in_cross_replica_context().unwrap());
        assert_eq!(Strategy::current().unwrap().num_replicas_in_sync().unwrap(), 3);
        with_current_replica_context(|c| assert!(c.is_none()));
        // Another strategy's scope inside: FAILED_PRECONDITION.
        assert_eq!(cs.scope().unwrap_err().code(), Code::FailedPrecondition);
    }
    assert!(!has_strategy().unwrap());
    with_current_replica_context(|c| assert_eq!(c.unwrap().num_replicas_in_sync().unwrap(), 1));
    Strategy::experimental_set_strategy(Some(&cs)).unwrap();
    assert!(has_strategy().unwrap());
    Strategy::experimental_set_strategy(None).unwrap();
    assert!(!has_strategy().unwrap());
    assert_eq!(get_loss_reduction().unwrap(), ReduceOp::Sum);
    // A multi-worker strategy with no cluster and TF_CONFIG unset, "" or "{}": one local
    // worker with one replica, as TF (the 2-process run is the C suite's).
    let tf_config = std::env::var("TF_CONFIG").ok();
    if matches!(tf_config.as_deref(), None | Some("") | Some("{}"))
        && std::env::var_os("DIST_REPLICAS_PER_WORKER").is_none()
    {
        let mw = Strategy::multi_worker_mirrored(None, None).unwrap();
        assert_eq!(mw.kind().unwrap(), StrategyKind::MultiWorkerMirrored);
        assert_eq!(mw.num_replicas_in_sync().unwrap(), 1);
        let out = mw
            .run(&[], 1, |ctx, _| Ok(vec![ctx.all_reduce(ReduceOp::Sum, &Value::scalar(2.5f32, Some(&ctx.device()?))?)?]))
            .unwrap();
        assert_eq!(mw.reduce(ReduceOp::Sum, out[0].as_ref().unwrap()).unwrap().scalar_f32().unwrap(), 2.5);
    }
}

#[test]
fn replica_collectives() {
    let n = 4usize;
    let s = mirrored(n);
    let seen = Mutex::new(Vec::new());
    let out = s
        .run(&[], 5, |ctx, _| {
            let r = ctx.replica_id()?;
            assert_eq!(ctx.num_replicas_in_sync()?, n as i32);
            assert_eq!(ctx.strategy()?.num_replicas_in_sync()?, n as i32);
            ctx.set_timeout_ms(TIMEOUT_MS)?;
            let dev = ctx.device()?;
            seen.lock().unwrap().push((r, dev.clone()));
            let x = Value::from_slice(&[r as f32, 10.0 * r as f32], &[2], Some(&dev))?;
            let sum = ctx.all_reduce(ReduceOp::Sum, &x)?;
            let y = Value::scalar(r as i64 + 1, Some(&dev))?;
            let batch = ctx.batch_all_reduce(ReduceOp::Max, &[&x, &y])?;
            let g =
                ctx.all_gather(&Value::from_slice(&vec![r as f32; r as usize + 1], &[r as i64 + 1], Some(&dev))?, 0)?;
            let b = ctx.broadcast(&Value::scalar(100 + r, Some(&dev))?, 2)?;
            let mut it = batch.into_iter();
            Ok(vec![sum, it.next().unwrap(), it.next().unwrap(), g, b])
        })
        .unwrap();
    let mut seen = seen.into_inner().unwrap();
    seen.sort();
    let expected: Vec<(i32, String)> = (0..n as i32).map(|i| (i, format!("/device:CPU:{}", i))).collect();
    assert_eq!(seen, expected);
    let ids: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let id_sum: f32 = ids.iter().sum();
    for slot in &out {
        let v = slot.as_ref().unwrap();
        assert_eq!(v.kind().unwrap(), ValueKind::PerReplica);
        assert_eq!(v.num_components().unwrap(), n as i32);
    }
    // Gather of replica r's (r+1) copies of r.
    let gathered: Vec<f32> = (0..n).flat_map(|r| vec![r as f32; r + 1]).collect();
    for r in 0..n as i32 {
        assert_eq!(component_f32(out[0].as_ref().unwrap(), r), vec![id_sum, 10.0 * id_sum]);
        assert_eq!(component_f32(out[1].as_ref().unwrap(), r), vec![(n - 1) as f32, 10.0 * (n - 1) as f32]);
        assert_eq!(out[2].as_ref().unwrap().component_tensor(r).unwrap().scalar_i64().unwrap(), n as i64);
        assert_eq!(component_f32(out[3].as_ref().unwrap(), r), gathered);
        assert_eq!(out[4].as_ref().unwrap().component_tensor(r).unwrap().scalar_i32().unwrap(), 102);
    }
}

/// all_reduce_into: the sum written into a separate tensor, then into the input itself.
#[test]
fn all_reduce_into_a_tensor_and_in_place() {
    let n = 2usize;
    let s = mirrored(n);
    let got = Mutex::new(Vec::new());
    s.run(&[], 0, |ctx, _| {
        let r = ctx.replica_id()?;
        let dev = ctx.device()?;
        let x = Value::from_slice(&[r as f32 + 1.0, 10.0 * r as f32, -r as f32], &[3], Some(&dev))?;
        let out = Value::from_slice(&[0.0f32; 3], &[3], Some(&dev))?;
        ctx.all_reduce_into(ReduceOp::Sum, &x, &out)?;
        let separate = out.to_vec::<f32>()?;
        let input = x.to_vec::<f32>()?;
        ctx.all_reduce_into(ReduceOp::Sum, &x, &x)?;
        got.lock().unwrap().push((r, separate, input, x.to_vec::<f32>()?));
        Ok(vec![])
    })
    .unwrap();
    let mut got = got.into_inner().unwrap();
    got.sort_by_key(|g| g.0);
    // Replica r contributes [r + 1, 10 r, -r]: the sum over r = 0, 1.
    let expected = vec![1.0f32 + 2.0, 0.0 + 10.0, 0.0 - 1.0];
    assert_eq!(got.len(), n);
    for (r, separate, input, in_place) in got {
        assert_eq!(separate, expected, "replica {} into a separate tensor", r);
        assert_eq!(input, vec![r as f32 + 1.0, 10.0 * r as f32, -r as f32], "replica {}'s input", r);
        assert_eq!(in_place, expected, "replica {} in place", r);
    }
}

/// A wrong-shape out on one replica fails all_reduce_into on every replica with
/// InvalidArgument, nothing is written, and a right call after it works.
#[test]
fn all_reduce_into_a_wrong_shape_fails_on_every_replica() {
    let n = 2usize;
    let s = mirrored(n);
    let got = Mutex::new(Vec::new());
    s.run(&[], 0, |ctx, _| {
        let r = ctx.replica_id()?;
        let x = Value::from_slice(&[1.0f32], &[1], None)?;
        let out = Value::from_slice(&[-7.0f32], &[1], None)?;
        let wrong = Value::from_slice(&[0.0f32, 0.0], &[2], None)?;
        let err = ctx.all_reduce_into(ReduceOp::Sum, &x, if r == 1 { &wrong } else { &out });
        let after = out.to_vec::<f32>()?;
        ctx.all_reduce_into(ReduceOp::Sum, &x, &out)?;
        got.lock().unwrap().push((r, err, after, out.to_vec::<f32>()?));
        Ok(vec![])
    })
    .unwrap();
    let got = got.into_inner().unwrap();
    assert_eq!(got.len(), n);
    for (r, err, after, retried) in got {
        let e = err.expect_err("a wrong out must fail");
        assert_eq!(e.code(), Code::InvalidArgument, "replica {}: {}", r, e.message());
        assert!(e.message().contains("replica 1: out is float32[2]"), "replica {}: {}", r, e.message());
        assert_eq!(after, vec![-7.0], "replica {}'s out was written by a failed call", r);
        assert_eq!(retried, vec![2.0], "replica {} after the failure", r);
    }
}

#[test]
fn run_arguments_results_and_cross_replica_calls() {
    let s = mirrored(2);
    // distribute_values_from_function: replica i gets [i, i+1].
    let pr = s
        .distribute_values_from_function(|i, n| {
            assert_eq!(n, 2);
            Value::from_slice(&[i as f32, i as f32 + 1.0], &[2], Some(&format!("CPU:{}", i)))
        })
        .unwrap();
    assert_eq!(pr.kind().unwrap(), ValueKind::PerReplica);
    let shared = Value::scalar(3.0f32, None).unwrap();
    let out = s
        .run(&[&pr, &shared], 2, |ctx, args| {
            assert_eq!(args.len(), 2);
            let r = ctx.replica_id()? as f32;
            assert_eq!(args[0].to_vec::<f32>()?, vec![r, r + 1.0]);
            let k = args[1].scalar_f32()?;
            let mine = args[0].to_vec::<f32>()?.iter().map(|x| x * k).collect::<Vec<_>>();
            Ok(vec![Value::from_slice(&mine, &[2], Some(&ctx.device()?))?])
        })
        .unwrap();
    assert!(out[1].is_none(), "a slot no replica filled is None");
    let v = out[0].as_ref().unwrap();
    // reduce across replicas: [0*3 + 1*3, 1*3 + 2*3]
    assert_eq!(s.reduce(ReduceOp::Sum, v).unwrap().to_vec::<f32>().unwrap(), vec![3.0, 9.0]);
    assert_eq!(s.reduce(ReduceOp::Mean, v).unwrap().to_vec::<f32>().unwrap(), vec![1.5, 4.5]);
    assert_eq!(s.gather(v, 0).unwrap().to_vec::<f32>().unwrap(), vec![0.0, 3.0, 3.0, 6.0]);
    let on1 = s.reduce_to_device(ReduceOp::Sum, v, "CPU:1").unwrap();
    assert_eq!(on1.device().unwrap(), "/device:CPU:1");
    assert_eq!(on1.to_vec::<f32>().unwrap(), vec![3.0, 9.0]);
    let to = s.reduce_to(ReduceOp::Max, v, v).unwrap();
    assert_eq!(to.kind().unwrap(), ValueKind::Mirrored);
    assert_eq!(component_f32(&to, 1), vec![3.0, 6.0]);
    let outs = s.batch_reduce_to(ReduceOp::Min, &[(v, v), (&pr, &pr)]).unwrap();
    assert_eq!(component_f32(&outs[0], 0), vec![0.0, 3.0]);
    assert_eq!(component_f32(&outs[1], 1), vec![0.0, 1.0]);
    // Mirrored values and components.
    let a = Value::scalar(1.0f32, Some("CPU:0")).unwrap();
    let b = Value::scalar(1.0f32, Some("CPU:1")).unwrap();
    let m = Value::mirrored(&[&a, &b]).unwrap();
    assert_eq!(m.kind().unwrap(), ValueKind::Mirrored);
    assert_eq!(m.component(1).unwrap().device().unwrap(), "/device:CPU:1");
    assert_eq!(s.value_container(&m).unwrap().kind().unwrap(), ValueKind::Mirrored);
}

#[test]
fn variables_in_replica_and_cross_replica_context() {
    let s = mirrored(2);
    let init = Value::from_slice(&[1.0f32, 2.0], &[2], None).unwrap();
    let scope = s.scope().unwrap();
    let w = Value::new_variable(&init, VariableSync::OnWrite, VariableAggregation::Mean, Some("w")).unwrap();
    let c = Value::new_variable(
        &Value::scalar(0.0f32, None).unwrap(),
        VariableSync::OnRead,
        VariableAggregation::Sum,
        Some("count"),
    )
    .unwrap();
    {
        let _col = s.colocate_vars_with(&w).unwrap();
        let z = Value::new_variable(&init, VariableSync::Auto, VariableAggregation::None, None).unwrap();
        assert_eq!(z.variable_device_count().unwrap(), 2);
    }
    scope.exit().unwrap();
    assert!(s.variable_created_in_scope(&w).unwrap());
    assert_eq!(w.kind().unwrap(), ValueKind::MirroredVariable);
    assert_eq!(c.kind().unwrap(), ValueKind::SyncOnReadVariable);
    assert_eq!(w.variable_name().unwrap(), "w");
    assert_eq!(w.synchronization().unwrap(), VariableSync::OnWrite);
    assert_eq!(c.aggregation().unwrap(), VariableAggregation::Sum);
    assert_eq!(w.variable_device_count().unwrap(), 2);
    assert_eq!(w.variable_device(1).unwrap(), "/device:CPU:1");
    let comp = w.component(1).unwrap();
    assert_eq!(s.value_container(&comp).unwrap().variable_name().unwrap(), "w");
    s.run(&[&w, &c], 0, |ctx, args| {
        let r = ctx.replica_id()? as f32;
        let dev = ctx.device()?;
        // MEAN of replica deltas [r, r]: 0.5 on each element.
        args[0].assign_add(&Value::from_slice(&[r, r], &[2], Some(&dev))?)?;
        args[1].assign_add(&Value::scalar(r + 1.0, Some(&dev))?)?;
        Ok(vec![])
    })
    .unwrap();
    assert_eq!(w.read().unwrap().to_vec::<f32>().unwrap(), vec![1.5, 2.5]);
    // SyncOnRead SUM: 1 + 2 read across replicas.
    assert_eq!(c.read().unwrap().scalar_f32().unwrap(), 3.0);
    w.assign_sub(&Value::from_slice(&[0.5f32, 0.5], &[2], None).unwrap()).unwrap();
    assert_eq!(component_f32(&w, 0), vec![1.0, 2.0]);
    w.assign(&init).unwrap();
    // Saving and restoring.
    let path = std::env::temp_dir().join(format!("distribute-rust-{}.safetensors", std::process::id()));
    let p = path.to_str().unwrap();
    s.save_variables(p).unwrap();
    w.assign(&Value::from_slice(&[9.0f32, 9.0], &[2], None).unwrap()).unwrap();
    s.restore_variables(p).unwrap();
    assert_eq!(w.read().unwrap().to_vec::<f32>().unwrap(), vec![1.0, 2.0]);
    let _ = std::fs::remove_file(&path);
    // NONE synchronization under Mirrored is an error, as in TF.
    let _scope = s.scope().unwrap();
    assert_eq!(
        Value::new_variable(&init, VariableSync::None, VariableAggregation::None, None).unwrap_err().code(),
        Code::InvalidArgument
    );
}

#[test]
fn joined_replicas_on_own_threads() {
    let n = 3;
    let s = mirrored(n);
    let results = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for r in 0..n as i32 {
            let s = &s;
            let results = &results;
            scope.spawn(move || {
                let ctx = s.join_replica(r).unwrap();
                assert_eq!(ctx.replica_id().unwrap(), r);
                let v = Value::scalar(r as f64, Some(&ctx.device().unwrap())).unwrap();
                let total = ctx.all_reduce(ReduceOp::Sum, &v).unwrap().scalar_f64().unwrap();
                with_current_replica_context(|c| assert_eq!(c.unwrap().replica_id().unwrap(), r));
                results.lock().unwrap().push(total);
                ctx.leave().unwrap();
            });
        }
    });
    assert_eq!(results.into_inner().unwrap(), vec![3.0; n]);
}

#[test]
fn cross_device_ops() {
    setup();
    let kinds = [
        (CrossDeviceOps::reduction_to_one_device(Some("CPU:0")).unwrap(), CrossDeviceOpsKind::ReductionToOneDevice),
        (CrossDeviceOps::hierarchical_copy(2).unwrap(), CrossDeviceOpsKind::HierarchicalCopy),
        (CrossDeviceOps::shared_memory(0).unwrap(), CrossDeviceOpsKind::SharedMemory),
    ];
    for (ops, kind) in kinds.iter() {
        assert_eq!(ops.kind().unwrap(), *kind);
        let s = Strategy::mirrored(&["CPU:0", "CPU:1"], Some(ops)).unwrap();
        let out = s
            .run(&[], 1, |ctx, _| {
                let v = Value::from_slice(&[ctx.replica_id()? as f32 + 1.0; 3], &[3], Some(&ctx.device()?))?;
                Ok(vec![ctx.all_reduce(ReduceOp::Sum, &v)?])
            })
            .unwrap();
        assert_eq!(component_f32(out[0].as_ref().unwrap(), 1), vec![3.0; 3]);
    }
}

/// NcclAllReduce: created and typed without a GPU; a strategy over CPU replicas refuses it.
#[test]
fn nccl_all_reduce_only_on_gpus() {
    setup();
    for num_packs in [0, 2] {
        let ops = CrossDeviceOps::nccl_all_reduce(num_packs).unwrap();
        assert_eq!(ops.kind().unwrap(), CrossDeviceOpsKind::NcclAllReduce);
        let e = Strategy::mirrored(&["CPU:0", "CPU:1"], Some(&ops)).unwrap_err();
        assert_eq!(e.code(), Code::FailedPrecondition, "{}", e);
        assert!(e.message().contains("NcclAllReduce"), "{}", e);
    }
    let e = CrossDeviceOps::nccl_all_reduce(-1).unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument, "{}", e);
    assert!(e.message().contains("num_packs"), "{}", e);
}

#[test]
fn communication_options() {
    let mut o = CommunicationOptions::new().unwrap();
    o.set_implementation(CommunicationImplementation::Ring).unwrap();
    o.set_shared_memory(SharedMemoryMode::Off).unwrap();
    o.set_shared_memory(SharedMemoryMode::On).unwrap();
    o.set_bytes_per_pack(1 << 20).unwrap();
    o.set_timeout_ms(5000).unwrap();
    o.set_replicas_per_worker(2).unwrap();
    assert_eq!(o.set_timeout_ms(-1).unwrap_err().code(), Code::InvalidArgument);
    assert_eq!(o.set_bytes_per_pack(-1).unwrap_err().code(), Code::InvalidArgument);
    assert_eq!(o.set_replicas_per_worker(100000).unwrap_err().code(), Code::InvalidArgument);
}

/// MEAN over integers is TF's true division: float64 for int32/int64, float32 for 8- and
/// 16-bit integers; integer variables with MEAN aggregation are refused at creation.
#[test]
fn integer_mean_is_a_float_and_integer_mean_variables_are_refused() {
    let s = mirrored(2);
    let out = s
        .run(&[], 3, |ctx, _| {
            let r = ctx.replica_id()?;
            let d = ctx.device()?;
            Ok(vec![
                Value::from_slice(&[1 + r, 4 + 3 * r], &[2], Some(&d))?,
                Value::from_slice(&[i64::from(10 * r + 1)], &[1], Some(&d))?,
                Value::from_slice(&[(r * 5) as i8], &[1], Some(&d))?,
            ])
        })
        .unwrap();
    // Replica 0 gave [1, 4], [1], [0]; replica 1 [2, 7], [11], [5].
    let m32 = s.reduce(ReduceOp::Mean, out[0].as_ref().unwrap()).unwrap();
    assert_eq!(m32.dtype().unwrap(), DType::Float64);
    assert_eq!(m32.to_vec::<f64>().unwrap(), vec![1.5, 5.5]);
    let m64 = s.reduce(ReduceOp::Mean, out[1].as_ref().unwrap()).unwrap();
    assert_eq!(m64.dtype().unwrap(), DType::Float64);
    assert_eq!(m64.to_vec::<f64>().unwrap(), vec![6.0]);
    let m8 = s.reduce(ReduceOp::Mean, out[2].as_ref().unwrap()).unwrap();
    assert_eq!(m8.dtype().unwrap(), DType::Float32);
    assert_eq!(m8.to_vec::<f32>().unwrap(), vec![2.5]);
    // SUM keeps the integer dtype.
    let sum = s.reduce(ReduceOp::Sum, out[0].as_ref().unwrap()).unwrap();
    assert_eq!(sum.to_vec::<i32>().unwrap(), vec![3, 11]);

    let zero = Value::from_slice(&[0i32], &[1], None).unwrap();
    let _scope = s.scope().unwrap();
    let e = Value::new_variable(&zero, VariableSync::OnWrite, VariableAggregation::Mean, Some("int_mean")).unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument, "{}", e);
    Value::new_variable(&zero, VariableSync::OnWrite, VariableAggregation::Sum, Some("int_sum")).unwrap();
}
