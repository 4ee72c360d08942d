//! train_mlp in Rust: `cargo run --release -p distribute-examples [-- --replicas N --epochs N]`
//! (from bindings/rust). Prints the per-epoch lines and the held-out accuracy.

fn main() {
    let mut c = distribute_examples::Config::quick(4);
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    while i < args.len() {
        let value = args.get(i + 1).and_then(|v| v.parse::<u64>().ok());
        match (args[i].as_str(), value) {
            ("--replicas", Some(v)) if (1..=64).contains(&v) => c.replicas = v as usize,
            ("--epochs", Some(v)) if (1..=1000).contains(&v) => c.epochs = v as u32,
            ("--seed", Some(v)) => c.seed = v,
            _ => {
                eprintln!("usage: train_mlp [--replicas N] [--epochs N] [--seed N]");
                std::process::exit(2);
            }
        }
        i += 2;
    }
    let dir = std::env::temp_dir().join(format!("distribute-rust-glyphs-{}", std::process::id()));
    let (train, test) = distribute_examples::make_data(&dir, &c).expect("write the data set");
    let result = distribute_examples::train(&c, &train, &test);
    let _ = std::fs::remove_dir_all(&dir);
    match result {
        Ok(r) => println!(
            "held-out accuracy {:.4} (chance 0.1), loss {:.4}, {} replica(s)",
            r.test.accuracy, r.test.loss, r.replicas
        ),
        Err(e) => {
            eprintln!("train_mlp: {}", e);
            std::process::exit(1);
        }
    }
}
