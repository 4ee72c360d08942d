// 1. The rpath of this package's test binaries (DEP_DISTRIBUTE_LIBDIR from distribute-sys),
//    also DIST_TEST_LIBDIR in their environment at compile time (the fake GPU plugin's dir).
// 2. The README's Rust example: the ```rust block under "### Rust" of the top-level
//    README.md, copied to $OUT_DIR/readme_example.rs for tests/readme_example.rs to compile
//    and run (so the README cannot drift from the API).
use std::path::Path;

fn main() {
    if let Ok(dir) = std::env::var("DEP_DISTRIBUTE_LIBDIR") {
        println!("cargo:rustc-link-arg=-Wl,-rpath,{}", dir);
        // Where tests/typed_reads.rs looks for libdist_fake_gpu.so without DIST_FAKE_GPU_PLUGIN.
        println!("cargo:rustc-env=DIST_TEST_LIBDIR={}", dir);
    }
    let readme = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md");
    println!("cargo:rerun-if-changed={}", readme.display());
    let text = std::fs::read_to_string(&readme).expect("README.md");
    let section = text.split("\n### Rust\n").nth(1).expect("README.md has no '### Rust' section");
    let start = section.find("```rust\n").expect("no ```rust block in the README's Rust section") + 8;
    // The block ends at its closing fence, or at the next heading should the fence be
    // missing (the Rust section must not swallow the next language's example).
    let body = &section[start..];
    let fence = body.find("```").expect("unterminated ```rust block");
    let len = body.find("\n##").map_or(fence, |h| fence.min(h + 1));
    let out = Path::new(&std::env::var("OUT_DIR").unwrap()).join("readme_example.rs");
    std::fs::write(out, &section[start..start + len]).unwrap();
}
