// distribute C++ wrapper — device names (distribute/device.h): Device, a parsed TensorFlow
// device name ("/job:worker/replica:0/task:1/device:GPU:0", "GPU:0"), and the local devices.
// A Device owns its C handle, is move-only, and destroys it with the object.
#ifndef DISTRIBUTE_CPP_DEVICE_HPP_
#define DISTRIBUTE_CPP_DEVICE_HPP_

#include <cstdint>

#include "distribute/cpp/options.hpp"
#include "distribute/cpp/status.hpp"
#include "distribute/distribute.h"

namespace dist {

class Device : public detail::Owned<dist_device_t, dist_device_destroy> {
 public:
  using Owned::Owned;
  static Result<Device> parse(const char* name) {
    return detail::make_owned<Device, dist_device_t>(dist_device_parse, name);
  }
  // The canonical name, and its parts (-1 for a number the name left out).
  Result<const char*> name() const { return detail::call_out<const char*>(dist_device_name, handle()); }
  Result<const char*> job() const { return detail::call_out<const char*>(dist_device_job, handle()); }
  Result<int32_t> replica() const { return detail::call_out<int32_t>(dist_device_replica, handle()); }
  Result<int32_t> task() const { return detail::call_out<int32_t>(dist_device_task, handle()); }
  Result<dist_device_type_t> type() const { return detail::call_out<dist_device_type_t>(dist_device_type, handle()); }
  Result<int32_t> index() const { return detail::call_out<int32_t>(dist_device_index, handle()); }

 private:
  const dist_device_t* handle() const { return get(); }
};

// The local devices: the logical CPU devices, then the GPUs the CUDA plugin found.
inline Result<int32_t> local_device_count() { return detail::call_out<int32_t>(dist_local_device_count); }
inline Result<Device> local_device(int32_t index) {
  return detail::make_owned<Device, dist_device_t>(dist_local_device_get, index);
}

}  // namespace dist

#endif  // DISTRIBUTE_CPP_DEVICE_HPP_
