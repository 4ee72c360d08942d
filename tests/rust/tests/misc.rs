//! Devices, version, tensors in and out (copies, wrapped Vecs, bytes, DLPack), clusters,
//! servers and a one-worker MultiWorkerMirroredStrategy.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use distribute::*;
use distribute_tests::*;

#[test]
fn version_and_devices() {
    let v = version();
    let parts: Vec<i32> = v.split('.').map(|p| p.parse().unwrap()).collect();
    assert_eq!(version_number(), parts[0] * 10000 + parts[1] * 100 + parts[2]);
    assert_eq!(version_number(), distribute::sys::DIST_VERSION_NUMBER);
    setup();
    assert_eq!(local_device_count().unwrap() >= NUM_CPUS, true);
    let d = local_device(1).unwrap();
    assert!(d.name().unwrap().ends_with("/device:CPU:1"), "{}", d.name().unwrap());
    let d = Device::parse("/job:worker/replica:0/task:3/device:gpu:2").unwrap();
    assert_eq!(d.job().unwrap(), "worker");
    assert_eq!(d.replica().unwrap(), 0);
    assert_eq!(d.task().unwrap(), 3);
    assert_eq!(d.device_type().unwrap(), DeviceType::Gpu);
    assert_eq!(d.index().unwrap(), 2);
    assert_eq!(d.name().unwrap(), "/job:worker/replica:0/task:3/device:GPU:2");
    assert_eq!(Device::parse("CPU:*").unwrap().index().unwrap(), -1);
    assert_eq!(Device::parse("TPU:0").unwrap_err().code(), Code::InvalidArgument);
    let _reason = gpu_unavailable_reason().unwrap();
    assert_eq!(set_logical_cpu_device_count(0).unwrap_err().code(), Code::InvalidArgument);
    for (dt, size, name) in [
        (DType::Float32, 4, "float32"),
        (DType::BFloat16, 2, "bfloat16"),
        (DType::Int64, 8, "int64"),
        (DType::Bool, 1, "bool"),
    ] {
        assert_eq!(dt.size().unwrap(), size);
        assert_eq!(dt.name(), name);
        assert_eq!(DType::from_raw(dt.raw()), Some(dt));
    }
    assert_eq!(DType::from_raw(77), None);
    assert_eq!(Code::from_raw(3), Code::InvalidArgument);
    assert_eq!(Code::InvalidArgument.name(), "INVALID_ARGUMENT");
    assert_eq!(Code::from_raw(999), Code::Other(999));
    assert_eq!(Code::Other(999).name(), "UNKNOWN_STATUS_CODE");
}

#[test]
fn tensors_in_and_out() {
    setup();
    let data: Vec<f64> = (0..6).map(|x| x as f64 * 1.5).collect();
    let t = Value::from_slice(&data, &[2, 3], Some("CPU:1")).unwrap();
    assert_eq!(t.kind().unwrap(), ValueKind::Tensor);
    assert_eq!(t.dtype().unwrap(), DType::Float64);
    assert_eq!(t.rank().unwrap(), 2);
    assert_eq!(t.shape().unwrap(), vec![2, 3]);
    assert_eq!(t.num_elements().unwrap(), 6);
    assert_eq!(t.byte_size().unwrap(), 48);
    assert_eq!(t.device().unwrap(), "/device:CPU:1");
    assert_eq!(t.to_vec::<f64>().unwrap(), data);
    let mut out = [0.0f64; 6];
    t.copy_to_slice(&mut out).unwrap();
    assert_eq!(&out[..], &data[..]);
    assert_eq!(t.copy_to_slice(&mut [0.0f64; 2]).unwrap_err().code(), Code::InvalidArgument);
    // Writes in place are seen by values sharing the buffer, not by copies.
    let copy = t.copy_to_device("CPU:2").unwrap();
    let comp = t.component(0).unwrap();
    t.write_from_slice(&[9.0f64; 6]).unwrap();
    assert_eq!(comp.to_vec::<f64>().unwrap(), vec![9.0; 6]);
    assert_eq!(copy.to_vec::<f64>().unwrap(), data);
    assert_eq!(copy.device().unwrap(), "/device:CPU:2");
    assert_eq!(t.component_tensor(0).unwrap().to_vec::<f64>().unwrap(), vec![9.0; 6]);
    // Other element types and raw bytes.
    assert_eq!(Value::from_slice(&[-3i8, 4], &[2], None).unwrap().to_vec::<i8>().unwrap(), vec![-3, 4]);
    assert_eq!(Value::from_slice(&[-3i16, 4], &[2], None).unwrap().to_vec::<i16>().unwrap(), vec![-3, 4]);
    let b = Value::from_bytes(DType::Float16, &[2], &[0x00, 0x3c, 0x00, 0xc0], None).unwrap();
    assert_eq!(b.dtype().unwrap(), DType::Float16);
    assert_eq!(b.to_bytes().unwrap(), vec![0x00, 0x3c, 0x00, 0xc0]);
    assert_eq!(Value::zeros(DType::Int32, &[3], None).unwrap().to_vec::<i32>().unwrap(), vec![0; 3]);
    assert_eq!(Value::scalar(2.5f32, None).unwrap().scalar_f32().unwrap(), 2.5);
    assert_eq!(Value::scalar(2.5f64, None).unwrap().scalar_f64().unwrap(), 2.5);
    // A wrapped Vec is borrowed without a copy and dropped when the last value goes.
    struct Flag(Arc<AtomicBool>);
    impl Drop for Flag {
        fn drop(&mut self) {
            self.0.store(true, Ordering::SeqCst);
        }
    }
    let v = vec![1.0f32, 2.0, 3.0, 4.0];
    let ptr = v.as_ptr();
    let w = Value::wrap(v, &[2, 2], None).unwrap();
    assert_eq!(w.data_ptr().unwrap() as *const f32, ptr);
    let shared = w.component(0).unwrap();
    drop(w);
    assert_eq!(shared.to_vec::<f32>().unwrap(), vec![1.0, 2.0, 3.0, 4.0]);
    drop(shared);
    let _flag = Flag(Arc::new(AtomicBool::new(false)));
    let e = Value::wrap(vec![1.0f32; 3], &[2], None).unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument);
    // DLPack round trip.
    let t = Value::from_slice(&[1i32, 2, 3], &[3], None).unwrap();
    let dl = t.to_dlpack().unwrap();
    assert!(!dl.is_null());
    unsafe {
        assert_eq!((*dl).dl_tensor.ndim, 1);
        assert_eq!(*(*dl).dl_tensor.shape, 3);
    }
    let back = unsafe { Value::from_dlpack(dl) }.unwrap();
    assert_eq!(back.to_vec::<i32>().unwrap(), vec![1, 2, 3]);
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// The cluster resolvers: a StatefulSet pod from arguments; Slurm outside srun is NotFound.
#[test]
fn cluster_resolvers() {
    let c = Cluster::from_statefulset(Some("train-1"), Some("train"), 3, 7000).unwrap();
    assert_eq!(c.task_index().unwrap(), 1);
    assert_eq!(c.task_address("worker", 2).unwrap(), "train-2.train:7000");
    let e = Cluster::from_statefulset(Some("train"), Some("train"), 3, 0).unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument);
    assert!(e.message().contains("<set>-<ordinal>"), "{}", e.message());
    if std::env::var_os("SLURM_PROCID").is_none() {
        let e = Cluster::from_slurm(&[("worker", 2)], 0, 0).unwrap_err();
        assert_eq!(e.code(), Code::NotFound);
        assert!(e.message().contains("SLURM_PROCID"), "{}", e.message());
    }
    assert_eq!(Cluster::from_slurm(&[], 70000, 0).unwrap_err().code(), Code::InvalidArgument);
}

#[test]
fn cluster_and_server() {
    let json = r#"{"cluster": {"chief": ["127.0.0.1:2222"], "worker": ["127.0.0.1:2223", "127.0.0.1:2224"]}, "task": {"type": "worker", "index": 1}}"#;
    let c = Cluster::from_tf_config(json).unwrap();
    assert_eq!(c.task_type().unwrap(), "worker");
    assert_eq!(c.task_index().unwrap(), 1);
    assert!(!c.is_chief().unwrap());
    assert_eq!(c.num_workers().unwrap(), 3);
    assert_eq!(c.num_tasks("worker").unwrap(), 2);
    assert_eq!(c.task_index_at("worker", 1).unwrap(), 1);
    assert_eq!(c.task_address("chief", 0).unwrap(), "127.0.0.1:2222");
    assert_eq!(Cluster::from_tf_config("{not json").unwrap_err().code(), Code::InvalidArgument);

    let port = free_port();
    let mut c = Cluster::new().unwrap();
    c.add_task("worker", 0, &format!("127.0.0.1:{}", port)).unwrap();
    c.set_task("worker", 0).unwrap();
    assert!(c.is_chief().unwrap());
    assert_eq!(c.add_task("worker", 1, "no port").unwrap_err().code(), Code::InvalidArgument);
    let mut o = ServerOptions::new().unwrap();
    o.set_startup_timeout_ms(10000).unwrap();
    o.set_heartbeat_interval_ms(500).unwrap();
    o.set_heartbeat_timeout_ms(5000).unwrap();
    assert_eq!(o.set_heartbeat_timeout_ms(0).unwrap_err().code(), Code::InvalidArgument);
    let server = Server::new(&c, Some(&o)).unwrap();
    assert_eq!(server.port().unwrap(), port as i32);
    server.key_value_set("k", b"hello").unwrap();
    assert_eq!(server.key_value_get("k", 1000).unwrap().to_vec::<u8>().unwrap(), b"hello");
    let e = server.key_value_get("missing", 0).unwrap_err();
    assert_eq!(e.code(), Code::DeadlineExceeded);
    assert!(e.message().contains("missing"), "{}", e);
    server.barrier("b", 1000).unwrap();
    server.peer_health().unwrap();
    std::thread::scope(|s| {
        s.spawn(|| server.join().unwrap());
        std::thread::sleep(std::time::Duration::from_millis(50));
        server.stop().unwrap();
    });
    server.stop().unwrap(); // idempotent
}

#[test]
fn one_worker_multi_worker_mirrored() {
    setup();
    let port = free_port();
    let mut c = Cluster::new().unwrap();
    c.add_task("worker", 0, &format!("127.0.0.1:{}", port)).unwrap();
    c.set_task("worker", 0).unwrap();
    let mut o = CommunicationOptions::new().unwrap();
    o.set_replicas_per_worker(2).unwrap();
    o.set_timeout_ms(TIMEOUT_MS).unwrap();
    let s = Strategy::multi_worker_mirrored(Some(&c), Some(&o)).unwrap();
    assert_eq!(s.kind().unwrap(), StrategyKind::MultiWorkerMirrored);
    assert_eq!(s.num_replicas_in_sync().unwrap(), 2);
    let out = s
        .run(&[], 1, |ctx, _| {
            let v = Value::scalar(ctx.replica_id()? as f32 + 1.0, Some(&ctx.device()?))?;
            Ok(vec![ctx.all_reduce(ReduceOp::Sum, &v)?])
        })
        .unwrap();
    assert_eq!(s.reduce(ReduceOp::Mean, out[0].as_ref().unwrap()).unwrap().scalar_f32().unwrap(), 3.0);
}
