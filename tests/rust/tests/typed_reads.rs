//! Typed reads convert nothing (issue 42): `to_vec`, `copy_to_slice` and `write_from_slice`
//! take only T's own dtype, and the `scalar_*` reads (the library's getters) the same; any
//! other dtype is INVALID_ARGUMENT naming both (a float32 1.0 read as int32 once gave
//! 1065353216 in another binding). A tensor in device memory is FAILED_PRECONDITION for
//! them and for `to_bytes`: that case runs in a child process (this test binary) on the
//! fake GPU plugin (DIST_CUDA_PLUGIN), whose device pointers fault when the host
//! dereferences them, so the other tests keep their CPU-only devices.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use distribute::{gpu_unavailable_reason, Code, DType, Element, Result, Value};
use distribute_tests::setup;

/// One typed access and the dtype it takes; `host`: it touches the buffer from Rust (the
/// `scalar_*` reads are the library's, which copy a GPU tensor to the host themselves).
struct Read {
    name: String,
    dtype: DType,
    host: bool,
    run: Box<dyn Fn(&Value) -> Result<String>>,
}

/// 1 of each element type (what one_of's tensors hold, so that a write keeps the buffer).
trait One {
    fn one() -> Self;
}
macro_rules! one {
    ($($t:ty = $v:expr),*) => { $(impl One for $t { fn one() -> Self { $v } })* };
}
one!(f32 = 1.0, f64 = 1.0, i32 = 1, i64 = 1, i16 = 1, i8 = 1, u8 = 1);

fn slice_reads<T: Element + std::fmt::Debug + One>(type_name: &str) -> Vec<Read> {
    vec![
        Read {
            name: format!("to_vec::<{}>", type_name),
            dtype: T::DTYPE,
            host: true,
            run: Box::new(|v| v.to_vec::<T>().map(|x| format!("{:?}", x))),
        },
        Read {
            name: format!("copy_to_slice::<{}>", type_name),
            dtype: T::DTYPE,
            host: true,
            run: Box::new(|v| {
                let mut out = vec![T::default(); v.num_elements()? as usize];
                v.copy_to_slice(&mut out).map(|_| format!("{:?}", out))
            }),
        },
        Read {
            name: format!("write_from_slice::<{}>", type_name),
            dtype: T::DTYPE,
            host: true,
            run: Box::new(|v| {
                let one = vec![T::one(); v.num_elements()? as usize];
                v.write_from_slice(&one).map(|_| "written".to_string())
            }),
        },
    ]
}

/// Every typed access of the binding.
fn reads() -> Vec<Read> {
    let mut all = Vec::new();
    all.extend(slice_reads::<f32>("f32"));
    all.extend(slice_reads::<f64>("f64"));
    all.extend(slice_reads::<i32>("i32"));
    all.extend(slice_reads::<i64>("i64"));
    all.extend(slice_reads::<i16>("i16"));
    all.extend(slice_reads::<i8>("i8"));
    all.extend(slice_reads::<u8>("u8"));
    let scalar = |name: &str, dtype: DType, f: fn(&Value) -> Result<String>| Read {
        name: name.to_string(),
        dtype,
        host: false,
        run: Box::new(f),
    };
    all.push(scalar("scalar_f32", DType::Float32, |v| v.scalar_f32().map(|x| x.to_string())));
    all.push(scalar("scalar_f64", DType::Float64, |v| v.scalar_f64().map(|x| x.to_string())));
    all.push(scalar("scalar_i32", DType::Int32, |v| v.scalar_i32().map(|x| x.to_string())));
    all.push(scalar("scalar_i64", DType::Int64, |v| v.scalar_i64().map(|x| x.to_string())));
    all
}

const DTYPES: [DType; 10] = [
    DType::Float32,
    DType::Float64,
    DType::Int32,
    DType::Int64,
    DType::Int16,
    DType::Int8,
    DType::UInt8,
    DType::Bool,
    DType::Float16,
    DType::BFloat16,
];

/// A one-element tensor of `dtype` holding 1, as little-endian bytes written here.
fn one_of(dtype: DType, device: Option<&str>) -> Value {
    let bytes: &[u8] = match dtype {
        DType::Float32 => &[0, 0, 0x80, 0x3f],
        DType::Float64 => &[0, 0, 0, 0, 0, 0, 0xf0, 0x3f],
        DType::Int32 => &[1, 0, 0, 0],
        DType::Int64 => &[1, 0, 0, 0, 0, 0, 0, 0],
        DType::Int16 => &[1, 0],
        DType::Int8 | DType::UInt8 | DType::Bool => &[1],
        DType::Float16 => &[0, 0x3c],
        DType::BFloat16 => &[0x80, 0x3f],
    };
    Value::from_bytes(dtype, &[1], bytes, device).expect("from_bytes")
}

/// The case: to_vec::<i32> of float32 1.0 is refused, not 1065353216.
#[test]
fn int_read_of_float_tensor_is_refused() {
    setup();
    let f = Value::scalar(1.0f32, None).unwrap();
    match f.to_vec::<i32>() {
        Ok(v) => panic!("to_vec::<i32> of float32 1.0 read {:?}", v),
        Err(e) => {
            assert_eq!(e.code(), Code::InvalidArgument);
            assert_eq!(e.message(), "Value::to_vec: the tensor is float32, asked for int32");
        }
    }
    let e = f.scalar_i32().unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument, "{}", e);
    assert_eq!(f.to_vec::<f32>().unwrap(), vec![1.0], "the tensor reads as itself");
}

/// Every typed access against every dtype: its own reads (or writes) 1, every other is
/// refused naming both dtypes, and a refused write leaves the buffer as it was.
#[test]
fn every_typed_read_checks_the_dtype() {
    setup();
    let reads = reads();
    let (mut matching, mut refused) = (0, 0);
    for &have in DTYPES.iter() {
        let v = one_of(have, None);
        let before = v.to_bytes().unwrap();
        for r in &reads {
            let got = (r.run)(&v);
            if r.dtype == have {
                matching += 1;
                let got = got.unwrap_or_else(|e| panic!("{} of {}: {}", r.name, have.name(), e));
                let want: &[&str] = if r.name.starts_with("write") {
                    &["written"]
                } else if r.host {
                    &["[1]", "[1.0]"]
                } else {
                    &["1"]
                };
                assert!(want.contains(&got.as_str()), "{} of {}: {}", r.name, have.name(), got);
                continue;
            }
            let e = match got {
                Ok(x) => panic!("{} of a {} tensor read {}", r.name, have.name(), x),
                Err(e) => e,
            };
            assert_eq!(e.code(), Code::InvalidArgument, "{} of a {} tensor: {}", r.name, have.name(), e);
            if r.host {
                let op = r.name.split("::").next().unwrap();
                assert_eq!(
                    e.message(),
                    format!("Value::{}: the tensor is {}, asked for {}", op, have.name(), r.dtype.name()),
                    "{} of a {} tensor",
                    r.name,
                    have.name()
                );
            } else {
                assert!(
                    e.message().contains(have.name()) && e.message().contains(r.dtype.name()),
                    "{} of a {} tensor: {:?} names not both dtypes",
                    r.name,
                    have.name(),
                    e.message()
                );
            }
            refused += 1;
        }
        assert_eq!(v.to_bytes().unwrap(), before, "{}: a refused write changed the buffer", have.name());
    }
    // 7 element types x 3 accesses and 4 scalar reads, each matching one dtype of the 10.
    assert_eq!(matching, 25);
    assert_eq!(refused, 10 * 25 - 25);
}

const CHILD_ENV: &str = "DIST_RUST_FAKE_GPU_CHILD";

/// libdist_fake_gpu.so: $DIST_FAKE_GPU_PLUGIN (tests/rust/run.sh sets it), else the one
/// beside the libdistribute this test links (build.rs).
fn fake_gpu_plugin() -> String {
    let p = std::env::var("DIST_FAKE_GPU_PLUGIN")
        .ok()
        .filter(|p| !p.is_empty())
        .or_else(|| option_env!("DIST_TEST_LIBDIR").map(|d| format!("{}/libdist_fake_gpu.so", d)))
        .expect("DIST_FAKE_GPU_PLUGIN is unset (tests/rust/run.sh sets it)");
    assert!(std::path::Path::new(&p).is_file(), "{} is missing: cmake --build <build dir> --target dist_fake_gpu", p);
    p
}

/// A tensor in device memory: every access from Rust is refused with FAILED_PRECONDITION
/// (the dtype is checked first), and the remedies work. Runs `fake_gpu_child` in a child
/// process with DIST_CUDA_PLUGIN = the fake GPU plugin; an access of device memory there
/// crashes the child instead of passing.
#[test]
fn device_memory_is_refused() {
    let plugin = fake_gpu_plugin();
    let log_path = std::env::temp_dir().join(format!("dist-rust-fake-gpu-{}.log", std::process::id()));
    let log_file = std::fs::File::create(&log_path).unwrap();
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["fake_gpu_child", "--exact", "--ignored", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, "1")
        .env("DIST_CUDA_PLUGIN", &plugin)
        .env("DIST_FAKE_GPU_COUNT", "1")
        .stdout(Stdio::from(log_file.try_clone().unwrap()))
        .stderr(Stdio::from(log_file))
        .spawn()
        .expect("start the child");
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let log = std::fs::read_to_string(&log_path).unwrap_or_default();
    let _ = std::fs::remove_file(&log_path);
    let status = status.unwrap_or_else(|| panic!("the child did not finish in 60 s:\n{}", log));
    assert!(status.success(), "child: {}\n{}", status, log);
    let lines: Vec<&str> = log.lines().collect();
    let expect = |line: String| assert!(lines.contains(&line.as_str()), "missing line {:?} in:\n{}", line, log);
    let mut host = 0;
    for r in reads().iter().filter(|r| r.host) {
        let op = r.name.split("::").next().unwrap();
        expect(format!(
            "{} of {}: FAILED_PRECONDITION: Value::{}: the tensor is on /device:GPU:0, in device memory: \
             copy it to the host first (copy_to_device(\"CPU:0\"))",
            r.name,
            r.dtype.name(),
            op
        ));
        host += 1;
    }
    assert_eq!(host, 21);
    for d in DTYPES {
        expect(format!(
            "to_bytes of {}: FAILED_PRECONDITION: Value::to_bytes: the tensor is on /device:GPU:0, in device \
             memory: copy it to the host first (copy_to_device(\"CPU:0\"))",
            d.name()
        ));
    }
    expect("to_vec::<i32> of float32: INVALID_ARGUMENT: Value::to_vec: the tensor is float32, asked for int32".into());
    expect("after copy_to_device: [1.5, -2.0, 3.25]".into());
    expect("scalar_f32 of a GPU tensor: 7.5".into());
    expect("scalar_i64 of a GPU tensor: -9".into());
    expect("fake GPU child: done".into());
}

/// The child of `device_memory_is_refused` (run only there, with --ignored): makes tensors
/// on the fake GPU and prints one line per access, checking nothing itself.
#[test]
#[ignore = "the child process of device_memory_is_refused"]
fn fake_gpu_child() {
    if std::env::var_os(CHILD_ENV).is_none() {
        println!("fake_gpu_child: run by device_memory_is_refused");
        return;
    }
    println!(); // libtest's "test fake_gpu_child ... " has no newline
    let why = gpu_unavailable_reason().expect("gpu_unavailable_reason");
    assert_eq!(why, "", "no fake GPU");
    let report = |name: String, got: Result<String>| match got {
        Ok(x) => println!("{}: READ {} (device memory was touched)", name, x),
        Err(e) => println!("{}: {}: {}", name, e.code().name(), e.message()),
    };
    for r in reads().iter().filter(|r| r.host) {
        let g = one_of(r.dtype, Some("GPU:0"));
        report(format!("{} of {}", r.name, r.dtype.name()), (r.run)(&g));
    }
    for d in DTYPES {
        let g = one_of(d, Some("GPU:0"));
        report(format!("to_bytes of {}", d.name()), g.to_bytes().map(|b| format!("{:?}", b)));
    }
    let g = Value::from_slice(&[1.5f32, -2.0, 3.25], &[3], Some("GPU:0")).unwrap();
    report("to_vec::<i32> of float32".into(), g.to_vec::<i32>().map(|x| format!("{:?}", x)));
    let h = g.copy_to_device("CPU:0").unwrap();
    println!("after copy_to_device: {:?}", h.to_vec::<f32>().unwrap());
    let s = Value::scalar(7.5f32, Some("GPU:0")).unwrap();
    println!("scalar_f32 of a GPU tensor: {}", s.scalar_f32().unwrap());
    let i = Value::scalar(-9i64, Some("GPU:0")).unwrap();
    println!("scalar_i64 of a GPU tensor: {}", i.scalar_i64().unwrap());
    println!("fake GPU child: done");
}
