//! ParameterServerStrategy's placement options and the registry of update functions
//! (parameter_server.h).

use std::ffi::{c_void, CStr};
use std::os::raw::c_char;
use std::ptr::{self, NonNull};

use crate::cluster::Cluster;
use crate::dataset::{c_string_list, free_box, handle};
use crate::error::{check, Code, Error, Result};
use crate::options::CommunicationOptions;
use crate::strategy::{guarded, strategy_out, Strategy};
use crate::sys;
use crate::value::*;

handle!(
    /// Where a ParameterServerStrategy puts its variables: placement and partitioner.
    ParameterServerOptions, sys::dist_parameter_server_options_t, sys::dist_parameter_server_options_destroy);

// SAFETY: used by one thread at a time (`&mut self` setters); destroy takes ownership.
unsafe impl Send for ParameterServerOptions {}

/// `dist_placement_policy_t`: how variables (or shards) are assigned to ps tasks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PlacementPolicy {
    /// Task 0, 1, ..., n-1, 0, ... in creation order (TF's default).
    RoundRobin,
    /// The task with the fewest bytes placed so far, the lowest index on a tie.
    GreedyBytes,
}

impl PlacementPolicy {
    pub fn raw(self) -> sys::dist_placement_policy_t {
        match self {
            PlacementPolicy::RoundRobin => sys::DIST_PLACEMENT_ROUND_ROBIN,
            PlacementPolicy::GreedyBytes => sys::DIST_PLACEMENT_GREEDY_BYTES,
        }
    }
}

impl ParameterServerOptions {
    /// Round-robin placement and no partitioner.
    pub fn new() -> Result<ParameterServerOptions> {
        ParameterServerOptions::out(|o| unsafe { sys::dist_parameter_server_options_create(o) })
    }
    pub fn set_placement(&mut self, policy: PlacementPolicy) -> Result<()> {
        check(unsafe { sys::dist_parameter_server_options_set_placement(self.as_ptr(), policy.raw()) })
    }
    /// fixed_size_partitioner(num_shards, axis).
    pub fn set_fixed_shards(&mut self, num_shards: i64, axis: i32) -> Result<()> {
        check(unsafe { sys::dist_parameter_server_options_set_fixed_shards(self.as_ptr(), num_shards, axis) })
    }
    /// min_max_variable_partitioner(max_partitions, axis, min_slice_size bytes).
    pub fn set_min_max_shards(&mut self, max_partitions: i64, axis: i32, min_slice_size: i64) -> Result<()> {
        check(unsafe {
            sys::dist_parameter_server_options_set_min_max_shards(self.as_ptr(), max_partitions, axis, min_slice_size)
        })
    }
    /// variable_axis_size_partitioner(max_shard_bytes, axis, max_shards); max_shards 0: no limit.
    pub fn set_max_shard_bytes(&mut self, max_shard_bytes: i64, axis: i32, max_shards: i64) -> Result<()> {
        check(unsafe {
            sys::dist_parameter_server_options_set_max_shard_bytes(self.as_ptr(), max_shard_bytes, axis, max_shards)
        })
    }
    /// Back to no partitioner.
    pub fn clear_partitioner(&mut self) -> Result<()> {
        check(unsafe { sys::dist_parameter_server_options_clear_partitioner(self.as_ptr()) })
    }
}

impl Strategy {
    /// ParameterServerStrategy for this worker; `cluster` None reads TF_CONFIG (unset: local
    /// mode, the variables in this process); None options are the defaults.
    pub fn parameter_server(
        cluster: Option<&Cluster>,
        communication: Option<&CommunicationOptions>,
        options: Option<&ParameterServerOptions>,
    ) -> Result<Strategy> {
        let c = cluster.map_or(ptr::null(), |c| c.as_ptr() as *const _);
        let co = communication.map_or(ptr::null(), |o| o.as_ptr() as *const _);
        let po = options.map_or(ptr::null(), |o| o.as_ptr() as *const _);
        strategy_out(|o| unsafe { sys::dist_strategy_create_parameter_server(c, co, po, o) })
    }
}

/// A registered update function: `variables` are the variable and then its slots, whose
/// buffers are the stored values (write them in place, e.g. `write_from_slice`); `args` the
/// call's arguments; the hyperparameters resolved, in declaration order.
type UpdateFn = dyn Fn(&[Value], &[Value], &[(&str, f64)]) -> Result<()> + Send + Sync;

unsafe extern "C" fn registered_update_trampoline(
    variables: *const *mut sys::dist_value_t,
    num_variables: i32,
    args: *const *const sys::dist_value_t,
    num_args: i32,
    names: *const *const c_char,
    values: *const f64,
    num_hyperparameters: i32,
    ud: *mut c_void,
) -> sys::dist_status_t {
    let f = &*(ud as *const Box<UpdateFn>);
    let result = guarded("registered update function", || {
        let variables = Value::borrowed_slice(variables as *const *const sys::dist_value_t, num_variables)?;
        let args = Value::borrowed_slice(args, num_args)?;
        let mut hyperparameters = Vec::with_capacity(num_hyperparameters.max(0) as usize);
        for i in 0..num_hyperparameters.max(0) as usize {
            let name = CStr::from_ptr(*names.add(i))
                .to_str()
                .map_err(|_| Error::new(Code::Internal, "a hyperparameter name is not UTF-8"))?;
            hyperparameters.push((name, *values.add(i)));
        }
        f(variables, args, &hyperparameters)
    });
    match result {
        Ok(()) => sys::DIST_OK,
        Err(e) => e.status(),
    }
}

fn null_if_empty<T>(v: &[T]) -> *const T {
    if v.is_empty() {
        ptr::null()
    } else {
        v.as_ptr()
    }
}

/// Registers `f` as update function `name` in this process (`dist_function_register`):
/// `num_args` argument tensors, slot variables `(name, initial value)` and hyperparameters
/// `(name, default)` (`f64::NAN`: required). `f` runs where the variable lives (a ps task's
/// thread, or the caller's in local mode), must not call back into strategies or
/// variables, and is dropped when the function is unregistered. Its error reaches the
/// caller of `apply_update` with its code (the library keeps only the code).
pub fn register_update_function<F>(
    name: &str,
    num_args: i32,
    slots: &[(&str, f64)],
    hyperparameters: &[(&str, f64)],
    f: F,
) -> Result<()>
where
    F: Fn(&[Value], &[Value], &[(&str, f64)]) -> Result<()> + Send + Sync + 'static,
{
    let c_name = cstr(name)?;
    let slot_names: Vec<&str> = slots.iter().map(|s| s.0).collect();
    let slot_values: Vec<f64> = slots.iter().map(|s| s.1).collect();
    let hyper_names: Vec<&str> = hyperparameters.iter().map(|h| h.0).collect();
    let hyper_defaults: Vec<f64> = hyperparameters.iter().map(|h| h.1).collect();
    let (_slot_owned, slot_ptrs) = c_string_list(&slot_names)?;
    let (_hyper_owned, hyper_ptrs) = c_string_list(&hyper_names)?;
    let num_slots = len_i32(slots.len(), "slots")?;
    let num_hyperparameters = len_i32(hyperparameters.len(), "hyperparameters")?;
    let boxed: Box<Box<UpdateFn>> = Box::new(Box::new(f));
    let ud = Box::into_raw(boxed);
    let st = unsafe {
        sys::dist_function_register(
            c_name.as_ptr(),
            Some(registered_update_trampoline),
            ud as *mut c_void,
            Some(free_box::<Box<UpdateFn>>),
            num_args,
            null_if_empty(&slot_ptrs),
            null_if_empty(&slot_values),
            num_slots,
            null_if_empty(&hyper_ptrs),
            null_if_empty(&hyper_defaults),
            num_hyperparameters,
        )
    };
    if st != sys::DIST_OK {
        let e = crate::error::last_error(st);
        drop(unsafe { Box::from_raw(ud) }); // refused: the library did not keep it
        return Err(e);
    }
    Ok(())
}

/// `dist_function_unregister`: NotFound when absent, FailedPrecondition for a built-in.
pub fn unregister_update_function(name: &str) -> Result<()> {
    let c_name = cstr(name)?;
    check(unsafe { sys::dist_function_unregister(c_name.as_ptr()) })
}

/// `dist_function_is_registered`.
pub fn is_update_function_registered(name: &str) -> Result<bool> {
    let c_name = cstr(name)?;
    let mut out = 0;
    check(unsafe { sys::dist_function_is_registered(c_name.as_ptr(), &mut out) })?;
    Ok(out != 0)
}

/// The C arrays of `(name, value)` hyperparameters: the names (owned, and their pointers),
/// the values and their count.
struct HyperparameterArrays {
    _owned: Vec<std::ffi::CString>,
    names: Vec<*const c_char>,
    values: Vec<f64>,
    count: i32,
}

impl HyperparameterArrays {
    fn new(hyperparameters: &[(&str, f64)]) -> Result<HyperparameterArrays> {
        let names: Vec<&str> = hyperparameters.iter().map(|h| h.0).collect();
        let (owned, name_ptrs) = c_string_list(&names)?;
        Ok(HyperparameterArrays {
            _owned: owned,
            names: name_ptrs,
            values: hyperparameters.iter().map(|h| h.1).collect(),
            count: len_i32(hyperparameters.len(), "hyperparameters")?,
        })
    }
}

impl Value {
    /// Applies registered update `function` to this ParameterServerStrategy variable where
    /// it lives (`dist_variable_apply_update`); `hyperparameters` override the defaults.
    pub fn apply_update(&self, function: &str, args: &[&Value], hyperparameters: &[(&str, f64)]) -> Result<()> {
        let c_function = cstr(function)?;
        let a = raw_list(args);
        let n = len_i32(a.len(), "args")?;
        let h = HyperparameterArrays::new(hyperparameters)?;
        check(unsafe {
            sys::dist_variable_apply_update(
                self.as_ptr(),
                c_function.as_ptr(),
                null_if_empty(&a),
                n,
                null_if_empty(&h.names),
                null_if_empty(&h.values),
                h.count,
            )
        })
    }
    /// [`Value::apply_update`] on 1 to [`MAX_BATCH_VARIABLES`](crate::MAX_BATCH_VARIABLES)
    /// ParameterServerStrategy variables at once (`dist_variables_apply_update`): `args[i]`
    /// are `variables[i]`'s arguments, one row per variable and every row of the same length;
    /// one function and one set of hyperparameters for all. Each ps task gets one call for
    /// the shards it holds. A bad variable, argument or hyperparameter is refused before
    /// anything is applied; otherwise every update is attempted and the first failing
    /// entry's error ("variables[2]: ...") comes back, the others staying applied. Rows of
    /// another count or length are refused here (`InvalidArgument`) without calling C.
    pub fn apply_updates(
        variables: &[&Value],
        function: &str,
        args: &[&[&Value]],
        hyperparameters: &[(&str, f64)],
    ) -> Result<()> {
        if args.len() != variables.len() {
            return Err(Error::new(
                Code::InvalidArgument,
                format!(
                    "apply_updates: args has {} rows for {} variables: expected one row of arguments per variable",
                    args.len(),
                    variables.len()
                ),
            ));
        }
        let num_args = args.first().map_or(0, |row| row.len());
        if let Some((i, row)) = args.iter().enumerate().find(|(_, row)| row.len() != num_args) {
            return Err(Error::new(
                Code::InvalidArgument,
                format!(
                    "apply_updates: args[{}] has {} arguments but args[0] has {}: every row must have the same length",
                    i,
                    row.len(),
                    num_args
                ),
            ));
        }
        let c_function = cstr(function)?;
        let v: Vec<*mut sys::dist_value_t> = variables.iter().map(|v| v.as_ptr()).collect();
        let count = len_i32(v.len(), "variables")?;
        let a: Vec<*const sys::dist_value_t> = args.iter().flat_map(|row| raw_list(row)).collect();
        let n = len_i32(num_args, "args per variable")?;
        let h = HyperparameterArrays::new(hyperparameters)?;
        check(unsafe {
            sys::dist_variables_apply_update(
                v.as_ptr(),
                count,
                c_function.as_ptr(),
                null_if_empty(&a),
                n,
                null_if_empty(&h.names),
                null_if_empty(&h.values),
                h.count,
            )
        })
    }
    /// The number of shards of a ParameterServerStrategy variable (1 when unpartitioned).
    pub fn num_shards(&self) -> Result<i32> {
        let mut out = 0;
        check(unsafe { sys::dist_variable_num_shards(self.as_ptr(), &mut out) })?;
        Ok(out)
    }
    /// The ps task index holding shard `index`.
    pub fn shard_task(&self, index: i32) -> Result<i32> {
        let mut out = 0;
        check(unsafe { sys::dist_variable_shard_task(self.as_ptr(), index, &mut out) })?;
        Ok(out)
    }
}
