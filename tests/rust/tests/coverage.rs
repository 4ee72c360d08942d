//! Every public C function (each `pub fn dist_*` of distribute-sys's bindings.rs, generated
//! from include_c/distribute) is called by the safe `distribute` crate. The list of what
//! wraps what is in bindings/rust/README.md; this test keeps it honest.

use std::path::Path;

#[test]
fn every_c_function_is_wrapped() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bindings/rust");
    let sys = std::fs::read_to_string(root.join("distribute-sys/src/bindings.rs")).unwrap();
    let functions: Vec<&str> =
        sys.lines().filter_map(|l| l.trim().strip_prefix("pub fn ")).map(|l| &l[..l.find('(').unwrap()]).collect();
    assert!(functions.len() >= 170, "only {} functions found", functions.len());
    let mut wrapper = String::new();
    for e in std::fs::read_dir(root.join("distribute/src")).unwrap() {
        wrapper += &std::fs::read_to_string(e.unwrap().path()).unwrap();
    }
    let missing: Vec<&&str> = functions
        .iter()
        .filter(|f| !wrapper.contains(&format!("sys::{}(", f)) && !wrapper.contains(&format!("sys::{})", f)))
        .collect();
    assert!(missing.is_empty(), "not wrapped: {:?}", missing);
    // The README's table lists them all too.
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let unlisted: Vec<&&str> = functions.iter().filter(|f| !readme.contains(&format!("`{}`", f))).collect();
    assert!(unlisted.is_empty(), "missing from bindings/rust/README.md: {:?}", unlisted);
}
