// C entry points for device names and local devices.
#include <new>

#include "core/c_api/api_guard.h"
#include "core/c_api/handle_destroy.h"
#include "core/c_api/handles.h"
#include "core/device/gpu_runtime.h"
#include "core/device/local_devices.h"
#include "core/util/status_macros.h"
#include "distribute/device.h"

using distribute::DeviceSpec;
using distribute::c_api::ClearOut;
using distribute::c_api::DestroyHandle;
using distribute::c_api::Guard;
using distribute::c_api::NullArgument;

namespace {

// The device accessors all read one field of a parsed device.
template <typename T, typename Field>
dist_status_t ReadField(const char* function, const dist_device_t* device, T* out,
                        const char* out_arg, Field field) {
  return distribute::c_api::Accessor(function, device, "device", out, out_arg,
                                     [&](const dist_device& d, T& value) {
                                       value = field(d);
                                       return absl::OkStatus();
                                     });
}

}  // namespace

extern "C" {

dist_status_t dist_device_parse(const char* name, dist_device_t** out) {
  ClearOut(out);
  return Guard(__func__, [&]() -> absl::Status {
    if (name == nullptr) return NullArgument("name");
    if (out == nullptr) return NullArgument("out");
    ASSIGN_OR_RETURN(DeviceSpec spec, DeviceSpec::Parse(name));
    *out = new dist_device(std::move(spec));
    return absl::OkStatus();
  });
}

void dist_device_destroy(dist_device_t* device) { DestroyHandle(device); }

dist_status_t dist_device_name(const dist_device_t* device, const char** out_borrowed_name) {
  return ReadField(__func__, device, out_borrowed_name, "out_borrowed_name", [](const dist_device& d) { return d.name.c_str(); });
}

dist_status_t dist_device_job(const dist_device_t* device, const char** out_borrowed_job) {
  return ReadField(__func__, device, out_borrowed_job, "out_borrowed_job", [](const dist_device& d) { return d.spec.job.c_str(); });
}

dist_status_t dist_device_replica(const dist_device_t* device, int32_t* out_replica) {
  return ReadField(__func__, device, out_replica, "out_replica", [](const dist_device& d) { return d.spec.replica; });
}

dist_status_t dist_device_task(const dist_device_t* device, int32_t* out_task) {
  return ReadField(__func__, device, out_task, "out_task", [](const dist_device& d) { return d.spec.task; });
}

dist_status_t dist_device_type(const dist_device_t* device, dist_device_type_t* out_type) {
  return ReadField(__func__, device, out_type, "out_type",
                   [](const dist_device& d) { return static_cast<dist_device_type_t>(d.spec.type); });
}

dist_status_t dist_device_index(const dist_device_t* device, int32_t* out_index) {
  return ReadField(__func__, device, out_index, "out_index", [](const dist_device& d) { return d.spec.index; });
}

dist_status_t dist_set_logical_cpu_device_count(int32_t count) {
  return Guard(__func__, [&] { return distribute::SetLogicalCpuDeviceCount(count); });
}

dist_status_t dist_local_device_count(int32_t* out_count) {
  ClearOut(out_count);
  return Guard(__func__, [&]() -> absl::Status {
    if (out_count == nullptr) return NullArgument("out_count");
    *out_count = distribute::LocalDeviceCount();
    return absl::OkStatus();
  });
}

dist_status_t dist_local_device_get(int32_t index, dist_device_t** out) {
  ClearOut(out);
  return Guard(__func__, [&]() -> absl::Status {
    if (out == nullptr) return NullArgument("out");
    ASSIGN_OR_RETURN(DeviceSpec spec, distribute::LocalDevice(index));
    *out = new dist_device(std::move(spec));
    return absl::OkStatus();
  });
}

dist_status_t dist_gpu_unavailable_reason(const char** out_borrowed_reason) {
  ClearOut(out_borrowed_reason);
  return Guard(__func__, [&]() -> absl::Status {
    if (out_borrowed_reason == nullptr) return NullArgument("out_borrowed_reason");
    *out_borrowed_reason = distribute::GpuRuntime::Get().unavailable_reason().c_str();
    return absl::OkStatus();
  });
}

}  // extern "C"
