//! Datasets, iterators and distributed input (dataset.h, input.h).

use std::ffi::c_void;
use std::ptr::{self, NonNull};

use crate::error::{check, Code, Error, Result};
use crate::strategy::{guarded, FirstError, Strategy};
use crate::sys;
use crate::types::*;
use crate::value::*;

/// `DIST_AUTOTUNE` (tf.data.AUTOTUNE) as [`Dataset::map`]'s `num_parallel_calls`: as many
/// calls at a time as the machine has hardware threads.
pub const AUTOTUNE: i32 = sys::DIST_AUTOTUNE;

macro_rules! handle {
    ($(#[$m:meta])* $name:ident, $raw:ty, $destroy:path) => {
        $(#[$m])*
        #[repr(transparent)]
        #[derive(Debug)]
        pub struct $name { raw: NonNull<$raw> }
        impl Drop for $name {
            fn drop(&mut self) { unsafe { $destroy(self.raw.as_ptr()) } }
        }
        impl $name {
            /// Takes ownership of a raw handle.
            ///
            /// # Safety
            /// `raw` must be owned by the caller.
            pub unsafe fn from_raw(raw: *mut $raw) -> Option<$name> { NonNull::new(raw).map(|raw| $name { raw }) }
            pub fn as_ptr(&self) -> *mut $raw { self.raw.as_ptr() }
            #[allow(dead_code)]
            pub(crate) fn out(f: impl FnOnce(*mut *mut $raw) -> sys::dist_status_t) -> Result<$name> {
                let mut out = ptr::null_mut();
                check(f(&mut out))?;
                unsafe { $name::from_raw(out) }.ok_or_else(|| Error::new(Code::Internal, "the library returned OK and no handle"))
            }
        }
    };
}
pub(crate) use handle;

handle!(
    /// A dataset (`dist_dataset_t*`): immutable, shareable between threads.
    Dataset, sys::dist_dataset_t, sys::dist_dataset_destroy);
handle!(
    /// A dataset distributed over a strategy's replicas.
    DistributedDataset, sys::dist_distributed_dataset_t, sys::dist_distributed_dataset_destroy);
handle!(
    /// One pass over a dataset or a distributed dataset; used by one thread at a time.
    DatasetIterator, sys::dist_iterator_t, sys::dist_iterator_destroy);
handle!(
    /// An owned input context (`dist_input_context_create`); a dataset function gets a
    /// borrowed `&InputContext`.
    InputContext, sys::dist_input_context_t, sys::dist_input_context_destroy);
handle!(
    /// tf.distribute.InputOptions.
    InputOptions, sys::dist_input_options_t, sys::dist_input_options_destroy);

// SAFETY: datasets are "safe to share between threads"; the others are used by one thread at
// a time, which `&mut self` / ownership enforce.
unsafe impl Send for Dataset {}
unsafe impl Sync for Dataset {}
unsafe impl Send for DistributedDataset {}
unsafe impl Sync for DistributedDataset {}
unsafe impl Send for DatasetIterator {}
unsafe impl Send for InputContext {}
unsafe impl Send for InputOptions {}

/// Owned C copies of `paths` (any strings) and the array of their pointers.
pub(crate) fn c_string_list(paths: &[&str]) -> Result<(Vec<std::ffi::CString>, Vec<*const std::os::raw::c_char>)> {
    let owned = paths.iter().map(|p| cstr(p)).collect::<Result<Vec<_>>>()?;
    let ptrs = owned.iter().map(|c| c.as_ptr()).collect();
    Ok((owned, ptrs))
}

pub(crate) unsafe extern "C" fn free_box<T>(user_data: *mut c_void) {
    drop(Box::from_raw(user_data as *mut T));
}

type GenFn = dyn Fn(i64) -> Result<Option<Vec<Value>>> + Send + Sync;
type MapFn = dyn Fn(&[Value]) -> Result<Vec<Value>> + Send + Sync;

unsafe extern "C" fn generator_trampoline(
    index: i64,
    components: *mut *mut sys::dist_value_t,
    n: i32,
    out_end: *mut i32,
    ud: *mut c_void,
) -> sys::dist_status_t {
    let f = &*(ud as *const Box<GenFn>);
    match guarded("generator function", || f(index)) {
        Ok(None) => {
            *out_end = 1;
            sys::DIST_OK
        }
        Ok(Some(vals)) => {
            if vals.len() != n as usize {
                return Error::new(Code::InvalidArgument, "").status();
            }
            for (i, v) in vals.into_iter().enumerate() {
                *components.add(i) = v.into_raw();
            }
            sys::DIST_OK
        }
        Err(e) => e.report(),
    }
}

unsafe extern "C" fn map_trampoline(
    inputs: *const *const sys::dist_value_t,
    ni: i32,
    outputs: *mut *mut sys::dist_value_t,
    no: i32,
    ud: *mut c_void,
) -> sys::dist_status_t {
    let f = &*(ud as *const Box<MapFn>);
    match guarded("map function", || {
        let ins = Value::borrowed_slice(inputs, ni)?;
        f(ins)
    }) {
        Ok(vals) => {
            if vals.len() != no as usize {
                return sys::DIST_INVALID_ARGUMENT;
            }
            for (i, v) in vals.into_iter().enumerate() {
                *outputs.add(i) = v.into_raw();
            }
            sys::DIST_OK
        }
        Err(e) => e.report(),
    }
}

type DatasetFnDyn<'f> = dyn FnMut(&InputContext) -> Result<Dataset> + 'f;

struct DatasetFnState<'f> {
    f: &'f mut DatasetFnDyn<'f>,
    errors: FirstError,
}

unsafe extern "C" fn dataset_fn_trampoline(
    ctx: *const sys::dist_input_context_t,
    out: *mut *mut sys::dist_dataset_t,
    ud: *mut c_void,
) -> sys::dist_status_t {
    let st = &mut *(ud as *mut DatasetFnState<'_>);
    let r = guarded("dataset function", || {
        if ctx.is_null() {
            return Err(Error::new(Code::Internal, "NULL input context"));
        }
        let ctx_ref = &*(&ctx as *const *const sys::dist_input_context_t as *const InputContext);
        (st.f)(ctx_ref)
    });
    match r {
        Ok(ds) => {
            *out = ds.as_ptr();
            std::mem::forget(ds);
            sys::DIST_OK
        }
        Err(e) => st.errors.record(e),
    }
}

impl Dataset {
    /// tf.data.Dataset.from_tensor_slices.
    pub fn from_tensor_slices(components: &[&Value]) -> Result<Dataset> {
        let raw = raw_list(components);
        let n = len_i32(raw.len(), "components")?;
        Dataset::out(|o| unsafe { sys::dist_dataset_from_tensor_slices(raw.as_ptr(), n, o) })
    }
    pub fn range(start: i64, stop: i64, step: i64) -> Result<Dataset> {
        Dataset::out(|o| unsafe { sys::dist_dataset_range(start, stop, step, o) })
    }
    /// Elements from a generator: `f(index)` returns `num_components` tensors, or None at
    /// the end. Called from one thread at a time (not always the same one). The status of
    /// an error reaches get_next (its Rust message does not: the library keeps only codes).
    pub fn from_generator<F>(num_components: i32, f: F) -> Result<Dataset>
    where
        F: Fn(i64) -> Result<Option<Vec<Value>>> + Send + Sync + 'static,
    {
        let boxed: Box<Box<GenFn>> = Box::new(Box::new(f));
        let ud = Box::into_raw(boxed);
        let mut out = ptr::null_mut();
        let st = unsafe {
            sys::dist_dataset_from_generator(
                Some(generator_trampoline),
                ud as *mut c_void,
                Some(free_box::<Box<GenFn>>),
                num_components,
                &mut out,
            )
        };
        if st != sys::DIST_OK {
            let e = crate::error::last_error(st);
            drop(unsafe { Box::from_raw(ud) });
            return Err(e);
        }
        unsafe { Dataset::from_raw(out) }.ok_or_else(|| Error::new(Code::Internal, "no dataset"))
    }
    pub fn from_text_files(paths: &[&str]) -> Result<Dataset> {
        let (_o, p) = c_string_list(paths)?;
        let n = len_i32(p.len(), "paths")?;
        Dataset::out(|o| unsafe { sys::dist_dataset_from_text_files(p.as_ptr(), n, o) })
    }
    pub fn from_fixed_length_records(
        paths: &[&str],
        record_bytes: i64,
        header_bytes: i64,
        footer_bytes: i64,
    ) -> Result<Dataset> {
        let (_o, p) = c_string_list(paths)?;
        let n = len_i32(p.len(), "paths")?;
        Dataset::out(|o| unsafe {
            sys::dist_dataset_from_fixed_length_records(p.as_ptr(), n, record_bytes, header_bytes, footer_bytes, o)
        })
    }
    pub fn from_tfrecord_files(paths: &[&str]) -> Result<Dataset> {
        let (_o, p) = c_string_list(paths)?;
        let n = len_i32(p.len(), "paths")?;
        Dataset::out(|o| unsafe { sys::dist_dataset_from_tfrecord_files(p.as_ptr(), n, o) })
    }
    /// TFRecord files written with a compression (`Compression::None` reads plain files).
    pub fn from_compressed_tfrecord_files(paths: &[&str], compression: Compression) -> Result<Dataset> {
        let (_o, p) = c_string_list(paths)?;
        let n = len_i32(p.len(), "paths")?;
        Dataset::out(|o| unsafe {
            sys::dist_dataset_from_compressed_tfrecord_files(p.as_ptr(), n, compression.raw(), o)
        })
    }
    pub fn batch(&self, batch_size: i64, drop_remainder: bool) -> Result<Dataset> {
        Dataset::out(|o| unsafe { sys::dist_dataset_batch(self.as_ptr(), batch_size, drop_remainder as i32, o) })
    }
    pub fn shard(&self, num_shards: i64, index: i64) -> Result<Dataset> {
        Dataset::out(|o| unsafe { sys::dist_dataset_shard(self.as_ptr(), num_shards, index, o) })
    }
    pub fn repeat(&self, count: i64) -> Result<Dataset> {
        Dataset::out(|o| unsafe { sys::dist_dataset_repeat(self.as_ptr(), count, o) })
    }
    pub fn shuffle(&self, buffer_size: i64, seed: u64) -> Result<Dataset> {
        Dataset::out(|o| unsafe { sys::dist_dataset_shuffle(self.as_ptr(), buffer_size, seed, o) })
    }
    /// Applies `f` to every element, `num_parallel_calls` at a time (concurrently from
    /// library threads when > 1), or [`AUTOTUNE`]. The library caps the threads at 4 per
    /// hardware thread and starts them only as the elements need them.
    pub fn map<F>(&self, num_outputs: i32, num_parallel_calls: i32, f: F) -> Result<Dataset>
    where
        F: Fn(&[Value]) -> Result<Vec<Value>> + Send + Sync + 'static,
    {
        let boxed: Box<Box<MapFn>> = Box::new(Box::new(f));
        let ud = Box::into_raw(boxed);
        let mut out = ptr::null_mut();
        let st = unsafe {
            sys::dist_dataset_map(
                self.as_ptr(),
                Some(map_trampoline),
                ud as *mut c_void,
                Some(free_box::<Box<MapFn>>),
                num_outputs,
                num_parallel_calls,
                &mut out,
            )
        };
        if st != sys::DIST_OK {
            let e = crate::error::last_error(st);
            drop(unsafe { Box::from_raw(ud) });
            return Err(e);
        }
        unsafe { Dataset::from_raw(out) }.ok_or_else(|| Error::new(Code::Internal, "no dataset"))
    }
    pub fn prefetch(&self, buffer_size: i64) -> Result<Dataset> {
        Dataset::out(|o| unsafe { sys::dist_dataset_prefetch(self.as_ptr(), buffer_size, o) })
    }
    pub fn take(&self, count: i64) -> Result<Dataset> {
        Dataset::out(|o| unsafe { sys::dist_dataset_take(self.as_ptr(), count, o) })
    }
    pub fn skip(&self, count: i64) -> Result<Dataset> {
        Dataset::out(|o| unsafe { sys::dist_dataset_skip(self.as_ptr(), count, o) })
    }
    pub fn num_components(&self) -> Result<i32> {
        let mut n = 0;
        check(unsafe { sys::dist_dataset_num_components(self.as_ptr(), &mut n) })?;
        Ok(n)
    }
    pub fn make_iterator(&self) -> Result<DatasetIterator> {
        DatasetIterator::out(|o| unsafe { sys::dist_dataset_make_iterator(self.as_ptr(), o) })
    }
}

impl DatasetIterator {
    /// `dist_iterator_get_next`: `count` values, or Err(OUT_OF_RANGE) at the end.
    pub fn get_next(&mut self, count: usize) -> Result<Vec<Value>> {
        let n = len_i32(count, "components")?;
        let mut outs = vec![ptr::null_mut(); count];
        let st = unsafe { sys::dist_iterator_get_next(self.as_ptr(), outs.as_mut_ptr(), n) };
        crate::strategy::collect_outs(st, outs)
    }
    /// `dist_iterator_get_next_as_optional`: None at the end.
    pub fn next_element(&mut self, count: usize) -> Result<Option<Vec<Value>>> {
        let n = len_i32(count, "components")?;
        let mut outs = vec![ptr::null_mut(); count];
        let mut has = 0;
        let st = unsafe { sys::dist_iterator_get_next_as_optional(self.as_ptr(), outs.as_mut_ptr(), n, &mut has) };
        let v = crate::strategy::collect_outs(st, if has == 0 { Vec::new() } else { outs })?;
        Ok(if has == 0 { None } else { Some(v) })
    }
}

impl DistributedDataset {
    pub fn make_iterator(&self) -> Result<DatasetIterator> {
        DatasetIterator::out(|o| unsafe { sys::dist_distributed_dataset_make_iterator(self.as_ptr(), o) })
    }
    pub fn num_components(&self) -> Result<i32> {
        let mut n = 0;
        check(unsafe { sys::dist_distributed_dataset_num_components(self.as_ptr(), &mut n) })?;
        Ok(n)
    }
}

impl InputOptions {
    pub fn new() -> Result<InputOptions> {
        InputOptions::out(|o| unsafe { sys::dist_input_options_create(o) })
    }
    pub fn set_prefetch_depth(&mut self, depth: i64) -> Result<()> {
        check(unsafe { sys::dist_input_options_set_prefetch_depth(self.as_ptr(), depth) })
    }
    pub fn set_replication_mode(&mut self, mode: InputReplicationMode) -> Result<()> {
        check(unsafe { sys::dist_input_options_set_replication_mode(self.as_ptr(), mode.raw()) })
    }
    pub fn set_auto_shard_policy(&mut self, policy: AutoShardPolicy) -> Result<()> {
        check(unsafe { sys::dist_input_options_set_auto_shard_policy(self.as_ptr(), policy.raw()) })
    }
    pub fn set_fetch_to_device(&mut self, enable: bool) -> Result<()> {
        check(unsafe { sys::dist_input_options_set_fetch_to_device(self.as_ptr(), enable as i32) })
    }
    pub fn set_per_replica_batches(&mut self, enable: bool) -> Result<()> {
        check(unsafe { sys::dist_input_options_set_per_replica_batches(self.as_ptr(), enable as i32) })
    }
    pub fn set_partial_batch_split(&mut self, split: PartialBatchSplit) -> Result<()> {
        check(unsafe { sys::dist_input_options_set_partial_batch_split(self.as_ptr(), split.raw()) })
    }
}

impl InputContext {
    pub fn new(num_input_pipelines: i32, input_pipeline_id: i32, num_replicas_in_sync: i32) -> Result<InputContext> {
        InputContext::out(|o| unsafe {
            sys::dist_input_context_create(num_input_pipelines, input_pipeline_id, num_replicas_in_sync, o)
        })
    }
    pub fn num_input_pipelines(&self) -> Result<i32> {
        let mut n = 0;
        check(unsafe { sys::dist_input_context_num_input_pipelines(self.as_ptr(), &mut n) })?;
        Ok(n)
    }
    pub fn input_pipeline_id(&self) -> Result<i32> {
        let mut n = 0;
        check(unsafe { sys::dist_input_context_input_pipeline_id(self.as_ptr(), &mut n) })?;
        Ok(n)
    }
    pub fn num_replicas_in_sync(&self) -> Result<i32> {
        let mut n = 0;
        check(unsafe { sys::dist_input_context_num_replicas_in_sync(self.as_ptr(), &mut n) })?;
        Ok(n)
    }
    pub fn per_replica_batch_size(&self, global_batch_size: i64) -> Result<i64> {
        let mut n = 0;
        check(unsafe { sys::dist_input_context_per_replica_batch_size(self.as_ptr(), global_batch_size, &mut n) })?;
        Ok(n)
    }
}

impl Strategy {
    /// experimental_distribute_dataset: `dataset` batched by the global batch size.
    pub fn distribute_dataset(&self, dataset: &Dataset, options: Option<&InputOptions>) -> Result<DistributedDataset> {
        let op = options.map_or(ptr::null(), |o| o.as_ptr() as *const _);
        DistributedDataset::out(|o| unsafe {
            sys::dist_strategy_distribute_dataset(self.as_ptr(), dataset.as_ptr(), op, o)
        })
    }
    /// distribute_datasets_from_function: `f` runs on this thread during the call, once per
    /// input pipeline.
    pub fn distribute_datasets_from_function<F>(
        &self,
        options: Option<&InputOptions>,
        mut f: F,
    ) -> Result<DistributedDataset>
    where
        F: FnMut(&InputContext) -> Result<Dataset>,
    {
        let op = options.map_or(ptr::null(), |o| o.as_ptr() as *const _);
        let mut st = DatasetFnState { f: &mut f, errors: FirstError::new() };
        let mut out = ptr::null_mut();
        let status = unsafe {
            sys::dist_strategy_distribute_datasets_from_function(
                self.as_ptr(),
                Some(dataset_fn_trampoline),
                &mut st as *mut DatasetFnState as *mut c_void,
                None,
                op,
                &mut out,
            )
        };
        st.errors.finish(status)?;
        unsafe { DistributedDataset::from_raw(out) }.ok_or_else(|| Error::new(Code::Internal, "no dataset"))
    }
    pub fn make_dataset_iterator(&self, dataset: &Dataset) -> Result<DatasetIterator> {
        DatasetIterator::out(|o| unsafe {
            sys::dist_strategy_make_dataset_iterator(self.as_ptr(), dataset.as_ptr(), o)
        })
    }
    /// make_input_fn_iterator: `f` runs during this call, once per input pipeline.
    pub fn make_input_fn_iterator<F>(&self, mut f: F) -> Result<DatasetIterator>
    where
        F: FnMut(&InputContext) -> Result<Dataset>,
    {
        let mut st = DatasetFnState { f: &mut f, errors: FirstError::new() };
        let mut out = ptr::null_mut();
        let status = unsafe {
            sys::dist_strategy_make_input_fn_iterator(
                self.as_ptr(),
                Some(dataset_fn_trampoline),
                &mut st as *mut DatasetFnState as *mut c_void,
                &mut out,
            )
        };
        st.errors.finish(status)?;
        unsafe { DatasetIterator::from_raw(out) }.ok_or_else(|| Error::new(Code::Internal, "no iterator"))
    }
}
