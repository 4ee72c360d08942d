//! Safe Rust binding of libdistribute: TensorFlow's tf.distribute strategies behind a C ABI.
//!
//! Handles are owning types whose `Drop` calls the matching `dist_*_destroy`; every fallible
//! call returns [`Result<T>`] whose [`Error`] carries the status [`Code`] and the library's
//! message; replica functions are closures (`Fn + Sync`), run on the library's replica
//! threads, with panics caught and turned into that replica's error; a [`ReplicaContext`]
//! is neither `Send` nor `Sync`. The binding wraps and adds no logic: see the C headers
//! (`include_c/distribute/*.h`) for the semantics of each call.
//!
//! ```no_run
//! use distribute::{Strategy, Value, ReduceOp};
//! distribute::set_logical_cpu_device_count(2).unwrap();
//! let s = Strategy::mirrored(&["CPU:0", "CPU:1"], None).unwrap();
//! let out = s.run(&[], 1, |ctx, _args| {
//!     let id = ctx.replica_id()? as f32;
//!     let mine = Value::scalar(id + 1.0, Some(&ctx.device()?))?;
//!     Ok(vec![ctx.all_reduce(ReduceOp::Sum, &mine)?])
//! }).unwrap();
//! let total = s.reduce(ReduceOp::Mean, out[0].as_ref().unwrap()).unwrap();
//! assert_eq!(total.scalar_f32().unwrap(), 3.0);
//! ```

pub use distribute_sys as sys;

mod cluster;
mod dataset;
mod error;
mod options;
mod strategy;
mod types;
mod value;

pub use cluster::*;
pub use dataset::{Dataset, DatasetIterator, DistributedDataset, InputContext, InputOptions};
pub use error::{Code, Error, Result};
pub use options::*;
pub use strategy::*;
pub use types::*;
pub use value::Value;
