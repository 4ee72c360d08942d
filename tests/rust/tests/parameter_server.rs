//! ParameterServerStrategy from Rust: the placement options and their refusals, the
//! registry of update functions (a closure registered and unregistered, dropped once, the
//! built-ins kept), and a local-mode strategy (no TF_CONFIG) whose variable is updated by
//! "sgd" and by a Rust closure, with the values the TF rules give. Tests of this binary run
//! in parallel in one process: each registers its own function names.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use distribute::*;
use distribute_tests::*;

fn code_of<T: std::fmt::Debug>(r: Result<T>) -> Code {
    r.unwrap_err().code()
}

#[test]
fn options_accept_what_the_header_allows_and_refuse_the_rest() {
    let mut o = ParameterServerOptions::new().unwrap();
    o.set_placement(PlacementPolicy::GreedyBytes).unwrap();
    o.set_placement(PlacementPolicy::RoundRobin).unwrap();
    o.set_fixed_shards(1, 0).unwrap();
    o.set_fixed_shards(4096, 2).unwrap();
    o.set_min_max_shards(8, 0, 262144).unwrap();
    o.set_max_shard_bytes(1 << 20, 0, 0).unwrap();
    o.clear_partitioner().unwrap();
    for (result, needle) in [
        (o.set_fixed_shards(0, 0), "num_shards"),
        (o.set_fixed_shards(4097, 0), "4096"),
        (o.set_fixed_shards(2, -1), "axis"),
        (o.set_min_max_shards(0, 0, 1), "max_partitions"),
        (o.set_min_max_shards(2, 0, 0), "min_slice_size"),
        (o.set_max_shard_bytes(0, 0, 0), "max_shard_bytes"),
        (o.set_max_shard_bytes(64, 0, -1), "max_shards"),
    ] {
        let e = result.unwrap_err();
        assert_eq!(e.code(), Code::InvalidArgument, "{}", e);
        assert!(e.message().contains(needle), "{} does not name {}", e, needle);
    }
}

/// Counts the drops of the closure's captured state: the library's free_fn drops it once.
struct DropCounter(Arc<AtomicUsize>);
impl Drop for DropCounter {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

#[test]
fn a_closure_is_registered_unregistered_and_dropped_once() {
    let name = "rust_registered";
    assert!(!is_update_function_registered(name).unwrap());
    let drops = Arc::new(AtomicUsize::new(0));
    let counter = DropCounter(drops.clone());
    register_update_function(name, 1, &[("m", 0.0)], &[("lr", 0.1), ("decay", f64::NAN)], move |_, _, _| {
        let _keep = &counter;
        Ok(())
    })
    .unwrap();
    assert!(is_update_function_registered(name).unwrap());
    assert_eq!(drops.load(Ordering::SeqCst), 0);
    // A name in use: refused, and the refused closure is dropped here, not by the library.
    let refused = Arc::new(AtomicUsize::new(0));
    let refused_counter = DropCounter(refused.clone());
    let e = register_update_function(name, 1, &[], &[], move |_, _, _| {
        let _keep = &refused_counter;
        Ok(())
    })
    .unwrap_err();
    assert_eq!(e.code(), Code::AlreadyExists);
    assert!(e.message().contains(name), "{}", e);
    assert_eq!(refused.load(Ordering::SeqCst), 1);
    unregister_update_function(name).unwrap();
    assert_eq!(drops.load(Ordering::SeqCst), 1);
    assert!(!is_update_function_registered(name).unwrap());
    assert_eq!(code_of(unregister_update_function(name)), Code::NotFound);
    for builtin in ["sgd", "momentum", "nesterov_momentum", "adagrad", "adam"] {
        assert!(is_update_function_registered(builtin).unwrap(), "{}", builtin);
        assert_eq!(code_of(unregister_update_function(builtin)), Code::FailedPrecondition);
    }
    // Refusals register nothing.
    assert_eq!(code_of(register_update_function(name, 17, &[], &[], |_, _, _| Ok(()))), Code::InvalidArgument);
    assert_eq!(code_of(register_update_function("", 1, &[], &[], |_, _, _| Ok(()))), Code::InvalidArgument);
    assert_eq!(
        code_of(register_update_function(name, 1, &[("m", 0.0), ("m", 1.0)], &[], |_, _, _| Ok(()))),
        Code::InvalidArgument
    );
    assert!(!is_update_function_registered(name).unwrap());
}

#[test]
fn a_local_strategy_applies_sgd_and_a_rust_closure() {
    setup();
    let seen: Arc<Mutex<Vec<Vec<(String, f64)>>>> = Arc::new(Mutex::new(Vec::new()));
    let seen_in = seen.clone();
    // variable += scale * arg; the slot "steps" counts the calls (starting at 10).
    register_update_function("rust_scaled_add", 1, &[("steps", 10.0)], &[("scale", 1.0)], move |vars, args, hyper| {
        seen_in.lock().unwrap().push(hyper.iter().map(|(n, v)| (n.to_string(), *v)).collect());
        let scale = hyper[0].1 as f32;
        let arg = args[0].to_vec::<f32>()?;
        let variable: Vec<f32> = vars[0].to_vec::<f32>()?.iter().zip(&arg).map(|(v, a)| v + scale * a).collect();
        let steps: Vec<f32> = vars[1].to_vec::<f32>()?.iter().map(|s| s + 1.0).collect();
        vars[0].write_from_slice(&variable)?;
        vars[1].write_from_slice(&steps)
    })
    .unwrap();
    register_update_function("rust_failing", 0, &[], &[], |_, _, _| {
        Err(Error::new(Code::FailedPrecondition, "refused"))
    })
    .unwrap();

    let s = Strategy::parameter_server(None, None, None).unwrap();
    let w = {
        let _scope = s.scope().unwrap();
        let initial = Value::from_slice(&[1.0f32, 2.0], &[2], None).unwrap();
        Value::new_variable(&initial, VariableSync::Auto, VariableAggregation::None, Some("w")).unwrap()
    };
    assert_eq!(w.num_shards().unwrap(), 1);
    assert_eq!(w.shard_task(0).unwrap(), 0);
    assert_eq!(code_of(w.shard_task(1)), Code::OutOfRange);

    // sgd: [1, 2] - 0.5 * [2, 4] = [0, 0].
    let gradient = Value::from_slice(&[2.0f32, 4.0], &[2], None).unwrap();
    w.apply_update("sgd", &[&gradient], &[("learning_rate", 0.5)]).unwrap();
    assert_eq!(w.read().unwrap().to_vec::<f32>().unwrap(), vec![0.0, 0.0]);

    // The closure, its default scale then 3: [0,0] + [1,2] + 3*[1,2] = [4, 8].
    let arg = Value::from_slice(&[1.0f32, 2.0], &[2], None).unwrap();
    w.apply_update("rust_scaled_add", &[&arg], &[]).unwrap();
    w.apply_update("rust_scaled_add", &[&arg], &[("scale", 3.0)]).unwrap();
    assert_eq!(w.read().unwrap().to_vec::<f32>().unwrap(), vec![4.0, 8.0]);
    assert_eq!(*seen.lock().unwrap(), vec![vec![("scale".to_string(), 1.0)], vec![("scale".to_string(), 3.0)]]);

    // Refused before the closure runs; a failing closure keeps its code and writes nothing.
    let e = w.apply_update("rust_scaled_add", &[&arg], &[("rate", 1.0)]).unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument);
    assert!(e.message().contains("rate"), "{}", e);
    assert_eq!(code_of(w.apply_update("no_such_function", &[&arg], &[])), Code::NotFound);
    let e = w.apply_update("rust_failing", &[], &[]).unwrap_err();
    assert_eq!(e.code(), Code::FailedPrecondition);
    assert!(e.message().contains("rust_failing"), "{}", e);
    assert_eq!(seen.lock().unwrap().len(), 2);
    assert_eq!(w.read().unwrap().to_vec::<f32>().unwrap(), vec![4.0, 8.0]);

    unregister_update_function("rust_scaled_add").unwrap();
    unregister_update_function("rust_failing").unwrap();
}

#[test]
fn apply_update_refuses_a_variable_of_another_strategy() {
    setup();
    let initial = Value::from_slice(&[1.0f32, 2.0], &[2], None).unwrap();
    let v = Value::new_variable(&initial, VariableSync::Auto, VariableAggregation::None, Some("not_on_a_ps")).unwrap();
    let e = v.apply_update("sgd", &[&initial], &[("learning_rate", 0.5)]).unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument);
    assert!(e.message().contains("variable"), "{}", e);
    assert_eq!(code_of(v.num_shards()), Code::InvalidArgument);
}
