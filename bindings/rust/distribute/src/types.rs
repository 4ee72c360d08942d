//! Typed enums over the C API's `int32_t` constants. Each has `raw()` and `from_raw()`; an
//! unknown value read from the library becomes `Error(INTERNAL)` rather than undefined
//! behaviour.

use crate::error::{Code, Error, Result};
use crate::sys;

macro_rules! c_enum {
    ($(#[$m:meta])* $name:ident : $what:literal { $($variant:ident = $c:path),* $(,)? }) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum $name { $($variant),* }
        impl $name {
            /// The C constant.
            pub fn raw(self) -> i32 { match self { $($name::$variant => $c),* } }
            /// The variant for a C constant, or None for an unknown value.
            pub fn from_raw(v: i32) -> Option<$name> {
                match v { $(x if x == $c => Some($name::$variant),)* _ => None }
            }
            #[allow(dead_code)]
            pub(crate) fn from_lib(v: i32) -> Result<$name> {
                $name::from_raw(v).ok_or_else(|| Error::new(Code::Internal,
                    format!("the library returned {} {}, unknown to this binding", $what, v)))
            }
        }
    };
}

c_enum!(
    /// An element type (`DIST_FLOAT32`, ...), numbered as TensorFlow's DataType.
    DType: "dtype" {
    Float32 = sys::DIST_FLOAT32, Float64 = sys::DIST_FLOAT64, Int32 = sys::DIST_INT32,
    UInt8 = sys::DIST_UINT8, Int16 = sys::DIST_INT16, Int8 = sys::DIST_INT8,
    Int64 = sys::DIST_INT64, Bool = sys::DIST_BOOL, BFloat16 = sys::DIST_BFLOAT16,
    Float16 = sys::DIST_FLOAT16,
});
c_enum!(
    /// How values are combined across replicas (`DIST_REDUCE_*`).
    ReduceOp: "reduce op" {
    Sum = sys::DIST_REDUCE_SUM, Mean = sys::DIST_REDUCE_MEAN, Min = sys::DIST_REDUCE_MIN,
    Max = sys::DIST_REDUCE_MAX, Product = sys::DIST_REDUCE_PRODUCT,
});
c_enum!(
    /// The kind of a strategy (`DIST_STRATEGY_*`).
    StrategyKind: "strategy kind" {
    Default = sys::DIST_STRATEGY_DEFAULT, OneDevice = sys::DIST_STRATEGY_ONE_DEVICE,
    Mirrored = sys::DIST_STRATEGY_MIRRORED, CentralStorage = sys::DIST_STRATEGY_CENTRAL_STORAGE,
    MultiWorkerMirrored = sys::DIST_STRATEGY_MULTI_WORKER_MIRRORED,
    ParameterServer = sys::DIST_STRATEGY_PARAMETER_SERVER,
});
c_enum!(
    /// The kind of a value (`DIST_VALUE_*`).
    ValueKind: "value kind" {
    Tensor = sys::DIST_VALUE_TENSOR, PerReplica = sys::DIST_VALUE_PER_REPLICA,
    Mirrored = sys::DIST_VALUE_MIRRORED, MirroredVariable = sys::DIST_VALUE_MIRRORED_VARIABLE,
    SyncOnReadVariable = sys::DIST_VALUE_SYNC_ON_READ_VARIABLE, Variable = sys::DIST_VALUE_VARIABLE,
});
c_enum!(
    /// tf.VariableSynchronization (`DIST_SYNC_*`).
    VariableSync: "variable synchronization" {
    Auto = sys::DIST_SYNC_AUTO, None = sys::DIST_SYNC_NONE, OnWrite = sys::DIST_SYNC_ON_WRITE,
    OnRead = sys::DIST_SYNC_ON_READ,
});
c_enum!(
    /// tf.VariableAggregation (`DIST_AGGREGATION_*`).
    VariableAggregation: "variable aggregation" {
    None = sys::DIST_AGGREGATION_NONE, Sum = sys::DIST_AGGREGATION_SUM,
    Mean = sys::DIST_AGGREGATION_MEAN, OnlyFirstReplica = sys::DIST_AGGREGATION_ONLY_FIRST_REPLICA,
});
c_enum!(
    /// tf.data.experimental.AutoShardPolicy (`DIST_AUTO_SHARD_*`).
    AutoShardPolicy: "auto-shard policy" {
    Off = sys::DIST_AUTO_SHARD_OFF, Auto = sys::DIST_AUTO_SHARD_AUTO,
    File = sys::DIST_AUTO_SHARD_FILE, Data = sys::DIST_AUTO_SHARD_DATA,
});
c_enum!(
    /// tf.distribute.InputReplicationMode (`DIST_INPUT_*`).
    InputReplicationMode: "input replication mode" {
    PerWorker = sys::DIST_INPUT_PER_WORKER, PerReplica = sys::DIST_INPUT_PER_REPLICA,
});
c_enum!(
    /// MultiWorkerMirrored's collective implementation (`DIST_COMMUNICATION_*`).
    CommunicationImplementation: "communication implementation" {
    Auto = sys::DIST_COMMUNICATION_AUTO, Ring = sys::DIST_COMMUNICATION_RING,
    Nccl = sys::DIST_COMMUNICATION_NCCL,
});
c_enum!(
    /// Whether workers on one host exchange bytes through shared memory (`DIST_SHARED_MEMORY_*`).
    SharedMemoryMode: "shared memory mode" {
    Auto = sys::DIST_SHARED_MEMORY_AUTO, On = sys::DIST_SHARED_MEMORY_ON,
    Off = sys::DIST_SHARED_MEMORY_OFF,
});
c_enum!(
    /// A cross-device ops algorithm (`DIST_CROSS_DEVICE_OPS_*`).
    CrossDeviceOpsKind: "cross-device ops kind" {
    ReductionToOneDevice = sys::DIST_CROSS_DEVICE_OPS_REDUCTION_TO_ONE_DEVICE,
    HierarchicalCopy = sys::DIST_CROSS_DEVICE_OPS_HIERARCHICAL_COPY,
    SharedMemory = sys::DIST_CROSS_DEVICE_OPS_SHARED_MEMORY,
    NcclAllReduce = sys::DIST_CROSS_DEVICE_OPS_NCCL_ALL_REDUCE,
});
c_enum!(
    /// How TFRecord files are compressed, tf.io.TFRecordOptions.compression_type
    /// (`DIST_COMPRESSION_*`).
    Compression: "compression" {
    None = sys::DIST_COMPRESSION_NONE, Zlib = sys::DIST_COMPRESSION_ZLIB,
    Gzip = sys::DIST_COMPRESSION_GZIP,
});
c_enum!(
    /// How distribute_dataset splits a partial global batch across replicas
    /// (`DIST_PARTIAL_BATCH_*`): in order as a full batch (the default), or TF 2.x's even split.
    PartialBatchSplit: "partial batch split" {
    InOrder = sys::DIST_PARTIAL_BATCH_IN_ORDER, Even = sys::DIST_PARTIAL_BATCH_EVEN,
});
c_enum!(
    /// A bound a task's server keeps (`DIST_SERVER_LIMIT_*`), read and set with
    /// `ServerOptions::limit` and `ServerOptions::set_limit`; server.h gives each one's range
    /// and default (e.g. `MaxStreamsPerConnection` 1 to 2^31-1, 128).
    ServerLimit: "server limit" {
    MaxConnections = sys::DIST_SERVER_LIMIT_MAX_CONNECTIONS,
    MaxConnectionsPerPeer = sys::DIST_SERVER_LIMIT_MAX_CONNECTIONS_PER_PEER,
    MaxStreamsPerConnection = sys::DIST_SERVER_LIMIT_MAX_STREAMS_PER_CONNECTION,
    ConnectionIdleTimeoutMs = sys::DIST_SERVER_LIMIT_CONNECTION_IDLE_TIMEOUT_MS,
    HandshakeTimeoutMs = sys::DIST_SERVER_LIMIT_HANDSHAKE_TIMEOUT_MS,
    StreamIdleTimeoutMs = sys::DIST_SERVER_LIMIT_STREAM_IDLE_TIMEOUT_MS,
    MaxMessageBytes = sys::DIST_SERVER_LIMIT_MAX_MESSAGE_BYTES,
    MaxStoreBytes = sys::DIST_SERVER_LIMIT_MAX_STORE_BYTES,
    MaxStoreKeys = sys::DIST_SERVER_LIMIT_MAX_STORE_KEYS,
    MaxBarriers = sys::DIST_SERVER_LIMIT_MAX_BARRIERS,
    MaxPendingWaits = sys::DIST_SERVER_LIMIT_MAX_PENDING_WAITS,
    MaxVariableBytes = sys::DIST_SERVER_LIMIT_MAX_VARIABLE_BYTES,
    MaxVariables = sys::DIST_SERVER_LIMIT_MAX_VARIABLES,
    MaxVariableRequestBytes = sys::DIST_SERVER_LIMIT_MAX_VARIABLE_REQUEST_BYTES,
    MaxVariableInflightBytes = sys::DIST_SERVER_LIMIT_MAX_VARIABLE_INFLIGHT_BYTES,
});
c_enum!(
    /// A device type (`DIST_DEVICE_*`).
    DeviceType: "device type" {
    Cpu = sys::DIST_DEVICE_CPU, Gpu = sys::DIST_DEVICE_GPU,
});

impl DType {
    /// The library's name of the dtype ("float32", ...): `dist_dtype_name`.
    pub fn name(self) -> &'static str {
        // SAFETY: static string.
        unsafe { std::ffi::CStr::from_ptr(sys::dist_dtype_name(self.raw())) }.to_str().unwrap_or("invalid")
    }
    /// The size of one element in bytes: `dist_dtype_size`.
    pub fn size(self) -> Result<usize> {
        dtype_size_raw(self.raw())
    }
}

/// `dist_dtype_size` for any raw value (an invalid one is an error from the library).
pub fn dtype_size_raw(dtype: i32) -> Result<usize> {
    let mut n = 0usize;
    crate::error::check(unsafe { sys::dist_dtype_size(dtype, &mut n) })?;
    Ok(n)
}

/// A Rust element type of a tensor: slices of these move data in and out.
pub trait Element: Copy + Default + Send + Sync + 'static {
    const DTYPE: DType;
}
impl Element for f32 {
    const DTYPE: DType = DType::Float32;
}
impl Element for f64 {
    const DTYPE: DType = DType::Float64;
}
impl Element for i32 {
    const DTYPE: DType = DType::Int32;
}
impl Element for u8 {
    const DTYPE: DType = DType::UInt8;
}
impl Element for i16 {
    const DTYPE: DType = DType::Int16;
}
impl Element for i8 {
    const DTYPE: DType = DType::Int8;
}
impl Element for i64 {
    const DTYPE: DType = DType::Int64;
}
