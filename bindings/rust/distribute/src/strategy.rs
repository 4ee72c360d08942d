//! Strategies, replica contexts and the callbacks written in Rust (strategy.h, context.h).

use std::ffi::c_void;
use std::marker::PhantomData;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr::{self, NonNull};
use std::sync::Mutex;

use crate::cluster::Cluster;
use crate::error::{check, Code, Error, Result};
use crate::options::{CommunicationOptions, CrossDeviceOps};
use crate::sys;
use crate::types::*;
use crate::value::*;

/// An owned reference to a strategy (`dist_strategy_t*`); `Drop` calls
/// `dist_strategy_destroy`. `#[repr(transparent)]` so merge functions get a `&Strategy`.
#[repr(transparent)]
#[derive(Debug)]
pub struct Strategy {
    raw: NonNull<sys::dist_strategy_t>,
}

// SAFETY: every strategy call is thread-safe ("safe", or "one run at a time; others wait");
// destroy takes `self` by value.
unsafe impl Send for Strategy {}
unsafe impl Sync for Strategy {}

impl Drop for Strategy {
    fn drop(&mut self) {
        unsafe { sys::dist_strategy_destroy(self.raw.as_ptr()) }
    }
}

pub(crate) fn strategy_out(f: impl FnOnce(*mut *mut sys::dist_strategy_t) -> sys::dist_status_t) -> Result<Strategy> {
    let mut out = ptr::null_mut();
    check(f(&mut out))?;
    NonNull::new(out).map(|raw| Strategy { raw }).ok_or_else(|| Error::new(Code::Internal, "no strategy"))
}

/// A message for a caught panic payload.
pub(crate) fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "non-string panic payload".to_string()
    }
}

/// Runs a Rust callback body: a panic becomes an `Error(UNKNOWN)` naming `what`.
pub(crate) fn guarded<T>(what: &str, f: impl FnOnce() -> Result<T>) -> Result<T> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(p) => Err(Error::new(Code::Unknown, format!("{} panicked: {}", what, panic_message(&*p)))),
    }
}

/// The errors of the Rust callbacks of one native call, kept so that the caller gets the
/// Rust message (the library only sees the status code).
pub(crate) struct FirstError(Mutex<Vec<Error>>);

impl FirstError {
    pub(crate) fn new() -> Self {
        FirstError(Mutex::new(Vec::new()))
    }
    pub(crate) fn record(&self, e: Error) -> sys::dist_status_t {
        let code = e.report();
        self.0.lock().unwrap_or_else(|p| p.into_inner()).push(e);
        code
    }
    /// The error of a failed native call, the root cause rather than its consequences: the
    /// first error a Rust callback made itself (not one the library reported to it) with the
    /// status the library returned, else such an error that is not ABORTED (ABORTED is how
    /// the library releases the other replicas), else the first library error a callback
    /// passed on with that status (its full message: the library's own message for the
    /// caller only names the replica), else the library's error.
    pub(crate) fn finish(self, status: sys::dist_status_t) -> Result<()> {
        if status == sys::DIST_OK {
            return Ok(());
        }
        let lib = crate::error::last_error(status);
        let mut errors = self.0.into_inner().unwrap_or_else(|p| p.into_inner());
        let pick = errors
            .iter()
            .position(|e| !e.is_from_library() && e.status() == status)
            .or_else(|| errors.iter().position(|e| !e.is_from_library() && e.code() != Code::Aborted))
            .or_else(|| errors.iter().position(|e| e.status() == status));
        match pick {
            Some(i) => Err(errors.swap_remove(i)),
            None => Err(lib),
        }
    }
}

/// A replica context (`dist_context_t*`), borrowed for the replica function (or owned by a
/// [`JoinedReplica`]). Not `Send`/`Sync`: its calls are legal only on the replica's thread.
#[derive(Debug)]
pub struct ReplicaContext<'a> {
    raw: *mut sys::dist_context_t,
    _not_send: PhantomData<*mut ()>,
    _life: PhantomData<&'a ()>,
}

type ReplicaFnDyn<'f> = dyn Fn(&ReplicaContext<'_>, &[Value]) -> Result<Vec<Value>> + Sync + 'f;

struct RunState<'f> {
    f: &'f ReplicaFnDyn<'f>,
    errors: FirstError,
}

unsafe extern "C" fn replica_trampoline(
    context: *mut sys::dist_context_t,
    args: *const *const sys::dist_value_t,
    num_args: i32,
    results: *mut *mut sys::dist_value_t,
    num_results: i32,
    user_data: *mut c_void,
) -> sys::dist_status_t {
    let st = &*(user_data as *const RunState<'_>);
    let ctx = ReplicaContext { raw: context, _not_send: PhantomData, _life: PhantomData };
    let r = guarded("replica function", || {
        let args = Value::borrowed_slice(args, num_args)?;
        let outs = (st.f)(&ctx, args)?;
        if outs.len() > num_results.max(0) as usize {
            return Err(Error::new(
                Code::InvalidArgument,
                format!("the replica function returned {} values; run has room for {}", outs.len(), num_results),
            ));
        }
        for (i, v) in outs.into_iter().enumerate() {
            *results.add(i) = v.into_raw();
        }
        Ok(())
    });
    match r {
        Ok(()) => sys::DIST_OK,
        Err(mut e) => {
            if let Ok(id) = ctx.replica_id() {
                let message = format!("replica {}: {}", id, e.message());
                e = e.with_message(message);
            }
            st.errors.record(e)
        }
    }
}

type MergeFnDyn<'f> = dyn FnMut(&Strategy, &[Value]) -> Result<Option<Value>> + 'f;

struct MergeState<'f> {
    f: &'f mut MergeFnDyn<'f>,
    errors: FirstError,
}

unsafe extern "C" fn merge_trampoline(
    strategy: *mut sys::dist_strategy_t,
    args: *const *const sys::dist_value_t,
    num_args: i32,
    out: *mut *mut sys::dist_value_t,
    user_data: *mut c_void,
) -> sys::dist_status_t {
    let st = &mut *(user_data as *mut MergeState<'_>);
    let r = guarded("merge function", || {
        let s = &*(&strategy as *const *mut sys::dist_strategy_t as *const Strategy);
        let args = Value::borrowed_slice(args, num_args)?;
        if let Some(v) = (st.f)(s, args)? {
            *out = v.into_raw();
        }
        Ok(())
    });
    match r {
        Ok(()) => sys::DIST_OK,
        Err(e) => st.errors.record(e),
    }
}

type UpdateFnDyn<'f> = dyn FnMut(&Value, &[Value]) -> Result<Option<Value>> + 'f;

struct UpdateState<'f> {
    f: &'f mut UpdateFnDyn<'f>,
    errors: FirstError,
}

unsafe extern "C" fn update_trampoline(
    variable: *mut sys::dist_value_t,
    args: *const *const sys::dist_value_t,
    num_args: i32,
    out: *mut *mut sys::dist_value_t,
    user_data: *mut c_void,
) -> sys::dist_status_t {
    let st = &mut *(user_data as *mut UpdateState<'_>);
    let r = guarded("update function", || {
        if variable.is_null() {
            return Err(Error::new(Code::Internal, "NULL variable"));
        }
        let var = Value::borrowed(&variable);
        let args = Value::borrowed_slice(args, num_args)?;
        if let Some(v) = (st.f)(var, args)? {
            *out = v.into_raw();
        }
        Ok(())
    });
    match r {
        Ok(()) => sys::DIST_OK,
        Err(e) => st.errors.record(e),
    }
}

type ValueFnDyn<'f> = dyn FnMut(i32, i32) -> Result<Value> + 'f;

struct ValueState<'f> {
    f: &'f mut ValueFnDyn<'f>,
    errors: FirstError,
}

unsafe extern "C" fn value_trampoline(
    replica_id: i32,
    num_replicas: i32,
    out: *mut *mut sys::dist_value_t,
    user_data: *mut c_void,
) -> sys::dist_status_t {
    let st = &mut *(user_data as *mut ValueState<'_>);
    match guarded("value function", || (st.f)(replica_id, num_replicas)) {
        Ok(v) => {
            *out = v.into_raw();
            sys::DIST_OK
        }
        Err(e) => st.errors.record(e),
    }
}

impl<'a> ReplicaContext<'a> {
    pub fn as_ptr(&self) -> *mut sys::dist_context_t {
        self.raw
    }
    pub fn replica_id(&self) -> Result<i32> {
        let mut v = 0;
        check(unsafe { sys::dist_context_replica_id(self.raw, &mut v) })?;
        Ok(v)
    }
    pub fn num_replicas_in_sync(&self) -> Result<i32> {
        let mut v = 0;
        check(unsafe { sys::dist_context_num_replicas_in_sync(self.raw, &mut v) })?;
        Ok(v)
    }
    /// A new reference to the strategy this replica belongs to.
    pub fn strategy(&self) -> Result<Strategy> {
        strategy_out(|o| unsafe { sys::dist_context_strategy(self.raw, o) })
    }
    pub fn device(&self) -> Result<String> {
        let mut p = ptr::null();
        check(unsafe { sys::dist_context_device(self.raw, &mut p) })?;
        Ok(unsafe { borrowed_str(p) })
    }
    pub fn set_timeout_ms(&self, timeout_ms: i64) -> Result<()> {
        check(unsafe { sys::dist_context_set_timeout_ms(self.raw, timeout_ms) })
    }
    pub fn all_reduce(&self, op: ReduceOp, value: &Value) -> Result<Value> {
        Value::out(|o| unsafe { sys::dist_context_all_reduce(self.raw, op.raw(), value.as_ptr(), o) })
    }
    /// `dist_context_all_reduce_into`: writes the all-reduce of `value` into `out`, an existing
    /// tensor of value's shape and of the result's dtype (it may be `value` itself); no new
    /// value is made. A wrong `out` is `InvalidArgument` on every replica and nothing is written.
    pub fn all_reduce_into(&self, op: ReduceOp, value: &Value, out: &Value) -> Result<()> {
        check(unsafe { sys::dist_context_all_reduce_into(self.raw, op.raw(), value.as_ptr(), out.as_ptr()) })
    }
    pub fn batch_all_reduce(&self, op: ReduceOp, values: &[&Value]) -> Result<Vec<Value>> {
        let raw = raw_list(values);
        let n = len_i32(raw.len(), "values")?;
        let mut outs = vec![ptr::null_mut(); raw.len()];
        let st = unsafe { sys::dist_context_batch_all_reduce(self.raw, op.raw(), raw.as_ptr(), n, outs.as_mut_ptr()) };
        collect_outs(st, outs)
    }
    pub fn all_gather(&self, value: &Value, axis: i32) -> Result<Value> {
        Value::out(|o| unsafe { sys::dist_context_all_gather(self.raw, value.as_ptr(), axis, o) })
    }
    pub fn broadcast(&self, value: &Value, source_replica: i32) -> Result<Value> {
        Value::out(|o| unsafe { sys::dist_context_broadcast(self.raw, value.as_ptr(), source_replica, o) })
    }
    /// `dist_context_merge_call`: `f` runs once, on one replica's thread, in cross-replica
    /// context, with the gathered arguments; each replica gets its part of f's result.
    pub fn merge_call<F>(&self, args: &[&Value], mut f: F) -> Result<Option<Value>>
    where
        F: FnMut(&Strategy, &[Value]) -> Result<Option<Value>>,
    {
        let raw = raw_list(args);
        let n = len_i32(raw.len(), "arguments")?;
        let mut st = MergeState { f: &mut f, errors: FirstError::new() };
        let mut out = ptr::null_mut();
        let status = unsafe {
            sys::dist_context_merge_call(
                self.raw,
                Some(merge_trampoline),
                &mut st as *mut MergeState as *mut c_void,
                raw.as_ptr(),
                n,
                &mut out,
            )
        };
        st.errors.finish(status)?;
        Ok(unsafe { Value::from_raw(out) })
    }
}

pub(crate) fn collect_outs(status: sys::dist_status_t, outs: Vec<*mut sys::dist_value_t>) -> Result<Vec<Value>> {
    check(status)?;
    let mut v = Vec::with_capacity(outs.len());
    for p in outs {
        v.push(
            unsafe { Value::from_raw(p) }
                .ok_or_else(|| Error::new(Code::Internal, "the library returned OK and a NULL value"))?,
        );
    }
    Ok(v)
}

/// Calls `f` with the current replica context (`dist_current_replica_context`), or None in
/// cross-replica context. The context is borrowed for the call only.
pub fn with_current_replica_context<R>(f: impl FnOnce(Option<&ReplicaContext<'_>>) -> R) -> R {
    let raw = unsafe { sys::dist_current_replica_context() };
    if raw.is_null() {
        f(None)
    } else {
        let ctx = ReplicaContext { raw, _not_send: PhantomData, _life: PhantomData };
        f(Some(&ctx))
    }
}

/// This thread acting as a replica without `run` (`dist_strategy_join_replica`). Derefs to
/// its [`ReplicaContext`]; `Drop` (or [`JoinedReplica::leave`]) calls `dist_context_leave`.
#[derive(Debug)]
pub struct JoinedReplica {
    ctx: ReplicaContext<'static>,
}

impl JoinedReplica {
    /// Leaves, reporting misuse (a scope still entered).
    pub fn leave(self) -> Result<()> {
        let raw = self.ctx.raw;
        let st = unsafe { sys::dist_context_leave(raw) };
        if st != sys::DIST_OK {
            let e = crate::error::last_error(st);
            // The context stays valid on failure: release it anyway would be wrong; keep Drop
            // from retrying with a leaked handle.
            std::mem::forget(self);
            return Err(e);
        }
        std::mem::forget(self);
        Ok(())
    }
}

impl std::ops::Deref for JoinedReplica {
    type Target = ReplicaContext<'static>;
    fn deref(&self) -> &Self::Target {
        &self.ctx
    }
}

impl Drop for JoinedReplica {
    fn drop(&mut self) {
        let _ = unsafe { sys::dist_context_leave(self.ctx.raw) };
    }
}

/// The scope of a strategy entered on this thread; `Drop` (or [`Scope::exit`]) leaves it.
/// Not `Send`: scopes are per thread.
#[derive(Debug)]
pub struct Scope<'s> {
    strategy: &'s Strategy,
    _not_send: PhantomData<*mut ()>,
}

impl<'s> Scope<'s> {
    pub fn exit(self) -> Result<()> {
        let st = unsafe { sys::dist_strategy_scope_exit(self.strategy.as_ptr()) };
        std::mem::forget(self);
        check(st)
    }
}

impl Drop for Scope<'_> {
    fn drop(&mut self) {
        let _ = unsafe { sys::dist_strategy_scope_exit(self.strategy.as_ptr()) };
    }
}

/// `colocate_vars_with` entered on this thread; `Drop` (or `exit`) leaves it.
#[derive(Debug)]
pub struct Colocation<'s> {
    strategy: &'s Strategy,
    _not_send: PhantomData<*mut ()>,
}

impl<'s> Colocation<'s> {
    pub fn exit(self) -> Result<()> {
        let st = unsafe { sys::dist_strategy_colocate_vars_with_exit(self.strategy.as_ptr()) };
        std::mem::forget(self);
        check(st)
    }
}

impl Drop for Colocation<'_> {
    fn drop(&mut self) {
        let _ = unsafe { sys::dist_strategy_colocate_vars_with_exit(self.strategy.as_ptr()) };
    }
}

fn devices_list(devices: &[&str]) -> Result<(Vec<std::ffi::CString>, Vec<*const std::os::raw::c_char>)> {
    let owned = devices.iter().map(|d| cstr(d)).collect::<Result<Vec<_>>>()?;
    let ptrs = owned.iter().map(|c| c.as_ptr()).collect();
    Ok((owned, ptrs))
}

impl Strategy {
    /// Takes ownership of a raw handle.
    ///
    /// # Safety
    /// `raw` must be an owned strategy reference.
    pub unsafe fn from_raw(raw: *mut sys::dist_strategy_t) -> Option<Strategy> {
        NonNull::new(raw).map(|raw| Strategy { raw })
    }
    pub fn as_ptr(&self) -> *mut sys::dist_strategy_t {
        self.raw.as_ptr()
    }

    // ---- Creation ----

    pub fn one_device(device: &str) -> Result<Strategy> {
        let d = cstr(device)?;
        strategy_out(|o| unsafe { sys::dist_strategy_create_one_device(d.as_ptr(), o) })
    }
    /// A MirroredStrategy over `devices` (empty: every local GPU, else every logical CPU).
    pub fn mirrored(devices: &[&str], cross_device_ops: Option<&CrossDeviceOps>) -> Result<Strategy> {
        let (_own, ptrs) = devices_list(devices)?;
        let n = len_i32(ptrs.len(), "devices")?;
        let ops = cross_device_ops.map_or(ptr::null(), |o| o.as_ptr() as *const _);
        strategy_out(|o| unsafe {
            sys::dist_strategy_create_mirrored(if n == 0 { ptr::null() } else { ptrs.as_ptr() }, n, ops, o)
        })
    }
    pub fn central_storage(compute_devices: &[&str], parameter_device: Option<&str>) -> Result<Strategy> {
        let (_own, ptrs) = devices_list(compute_devices)?;
        let n = len_i32(ptrs.len(), "devices")?;
        let p = opt_cstr(parameter_device)?;
        strategy_out(|o| unsafe {
            sys::dist_strategy_create_central_storage(
                if n == 0 { ptr::null() } else { ptrs.as_ptr() },
                n,
                opt_ptr(&p),
                o,
            )
        })
    }
    /// MultiWorkerMirroredStrategy; `cluster` None reads TF_CONFIG. Blocks up to the
    /// options' timeout at the start-up barrier.
    pub fn multi_worker_mirrored(
        cluster: Option<&Cluster>,
        options: Option<&CommunicationOptions>,
    ) -> Result<Strategy> {
        let c = cluster.map_or(ptr::null(), |c| c.as_ptr() as *const _);
        let op = options.map_or(ptr::null(), |o| o.as_ptr() as *const _);
        strategy_out(|o| unsafe { sys::dist_strategy_create_multi_worker_mirrored(c, op, o) })
    }
    /// A new reference to the process's default strategy.
    pub fn default_strategy() -> Result<Strategy> {
        strategy_out(|o| unsafe { sys::dist_strategy_get_default(o) })
    }
    /// The current strategy of this thread (`dist_get_strategy`).
    pub fn current() -> Result<Strategy> {
        strategy_out(|o| unsafe { sys::dist_get_strategy(o) })
    }

    // ---- Properties ----

    pub fn kind(&self) -> Result<StrategyKind> {
        let mut k = 0;
        check(unsafe { sys::dist_strategy_kind(self.as_ptr(), &mut k) })?;
        StrategyKind::from_lib(k)
    }
    pub fn num_replicas_in_sync(&self) -> Result<i32> {
        let mut n = 0;
        check(unsafe { sys::dist_strategy_num_replicas_in_sync(self.as_ptr(), &mut n) })?;
        Ok(n)
    }
    pub fn worker_device(&self, index: i32) -> Result<String> {
        let mut p = ptr::null();
        check(unsafe { sys::dist_strategy_worker_device(self.as_ptr(), index, &mut p) })?;
        Ok(unsafe { borrowed_str(p) })
    }
    pub fn parameter_device_count(&self) -> Result<i32> {
        let mut n = 0;
        check(unsafe { sys::dist_strategy_parameter_device_count(self.as_ptr(), &mut n) })?;
        Ok(n)
    }
    pub fn parameter_device(&self, index: i32) -> Result<String> {
        let mut p = ptr::null();
        check(unsafe { sys::dist_strategy_parameter_device(self.as_ptr(), index, &mut p) })?;
        Ok(unsafe { borrowed_str(p) })
    }
    pub fn set_timeout_ms(&self, timeout_ms: i64) -> Result<()> {
        check(unsafe { sys::dist_strategy_set_timeout_ms(self.as_ptr(), timeout_ms) })
    }

    // ---- Scopes ----

    /// Enters the strategy's scope on this thread until the guard is dropped.
    pub fn scope(&self) -> Result<Scope<'_>> {
        check(unsafe { sys::dist_strategy_scope_enter(self.as_ptr()) })?;
        Ok(Scope { strategy: self, _not_send: PhantomData })
    }
    /// `dist_experimental_set_strategy` (None restores the default).
    pub fn experimental_set_strategy(strategy: Option<&Strategy>) -> Result<()> {
        check(unsafe { sys::dist_experimental_set_strategy(strategy.map_or(ptr::null_mut(), |s| s.as_ptr())) })
    }
    pub fn colocate_vars_with(&self, variable: &Value) -> Result<Colocation<'_>> {
        check(unsafe { sys::dist_strategy_colocate_vars_with_enter(self.as_ptr(), variable.as_ptr()) })?;
        Ok(Colocation { strategy: self, _not_send: PhantomData })
    }
    pub fn variable_created_in_scope(&self, variable: &Value) -> Result<bool> {
        let mut v = 0;
        check(unsafe { sys::dist_strategy_variable_created_in_scope(self.as_ptr(), variable.as_ptr(), &mut v) })?;
        Ok(v != 0)
    }

    // ---- Running replicas ----

    /// `dist_strategy_run`: calls `f` once per replica, concurrently (replica 0 on this
    /// thread). Returns `num_results` merged result slots (None where no replica filled
    /// one). A Rust error or panic fails that replica; the caller gets it (with the replica
    /// id in the message).
    pub fn run<F>(&self, args: &[&Value], num_results: usize, f: F) -> Result<Vec<Option<Value>>>
    where
        F: Fn(&ReplicaContext<'_>, &[Value]) -> Result<Vec<Value>> + Sync,
    {
        let raw = raw_list(args);
        let n = len_i32(raw.len(), "arguments")?;
        let nr = len_i32(num_results, "results")?;
        let st = RunState { f: &f, errors: FirstError::new() };
        let mut outs = vec![ptr::null_mut(); num_results];
        let status = unsafe {
            sys::dist_strategy_run(
                self.as_ptr(),
                Some(replica_trampoline),
                &st as *const RunState as *mut c_void,
                if raw.is_empty() { ptr::null() } else { raw.as_ptr() },
                n,
                if outs.is_empty() { ptr::null_mut() } else { outs.as_mut_ptr() },
                nr,
            )
        };
        st.errors.finish(status)?;
        Ok(outs.into_iter().map(|p| unsafe { Value::from_raw(p) }).collect())
    }
    pub fn distribute_values_from_function<F>(&self, mut f: F) -> Result<Value>
    where
        F: FnMut(i32, i32) -> Result<Value>,
    {
        let mut st = ValueState { f: &mut f, errors: FirstError::new() };
        let mut out = ptr::null_mut();
        let status = unsafe {
            sys::dist_strategy_distribute_values_from_function(
                self.as_ptr(),
                Some(value_trampoline),
                &mut st as *mut ValueState as *mut c_void,
                &mut out,
            )
        };
        st.errors.finish(status)?;
        unsafe { Value::from_raw(out) }.ok_or_else(|| Error::new(Code::Internal, "no value"))
    }
    pub fn value_container(&self, value: &Value) -> Result<Value> {
        Value::out(|o| unsafe { sys::dist_strategy_value_container(self.as_ptr(), value.as_ptr(), o) })
    }
    /// Lets this thread act as replica `replica_id` (bring your own threads).
    pub fn join_replica(&self, replica_id: i32) -> Result<JoinedReplica> {
        let mut out = ptr::null_mut();
        check(unsafe { sys::dist_strategy_join_replica(self.as_ptr(), replica_id, &mut out) })?;
        if out.is_null() {
            return Err(Error::new(Code::Internal, "no context"));
        }
        Ok(JoinedReplica { ctx: ReplicaContext { raw: out, _not_send: PhantomData, _life: PhantomData } })
    }

    // ---- Cross-replica ----

    pub fn reduce(&self, op: ReduceOp, value: &Value) -> Result<Value> {
        Value::out(|o| unsafe { sys::dist_strategy_reduce(self.as_ptr(), op.raw(), value.as_ptr(), o) })
    }
    pub fn reduce_axis(&self, op: ReduceOp, value: &Value, axis: i32) -> Result<Value> {
        Value::out(|o| unsafe { sys::dist_strategy_reduce_axis(self.as_ptr(), op.raw(), value.as_ptr(), axis, o) })
    }
    pub fn gather(&self, value: &Value, axis: i32) -> Result<Value> {
        Value::out(|o| unsafe { sys::dist_strategy_gather(self.as_ptr(), value.as_ptr(), axis, o) })
    }
    pub fn reduce_to(&self, op: ReduceOp, value: &Value, destinations: &Value) -> Result<Value> {
        Value::out(|o| unsafe {
            sys::dist_strategy_reduce_to(self.as_ptr(), op.raw(), value.as_ptr(), destinations.as_ptr(), o)
        })
    }
    pub fn reduce_to_device(&self, op: ReduceOp, value: &Value, device: &str) -> Result<Value> {
        let d = cstr(device)?;
        Value::out(|o| unsafe {
            sys::dist_strategy_reduce_to_device(self.as_ptr(), op.raw(), value.as_ptr(), d.as_ptr(), o)
        })
    }
    /// `batch_reduce_to` over (value, destination) pairs.
    pub fn batch_reduce_to(&self, op: ReduceOp, pairs: &[(&Value, &Value)]) -> Result<Vec<Value>> {
        let values: Vec<*const sys::dist_value_t> = pairs.iter().map(|p| p.0.as_ptr() as *const _).collect();
        let dests: Vec<*const sys::dist_value_t> = pairs.iter().map(|p| p.1.as_ptr() as *const _).collect();
        let n = len_i32(pairs.len(), "values")?;
        let mut outs = vec![ptr::null_mut(); pairs.len()];
        let st = unsafe {
            sys::dist_strategy_batch_reduce_to(
                self.as_ptr(),
                op.raw(),
                values.as_ptr(),
                dests.as_ptr(),
                n,
                outs.as_mut_ptr(),
            )
        };
        collect_outs(st, outs)
    }
    /// `StrategyExtended.update`: `f(component, args)` once per component of `variable`.
    pub fn update<F>(&self, variable: &Value, args: &[&Value], group: bool, mut f: F) -> Result<Option<Value>>
    where
        F: FnMut(&Value, &[Value]) -> Result<Option<Value>>,
    {
        let raw = raw_list(args);
        let n = len_i32(raw.len(), "arguments")?;
        let mut st = UpdateState { f: &mut f, errors: FirstError::new() };
        let mut out = ptr::null_mut();
        let status = unsafe {
            sys::dist_strategy_update(
                self.as_ptr(),
                variable.as_ptr(),
                Some(update_trampoline),
                &mut st as *mut UpdateState as *mut c_void,
                if raw.is_empty() { ptr::null() } else { raw.as_ptr() },
                n,
                group as i32,
                &mut out,
            )
        };
        st.errors.finish(status)?;
        Ok(unsafe { Value::from_raw(out) })
    }
    pub fn save_variables(&self, path: &str) -> Result<()> {
        let p = cstr(path)?;
        check(unsafe { sys::dist_strategy_save_variables(self.as_ptr(), p.as_ptr()) })
    }
    pub fn restore_variables(&self, path: &str) -> Result<()> {
        let p = cstr(path)?;
        check(unsafe { sys::dist_strategy_restore_variables(self.as_ptr(), p.as_ptr()) })
    }
}

/// 1 when a non-default strategy is current on this thread (`dist_has_strategy`).
pub fn has_strategy() -> Result<bool> {
    let mut v = 0;
    check(unsafe { sys::dist_has_strategy(&mut v) })?;
    Ok(v != 0)
}

/// `dist_in_cross_replica_context`.
pub fn in_cross_replica_context() -> Result<bool> {
    let mut v = 0;
    check(unsafe { sys::dist_in_cross_replica_context(&mut v) })?;
    Ok(v != 0)
}

/// `dist_get_loss_reduction`.
pub fn get_loss_reduction() -> Result<ReduceOp> {
    let mut v = 0;
    check(unsafe { sys::dist_get_loss_reduction(&mut v) })?;
    ReduceOp::from_lib(v)
}
