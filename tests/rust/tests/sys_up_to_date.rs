//! distribute-sys's committed bindgen output matches the header: regenerates it with
//! bindings/rust/scripts/regen-sys.sh into a temporary file and compares. On failure, run
//! that script (with DIST_GENERATED_INCLUDE pointing at a directory holding
//! distribute/version.h if build/include_c does not exist) and commit the result.

use std::path::Path;
use std::process::Command;

#[test]
fn committed_bindings_are_not_stale() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let script = root.join("bindings/rust/scripts/regen-sys.sh");
    let committed = root.join("bindings/rust/distribute-sys/src/bindings.rs");
    let tmp = std::env::temp_dir().join(format!("distribute-sys-{}.rs", std::process::id()));
    let out = Command::new("bash").arg(&script).arg(&tmp).output().expect("run regen-sys.sh");
    assert!(
        out.status.success(),
        "regen-sys.sh failed (bindgen is installed by scripts/install-deps.sh): {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let fresh = std::fs::read_to_string(&tmp).unwrap();
    let _ = std::fs::remove_file(&tmp);
    let old = std::fs::read_to_string(&committed).unwrap();
    assert!(
        fresh == old,
        "bindings/rust/distribute-sys/src/bindings.rs is stale: run bindings/rust/scripts/regen-sys.sh and commit it"
    );
}
