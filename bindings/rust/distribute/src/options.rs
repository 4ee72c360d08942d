//! Cross-device ops and communication options (cross_device_ops.h, strategy.h).

use std::ptr::{self, NonNull};

use crate::dataset::handle;
use crate::error::{check, Code, Error, Result};
use crate::sys;
use crate::types::*;
use crate::value::*;

handle!(
    /// A cross-device reduction algorithm (tf.distribute.CrossDeviceOps).
    CrossDeviceOps, sys::dist_cross_device_ops_t, sys::dist_cross_device_ops_destroy);
handle!(
    /// tf.distribute.experimental.CommunicationOptions.
    CommunicationOptions, sys::dist_communication_options_t, sys::dist_communication_options_destroy);

// SAFETY: creation and kind are thread-safe; destroy takes ownership.
unsafe impl Send for CrossDeviceOps {}
unsafe impl Sync for CrossDeviceOps {}
unsafe impl Send for CommunicationOptions {}

impl CrossDeviceOps {
    pub fn reduction_to_one_device(device: Option<&str>) -> Result<CrossDeviceOps> {
        let d = opt_cstr(device)?;
        CrossDeviceOps::out(|o| unsafe { sys::dist_cross_device_ops_create_reduction_to_one_device(opt_ptr(&d), o) })
    }
    pub fn hierarchical_copy(num_packs: i32) -> Result<CrossDeviceOps> {
        CrossDeviceOps::out(|o| unsafe { sys::dist_cross_device_ops_create_hierarchical_copy(num_packs, o) })
    }
    pub fn shared_memory(bytes_per_pack: i64) -> Result<CrossDeviceOps> {
        CrossDeviceOps::out(|o| unsafe { sys::dist_cross_device_ops_create_shared_memory(bytes_per_pack, o) })
    }
    /// NcclAllReduce; only a strategy over GPU replicas accepts it.
    pub fn nccl_all_reduce(num_packs: i32) -> Result<CrossDeviceOps> {
        CrossDeviceOps::out(|o| unsafe { sys::dist_cross_device_ops_create_nccl_all_reduce(num_packs, o) })
    }
    pub fn kind(&self) -> Result<CrossDeviceOpsKind> {
        let mut k = 0;
        check(unsafe { sys::dist_cross_device_ops_kind(self.as_ptr(), &mut k) })?;
        CrossDeviceOpsKind::from_lib(k)
    }
}

impl CommunicationOptions {
    pub fn new() -> Result<CommunicationOptions> {
        CommunicationOptions::out(|o| unsafe { sys::dist_communication_options_create(o) })
    }
    pub fn set_implementation(&mut self, implementation: CommunicationImplementation) -> Result<()> {
        check(unsafe { sys::dist_communication_options_set_implementation(self.as_ptr(), implementation.raw()) })
    }
    /// Shared memory between workers on one host: `Auto` (`DIST_SHARED_MEMORY`, else when
    /// they share it), `On` (required), `Off` (TCP).
    pub fn set_shared_memory(&mut self, mode: SharedMemoryMode) -> Result<()> {
        check(unsafe { sys::dist_communication_options_set_shared_memory(self.as_ptr(), mode.raw()) })
    }
    pub fn set_bytes_per_pack(&mut self, bytes: i64) -> Result<()> {
        check(unsafe { sys::dist_communication_options_set_bytes_per_pack(self.as_ptr(), bytes) })
    }
    pub fn set_timeout_ms(&mut self, timeout_ms: i64) -> Result<()> {
        check(unsafe { sys::dist_communication_options_set_timeout_ms(self.as_ptr(), timeout_ms) })
    }
    pub fn set_replicas_per_worker(&mut self, n: i32) -> Result<()> {
        check(unsafe { sys::dist_communication_options_set_replicas_per_worker(self.as_ptr(), n) })
    }
    /// The job token of the strategy's server (copied); `None` or `""`: `DIST_JOB_TOKEN`
    /// from the environment, or none.
    pub fn set_job_token(&mut self, token: Option<&str>) -> Result<()> {
        let t = opt_cstr(token)?;
        check(unsafe { sys::dist_communication_options_set_job_token(self.as_ptr(), opt_ptr(&t)) })
    }
    /// TLS for the strategy's server (paths copied): the same files and rules as
    /// [`ServerOptions::set_tls_files`](crate::ServerOptions::set_tls_files); the files are
    /// read when the strategy is created. All three `None` or `""`: the `DIST_TLS_*`
    /// environment variables, or none.
    pub fn set_tls_files(
        &mut self,
        cert_path: Option<&str>,
        key_path: Option<&str>,
        ca_path: Option<&str>,
    ) -> Result<()> {
        let [cert, key, ca] = tls_paths(cert_path, key_path, ca_path)?;
        check(unsafe {
            sys::dist_communication_options_set_tls_files(self.as_ptr(), opt_ptr(&cert), opt_ptr(&key), opt_ptr(&ca))
        })
    }
}
