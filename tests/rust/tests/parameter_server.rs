//! ParameterServerStrategy from Rust: the placement options and their refusals, the
//! registry of update functions (a closure registered and unregistered, dropped once, the
//! built-ins kept), and a local-mode strategy (no TF_CONFIG) whose variable is updated by
//! "sgd" and by a Rust closure, with the values the TF rules give; the batch calls
//! (`Value::read_variables`, `Value::apply_updates`) against one-by-one reads and sgd's rule
//! written here, and their refusals. Tests of this binary run in parallel in one process:
//! each registers its own function names.

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

/// A local ParameterServerStrategy (no TF_CONFIG): its variables live in this process.
fn local_ps(options: Option<&ParameterServerOptions>) -> Strategy {
    setup();
    let s = Strategy::parameter_server(None, None, options).unwrap();
    s.set_timeout_ms(TIMEOUT_MS).unwrap();
    s
}

/// A float32 variable of `s` (created in its scope).
fn ps_variable(s: &Strategy, data: &[f32], shape: &[i64], name: &str) -> Value {
    let _scope = s.scope().unwrap();
    let initial = Value::from_slice(data, shape, None).unwrap();
    Value::new_variable(&initial, VariableSync::Auto, VariableAggregation::None, Some(name)).unwrap()
}

/// A local ParameterServerStrategy whose variables are split in 2 shards along axis 0.
fn two_shard_ps() -> Strategy {
    let mut options = ParameterServerOptions::new().unwrap();
    options.set_fixed_shards(2, 0).unwrap();
    local_ps(Some(&options))
}

fn f32s(v: &Value) -> Vec<f32> {
    v.to_vec::<f32>().unwrap()
}

/// TF's sgd (`w -= learning_rate * g`), in double precision, rounded once to float32.
fn sgd(w: &[f32], g: &[f32], learning_rate: f64) -> Vec<f32> {
    w.iter().zip(g).map(|(w, g)| (*w as f64 - learning_rate * *g as f64) as f32).collect()
}

#[test]
fn read_variables_gives_what_one_by_one_reads_give() {
    let plain = local_ps(None);
    let sharded = two_shard_ps();
    let a = ps_variable(&plain, &[1.0, 2.0], &[2], "batch_read_a");
    let b = ps_variable(&sharded, &[0.0, 1.0, 2.0, 3.0, 4.0, 5.0], &[3, 2], "batch_read_b");
    let c = {
        let _scope = sharded.scope().unwrap();
        let initial = Value::from_slice(&[0.5f64, -1.5, 2.25, 8.0], &[4], None).unwrap();
        Value::new_variable(&initial, VariableSync::Auto, VariableAggregation::None, Some("batch_read_c")).unwrap()
    };
    assert_eq!((a.num_shards().unwrap(), b.num_shards().unwrap(), c.num_shards().unwrap()), (1, 2, 2));
    // A variable of no ParameterServerStrategy is read one by one, in the same batch.
    let d = {
        let initial = Value::from_slice(&[7i32, -7, 0], &[3], None).unwrap();
        Value::new_variable(&initial, VariableSync::Auto, VariableAggregation::None, Some("batch_read_d")).unwrap()
    };

    let read = Value::read_variables(&[&a, &b, &c, &d]).unwrap();
    assert_eq!(read.len(), 4);
    // Against the initial values...
    assert_eq!(f32s(&read[0]), vec![1.0, 2.0]);
    assert_eq!(f32s(&read[1]), vec![0.0, 1.0, 2.0, 3.0, 4.0, 5.0]);
    assert_eq!(read[2].to_vec::<f64>().unwrap(), vec![0.5, -1.5, 2.25, 8.0]);
    assert_eq!(read[3].to_vec::<i32>().unwrap(), vec![7, -7, 0]);
    // ...and against one-by-one reads: same dtype, shape and elements.
    for (batch, variable) in read.iter().zip([&a, &b, &c, &d]) {
        let one = variable.read().unwrap();
        assert_eq!(batch.dtype().unwrap(), one.dtype().unwrap());
        assert_eq!(batch.shape().unwrap(), one.shape().unwrap());
        assert_eq!(batch.to_bytes().unwrap(), one.to_bytes().unwrap());
    }
    assert_eq!(read[1].shape().unwrap(), vec![3, 2]);

    // The current value, not the first one; the same variable twice; a batch of one.
    let delta = Value::from_slice(&[10.0f32, 20.0, 30.0, 40.0, 50.0, 60.0], &[3, 2], None).unwrap();
    b.assign_add(&delta).unwrap();
    let read = Value::read_variables(&[&b, &a, &b]).unwrap();
    assert_eq!(f32s(&read[0]), vec![10.0, 21.0, 32.0, 43.0, 54.0, 65.0]);
    assert_eq!(f32s(&read[1]), vec![1.0, 2.0]);
    assert_eq!(f32s(&read[2]), f32s(&read[0]));
    assert_eq!(f32s(&read[0]), f32s(&b.read().unwrap()));
    assert_eq!(f32s(&Value::read_variables(&[&a]).unwrap()[0]), vec![1.0, 2.0]);
}

#[test]
fn apply_updates_runs_sgd_on_every_variable_of_the_batch() {
    let plain = local_ps(None);
    let sharded = two_shard_ps();
    let (w1_0, w2_0) = ([1.0f32, 2.0, 3.0, 4.0], [10.0f32, -2.0]);
    let w1 = ps_variable(&sharded, &w1_0, &[4], "batch_sgd_w1");
    let w2 = ps_variable(&plain, &w2_0, &[2], "batch_sgd_w2");
    let untouched = ps_variable(&plain, &[5.0, 6.0], &[2], "batch_sgd_untouched");
    assert_eq!(w1.num_shards().unwrap(), 2);
    let (g1_data, g2_data) = ([1.0f32, 1.0, 2.0, 2.0], [4.0f32, -8.0]);
    let g1 = Value::from_slice(&g1_data, &[4], None).unwrap();
    let g2 = Value::from_slice(&g2_data, &[2], None).unwrap();

    Value::apply_updates(&[&w1, &w2], "sgd", &[&[&g1], &[&g2]], &[("learning_rate", 0.5)]).unwrap();
    let w1_1 = sgd(&w1_0, &g1_data, 0.5);
    let w2_1 = sgd(&w2_0, &g2_data, 0.5);
    assert_eq!(w1_1, vec![0.5, 1.5, 2.0, 3.0]); // the rule by hand, as a check of sgd() itself
    assert_eq!(f32s(&w1.read().unwrap()), w1_1);
    assert_eq!(f32s(&w2.read().unwrap()), w2_1);
    assert_eq!(f32s(&untouched.read().unwrap()), vec![5.0, 6.0]);

    // Again with another rate and the rows the other way round (each row is its variable's).
    Value::apply_updates(&[&w2, &w1], "sgd", &[&[&g2], &[&g1]], &[("learning_rate", 0.25)]).unwrap();
    let read = Value::read_variables(&[&w1, &w2]).unwrap();
    assert_eq!(f32s(&read[0]), sgd(&w1_1, &g1_data, 0.25));
    assert_eq!(f32s(&read[1]), sgd(&w2_1, &g2_data, 0.25));
}

#[test]
fn batch_calls_refuse_misuse() {
    let s = local_ps(None);
    let w1 = ps_variable(&s, &[1.0, 2.0], &[2], "batch_misuse_w1");
    let w2 = ps_variable(&s, &[3.0, 4.0, 5.0], &[3], "batch_misuse_w2");
    let tensor = Value::from_slice(&[1.0f32, 2.0], &[2], None).unwrap();
    let elsewhere =
        Value::new_variable(&tensor, VariableSync::Auto, VariableAggregation::None, Some("batch_misuse_d")).unwrap();
    let g1 = Value::from_slice(&[1.0f32, 1.0], &[2], None).unwrap();
    let g2 = Value::from_slice(&[1.0f32, 1.0, 1.0], &[3], None).unwrap();
    let lr = [("learning_rate", 1.0)];
    let unchanged = || {
        assert_eq!(f32s(&w1.read().unwrap()), vec![1.0, 2.0]);
        assert_eq!(f32s(&w2.read().unwrap()), vec![3.0, 4.0, 5.0]);
    };
    let refused = |r: Result<()>, needle: &str, from_library: bool| {
        let e = r.unwrap_err();
        assert_eq!(e.code(), Code::InvalidArgument, "{}", e);
        assert!(e.message().contains(needle), "{} does not name {}", e, needle);
        assert_eq!(e.is_from_library(), from_library, "{}", e);
    };

    // read_variables: no variables, too many, an entry that is no variable.
    refused(Value::read_variables(&[]).map(drop), "count is 0", true);
    let too_many = vec![&w1; MAX_BATCH_VARIABLES + 1];
    refused(Value::read_variables(&too_many).map(drop), &MAX_BATCH_VARIABLES.to_string(), true);
    assert_eq!(MAX_BATCH_VARIABLES, 65536);
    refused(Value::read_variables(&[&w1, &tensor]).map(drop), "variables[1]", true);

    // apply_updates: the library's refusals, each before anything is applied.
    refused(Value::apply_updates(&[], "sgd", &[], &lr), "count is 0", true);
    refused(Value::apply_updates(&[&w1, &tensor], "sgd", &[&[&g1], &[&g1]], &lr), "variables[1]", true);
    refused(Value::apply_updates(&[&w1, &elsewhere], "sgd", &[&[&g1], &[&g1]], &lr), "variables[1]", true);
    refused(Value::apply_updates(&[&w1, &w2], "sgd", &[&[&g1], &[&g1]], &lr), "variables[1]: args[0]", true);
    refused(Value::apply_updates(&[&w1, &w2], "sgd", &[&[&g1], &[&g2]], &[("rate", 1.0)]), "rate", true);
    assert_eq!(code_of(Value::apply_updates(&[&w1, &w2], "no_such_function", &[&[&g1], &[&g2]], &lr)), Code::NotFound);
    // The binding's: rows that do not match the variables, or one another (C is not called).
    refused(Value::apply_updates(&[&w1, &w2], "sgd", &[&[&g1]], &lr), "one row of arguments per variable", false);
    refused(Value::apply_updates(&[&w1], "sgd", &[&[&g1], &[&g2]], &lr), "args has 2 rows for 1 variables", false);
    refused(Value::apply_updates(&[&w1, &w2], "sgd", &[&[&g1], &[&g2, &g2]], &lr), "args[1] has 2 arguments", false);
    refused(Value::apply_updates(&[&w1, &w2], "sgd", &[&[&g1], &[]], &lr), "args[1] has 0 arguments", false);
    unchanged();

    // And the same batch well formed goes through.
    Value::apply_updates(&[&w1, &w2], "sgd", &[&[&g1], &[&g2]], &lr).unwrap();
    assert_eq!(f32s(&w1.read().unwrap()), vec![0.0, 1.0]);
    assert_eq!(f32s(&w2.read().unwrap()), vec![2.0, 3.0, 4.0]);
}
