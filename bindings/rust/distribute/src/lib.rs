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

/// Compile-time checks of the threading rules (run as doctests):
///
/// A replica context stays on its replica's thread:
/// ```compile_fail
/// fn assert_send<T: Send>() {}
/// assert_send::<distribute::ReplicaContext<'static>>();
/// ```
/// ```compile_fail
/// fn assert_sync<T: Sync>() {}
/// assert_sync::<distribute::ReplicaContext<'static>>();
/// ```
/// So do a joined replica and a scope (both per thread):
/// ```compile_fail
/// fn assert_send<T: Send>() {}
/// assert_send::<distribute::JoinedReplica>();
/// ```
/// ```compile_fail
/// fn assert_send<T: Send>() {}
/// assert_send::<distribute::Scope<'static>>();
/// ```
/// A replica function must be `Sync` (it runs on every replica thread at once):
/// ```compile_fail
/// let s = distribute::Strategy::default_strategy().unwrap();
/// let counter = std::cell::Cell::new(0);
/// s.run(&[], 0, |_, _| { counter.set(counter.get() + 1); Ok(vec![]) }).unwrap();
/// ```
/// Handles, values and strategies move between threads:
/// ```
/// fn assert_send_sync<T: Send + Sync>() {}
/// assert_send_sync::<distribute::Strategy>();
/// assert_send_sync::<distribute::Value>();
/// assert_send_sync::<distribute::Dataset>();
/// fn assert_send<T: Send>() {}
/// assert_send::<distribute::DatasetIterator>();
/// ```
pub mod threading {}

mod cluster;
mod coordinator;
mod dataset;
mod error;
mod options;
mod parameter_server;
mod strategy;
mod types;
mod value;

pub use cluster::*;
pub use coordinator::*;
pub use dataset::{Dataset, DatasetIterator, DistributedDataset, InputContext, InputOptions, AUTOTUNE};
pub use error::{Code, Error, Result};
pub use options::*;
pub use parameter_server::*;
pub use strategy::*;
pub use types::*;
pub use value::{Value, MAX_BATCH_VARIABLES};
