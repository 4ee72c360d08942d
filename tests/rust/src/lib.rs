//! Helpers shared by the Rust binding's test suite (tests/rust/tests/*.rs).

use distribute::{Strategy, Value};

/// Logical CPU devices the tests use (as tests/c: DTS_NUM_CPUS).
pub const NUM_CPUS: i32 = 4;
/// Bound of every wait in the tests (as tests/c: DTS_TIMEOUT_MS).
pub const TIMEOUT_MS: i64 = 20000;

/// Exposes NUM_CPUS logical CPU devices; every test calls it first.
pub fn setup() {
    distribute::set_logical_cpu_device_count(NUM_CPUS).expect("set_logical_cpu_device_count");
}

/// The device names "CPU:0" ... "CPU:n-1".
pub fn cpus(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("CPU:{}", i)).collect()
}

/// A MirroredStrategy over n CPUs with the test timeout.
pub fn mirrored(n: usize) -> Strategy {
    setup();
    let names = cpus(n);
    let refs: Vec<&str> = names.iter().map(|s| s.as_str()).collect();
    let s = Strategy::mirrored(&refs, None).expect("mirrored");
    s.set_timeout_ms(TIMEOUT_MS).expect("timeout");
    s
}

/// Component i of a value as f32s.
pub fn component_f32(v: &Value, i: i32) -> Vec<f32> {
    v.component_tensor(i).expect("component_tensor").to_vec::<f32>().expect("to_vec")
}

/// Installs, once per test binary, a panic hook that keeps the output of the panics the
/// tests cause on purpose (messages containing "boom") quiet and prints every other panic
/// as usual. Swapping hooks per test would race with the tests running beside it.
pub fn quiet_expected_panics() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let expected = info.payload().downcast_ref::<&str>().map_or(false, |m| m.contains("boom"))
                || info.payload().downcast_ref::<String>().map_or(false, |m| m.contains("boom"));
            if !expected {
                default(info);
            }
        }));
    });
}
