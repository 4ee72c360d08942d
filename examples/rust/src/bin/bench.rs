//! The Rust binding's benchmark (not a test): the empty `run` step and an 8-byte
//! all-reduce step with 2 and 4 replicas, through the binding (closures, Result, Drop)
//! next to the same steps written in C (bench/bench_c.c) against the same library in the
//! same process. Prints median and p90 microseconds per step and the Rust/C ratio.
//!
//!   cargo run --release -p distribute-examples --bin bench [-- --iterations N]

use std::time::Instant;

use distribute::{sys, ReduceOp, Strategy, Value};

extern "C" {
    fn bench_c_empty_run(strategy: *mut sys::dist_strategy_t, iterations: i64, times: *mut f64) -> i32;
    fn bench_c_all_reduce(
        strategy: *mut sys::dist_strategy_t,
        per_replica: *const sys::dist_value_t,
        iterations: i64,
        times: *mut f64,
    ) -> i32;
}

fn stats(mut t: Vec<f64>) -> (f64, f64) {
    t.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let at = |q: f64| t[((t.len() - 1) as f64 * q) as usize] * 1e6;
    (at(0.5), at(0.9))
}

fn rust_empty(s: &Strategy, n: usize) -> Vec<f64> {
    (0..n)
        .map(|_| {
            let t0 = Instant::now();
            s.run(&[], 0, |_, _| Ok(Vec::new())).expect("run");
            t0.elapsed().as_secs_f64()
        })
        .collect()
}

fn rust_all_reduce(s: &Strategy, pr: &Value, n: usize) -> Vec<f64> {
    (0..n)
        .map(|_| {
            let t0 = Instant::now();
            s.run(&[pr], 0, |ctx, args| {
                ctx.all_reduce(ReduceOp::Sum, &args[0])?;
                Ok(Vec::new())
            })
            .expect("run");
            t0.elapsed().as_secs_f64()
        })
        .collect()
}

fn c_times(n: usize, f: impl FnOnce(*mut f64) -> i32) -> Vec<f64> {
    let mut t = vec![0.0; n];
    let st = f(t.as_mut_ptr());
    assert_eq!(st, 0, "C benchmark step failed: {}", st);
    t
}

fn main() {
    let mut iterations = 20000usize;
    let args: Vec<String> = std::env::args().collect();
    if args.len() == 3 && args[1] == "--iterations" {
        iterations = args[2].parse().expect("--iterations N");
    } else if args.len() != 1 {
        eprintln!("usage: bench [--iterations N]");
        std::process::exit(2);
    }
    distribute::set_logical_cpu_device_count(4).unwrap();
    println!("# Rust binding vs C, same library, same process; {} steps per cell in 4 alternating rounds; microseconds per step", iterations);
    println!("# the Rust step is a closure through Strategy::run (catch_unwind, Result, Drop); the C step an extern function (bench/bench_c.c)");
    println!(
        "{:<24} {:>9} {:>12} {:>12} {:>12} {:>12} {:>10}",
        "step", "replicas", "C median", "Rust median", "C p90", "Rust p90", "Rust/C"
    );
    for &what in &["empty run", "all-reduce 8 bytes"] {
        for &n in &[2usize, 4] {
            let names: Vec<String> = (0..n).map(|i| format!("CPU:{}", i)).collect();
            let s = Strategy::mirrored(&names.iter().map(|x| x.as_str()).collect::<Vec<_>>(), None).unwrap();
            let parts: Vec<Value> =
                (0..n).map(|i| Value::from_slice(&[i as f32 + 1.0, 1.0], &[2], Some(&names[i])).unwrap()).collect();
            let pr = Value::per_replica(&parts.iter().collect::<Vec<_>>()).unwrap();
            let (mut c, mut r) = (Vec::new(), Vec::new());
            let round = iterations / 4;
            // Warm-up, then alternate C and Rust rounds so that both see the same machine.
            for k in 0..5 {
                let m = if k == 0 { 500.min(round) } else { round };
                let ct = c_times(m, |t| unsafe {
                    if what == "empty run" {
                        bench_c_empty_run(s.as_ptr(), m as i64, t)
                    } else {
                        bench_c_all_reduce(s.as_ptr(), pr.as_ptr(), m as i64, t)
                    }
                });
                let rt = if what == "empty run" { rust_empty(&s, m) } else { rust_all_reduce(&s, &pr, m) };
                if k > 0 {
                    c.extend(ct);
                    r.extend(rt);
                }
            }
            let (cm, c90) = stats(c);
            let (rm, r90) = stats(r);
            println!("{:<24} {:>9} {:>12.2} {:>12.2} {:>12.2} {:>12.2} {:>9.2}x", what, n, cm, rm, c90, r90, rm / cm);
        }
    }
    println!("# target (issue 12): Rust within 1.5x of C on a quiet machine");
}
