// Finds libdistribute with the `pkg-config` program (no crates): `distribute` (installed) or,
// when PKG_CONFIG_PATH points at a build tree, `distribute-uninstalled`. Exports the library
// directory as DEP_DISTRIBUTE_LIBDIR to dependents, which add it as an rpath.
use std::process::Command;

fn pkg_config(args: &[&str]) -> Option<String> {
    let out = Command::new("pkg-config").args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    Some(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn main() {
    println!("cargo:rerun-if-env-changed=PKG_CONFIG_PATH");
    println!("cargo:rerun-if-env-changed=DISTRIBUTE_PKG");
    let candidates: Vec<String> = match std::env::var("DISTRIBUTE_PKG") {
        Ok(name) => vec![name],
        Err(_) => vec!["distribute".into()],
    };
    let mut libs = None;
    for name in &candidates {
        if let Some(l) = pkg_config(&["--libs", name]) {
            libs = Some(l);
            break;
        }
    }
    let libs = libs.unwrap_or_else(|| {
        panic!(
            "distribute-sys: pkg-config found none of {:?}: set PKG_CONFIG_PATH to the build tree \
             (build/) or to <prefix>/lib/pkgconfig",
            candidates
        )
    });
    let mut libdirs = Vec::new();
    for flag in libs.split_whitespace() {
        if let Some(dir) = flag.strip_prefix("-L") {
            println!("cargo:rustc-link-search=native={}", dir);
            libdirs.push(dir.to_string());
        } else if let Some(lib) = flag.strip_prefix("-l") {
            println!("cargo:rustc-link-lib=dylib={}", lib);
        }
    }
    for dir in &libdirs {
        println!("cargo:rustc-link-arg=-Wl,-rpath,{}", dir);
    }
    if let Some(dir) = libdirs.first() {
        println!("cargo:libdir={}", dir);
    }
}
