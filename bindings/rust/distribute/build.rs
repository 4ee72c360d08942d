// The -sys crate's rpath link argument does not reach dependents' binaries: add it here from
// DEP_DISTRIBUTE_LIBDIR (exported by distribute-sys, which has `links = "distribute"`).
// rustc-link-arg is passed to every binary of this package; dependents (tests/rust,
// examples/rust) repeat this in their own build.rs.
fn main() {
    if let Ok(dir) = std::env::var("DEP_DISTRIBUTE_LIBDIR") {
        println!("cargo:rustc-link-arg=-Wl,-rpath,{}", dir);
        println!("cargo:libdir={}", dir);
    }
}
