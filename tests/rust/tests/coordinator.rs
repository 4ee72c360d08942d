//! The coordinator from Rust: registration round trips and refusals, closure arguments, a
//! coordinator refused over a local-mode strategy, and one job in this process (a ps task,
//! a worker task whose server runs a Rust closure, and the chief's strategy and
//! coordinator on free loopback ports) whose closures add to a ps variable and return
//! twice their argument.

use std::net::TcpListener;
use std::thread;

use distribute::*;

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

#[test]
fn registration_and_arguments() {
    register_closure("rust_noop", |_, _| Ok(None)).unwrap();
    assert_eq!(register_closure("rust_noop", |_, _| Ok(None)).unwrap_err().code(), Code::AlreadyExists);
    assert!(is_closure_registered("rust_noop").unwrap());
    unregister_closure("rust_noop").unwrap();
    assert!(!is_closure_registered("rust_noop").unwrap());
    assert_eq!(unregister_closure("rust_noop").unwrap_err().code(), Code::NotFound);
    register_dataset_function("rust_data", |_| Dataset::range(0, 4, 1)).unwrap();
    unregister_dataset_function("rust_data").unwrap();
    assert_eq!(unregister_dataset_function("rust_data").unwrap_err().code(), Code::NotFound);

    let mut args = ClosureArgs::new().unwrap();
    let x = Value::from_slice(&[1.0f32, 2.0], &[2], None).unwrap();
    args.add_value(&x).unwrap();
    assert_eq!(args.count().unwrap(), 1);
    assert_eq!(args.kind(0).unwrap(), ClosureArgKind::Tensor);
    assert_eq!(args.kind(1).unwrap_err().code(), Code::OutOfRange);
    assert_eq!(args.value(0).unwrap().to_vec::<f32>().unwrap(), vec![1.0, 2.0]);
    assert_eq!(args.iterator(0).unwrap_err().code(), Code::InvalidArgument);

    let local = Strategy::parameter_server(None, None, None).unwrap();
    assert_eq!(Coordinator::new(&local).unwrap_err().code(), Code::InvalidArgument);
}

#[test]
fn closures_run_on_a_worker_of_this_process() {
    register_closure("rust_add_and_double", |_strategy, args| {
        let counter = args.value(0)?;
        let x = args.value(1)?;
        counter.assign_add(&Value::scalar(1.0f32, None)?)?;
        Ok(Some(Value::scalar(2.0 * x.scalar_f32()?, None)?))
    })
    .unwrap();
    let ports = [free_port(), free_port(), free_port()]; // chief, worker 0, ps 0
    let cluster_as = move |job: &str| {
        let mut c = Cluster::new().unwrap();
        c.add_task("chief", 0, &format!("localhost:{}", ports[0])).unwrap();
        c.add_task("worker", 0, &format!("localhost:{}", ports[1])).unwrap();
        c.add_task("ps", 0, &format!("localhost:{}", ports[2])).unwrap();
        c.set_task(job, 0).unwrap();
        c
    };
    let servers: Vec<_> = ["worker", "ps"]
        .into_iter()
        .map(|job| thread::spawn(move || Server::new(&cluster_as(job), None).unwrap()))
        .collect();
    let strategy = Strategy::parameter_server(Some(&cluster_as("chief")), None, None).unwrap();
    let servers: Vec<Server> = servers.into_iter().map(|h| h.join().unwrap()).collect();
    let coordinator = Coordinator::new(&strategy).unwrap();
    let counter = {
        let _scope = strategy.scope().unwrap();
        Value::new_variable(&Value::scalar(0.0f32, None).unwrap(), VariableSync::Auto, VariableAggregation::Sum,
                            Some("rust_counter"))
            .unwrap()
    };
    let values: Vec<RemoteValue> = (0..10)
        .map(|i| {
            let mut args = ClosureArgs::new().unwrap();
            args.add_value(&counter).unwrap();
            args.add_value(&Value::scalar(i as f32, None).unwrap()).unwrap();
            coordinator.schedule("rust_add_and_double", Some(&args)).unwrap()
        })
        .collect();
    coordinator.join().unwrap();
    for (i, v) in values.iter().enumerate() {
        assert!(v.is_ready().unwrap());
        assert_eq!(v.fetch().unwrap().unwrap().scalar_f32().unwrap(), 2.0 * i as f32);
    }
    assert_eq!(counter.read().unwrap().scalar_f32().unwrap(), 10.0);
    assert_eq!(coordinator.num_workers().unwrap(), 1);
    assert!(coordinator.done().unwrap());
    coordinator.schedule("rust_unknown", None).unwrap();
    assert_eq!(coordinator.join().unwrap_err().code(), Code::NotFound);
    let dataset = coordinator.create_per_worker_dataset("rust_none", None).unwrap();
    let iterator = dataset.make_iterator().unwrap();
    let mut args = ClosureArgs::new().unwrap();
    args.add_per_worker(&iterator).unwrap();
    assert_eq!(args.kind(0).unwrap(), ClosureArgKind::Iterator);
    assert_eq!(args.add_per_worker(&dataset).unwrap_err().code(), Code::InvalidArgument);
    coordinator.create_per_worker_dataset_from_function("rust_none", None).unwrap();
    drop(coordinator);
    drop(strategy);
    drop(servers);
}
