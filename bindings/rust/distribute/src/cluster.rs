//! Devices, clusters and servers (device.h, cluster.h, server.h).

use std::ffi::c_void;
use std::ptr::{self, NonNull};

use crate::dataset::handle;
use crate::error::{check, Code, Error, Result};
use crate::sys;
use crate::types::*;
use crate::value::*;

handle!(
    /// A parsed TensorFlow device name.
    Device, sys::dist_device_t, sys::dist_device_destroy);
handle!(
    /// A cluster description: TF_CONFIG or an explicit spec.
    Cluster, sys::dist_cluster_t, sys::dist_cluster_destroy);
handle!(
    /// An in-process server for one task of a cluster.
    Server, sys::dist_server_t, sys::dist_server_destroy);
handle!(
    /// Timeouts of a server's startup and heartbeats.
    ServerOptions, sys::dist_server_options_t, sys::dist_server_options_destroy);

// SAFETY: these handles are used by one thread at a time (ownership moves between threads).
unsafe impl Send for Device {}
unsafe impl Sync for Device {}
unsafe impl Send for Cluster {}
unsafe impl Send for Server {}
// SAFETY: every server call but destroy is "Thread-safety: safe" (join waits for a stop from
// another thread).
unsafe impl Sync for Server {}
unsafe impl Send for ServerOptions {}

fn borrowed(f: impl FnOnce(*mut *const std::os::raw::c_char) -> sys::dist_status_t) -> Result<String> {
    let mut p = ptr::null();
    check(f(&mut p))?;
    Ok(unsafe { borrowed_str(p) })
}

fn int32(f: impl FnOnce(*mut i32) -> sys::dist_status_t) -> Result<i32> {
    let mut v = 0;
    check(f(&mut v))?;
    Ok(v)
}

impl Device {
    pub fn parse(name: &str) -> Result<Device> {
        let n = cstr(name)?;
        Device::out(|o| unsafe { sys::dist_device_parse(n.as_ptr(), o) })
    }
    pub fn name(&self) -> Result<String> {
        borrowed(|o| unsafe { sys::dist_device_name(self.as_ptr(), o) })
    }
    pub fn job(&self) -> Result<String> {
        borrowed(|o| unsafe { sys::dist_device_job(self.as_ptr(), o) })
    }
    pub fn replica(&self) -> Result<i32> {
        int32(|o| unsafe { sys::dist_device_replica(self.as_ptr(), o) })
    }
    pub fn task(&self) -> Result<i32> {
        int32(|o| unsafe { sys::dist_device_task(self.as_ptr(), o) })
    }
    pub fn device_type(&self) -> Result<DeviceType> {
        DeviceType::from_lib(int32(|o| unsafe { sys::dist_device_type(self.as_ptr(), o) })?)
    }
    pub fn index(&self) -> Result<i32> {
        int32(|o| unsafe { sys::dist_device_index(self.as_ptr(), o) })
    }
}

/// `dist_set_logical_cpu_device_count`.
pub fn set_logical_cpu_device_count(count: i32) -> Result<()> {
    check(unsafe { sys::dist_set_logical_cpu_device_count(count) })
}
/// `dist_local_device_count`.
pub fn local_device_count() -> Result<i32> {
    int32(|o| unsafe { sys::dist_local_device_count(o) })
}
/// `dist_local_device_get`.
pub fn local_device(index: i32) -> Result<Device> {
    Device::out(|o| unsafe { sys::dist_local_device_get(index, o) })
}
/// `dist_gpu_unavailable_reason` (empty when GPUs are usable).
pub fn gpu_unavailable_reason() -> Result<String> {
    borrowed(|o| unsafe { sys::dist_gpu_unavailable_reason(o) })
}
/// The library's version string (`dist_version`).
pub fn version() -> String {
    unsafe { borrowed_str(sys::dist_version()) }
}
/// `dist_version_number` (major * 10000 + minor * 100 + patch).
pub fn version_number() -> i32 {
    unsafe { sys::dist_version_number() }
}

impl Cluster {
    pub fn from_tf_config(json: &str) -> Result<Cluster> {
        let j = cstr(json)?;
        Cluster::out(|o| unsafe { sys::dist_cluster_from_tf_config(j.as_ptr(), o) })
    }
    /// The cluster of a Slurm job step for this task (`dist_cluster_from_slurm`, TF's
    /// SlurmClusterResolver): `jobs` are (name, task count) pairs, empty for every task a
    /// worker; `port_base` 0 means 8888; `tasks_per_node` 0 means Slurm's count.
    pub fn from_slurm(jobs: &[(&str, i32)], port_base: i32, tasks_per_node: i32) -> Result<Cluster> {
        let names = jobs.iter().map(|(n, _)| cstr(n)).collect::<Result<Vec<_>>>()?;
        let name_ptrs: Vec<*const std::os::raw::c_char> = names.iter().map(|n| n.as_ptr()).collect();
        let counts: Vec<i32> = jobs.iter().map(|(_, c)| *c).collect();
        let (np, cp) = if jobs.is_empty() {
            (std::ptr::null(), std::ptr::null())
        } else {
            (name_ptrs.as_ptr(), counts.as_ptr())
        };
        Cluster::out(|o| unsafe { sys::dist_cluster_from_slurm(np, cp, jobs.len() as i32, port_base, tasks_per_node, o) })
    }
    /// The cluster of a Kubernetes StatefulSet pod behind a headless service
    /// (`dist_cluster_from_statefulset`); `None` and 0 are read from POD_NAME/HOSTNAME,
    /// DIST_K8S_SERVICE, DIST_K8S_REPLICAS and DIST_K8S_PORT.
    pub fn from_statefulset(pod_name: Option<&str>, service: Option<&str>, replicas: i32, port: i32) -> Result<Cluster> {
        let pod = pod_name.map(cstr).transpose()?;
        let svc = service.map(cstr).transpose()?;
        let pp = pod.as_ref().map_or(std::ptr::null(), |c| c.as_ptr());
        let sp = svc.as_ref().map_or(std::ptr::null(), |c| c.as_ptr());
        Cluster::out(|o| unsafe { sys::dist_cluster_from_statefulset(pp, sp, replicas, port, o) })
    }
    pub fn new() -> Result<Cluster> {
        Cluster::out(|o| unsafe { sys::dist_cluster_create(o) })
    }
    pub fn add_task(&mut self, job: &str, index: i32, address: &str) -> Result<()> {
        let (j, a) = (cstr(job)?, cstr(address)?);
        check(unsafe { sys::dist_cluster_add_task(self.as_ptr(), j.as_ptr(), index, a.as_ptr()) })
    }
    pub fn set_task(&mut self, job: &str, index: i32) -> Result<()> {
        let j = cstr(job)?;
        check(unsafe { sys::dist_cluster_set_task(self.as_ptr(), j.as_ptr(), index) })
    }
    pub fn task_type(&self) -> Result<String> {
        borrowed(|o| unsafe { sys::dist_cluster_task_type(self.as_ptr(), o) })
    }
    pub fn task_index(&self) -> Result<i32> {
        int32(|o| unsafe { sys::dist_cluster_task_index(self.as_ptr(), o) })
    }
    pub fn is_chief(&self) -> Result<bool> {
        Ok(int32(|o| unsafe { sys::dist_cluster_is_chief(self.as_ptr(), o) })? != 0)
    }
    pub fn num_workers(&self) -> Result<i32> {
        int32(|o| unsafe { sys::dist_cluster_num_workers(self.as_ptr(), o) })
    }
    pub fn num_tasks(&self, job: &str) -> Result<i32> {
        let j = cstr(job)?;
        int32(|o| unsafe { sys::dist_cluster_num_tasks(self.as_ptr(), j.as_ptr(), o) })
    }
    pub fn task_index_at(&self, job: &str, position: i32) -> Result<i32> {
        let j = cstr(job)?;
        int32(|o| unsafe { sys::dist_cluster_task_index_at(self.as_ptr(), j.as_ptr(), position, o) })
    }
    pub fn task_address(&self, job: &str, index: i32) -> Result<String> {
        let j = cstr(job)?;
        borrowed(|o| unsafe { sys::dist_cluster_task_address(self.as_ptr(), j.as_ptr(), index, o) })
    }
    /// TF_CONFIG's "rpc_layer" ("" when none).
    pub fn rpc_layer(&self) -> Result<String> {
        borrowed(|o| unsafe { sys::dist_cluster_rpc_layer(self.as_ptr(), o) })
    }
    /// TF_CONFIG's "environment" ("" when none).
    pub fn environment(&self) -> Result<String> {
        borrowed(|o| unsafe { sys::dist_cluster_environment(self.as_ptr(), o) })
    }
    /// TFConfigClusterResolver.master(): the current task's address, with the rpc layer
    /// as a scheme when there is one ("" for a single task or no current task).
    pub fn master(&self) -> Result<String> {
        borrowed(|o| unsafe { sys::dist_cluster_master(self.as_ptr(), o) })
    }
}

impl ServerOptions {
    pub fn new() -> Result<ServerOptions> {
        ServerOptions::out(|o| unsafe { sys::dist_server_options_create(o) })
    }
    pub fn set_startup_timeout_ms(&mut self, ms: i64) -> Result<()> {
        check(unsafe { sys::dist_server_options_set_startup_timeout_ms(self.as_ptr(), ms) })
    }
    pub fn set_heartbeat_interval_ms(&mut self, ms: i64) -> Result<()> {
        check(unsafe { sys::dist_server_options_set_heartbeat_interval_ms(self.as_ptr(), ms) })
    }
    pub fn set_heartbeat_timeout_ms(&mut self, ms: i64) -> Result<()> {
        check(unsafe { sys::dist_server_options_set_heartbeat_timeout_ms(self.as_ptr(), ms) })
    }
    /// The job token (copied); `None` or `""`: `DIST_JOB_TOKEN` from the environment when
    /// the server starts, or none.
    pub fn set_job_token(&mut self, token: Option<&str>) -> Result<()> {
        let t = opt_cstr(token)?;
        check(unsafe { sys::dist_server_options_set_job_token(self.as_ptr(), opt_ptr(&t)) })
    }
    pub fn set_allow_unauthenticated(&mut self, allow: bool) -> Result<()> {
        check(unsafe { sys::dist_server_options_set_allow_unauthenticated(self.as_ptr(), allow as i32) })
    }
    /// TLS for this task's server and its connection to the chief (paths copied): this
    /// task's certificate chain and unencrypted private key (PEM files), and the CAs to
    /// trust (`None` or `""`: none; set, TLS is mutual). All three `None` or `""`: the
    /// `DIST_TLS_CERT`, `DIST_TLS_KEY` and `DIST_TLS_CA` environment variables, or no TLS.
    /// The files are read by [`Server::new`] (a missing one is `NotFound`, a bad one
    /// `InvalidArgument`, naming it); a certificate without a key, a key without a
    /// certificate or a CA alone is `InvalidArgument` here and changes nothing.
    pub fn set_tls_files(
        &mut self,
        cert_path: Option<&str>,
        key_path: Option<&str>,
        ca_path: Option<&str>,
    ) -> Result<()> {
        let [cert, key, ca] = tls_paths(cert_path, key_path, ca_path)?;
        check(unsafe {
            sys::dist_server_options_set_tls_files(self.as_ptr(), opt_ptr(&cert), opt_ptr(&key), opt_ptr(&ca))
        })
    }
    /// Sets one bound of the server (`dist_server_options_set_limit`; server.h gives the
    /// ranges). A value out of range is `InvalidArgument` naming the bound and changes
    /// nothing; bounds that depend on each other are checked by [`Server::new`].
    pub fn set_limit(&mut self, limit: ServerLimit, value: i64) -> Result<()> {
        self.set_limit_raw(limit.raw(), value)
    }
    /// [`ServerOptions::set_limit`] by the C constant (`DIST_SERVER_LIMIT_*`), for a bound
    /// newer than this binding; one the library does not know is `InvalidArgument`.
    pub fn set_limit_raw(&mut self, limit: i32, value: i64) -> Result<()> {
        check(unsafe { sys::dist_server_options_set_limit(self.as_ptr(), limit, value) })
    }
    /// The bound these options give (`dist_server_options_get_limit`): what was set, else its
    /// default (0 for the connection caps and pending waits, whose defaults follow the cluster).
    pub fn limit(&self, limit: ServerLimit) -> Result<i64> {
        self.limit_raw(limit.raw())
    }
    /// [`ServerOptions::limit`] by the C constant; one the library does not know is
    /// `InvalidArgument`.
    pub fn limit_raw(&self, limit: i32) -> Result<i64> {
        let mut v = 0i64;
        check(unsafe { sys::dist_server_options_get_limit(self.as_ptr(), limit, &mut v) })?;
        Ok(v)
    }
}

impl Server {
    pub fn new(cluster: &Cluster, options: Option<&ServerOptions>) -> Result<Server> {
        let op = options.map_or(ptr::null(), |o| o.as_ptr() as *const _);
        Server::out(|o| unsafe { sys::dist_server_create(cluster.as_ptr(), op, o) })
    }
    pub fn port(&self) -> Result<i32> {
        int32(|o| unsafe { sys::dist_server_port(self.as_ptr(), o) })
    }
    pub fn stop(&self) -> Result<()> {
        check(unsafe { sys::dist_server_stop(self.as_ptr()) })
    }
    pub fn join(&self) -> Result<()> {
        check(unsafe { sys::dist_server_join(self.as_ptr()) })
    }
    pub fn key_value_set(&self, key: &str, value: &[u8]) -> Result<()> {
        let k = cstr(key)?;
        check(unsafe {
            sys::dist_server_key_value_set(self.as_ptr(), k.as_ptr(), value.as_ptr() as *const c_void, value.len())
        })
    }
    /// The value as a uint8 tensor.
    pub fn key_value_get(&self, key: &str, timeout_ms: i64) -> Result<Value> {
        let k = cstr(key)?;
        Value::out(|o| unsafe { sys::dist_server_key_value_get(self.as_ptr(), k.as_ptr(), timeout_ms, o) })
    }
    pub fn barrier(&self, name: &str, timeout_ms: i64) -> Result<()> {
        let n = cstr(name)?;
        check(unsafe { sys::dist_server_barrier(self.as_ptr(), n.as_ptr(), timeout_ms) })
    }
    pub fn peer_health(&self) -> Result<()> {
        check(unsafe { sys::dist_server_peer_health(self.as_ptr()) })
    }
}
