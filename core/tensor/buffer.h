// Reference-counted memory on one device: owned (allocated by the library) or borrowed
// (caller memory, handed back through a release function exactly once).
#ifndef DISTRIBUTE_CORE_TENSOR_BUFFER_H_
#define DISTRIBUTE_CORE_TENSOR_BUFFER_H_

#include <cstddef>
#include <memory>

#include "absl/functional/any_invocable.h"
#include "absl/status/statusor.h"
#include "core/device/device_spec.h"

namespace distribute {

class Buffer {
 public:
  // `device` must be resolved (type and index set). Zero-fills when `zero` is true.
  static absl::StatusOr<std::shared_ptr<Buffer>> Allocate(const DeviceSpec& device, size_t bytes,
                                                          bool zero);

  // Wraps memory the library does not own; `release` runs once when the buffer dies.
  static std::shared_ptr<Buffer> Borrow(const DeviceSpec& device, void* data, size_t bytes,
                                        absl::AnyInvocable<void() &&> release);

  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer();

  void* data() const { return data_; }
  size_t size() const { return size_; }
  const DeviceSpec& device() const { return device_; }

 protected:  // made only by Allocate and Borrow (a subclass in buffer.cc, for make_shared)
  Buffer(const DeviceSpec& device, void* data, size_t size, absl::AnyInvocable<void() &&> release);

 private:

  DeviceSpec device_;
  void* data_;
  size_t size_;
  absl::AnyInvocable<void() &&> release_;
};

// Copies `bytes` between two buffers' memory on any pair of devices.
absl::Status CopyBytes(const Buffer& dst, const Buffer& src, size_t bytes);

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_TENSOR_BUFFER_H_
