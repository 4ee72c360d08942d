// 1. The rpath of this package's binaries (DEP_DISTRIBUTE_LIBDIR from distribute-sys).
// 2. bench/bench_c.c, the C side of the benchmark, compiled with the system C compiler
//    (`cc`, no crates) against the library's headers (pkg-config --cflags distribute).
use std::path::PathBuf;
use std::process::Command;

fn main() {
    if let Ok(dir) = std::env::var("DEP_DISTRIBUTE_LIBDIR") {
        println!("cargo:rustc-link-arg=-Wl,-rpath,{}", dir);
    }
    println!("cargo:rerun-if-changed=bench/bench_c.c");
    println!("cargo:rerun-if-env-changed=PKG_CONFIG_PATH");
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap());
    let cflags = Command::new("pkg-config").args(["--cflags", "distribute"]).output().expect("pkg-config");
    assert!(cflags.status.success(), "pkg-config --cflags distribute failed: set PKG_CONFIG_PATH");
    let cflags = String::from_utf8(cflags.stdout).unwrap();
    let obj = out.join("bench_c.o");
    let st = Command::new("cc")
        .args(["-O2", "-fPIC", "-std=c99", "-D_POSIX_C_SOURCE=200112L", "-c", "bench/bench_c.c", "-o"])
        .arg(&obj)
        .args(cflags.split_whitespace())
        .status()
        .expect("run cc");
    assert!(st.success(), "compiling bench/bench_c.c failed");
    let st = Command::new("ar").arg("rcs").arg(out.join("libbench_c.a")).arg(&obj).status().expect("run ar");
    assert!(st.success());
    // Only the binaries call it (an archive member nobody references is not linked).
    println!("cargo:rustc-link-arg-bins={}", out.join("libbench_c.a").display());
}
