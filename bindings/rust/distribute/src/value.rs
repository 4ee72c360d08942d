//! Values: tensors, distributed values and variables (value.h, tensor.h, variable.h).

use std::ffi::{c_void, CStr, CString};
use std::ptr::{self, NonNull};

use crate::error::{check, Code, Error, Result};
use crate::strategy::collect_outs;
use crate::sys;
use crate::types::*;

/// `DIST_MAX_BATCH_VARIABLES`: the most variables one [`Value::read_variables`] or
/// [`Value::apply_updates`] takes.
pub const MAX_BATCH_VARIABLES: usize = sys::DIST_MAX_BATCH_VARIABLES as usize;

/// An owned `dist_value_t*`: a tensor, a distributed value (PerReplica, Mirrored) or a
/// variable. `Drop` calls `dist_value_destroy`. `#[repr(transparent)]`, so a borrowed C
/// array of values is a `&[Value]` without copying.
#[repr(transparent)]
#[derive(Debug)]
pub struct Value {
    raw: NonNull<sys::dist_value_t>,
}

// SAFETY: values are immutable handles to reference-counted storage; every call but destroy
// is "Thread-safety: safe", and destroy needs `self` by value (one thread).
unsafe impl Send for Value {}
unsafe impl Sync for Value {}

impl Drop for Value {
    fn drop(&mut self) {
        unsafe { sys::dist_value_destroy(self.raw.as_ptr()) }
    }
}

pub(crate) fn cstr(s: &str) -> Result<CString> {
    CString::new(s).map_err(|_| Error::new(Code::InvalidArgument, format!("string {:?} contains a NUL byte", s)))
}

pub(crate) fn opt_cstr(s: Option<&str>) -> Result<Option<CString>> {
    s.map(cstr).transpose()
}

/// The certificate, key and CA paths of the two `set_tls_files` setters as C strings.
pub(crate) fn tls_paths(cert: Option<&str>, key: Option<&str>, ca: Option<&str>) -> Result<[Option<CString>; 3]> {
    Ok([opt_cstr(cert)?, opt_cstr(key)?, opt_cstr(ca)?])
}

pub(crate) fn opt_ptr(s: &Option<CString>) -> *const std::os::raw::c_char {
    s.as_ref().map_or(ptr::null(), |c| c.as_ptr())
}

/// Copies a borrowed C string (NULL gives "").
pub(crate) unsafe fn borrowed_str(p: *const std::os::raw::c_char) -> String {
    if p.is_null() {
        String::new()
    } else {
        CStr::from_ptr(p).to_string_lossy().into_owned()
    }
}

pub(crate) fn len_i32(n: usize, what: &str) -> Result<i32> {
    i32::try_from(n).map_err(|_| Error::new(Code::InvalidArgument, format!("too many {} ({})", what, n)))
}

/// Raw pointers of borrowed values, for `const dist_value_t* const*` parameters.
pub(crate) fn raw_list(values: &[&Value]) -> Vec<*const sys::dist_value_t> {
    values.iter().map(|v| v.as_ptr() as *const _).collect()
}

impl Value {
    /// Takes ownership of a raw handle (NULL gives None).
    ///
    /// # Safety
    /// `raw` must be an owned `dist_value_t*` no one else destroys.
    pub unsafe fn from_raw(raw: *mut sys::dist_value_t) -> Option<Value> {
        NonNull::new(raw).map(|raw| Value { raw })
    }
    /// Gives up ownership: the caller must destroy the handle.
    pub fn into_raw(self) -> *mut sys::dist_value_t {
        let p = self.raw.as_ptr();
        std::mem::forget(self);
        p
    }
    pub fn as_ptr(&self) -> *mut sys::dist_value_t {
        self.raw.as_ptr()
    }
    /// A slice over a borrowed C array of non-NULL values.
    ///
    /// # Safety
    /// `ptr` must point at `n` valid non-NULL handles that outlive `'a`.
    pub(crate) unsafe fn borrowed_slice<'a>(ptr: *const *const sys::dist_value_t, n: i32) -> Result<&'a [Value]> {
        if n <= 0 || ptr.is_null() {
            return Ok(&[]);
        }
        let raw = std::slice::from_raw_parts(ptr, n as usize);
        if raw.iter().any(|p| p.is_null()) {
            return Err(Error::new(Code::Internal, "the library passed a NULL value to a callback"));
        }
        Ok(std::slice::from_raw_parts(ptr as *const Value, n as usize))
    }
    /// A borrowed `&Value` over a borrowed non-NULL handle.
    pub(crate) unsafe fn borrowed<'a>(p: &'a *mut sys::dist_value_t) -> &'a Value {
        &*(p as *const *mut sys::dist_value_t as *const Value)
    }

    pub(crate) fn out(f: impl FnOnce(*mut *mut sys::dist_value_t) -> sys::dist_status_t) -> Result<Value> {
        let mut out = ptr::null_mut();
        check(f(&mut out))?;
        unsafe { Value::from_raw(out) }
            .ok_or_else(|| Error::new(Code::Internal, "the library returned OK and no value"))
    }

    // ---- Tensors ----

    /// A tensor holding a copy of `data` (`dist_tensor_create`); `device` None is "CPU:0".
    pub fn from_slice<T: Element>(data: &[T], shape: &[i64], device: Option<&str>) -> Result<Value> {
        Self::from_bytes_raw(T::DTYPE.raw(), shape, data.as_ptr() as *const c_void, std::mem::size_of_val(data), device)
    }
    /// A scalar tensor.
    pub fn scalar<T: Element>(v: T, device: Option<&str>) -> Result<Value> {
        Self::from_slice(&[v], &[], device)
    }
    /// A tensor from raw bytes of any dtype (bool, float16, bfloat16 ...).
    pub fn from_bytes(dtype: DType, shape: &[i64], bytes: &[u8], device: Option<&str>) -> Result<Value> {
        Self::from_bytes_raw(dtype.raw(), shape, bytes.as_ptr() as *const c_void, bytes.len(), device)
    }
    /// A zero-filled tensor.
    pub fn zeros(dtype: DType, shape: &[i64], device: Option<&str>) -> Result<Value> {
        Self::from_bytes_raw(dtype.raw(), shape, ptr::null(), 0, device)
    }
    /// `dist_tensor_create` with a raw dtype (invalid ones are the library's error).
    pub fn from_bytes_raw(
        dtype: i32,
        shape: &[i64],
        data: *const c_void,
        byte_size: usize,
        device: Option<&str>,
    ) -> Result<Value> {
        let dev = opt_cstr(device)?;
        let rank = len_i32(shape.len(), "dimensions")?;
        let data = if byte_size == 0 { ptr::null() } else { data };
        Value::out(|o| unsafe {
            sys::dist_tensor_create(
                dtype,
                if shape.is_empty() { ptr::null() } else { shape.as_ptr() },
                rank,
                data,
                byte_size,
                opt_ptr(&dev),
                o,
            )
        })
    }
    /// A host tensor that borrows `data` without copying (`dist_tensor_wrap`): the Vec is
    /// kept alive until the last value sharing it is destroyed, then dropped by the release
    /// callback.
    pub fn wrap<T: Element>(data: Vec<T>, shape: &[i64], device: Option<&str>) -> Result<Value> {
        unsafe extern "C" fn release<T>(_data: *mut c_void, user_data: *mut c_void) {
            drop(Box::from_raw(user_data as *mut Vec<T>));
        }
        let dev = opt_cstr(device)?;
        let rank = len_i32(shape.len(), "dimensions")?;
        let mut boxed = Box::new(data);
        let bytes = std::mem::size_of_val(boxed.as_slice());
        let p = if bytes == 0 { ptr::null_mut() } else { boxed.as_mut_ptr() as *mut c_void };
        let ud = Box::into_raw(boxed);
        let mut out = ptr::null_mut();
        let st = unsafe {
            sys::dist_tensor_wrap(
                T::DTYPE.raw(),
                if shape.is_empty() { ptr::null() } else { shape.as_ptr() },
                rank,
                p,
                bytes,
                opt_ptr(&dev),
                Some(release::<T>),
                ud as *mut c_void,
                &mut out,
            )
        };
        if st != sys::DIST_OK {
            let e = crate::error::last_error(st);
            drop(unsafe { Box::from_raw(ud) }); // on failure the caller keeps the data
            return Err(e);
        }
        unsafe { Value::from_raw(out) }.ok_or_else(|| Error::new(Code::Internal, "no value"))
    }

    pub fn dtype(&self) -> Result<DType> {
        let mut d = 0;
        check(unsafe { sys::dist_tensor_dtype(self.as_ptr(), &mut d) })?;
        DType::from_lib(d)
    }
    pub fn rank(&self) -> Result<i32> {
        let mut r = 0;
        check(unsafe { sys::dist_tensor_rank(self.as_ptr(), &mut r) })?;
        Ok(r)
    }
    pub fn shape(&self) -> Result<Vec<i64>> {
        let r = self.rank()?;
        let mut dims = vec![0i64; r as usize];
        check(unsafe {
            sys::dist_tensor_shape(self.as_ptr(), if r == 0 { ptr::null_mut() } else { dims.as_mut_ptr() }, r)
        })?;
        Ok(dims)
    }
    pub fn num_elements(&self) -> Result<i64> {
        let mut n = 0;
        check(unsafe { sys::dist_tensor_num_elements(self.as_ptr(), &mut n) })?;
        Ok(n)
    }
    pub fn byte_size(&self) -> Result<usize> {
        let mut n = 0;
        check(unsafe { sys::dist_tensor_byte_size(self.as_ptr(), &mut n) })?;
        Ok(n)
    }
    /// The tensor's buffer (`dist_tensor_data`), borrowed: valid while a value sharing it
    /// lives. Raw, because other values sharing the buffer may write it; for a tensor on a
    /// GPU it is device memory, which host code must not dereference (the slice and byte
    /// functions below refuse such a tensor).
    pub fn data_ptr(&self) -> Result<*mut c_void> {
        let mut p = ptr::null_mut();
        check(unsafe { sys::dist_tensor_data(self.as_ptr(), &mut p) })?;
        Ok(p)
    }
    /// The buffer of a host tensor, for `op`; a GPU tensor's buffer is device memory, which
    /// the slice functions must not touch: FAILED_PRECONDITION (copy it to the host first).
    /// A tensor's canonical device name has "/device:GPU:" exactly when its buffer is device
    /// memory (a job name cannot hold a '/').
    fn host_ptr(&self, op: &str) -> Result<*mut c_void> {
        let device = self.device()?;
        if device.contains("/device:GPU:") {
            return Err(Error::new(
                Code::FailedPrecondition,
                format!(
                    "Value::{}: the tensor is on {}, in device memory: copy it to the host first \
                     (copy_to_device(\"CPU:0\"))",
                    op, device
                ),
            ));
        }
        self.data_ptr()
    }
    /// The element count of a tensor of T's dtype, for `op`; another dtype is
    /// INVALID_ARGUMENT naming both (nothing is converted).
    fn check_dtype<T: Element>(&self, op: &str) -> Result<usize> {
        let d = self.dtype()?;
        if d != T::DTYPE {
            return Err(Error::new(
                Code::InvalidArgument,
                format!("Value::{}: the tensor is {}, asked for {}", op, d.name(), T::DTYPE.name()),
            ));
        }
        Ok(self.num_elements()? as usize)
    }
    /// Copies the host tensor's elements into a Vec. T must be the tensor's dtype, else
    /// INVALID_ARGUMENT naming both; a tensor on a GPU is FAILED_PRECONDITION (copy it to
    /// the host with `copy_to_device("CPU:0")`, or read one element with `scalar_f32` and
    /// the other scalar reads, which copy it themselves). The dtype is checked first.
    pub fn to_vec<T: Element>(&self) -> Result<Vec<T>> {
        let n = self.check_dtype::<T>("to_vec")?;
        let mut v = vec![T::default(); n];
        self.copy_elements("to_vec", &mut v)?;
        Ok(v)
    }
    /// Copies the host tensor's elements into `out` (its length must be the element count),
    /// checked as `to_vec`.
    pub fn copy_to_slice<T: Element>(&self, out: &mut [T]) -> Result<()> {
        let n = self.check_dtype::<T>("copy_to_slice")?;
        if out.len() != n {
            return Err(Error::new(Code::InvalidArgument, format!("slice has {} elements, tensor {}", out.len(), n)));
        }
        self.copy_elements("copy_to_slice", out)
    }
    fn copy_elements<T: Element>(&self, op: &str, out: &mut [T]) -> Result<()> {
        let p = self.host_ptr(op)?;
        if !out.is_empty() {
            unsafe { ptr::copy_nonoverlapping(p as *const T, out.as_mut_ptr(), out.len()) };
        }
        Ok(())
    }
    /// Writes `data` into the host tensor's buffer in place (every value sharing it sees it),
    /// checked as `to_vec`.
    pub fn write_from_slice<T: Element>(&self, data: &[T]) -> Result<()> {
        let n = self.check_dtype::<T>("write_from_slice")?;
        if data.len() != n {
            return Err(Error::new(Code::InvalidArgument, format!("slice has {} elements, tensor {}", data.len(), n)));
        }
        let p = self.host_ptr("write_from_slice")?;
        if n > 0 {
            unsafe { ptr::copy_nonoverlapping(data.as_ptr(), p as *mut T, n) };
        }
        Ok(())
    }
    /// A copy of the host tensor's bytes (any dtype); a tensor on a GPU is
    /// FAILED_PRECONDITION.
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        let n = self.byte_size()?;
        let p = self.host_ptr("to_bytes")?;
        let mut v = vec![0u8; n];
        if n > 0 {
            unsafe { ptr::copy_nonoverlapping(p as *const u8, v.as_mut_ptr(), n) };
        }
        Ok(v)
    }
    /// The canonical name of the tensor's device.
    pub fn device(&self) -> Result<String> {
        let mut p = ptr::null();
        check(unsafe { sys::dist_tensor_device(self.as_ptr(), &mut p) })?;
        Ok(unsafe { borrowed_str(p) })
    }
    pub fn copy_to_device(&self, device: &str) -> Result<Value> {
        let d = cstr(device)?;
        Value::out(|o| unsafe { sys::dist_tensor_copy_to_device(self.as_ptr(), d.as_ptr(), o) })
    }
    pub fn scalar_f32(&self) -> Result<f32> {
        let mut v = 0.0;
        check(unsafe { sys::dist_tensor_scalar_float32(self.as_ptr(), &mut v) })?;
        Ok(v)
    }
    pub fn scalar_f64(&self) -> Result<f64> {
        let mut v = 0.0;
        check(unsafe { sys::dist_tensor_scalar_float64(self.as_ptr(), &mut v) })?;
        Ok(v)
    }
    pub fn scalar_i32(&self) -> Result<i32> {
        let mut v = 0;
        check(unsafe { sys::dist_tensor_scalar_int32(self.as_ptr(), &mut v) })?;
        Ok(v)
    }
    pub fn scalar_i64(&self) -> Result<i64> {
        let mut v = 0;
        check(unsafe { sys::dist_tensor_scalar_int64(self.as_ptr(), &mut v) })?;
        Ok(v)
    }
    /// `dist_tensor_to_dlpack`: the caller owns the result and calls its deleter.
    pub fn to_dlpack(&self) -> Result<*mut sys::DLManagedTensor> {
        let mut out = ptr::null_mut();
        check(unsafe { sys::dist_tensor_to_dlpack(self.as_ptr(), &mut out) })?;
        Ok(out)
    }
    /// `dist_tensor_from_dlpack`.
    ///
    /// # Safety
    /// `managed` must be a valid DLManagedTensor; on success the library owns it.
    pub unsafe fn from_dlpack(managed: *mut sys::DLManagedTensor) -> Result<Value> {
        Value::out(|o| sys::dist_tensor_from_dlpack(managed, o))
    }

    // ---- Values ----

    pub fn kind(&self) -> Result<ValueKind> {
        let mut k = 0;
        check(unsafe { sys::dist_value_kind(self.as_ptr(), &mut k) })?;
        ValueKind::from_lib(k)
    }
    pub fn num_components(&self) -> Result<i32> {
        let mut n = 0;
        check(unsafe { sys::dist_value_num_components(self.as_ptr(), &mut n) })?;
        Ok(n)
    }
    pub fn component(&self, index: i32) -> Result<Value> {
        Value::out(|o| unsafe { sys::dist_value_component(self.as_ptr(), index, o) })
    }
    pub fn component_tensor(&self, index: i32) -> Result<Value> {
        Value::out(|o| unsafe { sys::dist_value_component_tensor(self.as_ptr(), index, o) })
    }
    pub fn per_replica(components: &[&Value]) -> Result<Value> {
        let raw = raw_list(components);
        let n = len_i32(raw.len(), "components")?;
        Value::out(|o| unsafe { sys::dist_value_create_per_replica(raw.as_ptr(), n, o) })
    }
    pub fn mirrored(components: &[&Value]) -> Result<Value> {
        let raw = raw_list(components);
        let n = len_i32(raw.len(), "components")?;
        Value::out(|o| unsafe { sys::dist_value_create_mirrored(raw.as_ptr(), n, o) })
    }

    // ---- Variables ----

    /// A variable of the current strategy (`dist_variable_create`).
    pub fn new_variable(
        initial_value: &Value,
        sync: VariableSync,
        aggregation: VariableAggregation,
        name: Option<&str>,
    ) -> Result<Value> {
        let n = opt_cstr(name)?;
        Value::out(|o| unsafe {
            sys::dist_variable_create(initial_value.as_ptr(), sync.raw(), aggregation.raw(), opt_ptr(&n), o)
        })
    }
    pub fn read(&self) -> Result<Value> {
        Value::out(|o| unsafe { sys::dist_variable_read(self.as_ptr(), o) })
    }
    /// Reads 1 to [`MAX_BATCH_VARIABLES`] variables at once (`dist_variables_read`), each as
    /// [`Value::read`] does, in order. A ParameterServerStrategy's variables are fetched with
    /// one call per ps task; others are read one by one. Each value is a snapshot, the batch
    /// is not. A variable may appear more than once. An error names the entry
    /// ("variables[2]: ...") and no value comes back.
    pub fn read_variables(variables: &[&Value]) -> Result<Vec<Value>> {
        let raw = raw_list(variables);
        let n = len_i32(raw.len(), "variables")?;
        let mut outs = vec![ptr::null_mut(); raw.len()];
        let st = unsafe { sys::dist_variables_read(raw.as_ptr(), n, outs.as_mut_ptr()) };
        collect_outs(st, outs)
    }
    pub fn assign(&self, value: &Value) -> Result<()> {
        check(unsafe { sys::dist_variable_assign(self.as_ptr(), value.as_ptr()) })
    }
    pub fn assign_add(&self, value: &Value) -> Result<()> {
        check(unsafe { sys::dist_variable_assign_add(self.as_ptr(), value.as_ptr()) })
    }
    pub fn assign_sub(&self, value: &Value) -> Result<()> {
        check(unsafe { sys::dist_variable_assign_sub(self.as_ptr(), value.as_ptr()) })
    }
    pub fn variable_name(&self) -> Result<String> {
        let mut p = ptr::null();
        check(unsafe { sys::dist_variable_name(self.as_ptr(), &mut p) })?;
        Ok(unsafe { borrowed_str(p) })
    }
    pub fn variable_device_count(&self) -> Result<i32> {
        let mut n = 0;
        check(unsafe { sys::dist_variable_device_count(self.as_ptr(), &mut n) })?;
        Ok(n)
    }
    pub fn variable_device(&self, index: i32) -> Result<String> {
        let mut p = ptr::null();
        check(unsafe { sys::dist_variable_device(self.as_ptr(), index, &mut p) })?;
        Ok(unsafe { borrowed_str(p) })
    }
    pub fn synchronization(&self) -> Result<VariableSync> {
        let mut v = 0;
        check(unsafe { sys::dist_variable_synchronization(self.as_ptr(), &mut v) })?;
        VariableSync::from_lib(v)
    }
    pub fn aggregation(&self) -> Result<VariableAggregation> {
        let mut v = 0;
        check(unsafe { sys::dist_variable_aggregation(self.as_ptr(), &mut v) })?;
        VariableAggregation::from_lib(v)
    }
}
