// Canonical device names without formatting one for every tensor. A tensor keeps its
// device's canonical name (the C API hands it out as a `const char*` that lives as long as
// the tensor); formatting "/job:localhost/replica:0/task:0/device:CPU:0" took a heap
// allocation and number formatting on every tensor made, which showed in the profile of a
// small all-reduce that returns a new tensor. Names are interned once per process instead,
// with a small per-thread cache in front of the shared table so that replicas making
// tensors on their own devices never touch a shared line.
//
// Thread-safety: any thread.
#ifndef DISTRIBUTE_CORE_DEVICE_INTERNED_DEVICE_NAME_H_
#define DISTRIBUTE_CORE_DEVICE_INTERNED_DEVICE_NAME_H_

#include <cstddef>
#include <string>

#include "core/device/device_spec.h"

namespace distribute {

// Device names come from what the application names (remote jobs and tasks too), which
// need not be bounded: past this many the table stops growing.
inline constexpr size_t kMaxInternedDeviceNames = 1024;

// `spec.ToString()`, as one string object per name for the life of the process; null when
// the table is full (the caller then keeps a name of its own).
const std::string* InternedDeviceName(const DeviceSpec& spec);

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_DEVICE_INTERNED_DEVICE_NAME_H_
