//! The coordinator of TF 2 parameter-server training (coordinator.h): closure and dataset
//! functions registered by name in every process, closure arguments, the coordinator on
//! the chief, its remote values and its per-worker datasets and iterators.

use std::ffi::c_void;
use std::mem::ManuallyDrop;
use std::ptr::{self, NonNull};

use crate::dataset::{free_box, handle, Dataset, DatasetIterator, InputContext, InputOptions};
use crate::error::{check, Code, Error, Result};
use crate::strategy::{guarded, Strategy};
use crate::sys;
use crate::value::*;

handle!(
    /// The arguments of a scheduled function (`dist_closure_args_t*`); a closure function
    /// gets a borrowed `&ClosureArgs`.
    ClosureArgs, sys::dist_closure_args_t, sys::dist_closure_args_destroy);
handle!(
    /// The coordinator (`dist_coordinator_t*`), on the chief.
    Coordinator, sys::dist_coordinator_t, sys::dist_coordinator_destroy);
handle!(
    /// The result of a scheduled closure (`dist_remote_value_t*`).
    RemoteValue, sys::dist_remote_value_t, sys::dist_remote_value_destroy);
handle!(
    /// A per-worker dataset or iterator (`dist_per_worker_t*`).
    PerWorker, sys::dist_per_worker_t, sys::dist_per_worker_destroy);

// SAFETY: every coordinator, remote value and per-worker call is thread-safe; destroy
// takes ownership. Closure args are built by one thread at a time (`&mut self`).
unsafe impl Send for Coordinator {}
unsafe impl Sync for Coordinator {}
unsafe impl Send for RemoteValue {}
unsafe impl Sync for RemoteValue {}
unsafe impl Send for PerWorker {}
unsafe impl Sync for PerWorker {}
unsafe impl Send for ClosureArgs {}

/// `dist_closure_arg_kind_t`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClosureArgKind {
    Tensor,
    Variable,
    Iterator,
}

type ClosureFn = dyn Fn(&Strategy, &ClosureArgs) -> Result<Option<Value>> + Send + Sync;
type DatasetFunctionFn = dyn Fn(&InputContext) -> Result<Dataset> + Send + Sync;

unsafe extern "C" fn closure_trampoline(
    strategy: *mut sys::dist_strategy_t,
    args: *const sys::dist_closure_args_t,
    out: *mut *mut sys::dist_value_t,
    ud: *mut c_void,
) -> sys::dist_status_t {
    let f = &*(ud as *const Box<ClosureFn>);
    let r = guarded("closure function", || {
        let s = &*(&strategy as *const *mut sys::dist_strategy_t as *const Strategy);
        let a = &*(&args as *const *const sys::dist_closure_args_t as *const ClosureArgs);
        if let Some(v) = f(s, a)? {
            *out = v.into_raw();
        }
        Ok(())
    });
    match r {
        Ok(()) => sys::DIST_OK,
        Err(e) => e.status(),
    }
}

unsafe extern "C" fn dataset_function_trampoline(
    ctx: *const sys::dist_input_context_t,
    out: *mut *mut sys::dist_dataset_t,
    ud: *mut c_void,
) -> sys::dist_status_t {
    let f = &*(ud as *const Box<DatasetFunctionFn>);
    let r = guarded("dataset function", || {
        let c = &*(&ctx as *const *const sys::dist_input_context_t as *const InputContext);
        f(c)
    });
    match r {
        Ok(ds) => {
            *out = ds.as_ptr();
            std::mem::forget(ds);
            sys::DIST_OK
        }
        Err(e) => e.status(),
    }
}

/// Registers closure function `name` in this process (`dist_closure_register`); `f` runs
/// on a worker with the worker's strategy and the resolved arguments, and may return a
/// tensor (the remote value's result). Dropped when unregistered.
pub fn register_closure<F>(name: &str, f: F) -> Result<()>
where
    F: Fn(&Strategy, &ClosureArgs) -> Result<Option<Value>> + Send + Sync + 'static,
{
    let c_name = cstr(name)?;
    let ud = Box::into_raw(Box::new(Box::new(f) as Box<ClosureFn>));
    let st = unsafe {
        sys::dist_closure_register(
            c_name.as_ptr(),
            Some(closure_trampoline),
            ud as *mut c_void,
            Some(free_box::<Box<ClosureFn>>),
        )
    };
    if st != sys::DIST_OK {
        let e = crate::error::last_error(st);
        drop(unsafe { Box::from_raw(ud) }); // refused: the library did not keep it
        return Err(e);
    }
    Ok(())
}

/// `dist_closure_unregister`: NotFound when absent.
pub fn unregister_closure(name: &str) -> Result<()> {
    let c_name = cstr(name)?;
    check(unsafe { sys::dist_closure_unregister(c_name.as_ptr()) })
}

/// `dist_closure_is_registered`.
pub fn is_closure_registered(name: &str) -> Result<bool> {
    let c_name = cstr(name)?;
    let mut out = 0;
    check(unsafe { sys::dist_closure_is_registered(c_name.as_ptr(), &mut out) })?;
    Ok(out != 0)
}

/// Registers dataset function `name` for per-worker datasets (`dist_dataset_function_register`).
pub fn register_dataset_function<F>(name: &str, f: F) -> Result<()>
where
    F: Fn(&InputContext) -> Result<Dataset> + Send + Sync + 'static,
{
    let c_name = cstr(name)?;
    let ud = Box::into_raw(Box::new(Box::new(f) as Box<DatasetFunctionFn>));
    let st = unsafe {
        sys::dist_dataset_function_register(
            c_name.as_ptr(),
            Some(dataset_function_trampoline),
            ud as *mut c_void,
            Some(free_box::<Box<DatasetFunctionFn>>),
        )
    };
    if st != sys::DIST_OK {
        let e = crate::error::last_error(st);
        drop(unsafe { Box::from_raw(ud) });
        return Err(e);
    }
    Ok(())
}

/// `dist_dataset_function_unregister`.
pub fn unregister_dataset_function(name: &str) -> Result<()> {
    let c_name = cstr(name)?;
    check(unsafe { sys::dist_dataset_function_unregister(c_name.as_ptr()) })
}

impl ClosureArgs {
    /// An empty argument list (`dist_closure_args_create`).
    pub fn new() -> Result<ClosureArgs> {
        ClosureArgs::out(|o| unsafe { sys::dist_closure_args_create(o) })
    }
    /// A host tensor or a ParameterServerStrategy variable (`dist_closure_args_add_value`).
    pub fn add_value(&mut self, value: &Value) -> Result<()> {
        check(unsafe { sys::dist_closure_args_add_value(self.as_ptr(), value.as_ptr()) })
    }
    /// A per-worker iterator (`dist_closure_args_add_per_worker`).
    pub fn add_per_worker(&mut self, value: &PerWorker) -> Result<()> {
        check(unsafe { sys::dist_closure_args_add_per_worker(self.as_ptr(), value.as_ptr()) })
    }
    /// `dist_closure_args_count`.
    pub fn count(&self) -> Result<i32> {
        let mut out = 0;
        check(unsafe { sys::dist_closure_args_count(self.as_ptr(), &mut out) })?;
        Ok(out)
    }
    /// `dist_closure_args_kind`.
    pub fn kind(&self, index: i32) -> Result<ClosureArgKind> {
        let mut out = 0;
        check(unsafe { sys::dist_closure_args_kind(self.as_ptr(), index, &mut out) })?;
        match out {
            sys::DIST_CLOSURE_ARG_TENSOR => Ok(ClosureArgKind::Tensor),
            sys::DIST_CLOSURE_ARG_VARIABLE => Ok(ClosureArgKind::Variable),
            sys::DIST_CLOSURE_ARG_ITERATOR => Ok(ClosureArgKind::Iterator),
            k => Err(Error::new(Code::Internal, format!("unknown closure argument kind {}", k))),
        }
    }
    /// Argument `index`, a tensor or variable, lent by the list (`dist_closure_args_value`):
    /// valid while the list is, never destroyed (the library ignores a lent handle's destroy
    /// anyway).
    pub fn value(&self, index: i32) -> Result<ManuallyDrop<Value>> {
        let mut out = ptr::null_mut();
        check(unsafe { sys::dist_closure_args_value(self.as_ptr(), index, &mut out) })?;
        unsafe { Value::from_raw(out) }
            .map(ManuallyDrop::new)
            .ok_or_else(|| Error::new(Code::Internal, "no value"))
    }
    /// In a closure function: this worker's iterator of argument `index`
    /// (`dist_closure_args_iterator`), borrowed for the call.
    pub fn iterator(&self, index: i32) -> Result<ManuallyDrop<DatasetIterator>> {
        let mut out = ptr::null_mut();
        check(unsafe { sys::dist_closure_args_iterator(self.as_ptr(), index, &mut out) })?;
        unsafe { DatasetIterator::from_raw(out) }
            .map(ManuallyDrop::new)
            .ok_or_else(|| Error::new(Code::Internal, "no iterator"))
    }
}

impl Coordinator {
    /// A coordinator over a ParameterServerStrategy, on the chief (`dist_coordinator_create`).
    pub fn new(strategy: &Strategy) -> Result<Coordinator> {
        Coordinator::out(|o| unsafe { sys::dist_coordinator_create(strategy.as_ptr(), o) })
    }
    /// Schedules registered closure `function` (`dist_coordinator_schedule`).
    pub fn schedule(&self, function: &str, args: Option<&ClosureArgs>) -> Result<RemoteValue> {
        let c_function = cstr(function)?;
        let a = args.map_or(ptr::null(), |a| a.as_ptr() as *const _);
        RemoteValue::out(|o| unsafe { sys::dist_coordinator_schedule(self.as_ptr(), c_function.as_ptr(), a, o) })
    }
    /// `dist_coordinator_join`.
    pub fn join(&self) -> Result<()> {
        check(unsafe { sys::dist_coordinator_join(self.as_ptr()) })
    }
    /// `dist_coordinator_done`.
    pub fn done(&self) -> Result<bool> {
        let mut out = 0;
        check(unsafe { sys::dist_coordinator_done(self.as_ptr(), &mut out) })?;
        Ok(out != 0)
    }
    /// `dist_coordinator_num_workers`.
    pub fn num_workers(&self) -> Result<i32> {
        let mut out = 0;
        check(unsafe { sys::dist_coordinator_num_workers(self.as_ptr(), &mut out) })?;
        Ok(out)
    }
    /// `dist_coordinator_create_per_worker_dataset`.
    pub fn create_per_worker_dataset(&self, function: &str, options: Option<&InputOptions>) -> Result<PerWorker> {
        let c_function = cstr(function)?;
        let o = options.map_or(ptr::null(), |o| o.as_ptr() as *const _);
        PerWorker::out(|out| unsafe {
            sys::dist_coordinator_create_per_worker_dataset(self.as_ptr(), c_function.as_ptr(), o, out)
        })
    }
    /// `dist_coordinator_create_per_worker_dataset_from_function`.
    pub fn create_per_worker_dataset_from_function(
        &self,
        function: &str,
        options: Option<&InputOptions>,
    ) -> Result<PerWorker> {
        let c_function = cstr(function)?;
        let o = options.map_or(ptr::null(), |o| o.as_ptr() as *const _);
        PerWorker::out(|out| unsafe {
            sys::dist_coordinator_create_per_worker_dataset_from_function(self.as_ptr(), c_function.as_ptr(), o, out)
        })
    }
}

impl RemoteValue {
    /// Waits for the closure (`dist_remote_value_fetch`): its result, or None.
    pub fn fetch(&self) -> Result<Option<Value>> {
        let mut out = ptr::null_mut();
        check(unsafe { sys::dist_remote_value_fetch(self.as_ptr(), &mut out) })?;
        Ok(unsafe { Value::from_raw(out) })
    }
    /// `dist_remote_value_is_ready`.
    pub fn is_ready(&self) -> Result<bool> {
        let mut out = 0;
        check(unsafe { sys::dist_remote_value_is_ready(self.as_ptr(), &mut out) })?;
        Ok(out != 0)
    }
}

impl PerWorker {
    /// A new per-worker iterator of a per-worker dataset (`dist_per_worker_make_iterator`).
    pub fn make_iterator(&self) -> Result<PerWorker> {
        PerWorker::out(|o| unsafe { sys::dist_per_worker_make_iterator(self.as_ptr(), o) })
    }
}
