package distribute

/*
#include "shim.h"
*/
import "C"

import (
	"runtime"
	"unsafe"
)

// ---- Devices ----

// DeviceType is a dist_device_type_t.
type DeviceType int32

// Device types.
const (
	DeviceCPU DeviceType = C.DIST_DEVICE_CPU
	DeviceGPU DeviceType = C.DIST_DEVICE_GPU
)

// MaxLogicalCPUDevices is DIST_MAX_LOGICAL_CPU_DEVICES.
const MaxLogicalCPUDevices = C.DIST_MAX_LOGICAL_CPU_DEVICES

// Device is a parsed device name (dist_device_t).
type Device struct{ p *C.dist_device_t }

func (d *Device) ptr() *C.dist_device_t {
	if d == nil {
		return nil
	}
	return d.p
}

func newDevice(p *C.dist_device_t) *Device {
	d := &Device{p: p}
	runtime.SetFinalizer(d, finalizeDevice)
	return d
}

// ParseDevice (dist_device_parse).
func ParseDevice(name string) (*Device, error) {
	n := C.CString(name)
	defer C.free(unsafe.Pointer(n))
	var out *C.dist_device_t
	err := call("dist_device_parse", func() C.dist_status_t { return C.dist_device_parse(n, &out) })
	if err != nil {
		return nil, err
	}
	return newDevice(out), nil
}

// Close (dist_device_destroy).
func (d *Device) Close() {
	if d == nil || d.p == nil {
		return
	}
	runtime.SetFinalizer(d, nil)
	C.dist_device_destroy(d.p)
	d.p = nil
}

// Name is the canonical name (dist_device_name).
func (d *Device) Name() (string, error) {
	return callString("dist_device_name", func(s **C.char) C.dist_status_t { return C.dist_device_name(d.ptr(), s) }, d)
}

// Job (dist_device_job).
func (d *Device) Job() (string, error) {
	return callString("dist_device_job", func(s **C.char) C.dist_status_t { return C.dist_device_job(d.ptr(), s) }, d)
}

func (d *Device) int32Prop(op string, f func(*C.int32_t) C.dist_status_t) (int, error) {
	var x C.int32_t
	err := call(op, func() C.dist_status_t { return f(&x) }, d)
	return int(x), err
}

// Replica (dist_device_replica).
func (d *Device) Replica() (int, error) {
	return d.int32Prop("dist_device_replica", func(x *C.int32_t) C.dist_status_t { return C.dist_device_replica(d.ptr(), x) })
}

// Task (dist_device_task).
func (d *Device) Task() (int, error) {
	return d.int32Prop("dist_device_task", func(x *C.int32_t) C.dist_status_t { return C.dist_device_task(d.ptr(), x) })
}

// Type (dist_device_type).
func (d *Device) Type() (DeviceType, error) {
	var x C.dist_device_type_t
	err := call("dist_device_type", func() C.dist_status_t { return C.dist_device_type(d.ptr(), &x) }, d)
	return DeviceType(x), err
}

// Index (dist_device_index).
func (d *Device) Index() (int, error) {
	return d.int32Prop("dist_device_index", func(x *C.int32_t) C.dist_status_t { return C.dist_device_index(d.ptr(), x) })
}

// SetLogicalCPUDeviceCount (dist_set_logical_cpu_device_count).
func SetLogicalCPUDeviceCount(n int) error {
	return call("dist_set_logical_cpu_device_count", func() C.dist_status_t { return C.dist_set_logical_cpu_device_count(C.int32_t(n)) })
}

// LocalDeviceCount (dist_local_device_count).
func LocalDeviceCount() (int, error) {
	var n C.int32_t
	err := call("dist_local_device_count", func() C.dist_status_t { return C.dist_local_device_count(&n) })
	return int(n), err
}

// LocalDevice i (dist_local_device_get).
func LocalDevice(i int) (*Device, error) {
	var out *C.dist_device_t
	err := call("dist_local_device_get", func() C.dist_status_t { return C.dist_local_device_get(C.int32_t(i), &out) })
	if err != nil {
		return nil, err
	}
	return newDevice(out), nil
}

// GPUUnavailableReason (dist_gpu_unavailable_reason).
func GPUUnavailableReason() (string, error) {
	return callString("dist_gpu_unavailable_reason", func(s **C.char) C.dist_status_t { return C.dist_gpu_unavailable_reason(s) })
}

// ---- Cross-device ops ----

// CrossDeviceOpsKind is a dist_cross_device_ops_kind_t.
type CrossDeviceOpsKind int32

// Cross-device ops kinds.
const (
	ReductionToOneDevice CrossDeviceOpsKind = C.DIST_CROSS_DEVICE_OPS_REDUCTION_TO_ONE_DEVICE
	HierarchicalCopy     CrossDeviceOpsKind = C.DIST_CROSS_DEVICE_OPS_HIERARCHICAL_COPY
	SharedMemory         CrossDeviceOpsKind = C.DIST_CROSS_DEVICE_OPS_SHARED_MEMORY
	NcclAllReduce        CrossDeviceOpsKind = C.DIST_CROSS_DEVICE_OPS_NCCL_ALL_REDUCE
)

// CrossDeviceOps is a dist_cross_device_ops_t.
type CrossDeviceOps struct{ p *C.dist_cross_device_ops_t }

func (o *CrossDeviceOps) ptr() *C.dist_cross_device_ops_t {
	if o == nil {
		return nil
	}
	return o.p
}

func newCrossDeviceOps(p *C.dist_cross_device_ops_t) *CrossDeviceOps {
	o := &CrossDeviceOps{p: p}
	runtime.SetFinalizer(o, finalizeCrossDeviceOps)
	return o
}

func newCDO(op string, f func(**C.dist_cross_device_ops_t) C.dist_status_t) (*CrossDeviceOps, error) {
	var out *C.dist_cross_device_ops_t
	err := call(op, func() C.dist_status_t { return f(&out) })
	if err != nil {
		return nil, err
	}
	return newCrossDeviceOps(out), nil
}

// NewReductionToOneDevice (dist_cross_device_ops_create_reduction_to_one_device); "" is the first replica's device.
func NewReductionToOneDevice(device string) (*CrossDeviceOps, error) {
	d := cStr(device)
	defer freeStr(d)
	return newCDO("dist_cross_device_ops_create_reduction_to_one_device", func(o **C.dist_cross_device_ops_t) C.dist_status_t {
		return C.dist_cross_device_ops_create_reduction_to_one_device(d, o)
	})
}

// NewHierarchicalCopy (dist_cross_device_ops_create_hierarchical_copy).
func NewHierarchicalCopy(numPacks int) (*CrossDeviceOps, error) {
	return newCDO("dist_cross_device_ops_create_hierarchical_copy", func(o **C.dist_cross_device_ops_t) C.dist_status_t {
		return C.dist_cross_device_ops_create_hierarchical_copy(C.int32_t(numPacks), o)
	})
}

// NewSharedMemory (dist_cross_device_ops_create_shared_memory).
func NewSharedMemory(bytesPerPack int64) (*CrossDeviceOps, error) {
	return newCDO("dist_cross_device_ops_create_shared_memory", func(o **C.dist_cross_device_ops_t) C.dist_status_t {
		return C.dist_cross_device_ops_create_shared_memory(C.int64_t(bytesPerPack), o)
	})
}

// NewNcclAllReduce (dist_cross_device_ops_create_nccl_all_reduce); only GPU replicas can use it.
func NewNcclAllReduce(numPacks int) (*CrossDeviceOps, error) {
	return newCDO("dist_cross_device_ops_create_nccl_all_reduce", func(o **C.dist_cross_device_ops_t) C.dist_status_t {
		return C.dist_cross_device_ops_create_nccl_all_reduce(C.int32_t(numPacks), o)
	})
}

// Kind (dist_cross_device_ops_kind).
func (o *CrossDeviceOps) Kind() (CrossDeviceOpsKind, error) {
	var k C.dist_cross_device_ops_kind_t
	err := call("dist_cross_device_ops_kind", func() C.dist_status_t { return C.dist_cross_device_ops_kind(o.ptr(), &k) }, o)
	return CrossDeviceOpsKind(k), err
}

// Close (dist_cross_device_ops_destroy).
func (o *CrossDeviceOps) Close() {
	if o == nil || o.p == nil {
		return
	}
	runtime.SetFinalizer(o, nil)
	C.dist_cross_device_ops_destroy(o.p)
	o.p = nil
}

// ---- Communication options ----

// CommunicationImplementation is a dist_communication_implementation_t.
type CommunicationImplementation int32

// Implementations.
const (
	CommunicationAuto CommunicationImplementation = C.DIST_COMMUNICATION_AUTO
	CommunicationRing CommunicationImplementation = C.DIST_COMMUNICATION_RING
	CommunicationNCCL CommunicationImplementation = C.DIST_COMMUNICATION_NCCL
)

// SharedMemoryMode is a dist_shared_memory_t: whether workers on one host exchange bytes
// through shared memory instead of TCP.
type SharedMemoryMode int32

// Shared-memory modes.
const (
	SharedMemoryAuto SharedMemoryMode = C.DIST_SHARED_MEMORY_AUTO
	SharedMemoryOn   SharedMemoryMode = C.DIST_SHARED_MEMORY_ON
	SharedMemoryOff  SharedMemoryMode = C.DIST_SHARED_MEMORY_OFF
)

// CommunicationOptions is a dist_communication_options_t.
type CommunicationOptions struct {
	p *C.dist_communication_options_t
}

func (o *CommunicationOptions) ptr() *C.dist_communication_options_t {
	if o == nil {
		return nil
	}
	return o.p
}

func newCommunicationOptions(p *C.dist_communication_options_t) *CommunicationOptions {
	o := &CommunicationOptions{p: p}
	runtime.SetFinalizer(o, finalizeCommunicationOptions)
	return o
}

// NewCommunicationOptions (dist_communication_options_create).
func NewCommunicationOptions() (*CommunicationOptions, error) {
	var out *C.dist_communication_options_t
	err := call("dist_communication_options_create", func() C.dist_status_t { return C.dist_communication_options_create(&out) })
	if err != nil {
		return nil, err
	}
	return newCommunicationOptions(out), nil
}

// Close (dist_communication_options_destroy).
func (o *CommunicationOptions) Close() {
	if o == nil || o.p == nil {
		return
	}
	runtime.SetFinalizer(o, nil)
	C.dist_communication_options_destroy(o.p)
	o.p = nil
}

// SetImplementation (dist_communication_options_set_implementation).
func (o *CommunicationOptions) SetImplementation(i CommunicationImplementation) error {
	return call("dist_communication_options_set_implementation", func() C.dist_status_t {
		return C.dist_communication_options_set_implementation(o.ptr(), C.dist_communication_implementation_t(i))
	}, o)
}

// SetSharedMemory (dist_communication_options_set_shared_memory).
func (o *CommunicationOptions) SetSharedMemory(mode SharedMemoryMode) error {
	return call("dist_communication_options_set_shared_memory", func() C.dist_status_t {
		return C.dist_communication_options_set_shared_memory(o.ptr(), C.dist_shared_memory_t(mode))
	}, o)
}

// SetBytesPerPack (dist_communication_options_set_bytes_per_pack).
func (o *CommunicationOptions) SetBytesPerPack(n int64) error {
	return call("dist_communication_options_set_bytes_per_pack", func() C.dist_status_t {
		return C.dist_communication_options_set_bytes_per_pack(o.ptr(), C.int64_t(n))
	}, o)
}

// SetTimeoutMs (dist_communication_options_set_timeout_ms).
func (o *CommunicationOptions) SetTimeoutMs(ms int64) error {
	return call("dist_communication_options_set_timeout_ms", func() C.dist_status_t {
		return C.dist_communication_options_set_timeout_ms(o.ptr(), C.int64_t(ms))
	}, o)
}

// SetReplicasPerWorker (dist_communication_options_set_replicas_per_worker).
func (o *CommunicationOptions) SetReplicasPerWorker(n int) error {
	return call("dist_communication_options_set_replicas_per_worker", func() C.dist_status_t {
		return C.dist_communication_options_set_replicas_per_worker(o.ptr(), C.int32_t(n))
	}, o)
}

// SetJobToken sets the job token of the strategy's server
// (dist_communication_options_set_job_token); "" means DIST_JOB_TOKEN from the
// environment, or none.
func (o *CommunicationOptions) SetJobToken(token string) error {
	t := cStr(token)
	defer freeStr(t)
	return call("dist_communication_options_set_job_token", func() C.dist_status_t {
		return C.dist_communication_options_set_job_token(o.ptr(), t)
	}, o)
}

// SetTLSFiles sets TLS for the strategy's server (dist_communication_options_set_tls_files):
// the same files and rules as ServerOptions.SetTLSFiles; the files are read when the
// strategy is created. All three "" means the DIST_TLS_* environment variables, or none.
func (o *CommunicationOptions) SetTLSFiles(certPath, keyPath, caPath string) error {
	return setTLSFiles("dist_communication_options_set_tls_files", certPath, keyPath, caPath,
		func(cert, key, ca *C.char) C.dist_status_t {
			return C.dist_communication_options_set_tls_files(o.ptr(), cert, key, ca)
		}, o)
}

// setTLSFiles hands three paths, as C strings freed afterwards, to `set`, one of the
// dist_*_set_tls_files functions called `name`; keep is call's.
func setTLSFiles(name, certPath, keyPath, caPath string, set func(cert, key, ca *C.char) C.dist_status_t,
	keep ...interface{}) error {
	cert, key, ca := cStr(certPath), cStr(keyPath), cStr(caPath)
	defer freeStr(cert)
	defer freeStr(key)
	defer freeStr(ca)
	return call(name, func() C.dist_status_t { return set(cert, key, ca) }, keep...)
}

// ---- Cluster ----

// Cluster is a dist_cluster_t: TF_CONFIG or an explicit cluster spec.
type Cluster struct{ p *C.dist_cluster_t }

func (c *Cluster) ptr() *C.dist_cluster_t {
	if c == nil {
		return nil
	}
	return c.p
}

func newCluster(p *C.dist_cluster_t) *Cluster {
	c := &Cluster{p: p}
	runtime.SetFinalizer(c, finalizeCluster)
	return c
}

// ClusterFromTFConfig parses json, or the TF_CONFIG environment variable when json is ""
// (dist_cluster_from_tf_config).
func ClusterFromTFConfig(json string) (*Cluster, error) {
	j := cStr(json)
	defer freeStr(j)
	var out *C.dist_cluster_t
	err := call("dist_cluster_from_tf_config", func() C.dist_status_t { return C.dist_cluster_from_tf_config(j, &out) })
	if err != nil {
		return nil, err
	}
	return newCluster(out), nil
}

// SlurmJob is one job of ClusterFromSlurm: a job name and its task count.
type SlurmJob struct {
	Name  string
	Tasks int32
}

// ClusterFromSlurm is the cluster of a Slurm job step for this task
// (dist_cluster_from_slurm, TF's SlurmClusterResolver): jobs nil makes every task a
// worker; portBase 0 means 8888; tasksPerNode 0 means Slurm's count.
func ClusterFromSlurm(jobs []SlurmJob, portBase, tasksPerNode int32) (*Cluster, error) {
	names := make([]string, len(jobs))
	counts := make([]C.int32_t, len(jobs))
	for i, j := range jobs {
		names[i] = j.Name
		counts[i] = C.int32_t(j.Tasks)
	}
	p, free := cStrings(names)
	defer free()
	var countsPtr *C.int32_t
	if len(counts) > 0 {
		countsPtr = &counts[0]
	}
	var out *C.dist_cluster_t
	err := call("dist_cluster_from_slurm", func() C.dist_status_t {
		return C.dist_cluster_from_slurm(p, countsPtr, C.int32_t(len(jobs)), C.int32_t(portBase), C.int32_t(tasksPerNode), &out)
	})
	if err != nil {
		return nil, err
	}
	return newCluster(out), nil
}

// ClusterFromStatefulSet is the cluster of a Kubernetes StatefulSet pod behind a headless
// service (dist_cluster_from_statefulset); "" and 0 are read from POD_NAME/HOSTNAME,
// DIST_K8S_SERVICE, DIST_K8S_REPLICAS and DIST_K8S_PORT.
func ClusterFromStatefulSet(podName, service string, replicas, port int32) (*Cluster, error) {
	var pod, svc *C.char
	if podName != "" {
		pod = cStr(podName)
		defer freeStr(pod)
	}
	if service != "" {
		svc = cStr(service)
		defer freeStr(svc)
	}
	var out *C.dist_cluster_t
	err := call("dist_cluster_from_statefulset", func() C.dist_status_t {
		return C.dist_cluster_from_statefulset(pod, svc, C.int32_t(replicas), C.int32_t(port), &out)
	})
	if err != nil {
		return nil, err
	}
	return newCluster(out), nil
}

// NewCluster is an empty cluster (dist_cluster_create).
func NewCluster() (*Cluster, error) {
	var out *C.dist_cluster_t
	err := call("dist_cluster_create", func() C.dist_status_t { return C.dist_cluster_create(&out) })
	if err != nil {
		return nil, err
	}
	return newCluster(out), nil
}

// Close (dist_cluster_destroy).
func (c *Cluster) Close() {
	if c == nil || c.p == nil {
		return
	}
	runtime.SetFinalizer(c, nil)
	C.dist_cluster_destroy(c.p)
	c.p = nil
}

// AddTask (dist_cluster_add_task).
func (c *Cluster) AddTask(job string, index int, address string) error {
	j, a := C.CString(job), C.CString(address)
	defer C.free(unsafe.Pointer(j))
	defer C.free(unsafe.Pointer(a))
	return call("dist_cluster_add_task", func() C.dist_status_t { return C.dist_cluster_add_task(c.ptr(), j, C.int32_t(index), a) }, c)
}

// SetTask (dist_cluster_set_task).
func (c *Cluster) SetTask(job string, index int) error {
	j := C.CString(job)
	defer C.free(unsafe.Pointer(j))
	return call("dist_cluster_set_task", func() C.dist_status_t { return C.dist_cluster_set_task(c.ptr(), j, C.int32_t(index)) }, c)
}

// TaskType (dist_cluster_task_type).
func (c *Cluster) TaskType() (string, error) {
	return callString("dist_cluster_task_type", func(s **C.char) C.dist_status_t { return C.dist_cluster_task_type(c.ptr(), s) }, c)
}

// TaskIndex (dist_cluster_task_index).
func (c *Cluster) TaskIndex() (int, error) {
	var n C.int32_t
	err := call("dist_cluster_task_index", func() C.dist_status_t { return C.dist_cluster_task_index(c.ptr(), &n) }, c)
	return int(n), err
}

// IsChief (dist_cluster_is_chief).
func (c *Cluster) IsChief() (bool, error) {
	var n C.int32_t
	err := call("dist_cluster_is_chief", func() C.dist_status_t { return C.dist_cluster_is_chief(c.ptr(), &n) }, c)
	return n != 0, err
}

// NumWorkers (dist_cluster_num_workers).
func (c *Cluster) NumWorkers() (int, error) {
	var n C.int32_t
	err := call("dist_cluster_num_workers", func() C.dist_status_t { return C.dist_cluster_num_workers(c.ptr(), &n) }, c)
	return int(n), err
}

// NumTasks (dist_cluster_num_tasks).
func (c *Cluster) NumTasks(job string) (int, error) {
	j := C.CString(job)
	defer C.free(unsafe.Pointer(j))
	var n C.int32_t
	err := call("dist_cluster_num_tasks", func() C.dist_status_t { return C.dist_cluster_num_tasks(c.ptr(), j, &n) }, c)
	return int(n), err
}

// TaskIndexAt (dist_cluster_task_index_at).
func (c *Cluster) TaskIndexAt(job string, position int) (int, error) {
	j := C.CString(job)
	defer C.free(unsafe.Pointer(j))
	var n C.int32_t
	err := call("dist_cluster_task_index_at", func() C.dist_status_t {
		return C.dist_cluster_task_index_at(c.ptr(), j, C.int32_t(position), &n)
	}, c)
	return int(n), err
}

// TaskAddress (dist_cluster_task_address).
func (c *Cluster) TaskAddress(job string, index int) (string, error) {
	j := C.CString(job)
	defer C.free(unsafe.Pointer(j))
	return callString("dist_cluster_task_address", func(s **C.char) C.dist_status_t {
		return C.dist_cluster_task_address(c.ptr(), j, C.int32_t(index), s)
	}, c)
}

// RPCLayer is TF_CONFIG's "rpc_layer", "" when it has none (dist_cluster_rpc_layer).
func (c *Cluster) RPCLayer() (string, error) {
	return callString("dist_cluster_rpc_layer", func(s **C.char) C.dist_status_t { return C.dist_cluster_rpc_layer(c.ptr(), s) }, c)
}

// Environment is TF_CONFIG's "environment", "" when it has none (dist_cluster_environment).
func (c *Cluster) Environment() (string, error) {
	return callString("dist_cluster_environment", func(s **C.char) C.dist_status_t { return C.dist_cluster_environment(c.ptr(), s) }, c)
}

// Master is the current task's address as TFConfigClusterResolver.master() gives it:
// "<rpc_layer>://host:port", "host:port" without an rpc_layer, "" for a single-task
// cluster or no current task (dist_cluster_master).
func (c *Cluster) Master() (string, error) {
	return callString("dist_cluster_master", func(s **C.char) C.dist_status_t { return C.dist_cluster_master(c.ptr(), s) }, c)
}

// ---- Server ----

// ServerOptions is a dist_server_options_t.
type ServerOptions struct{ p *C.dist_server_options_t }

func (o *ServerOptions) ptr() *C.dist_server_options_t {
	if o == nil {
		return nil
	}
	return o.p
}

func newServerOptions(p *C.dist_server_options_t) *ServerOptions {
	o := &ServerOptions{p: p}
	runtime.SetFinalizer(o, finalizeServerOptions)
	return o
}

// NewServerOptions (dist_server_options_create).
func NewServerOptions() (*ServerOptions, error) {
	var out *C.dist_server_options_t
	err := call("dist_server_options_create", func() C.dist_status_t { return C.dist_server_options_create(&out) })
	if err != nil {
		return nil, err
	}
	return newServerOptions(out), nil
}

// Close (dist_server_options_destroy).
func (o *ServerOptions) Close() {
	if o == nil || o.p == nil {
		return
	}
	runtime.SetFinalizer(o, nil)
	C.dist_server_options_destroy(o.p)
	o.p = nil
}

// SetStartupTimeoutMs (dist_server_options_set_startup_timeout_ms).
func (o *ServerOptions) SetStartupTimeoutMs(ms int64) error {
	return call("dist_server_options_set_startup_timeout_ms", func() C.dist_status_t {
		return C.dist_server_options_set_startup_timeout_ms(o.ptr(), C.int64_t(ms))
	}, o)
}

// SetHeartbeatIntervalMs (dist_server_options_set_heartbeat_interval_ms).
func (o *ServerOptions) SetHeartbeatIntervalMs(ms int64) error {
	return call("dist_server_options_set_heartbeat_interval_ms", func() C.dist_status_t {
		return C.dist_server_options_set_heartbeat_interval_ms(o.ptr(), C.int64_t(ms))
	}, o)
}

// SetHeartbeatTimeoutMs (dist_server_options_set_heartbeat_timeout_ms).
func (o *ServerOptions) SetHeartbeatTimeoutMs(ms int64) error {
	return call("dist_server_options_set_heartbeat_timeout_ms", func() C.dist_status_t {
		return C.dist_server_options_set_heartbeat_timeout_ms(o.ptr(), C.int64_t(ms))
	}, o)
}

// SetJobToken sets the job token every request between the job's servers carries
// (dist_server_options_set_job_token): 16 to 1024 printable ASCII characters without
// spaces; "" means DIST_JOB_TOKEN from the environment (read by NewServer), or none.
func (o *ServerOptions) SetJobToken(token string) error {
	t := cStr(token)
	defer freeStr(t)
	return call("dist_server_options_set_job_token", func() C.dist_status_t {
		return C.dist_server_options_set_job_token(o.ptr(), t)
	}, o)
}

// SetAllowUnauthenticated lets a job without a token run on non-loopback addresses
// (dist_server_options_set_allow_unauthenticated).
func (o *ServerOptions) SetAllowUnauthenticated(allow bool) error {
	return call("dist_server_options_set_allow_unauthenticated", func() C.dist_status_t {
		return C.dist_server_options_set_allow_unauthenticated(o.ptr(), b32(allow))
	}, o)
}

// SetTLSFiles sets TLS for this task's server and its connection to the chief
// (dist_server_options_set_tls_files): this task's certificate chain and unencrypted
// private key (PEM files), and the CAs to trust ("": none; set, TLS is mutual). All three
// "" means the DIST_TLS_CERT, DIST_TLS_KEY and DIST_TLS_CA environment variables, or no
// TLS. The files are read by NewServer (a missing one is ErrNotFound, a bad one
// ErrInvalidArgument, naming it); a certificate without a key, a key without a
// certificate or a CA alone is ErrInvalidArgument here and changes nothing.
func (o *ServerOptions) SetTLSFiles(certPath, keyPath, caPath string) error {
	return setTLSFiles("dist_server_options_set_tls_files", certPath, keyPath, caPath,
		func(cert, key, ca *C.char) C.dist_status_t {
			return C.dist_server_options_set_tls_files(o.ptr(), cert, key, ca)
		}, o)
}

// ServerLimit is a dist_server_limit_t: one of the bounds a task's server keeps, so that
// neither a stranger who can reach its port nor a buggy process of the job can exhaust it
// (server.h lists each range and default).
type ServerLimit int32

// The bounds of server.h (DIST_SERVER_LIMIT_*).
const (
	// Accepted connections in total and from one IP address: 0 to 1048576; 0 (the default):
	// 1024 in total (at least 4 per task) and 256 per address.
	ServerLimitMaxConnections        ServerLimit = C.DIST_SERVER_LIMIT_MAX_CONNECTIONS
	ServerLimitMaxConnectionsPerPeer ServerLimit = C.DIST_SERVER_LIMIT_MAX_CONNECTIONS_PER_PEER
	// Calls at once on one connection: 1 to 2^31-1, default 128.
	ServerLimitMaxStreamsPerConnection ServerLimit = C.DIST_SERVER_LIMIT_MAX_STREAMS_PER_CONNECTION
	// A connection without a call for this long is closed: 1 to 86400000 ms, default 120000.
	ServerLimitConnectionIdleTimeoutMs ServerLimit = C.DIST_SERVER_LIMIT_CONNECTION_IDLE_TIMEOUT_MS
	// A connection whose handshake takes longer is closed: 1 to 86400000 ms, default 10000.
	ServerLimitHandshakeTimeoutMs ServerLimit = C.DIST_SERVER_LIMIT_HANDSHAKE_TIMEOUT_MS
	// A tensor stream idle this long is cancelled: 1 to 86400000 ms, default 10000.
	ServerLimitStreamIdleTimeoutMs ServerLimit = C.DIST_SERVER_LIMIT_STREAM_IDLE_TIMEOUT_MS
	// The largest message either way: 10240 to 2^31-1 bytes, default 4 MiB.
	ServerLimitMaxMessageBytes ServerLimit = C.DIST_SERVER_LIMIT_MAX_MESSAGE_BYTES
	// The chief's coordination service: the store's bytes (64 MiB) and keys (65536),
	// barriers (16384), other tasks' waits pending at once (0 to 65536; 0, the default:
	// by the cluster's size). At least 1, but the pending waits.
	ServerLimitMaxStoreBytes   ServerLimit = C.DIST_SERVER_LIMIT_MAX_STORE_BYTES
	ServerLimitMaxStoreKeys    ServerLimit = C.DIST_SERVER_LIMIT_MAX_STORE_KEYS
	ServerLimitMaxBarriers     ServerLimit = C.DIST_SERVER_LIMIT_MAX_BARRIERS
	ServerLimitMaxPendingWaits ServerLimit = C.DIST_SERVER_LIMIT_MAX_PENDING_WAITS
	// A ps task: the bytes of its variables and slots (half the memory, at most 16 GiB),
	// their count (1 to 4194304; 1048576), the tensor bytes of one request (1 GiB) and of
	// all requests in flight (an eighth of the memory within 1 to 4 GiB). At least 1.
	ServerLimitMaxVariableBytes         ServerLimit = C.DIST_SERVER_LIMIT_MAX_VARIABLE_BYTES
	ServerLimitMaxVariables             ServerLimit = C.DIST_SERVER_LIMIT_MAX_VARIABLES
	ServerLimitMaxVariableRequestBytes  ServerLimit = C.DIST_SERVER_LIMIT_MAX_VARIABLE_REQUEST_BYTES
	ServerLimitMaxVariableInflightBytes ServerLimit = C.DIST_SERVER_LIMIT_MAX_VARIABLE_INFLIGHT_BYTES
)

// SetLimit sets one bound of the server (dist_server_options_set_limit). A value out of
// the bound's range, or an unknown limit, is ErrInvalidArgument naming it and changes
// nothing; bounds that depend on each other are checked by NewServer.
func (o *ServerOptions) SetLimit(limit ServerLimit, value int64) error {
	return call("dist_server_options_set_limit", func() C.dist_status_t {
		return C.dist_server_options_set_limit(o.ptr(), C.dist_server_limit_t(limit), C.int64_t(value))
	}, o)
}

// Limit is the bound the options give (dist_server_options_get_limit): what was set, else
// its default (0 for the connection caps and pending waits, whose defaults follow the
// cluster). An unknown limit is ErrInvalidArgument.
func (o *ServerOptions) Limit(limit ServerLimit) (int64, error) {
	var v C.int64_t
	err := call("dist_server_options_get_limit", func() C.dist_status_t {
		return C.dist_server_options_get_limit(o.ptr(), C.dist_server_limit_t(limit), &v)
	}, o)
	return int64(v), err
}

// Server is a dist_server_t, the in-process server of one task. It serves while it is
// reachable: a server you forget to Close is stopped and released by the garbage collector
// once nothing refers to it, so keep it (or call Join, or Close it at the end) for as long
// as the task should serve.
type Server struct{ p *C.dist_server_t }

func (s *Server) ptr() *C.dist_server_t {
	if s == nil {
		return nil
	}
	return s.p
}

func newServer(p *C.dist_server_t) *Server {
	s := &Server{p: p}
	runtime.SetFinalizer(s, finalizeServer)
	return s
}

// NewServer (dist_server_create); options may be nil.
func NewServer(cluster *Cluster, options *ServerOptions) (*Server, error) {
	var out *C.dist_server_t
	err := call("dist_server_create", func() C.dist_status_t { return C.dist_server_create(cluster.ptr(), options.ptr(), &out) }, cluster, options)
	if err != nil {
		return nil, err
	}
	return newServer(out), nil
}

// Port (dist_server_port).
func (s *Server) Port() (int, error) {
	var n C.int32_t
	err := call("dist_server_port", func() C.dist_status_t { return C.dist_server_port(s.ptr(), &n) }, s)
	return int(n), err
}

// Stop (dist_server_stop).
func (s *Server) Stop() error {
	return call("dist_server_stop", func() C.dist_status_t { return C.dist_server_stop(s.ptr()) }, s)
}

// Join blocks until Stop (dist_server_join).
func (s *Server) Join() error {
	return call("dist_server_join", func() C.dist_status_t { return C.dist_server_join(s.ptr()) }, s)
}

// Close stops and releases the server (dist_server_destroy).
func (s *Server) Close() {
	if s == nil || s.p == nil {
		return
	}
	runtime.SetFinalizer(s, nil)
	C.dist_server_destroy(s.p)
	s.p = nil
}

// KeyValueSet (dist_server_key_value_set).
func (s *Server) KeyValueSet(key string, value []byte) error {
	k := C.CString(key)
	defer C.free(unsafe.Pointer(k))
	var p unsafe.Pointer
	if len(value) > 0 {
		p = unsafe.Pointer(&value[0])
	}
	return call("dist_server_key_value_set", func() C.dist_status_t {
		return C.dist_server_key_value_set(s.ptr(), k, p, C.size_t(len(value)))
	}, s)
}

// KeyValueGet waits up to timeoutMs for key and returns its bytes (dist_server_key_value_get).
func (s *Server) KeyValueGet(key string, timeoutMs int64) ([]byte, error) {
	k := C.CString(key)
	defer C.free(unsafe.Pointer(k))
	var out *C.dist_value_t
	err := call("dist_server_key_value_get", func() C.dist_status_t {
		return C.dist_server_key_value_get(s.ptr(), k, C.int64_t(timeoutMs), &out)
	}, s)
	if err != nil {
		return nil, err
	}
	v := ownedValue(out)
	defer v.Close()
	return v.Bytes()
}

// Barrier (dist_server_barrier).
func (s *Server) Barrier(name string, timeoutMs int64) error {
	n := C.CString(name)
	defer C.free(unsafe.Pointer(n))
	return call("dist_server_barrier", func() C.dist_status_t { return C.dist_server_barrier(s.ptr(), n, C.int64_t(timeoutMs)) }, s)
}

// PeerHealth (dist_server_peer_health).
func (s *Server) PeerHealth() error {
	return call("dist_server_peer_health", func() C.dist_status_t { return C.dist_server_peer_health(s.ptr()) }, s)
}
