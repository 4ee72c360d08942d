//! Data-parallel training of a small MLP with the Rust binding, as examples/c/train_mlp
//! does it (a short version): each step, distribute_dataset splits a global batch across
//! the replicas; in `run` every replica computes the SUM of its rows' gradients, the
//! replicas all-reduce those sums with the row count (one fused batch_all_reduce), and a
//! merge_call adds -learning_rate * sum / rows to every copy of the mirrored variables
//! (StrategyExtended.update). The loss and accuracy come back per replica and are summed
//! with `reduce`. Same data, seeds and arithmetic as the C example: the same weights and
//! the same held-out accuracy.

pub mod glyphs;
pub mod mlp;

use std::path::{Path, PathBuf};

use distribute::{
    Dataset, DatasetIterator, Error, ReduceOp, Result, Strategy, Value, VariableAggregation, VariableSync,
};
use mlp::Shape;

pub struct Config {
    pub replicas: usize,
    pub epochs: u32,
    pub batch: i64,
    pub hidden: usize,
    pub learning_rate: f64,
    pub seed: u64,
    pub train_count: u32,
    pub test_count: u32,
    pub verbose: bool,
}

impl Config {
    /// train_mlp's --quick defaults: 4096 training and 1024 held-out images, 3 epochs.
    pub fn quick(replicas: usize) -> Config {
        Config {
            replicas,
            epochs: 3,
            batch: 64,
            hidden: 128,
            learning_rate: 1.0,
            seed: 1,
            train_count: 4096,
            test_count: 1024,
            verbose: true,
        }
    }
}

pub struct Metrics {
    pub loss: f64,
    pub accuracy: f64,
    pub rows: i64,
}

pub struct Report {
    pub replicas: i32,
    pub test: Metrics,
    pub params: Vec<Vec<f32>>,
}

/// Writes train.bin and test.bin into `dir` (train_mlp --make-data).
pub fn make_data(dir: &Path, c: &Config) -> std::io::Result<(PathBuf, PathBuf)> {
    std::fs::create_dir_all(dir)?;
    let train = dir.join("train.bin");
    let test = dir.join("test.bin");
    glyphs::write_file(&train, c.train_count, c.seed * 2)?;
    glyphs::write_file(&test, c.test_count, c.seed * 2 + 1)?;
    Ok((train, test))
}

/// records -> [shuffle] -> batch -> map(decode) -> distribute_dataset -> iterator.
fn make_input(
    s: &Strategy,
    path: &Path,
    count: u32,
    global_batch: i64,
    training: bool,
    shuffle_seed: u64,
) -> Result<DatasetIterator> {
    let p = path.to_str().expect("utf-8 path");
    let mut ds = Dataset::from_fixed_length_records(&[p], glyphs::RECORD_BYTES, glyphs::HEADER_BYTES, 0)?;
    if training {
        ds = ds.shuffle(count as i64, shuffle_seed)?;
    }
    let decoded = ds.batch(global_batch, training)?.map(2, 2, |inputs| {
        let bytes = inputs[0].to_vec::<u8>()?;
        let rows = inputs[0].shape()?[0];
        let mut features = Vec::with_capacity(rows as usize * glyphs::PIXELS);
        let mut labels = Vec::with_capacity(rows as usize);
        for record in bytes.chunks(glyphs::RECORD_BYTES as usize) {
            labels.push(record[0] as i32);
            features.extend(record[1..].iter().map(|&b| b as f32 * (1.0f32 / 255.0f32)));
        }
        Ok(vec![Value::wrap(features, &[rows, glyphs::PIXELS as i64], None)?, Value::wrap(labels, &[rows], None)?])
    })?;
    s.distribute_dataset(&decoded, None)?.make_iterator()
}

/// One replica's step: forward (and, when training, backward, all-reduce and update).
/// Returns float32 [loss sum, correct, rows].
fn replica_step(
    ctx: &distribute::ReplicaContext<'_>,
    args: &[Value],
    shape: Shape,
    lr: f64,
    training: bool,
) -> Result<Vec<Value>> {
    let device = ctx.device()?;
    let x = args[0].to_vec::<f32>()?;
    let labels = args[1].to_vec::<i32>()?;
    let weights = (0..4).map(|p| args[2 + p].read()?.to_vec::<f32>()).collect::<Result<Vec<_>>>()?;
    let params: [&[f32]; 4] = [&weights[0], &weights[1], &weights[2], &weights[3]];
    let mut grads: [Vec<f64>; 4] = Default::default();
    let stats = mlp::forward_backward(shape, &params, &x, &labels, if training { Some(&mut grads) } else { None });
    let rows = labels.len();
    if training {
        let mut local = Vec::with_capacity(5);
        for (p, g) in grads.iter().enumerate() {
            local.push(Value::from_slice(g, &shape.dims(p), Some(&device))?);
        }
        local.push(Value::scalar(rows as f64, Some(&device))?);
        let refs: Vec<&Value> = local.iter().collect();
        let summed = ctx.batch_all_reduce(ReduceOp::Sum, &refs)?;
        let global_rows = summed[4].scalar_f64()?;
        let scale = if global_rows > 0.0 { -lr / global_rows } else { 0.0 };
        let mut updates = Vec::with_capacity(4);
        for p in 0..4 {
            let sum = summed[p].to_vec::<f64>()?;
            let u: Vec<f32> = sum.iter().map(|s| (scale * s) as f32).collect();
            updates.push(Value::from_slice(&u, &shape.dims(p), Some(&device))?);
        }
        let mut merge_args: Vec<&Value> = updates.iter().collect();
        merge_args.extend(args[2..6].iter());
        // In cross-replica context: each update becomes a Mirrored value that
        // StrategyExtended.update adds to every copy of its variable.
        ctx.merge_call(&merge_args, |strategy, margs| {
            for p in 0..4 {
                let n = margs[p].num_components()?;
                let copies = (0..n).map(|i| margs[p].component(i)).collect::<Result<Vec<_>>>()?;
                let mirrored = Value::mirrored(&copies.iter().collect::<Vec<_>>())?;
                strategy.update(&margs[4 + p], &[&mirrored], true, |var, uargs| {
                    var.assign_add(&uargs[0])?;
                    Ok(None)
                })?;
            }
            Ok(None)
        })?;
    }
    let metrics = [stats.loss_sum as f32, stats.correct as f32, rows as f32];
    Ok(vec![Value::from_slice(&metrics, &[3], Some(&device))?])
}

fn run_pass(
    s: &Strategy,
    it: &mut DatasetIterator,
    vars: &[Value],
    shape: Shape,
    lr: f64,
    training: bool,
) -> Result<Metrics> {
    let mut sums = [0.0f64; 3];
    while let Some(batch) = it.next_element(2)? {
        let mut args: Vec<&Value> = batch.iter().collect();
        args.extend(vars.iter());
        let out = s.run(&args, 1, |ctx, a| replica_step(ctx, a, shape, lr, training))?;
        let per_replica = out[0].as_ref().ok_or_else(|| Error::new(distribute::Code::Internal, "no metrics"))?;
        let total = s.reduce(ReduceOp::Sum, per_replica)?.to_vec::<f32>()?;
        for m in 0..3 {
            sums[m] += total[m] as f64;
        }
    }
    let rows = sums[2];
    Ok(Metrics {
        loss: if rows > 0.0 { sums[0] / rows } else { 0.0 },
        accuracy: if rows > 0.0 { sums[1] / rows } else { 0.0 },
        rows: rows as i64,
    })
}

/// Trains under a MirroredStrategy over `c.replicas` CPUs (OneDevice for 1) on the data
/// in `train`/`test`, and returns the held-out metrics and the final weights.
pub fn train(c: &Config, train: &Path, test: &Path) -> Result<Report> {
    distribute::set_logical_cpu_device_count(c.replicas.max(1) as i32)?;
    let s = if c.replicas <= 1 {
        Strategy::one_device("CPU:0")?
    } else {
        let names: Vec<String> = (0..c.replicas).map(|i| format!("CPU:{}", i)).collect();
        Strategy::mirrored(&names.iter().map(|s| s.as_str()).collect::<Vec<_>>(), None)?
    };
    let shape = Shape { inputs: glyphs::PIXELS, hidden: c.hidden, classes: glyphs::CLASSES };
    let initial = mlp::init(shape, c.seed);
    let vars = {
        let _scope = s.scope()?;
        (0..4)
            .map(|p| {
                let v = Value::from_slice(&initial[p], &shape.dims(p), None)?;
                Value::new_variable(&v, VariableSync::OnWrite, VariableAggregation::None, Some(mlp::NAMES[p]))
            })
            .collect::<Result<Vec<_>>>()?
    };
    let replicas = s.num_replicas_in_sync()?;
    if c.verbose {
        println!(
            "{:?}: {} replica(s), global batch {}, {} training and {} held-out images",
            s.kind()?,
            replicas,
            c.batch,
            c.train_count,
            c.test_count
        );
    }
    let mut test_metrics = Metrics { loss: 0.0, accuracy: 0.0, rows: 0 };
    for epoch in 1..=c.epochs {
        let start = std::time::Instant::now();
        let mut it = make_input(&s, train, c.train_count, c.batch, true, c.seed * 1000003 + epoch as u64)?;
        let m = run_pass(&s, &mut it, &vars, shape, c.learning_rate, true)?;
        let secs = start.elapsed().as_secs_f64();
        let mut it = make_input(&s, test, c.test_count, 4 * c.batch, false, 0)?;
        test_metrics = run_pass(&s, &mut it, &vars, shape, c.learning_rate, false)?;
        if c.verbose {
            println!(
                "epoch {:2}/{}  loss {:.4}  accuracy {:.4}  held-out accuracy {:.4}  {:6.0} examples/s",
                epoch,
                c.epochs,
                m.loss,
                m.accuracy,
                test_metrics.accuracy,
                m.rows as f64 / secs
            );
        }
    }
    // The first copy of each variable (all copies are equal: checked).
    let mut params = Vec::new();
    for v in &vars {
        let first = v.component_tensor(0)?.to_vec::<f32>()?;
        for i in 1..v.num_components()? {
            if v.component_tensor(i)?.to_vec::<f32>()? != first {
                return Err(Error::new(distribute::Code::Internal, "the copies of a mirrored variable differ"));
            }
        }
        params.push(first);
    }
    Ok(Report { replicas, test: test_metrics, params })
}
