//! Datasets, iterators and distributed input, with a partial last batch.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use distribute::*;
use distribute_tests::*;

fn range_f32(n: usize) -> Value {
    let v: Vec<f32> = (0..n).map(|x| x as f32).collect();
    Value::from_slice(&v, &[n as i64], None).unwrap()
}

#[test]
fn distributed_dataset_with_a_partial_batch() {
    let s = mirrored(2);
    // 10 examples, global batch 4: batches [0..4], [4..8], [8, 9] (partial).
    let ds = Dataset::from_tensor_slices(&[&range_f32(10)]).unwrap().batch(4, false).unwrap();
    let dist = s.distribute_dataset(&ds, None).unwrap();
    assert_eq!(dist.num_components().unwrap(), 1);
    let mut it = dist.make_iterator().unwrap();
    let mut steps = Vec::new();
    while let Some(mut el) = it.next_element(1).unwrap() {
        let batch = el.remove(0);
        assert_eq!(batch.kind().unwrap(), ValueKind::PerReplica);
        let parts: Vec<Vec<f32>> = (0..2).map(|r| component_f32(&batch, r)).collect();
        // Each replica sums its rows inside a replica function; the mean over the examples of
        // the step divides by the step's true size.
        let out = s
            .run(&[&batch], 1, |ctx, args| {
                let rows = args[0].to_vec::<f32>()?;
                let sum: f32 = rows.iter().sum();
                Ok(vec![Value::from_slice(&[sum], &[1], Some(&ctx.device()?))?])
            })
            .unwrap();
        let total = s.reduce_axis(ReduceOp::Sum, out[0].as_ref().unwrap(), 0).unwrap().scalar_f32().unwrap();
        let mean = s.reduce_axis(ReduceOp::Mean, &batch, 0).unwrap().scalar_f32().unwrap();
        steps.push((parts, total, mean));
    }
    assert_eq!(steps.len(), 3);
    assert_eq!(steps[0].0, vec![vec![0.0, 1.0], vec![2.0, 3.0]]);
    assert_eq!(steps[1].0, vec![vec![4.0, 5.0], vec![6.0, 7.0]]);
    // The partial batch fills replicas in order with the per-replica batch size (2): replica
    // 0 gets both examples, replica 1 an empty batch.
    assert_eq!(steps[2].0, vec![vec![8.0, 9.0], vec![]]);
    assert_eq!(steps[2].1, 17.0);
    assert_eq!(steps[2].2, 8.5);
    assert_eq!(steps[0].2, 1.5);
    // The end is sticky.
    assert!(it.next_element(1).unwrap().is_none());
    assert_eq!(it.get_next(1).unwrap_err().code(), Code::OutOfRange);
    // The contrib entry point gives the same first batch.
    let mut it2 = s.make_dataset_iterator(&ds).unwrap();
    let first = it2.get_next(1).unwrap();
    assert_eq!(component_f32(&first[0], 1), vec![2.0, 3.0]);
}

#[test]
fn transformations_generator_and_map() {
    setup();
    let produced = Arc::new(AtomicUsize::new(0));
    let p2 = produced.clone();
    let gen = Dataset::from_generator(2, move |i| {
        if i >= 6 {
            return Ok(None);
        }
        p2.fetch_add(1, Ordering::SeqCst);
        Ok(Some(vec![Value::scalar(i, None)?, Value::scalar(i as f32 * 0.5, None)?]))
    })
    .unwrap();
    assert_eq!(gen.num_components().unwrap(), 2);
    let mapped = gen
        .map(1, 3, |inputs| {
            let a = inputs[0].scalar_i64()? as f32;
            let b = inputs[1].scalar_f32()?;
            Ok(vec![Value::scalar(a + b, None)?])
        })
        .unwrap();
    let pipeline = mapped.skip(1).unwrap().take(4).unwrap().prefetch(2).unwrap();
    let mut it = pipeline.make_iterator().unwrap();
    let mut got = Vec::new();
    while let Some(el) = it.next_element(1).unwrap() {
        got.push(el[0].scalar_f32().unwrap());
    }
    // i + i/2 for i = 1..=4
    assert_eq!(got, vec![1.5, 3.0, 4.5, 6.0]);
    assert!(produced.load(Ordering::SeqCst) >= 5);
    // repeat, shard, shuffle (a permutation, reproducible with the seed).
    let r = Dataset::range(0, 4, 1).unwrap().repeat(2).unwrap().shard(2, 1).unwrap();
    let mut it = r.make_iterator().unwrap();
    let mut odd = Vec::new();
    while let Some(el) = it.next_element(1).unwrap() {
        odd.push(el[0].scalar_i64().unwrap());
    }
    assert_eq!(odd, vec![1, 3, 1, 3]);
    let collect = |seed| {
        let mut it = Dataset::range(0, 20, 1).unwrap().shuffle(8, seed).unwrap().make_iterator().unwrap();
        let mut v = Vec::new();
        while let Some(el) = it.next_element(1).unwrap() {
            v.push(el[0].scalar_i64().unwrap());
        }
        v
    };
    let a = collect(7);
    assert_eq!(a, collect(7));
    let mut sorted = a.clone();
    sorted.sort();
    assert_eq!(sorted, (0..20).collect::<Vec<i64>>());
}

#[test]
fn failing_generator_and_map_reach_get_next() {
    setup();
    let gen = Dataset::from_generator(1, |i| {
        if i == 2 {
            return Err(Error::new(Code::DataLoss, "generator broke"));
        }
        Ok(Some(vec![Value::scalar(i, None)?]))
    })
    .unwrap();
    let mut it = gen.make_iterator().unwrap();
    it.get_next(1).unwrap();
    it.get_next(1).unwrap();
    // The callback's own message travels with its status (dist_set_last_error_message).
    let e = it.get_next(1).unwrap_err();
    assert_eq!(e.code(), Code::DataLoss);
    assert!(e.message().contains("generator broke"), "{}", e.message());
    quiet_expected_panics();
    let m = Dataset::range(0, 3, 1).unwrap().map(1, 1, |_| panic!("map boom")).unwrap();
    let e = m.make_iterator().unwrap().get_next(1).unwrap_err();
    assert_eq!(e.code(), Code::Unknown);
    assert!(e.message().contains("map boom"), "{}", e.message());
    // A wrong component count is an error, not a crash.
    assert_eq!(
        Dataset::range(0, 3, 1).unwrap().make_iterator().unwrap().get_next(2).unwrap_err().code(),
        Code::InvalidArgument
    );
}

#[test]
fn files() {
    setup();
    let dir = std::env::temp_dir().join(format!("distribute-rust-files-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let text = dir.join("a.txt");
    std::fs::write(&text, "one\r\ntwo\nthree").unwrap();
    let t = text.to_str().unwrap();
    let mut it = Dataset::from_text_files(&[t]).unwrap().make_iterator().unwrap();
    let mut lines = Vec::new();
    while let Some(el) = it.next_element(1).unwrap() {
        lines.push(String::from_utf8(el[0].to_vec::<u8>().unwrap()).unwrap());
    }
    assert_eq!(lines, vec!["one", "two", "three"]);
    let rec = dir.join("r.bin");
    std::fs::write(&rec, b"HHabcdefF").unwrap();
    let mut it =
        Dataset::from_fixed_length_records(&[rec.to_str().unwrap()], 3, 2, 1).unwrap().make_iterator().unwrap();
    assert_eq!(it.get_next(1).unwrap()[0].to_vec::<u8>().unwrap(), b"abc");
    assert_eq!(it.get_next(1).unwrap()[0].to_vec::<u8>().unwrap(), b"def");
    // A file that is not TFRecord: DATA_LOSS at get_next, no crash.
    let e = Dataset::from_tfrecord_files(&[t]).unwrap().make_iterator().unwrap().get_next(1).unwrap_err();
    assert_eq!(e.code(), Code::DataLoss, "{}", e);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn datasets_from_function_and_input_context() {
    let s = mirrored(2);
    let mut opts = InputOptions::new().unwrap();
    opts.set_prefetch_depth(2).unwrap();
    opts.set_auto_shard_policy(AutoShardPolicy::Off).unwrap();
    opts.set_fetch_to_device(false).unwrap();
    opts.set_per_replica_batches(false).unwrap();
    opts.set_replication_mode(InputReplicationMode::PerReplica).unwrap();
    let mut calls = Vec::new();
    let dist = s
        .distribute_datasets_from_function(Some(&opts), |ctx| {
            calls.push((ctx.input_pipeline_id()?, ctx.num_input_pipelines()?, ctx.num_replicas_in_sync()?));
            let bs = ctx.per_replica_batch_size(4)?;
            let base = 100 * ctx.input_pipeline_id()? as i64;
            Dataset::range(base, base + 4, 1)?.batch(bs, false)
        })
        .unwrap();
    calls.sort();
    assert_eq!(calls, vec![(0, 2, 2), (1, 2, 2)]);
    let mut it = dist.make_iterator().unwrap();
    let el = it.get_next(1).unwrap();
    assert_eq!(el[0].component_tensor(1).unwrap().to_vec::<i64>().unwrap(), vec![100, 101]);
    // make_input_fn_iterator, and an error in the dataset function.
    let mut it =
        s.make_input_fn_iterator(|ctx| Dataset::range(0, 4, 1)?.batch(ctx.per_replica_batch_size(4)?, false)).unwrap();
    assert_eq!(it.get_next(1).unwrap()[0].component_tensor(0).unwrap().to_vec::<i64>().unwrap(), vec![0, 1]);
    let e = s.distribute_datasets_from_function(None, |_| Err(Error::new(Code::NotFound, "no data here"))).unwrap_err();
    assert_eq!(e.code(), Code::NotFound);
    assert_eq!(e.message(), "no data here");
    let ic = InputContext::new(3, 1, 6).unwrap();
    assert_eq!(
        (ic.num_input_pipelines().unwrap(), ic.input_pipeline_id().unwrap(), ic.num_replicas_in_sync().unwrap()),
        (3, 1, 6)
    );
    assert_eq!(ic.per_replica_batch_size(12).unwrap(), 2);
    assert_eq!(ic.per_replica_batch_size(13).unwrap_err().code(), Code::InvalidArgument);
}

/// `AUTOTUNE` (DIST_AUTOTUNE) as num_parallel_calls keeps the input order; other negative
/// values are refused.
#[test]
fn map_autotune() {
    setup();
    assert_eq!(AUTOTUNE, -1); // tf.data.AUTOTUNE
    let tripled = Dataset::range(0, 20, 1)
        .unwrap()
        .map(1, AUTOTUNE, |inputs| Ok(vec![Value::scalar(3 * inputs[0].scalar_i64()?, None)?]))
        .unwrap();
    let mut it = tripled.make_iterator().unwrap();
    let mut got = Vec::new();
    while let Some(el) = it.next_element(1).unwrap() {
        got.push(el[0].scalar_i64().unwrap());
    }
    assert_eq!(got, (0..20).map(|i| 3 * i).collect::<Vec<i64>>());
    let e = Dataset::range(0, 4, 1).unwrap().map(1, -2, |_| Ok(Vec::new())).err().unwrap();
    assert_eq!(e.code(), Code::InvalidArgument);
    assert!(e.message().contains("AUTOTUNE"), "{}", e.message());
}
