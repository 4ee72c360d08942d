//! The README's "### Rust" example, extracted by build.rs, compiled and run.

mod readme {
    include!(concat!(env!("OUT_DIR"), "/readme_example.rs"));
    pub fn run() -> Result<(), distribute::Error> {
        main()
    }
}

#[test]
fn readme_example_runs() {
    readme::run().expect("the README example");
}
