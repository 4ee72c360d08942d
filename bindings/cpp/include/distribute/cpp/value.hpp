// distribute C++ wrapper — values: tensors, distributed values and variables.
//
// ValueView borrows a dist_value_t (a replica function's argument, a component being
// updated); Value owns one and destroys it, move-only. Every query of a view is a C call
// that returns a Result; none allocates except shape() (a vector) and errors (a message).
#ifndef DISTRIBUTE_CPP_VALUE_HPP_
#define DISTRIBUTE_CPP_VALUE_HPP_

#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "distribute/cpp/span.hpp"
#include "distribute/cpp/status.hpp"
#include "distribute/distribute.h"

namespace dist {

// The dtype of a C++ element type: dtype_of<float>::value == DIST_FLOAT32.
template <class T>
struct dtype_of;
template <> struct dtype_of<float> { static constexpr dist_dtype_t value = DIST_FLOAT32; };
template <> struct dtype_of<double> { static constexpr dist_dtype_t value = DIST_FLOAT64; };
template <> struct dtype_of<int32_t> { static constexpr dist_dtype_t value = DIST_INT32; };
template <> struct dtype_of<int64_t> { static constexpr dist_dtype_t value = DIST_INT64; };
template <> struct dtype_of<int16_t> { static constexpr dist_dtype_t value = DIST_INT16; };
template <> struct dtype_of<int8_t> { static constexpr dist_dtype_t value = DIST_INT8; };
template <> struct dtype_of<uint8_t> { static constexpr dist_dtype_t value = DIST_UINT8; };
template <> struct dtype_of<bool> { static constexpr dist_dtype_t value = DIST_BOOL; };
static_assert(sizeof(bool) == 1, "DIST_BOOL elements are one byte");

template <class T>
inline constexpr dist_dtype_t dtype_of_v = dtype_of<std::remove_cv_t<T>>::value;

class Value;

// A borrowed value handle. Copyable; valid as long as the handle it views.
class ValueView {
 public:
  ValueView() = default;
  // Views of replica arguments come as const pointers; variables are assigned through
  // them all the same (a variable handle names shared state), hence the stored non-const.
  explicit ValueView(const dist_value_t* value) : value_(const_cast<dist_value_t*>(value)) {}

  dist_value_t* get() const { return value_; }
  explicit operator bool() const { return value_ != nullptr; }

  Result<dist_value_kind_t> kind() const { return detail::call_out<dist_value_kind_t>(dist_value_kind, value_); }
  Result<int32_t> num_components() const {
    return detail::call_out<int32_t>(dist_value_num_components, value_);
  }
  // Component `index` as a new handle sharing storage (dist_value_component).
  inline Result<Value> component(int32_t index) const;
  // Component `index` as a new tensor with its own buffer (dist_value_component_tensor).
  inline Result<Value> component_tensor(int32_t index) const;

  // ---- Tensors ----
  Result<dist_dtype_t> dtype() const { return detail::call_out<dist_dtype_t>(dist_tensor_dtype, value_); }
  Result<int32_t> rank() const { return detail::call_out<int32_t>(dist_tensor_rank, value_); }
  Result<int64_t> num_elements() const { return detail::call_out<int64_t>(dist_tensor_num_elements, value_); }
  Result<size_t> byte_size() const { return detail::call_out<size_t>(dist_tensor_byte_size, value_); }
  // The dimensions, into `out` (at least rank() entries); no allocation.
  Status shape(Span<int64_t> out) const {
    return Status::FromCall(dist_tensor_shape(value_, out.data(), static_cast<int32_t>(out.size())));
  }
  Result<std::vector<int64_t>> shape() const {
    Result<int32_t> r = rank();
    if (!r) return r.status();
    std::vector<int64_t> dims(static_cast<size_t>(*r));
    Status s = shape(Span<int64_t>(dims));
    if (!s.ok()) return s;
    return dims;
  }
  // The canonical device name, borrowed from the tensor.
  Result<const char*> device() const { return detail::call_out<const char*>(dist_tensor_device, value_); }
  // The tensor's elements, borrowed and writable in place. T must be the tensor's dtype
  // (nothing is converted: a float32 1.0 is never read as the int32 1065353216), else
  // INVALID_ARGUMENT naming both dtypes. A tensor in device memory (on a GPU) is
  // FAILED_PRECONDITION: host code must not touch it; copy it to the host first
  // (copy_to_device("CPU:0")), or read one element with read_scalar<T>(), which does.
  template <class T>
  Result<Span<T>> data() const {
    return host_elements<T>("dist::ValueView::data");
  }
  // The single element of a one-element tensor of dtype T (no conversion), checked as data().
  template <class T>
  Result<T> scalar() const {
    Result<Span<T>> d = host_elements<T>("dist::ValueView::scalar");
    if (!d) return d.status();
    if (d->size() != 1) {
      return Status(DIST_INVALID_ARGUMENT, "dist::ValueView::scalar: the tensor has " +
                                               std::to_string(d->size()) + " elements, not 1");
    }
    return (*d)[0];
  }
  // The same for float, double, int32_t and int64_t through the C getters, which also read
  // a tensor on a GPU (copied to the host first).
  template <class T>
  Result<T> read_scalar() const {
    const dist_value_t* tensor = value_;
    if constexpr (std::is_same_v<T, float>) {
      return detail::call_out<float>(dist_tensor_scalar_float32, tensor);
    } else if constexpr (std::is_same_v<T, double>) {
      return detail::call_out<double>(dist_tensor_scalar_float64, tensor);
    } else if constexpr (std::is_same_v<T, int32_t>) {
      return detail::call_out<int32_t>(dist_tensor_scalar_int32, tensor);
    } else {
      static_assert(std::is_same_v<T, int64_t>, "read_scalar reads float, double, int32_t or int64_t");
      return detail::call_out<int64_t>(dist_tensor_scalar_int64, tensor);
    }
  }
  // A copy on `device` (dist_tensor_copy_to_device).
  inline Result<Value> copy_to_device(const char* device) const;

  // ---- Variables ----
  // A snapshot of the variable's value in the current context (dist_variable_read).
  inline Result<Value> read() const;
  Status assign(ValueView value) const { return Status::FromCall(dist_variable_assign(value_, value.get())); }
  Status assign_add(ValueView value) const {
    return Status::FromCall(dist_variable_assign_add(value_, value.get()));
  }
  Status assign_sub(ValueView value) const {
    return Status::FromCall(dist_variable_assign_sub(value_, value.get()));
  }
  Result<const char*> variable_name() const { return detail::call_out<const char*>(dist_variable_name, value_); }
  Result<int32_t> variable_device_count() const {
    return detail::call_out<int32_t>(dist_variable_device_count, value_);
  }
  Result<const char*> variable_device(int32_t index) const {
    return detail::call_out<const char*>(dist_variable_device, static_cast<const dist_value_t*>(value_), index);
  }
  Result<dist_variable_sync_t> variable_synchronization() const {
    return detail::call_out<dist_variable_sync_t>(dist_variable_synchronization,
                                                  static_cast<const dist_value_t*>(value_));
  }
  Result<dist_variable_aggregation_t> variable_aggregation() const {
    return detail::call_out<dist_variable_aggregation_t>(dist_variable_aggregation,
                                                         static_cast<const dist_value_t*>(value_));
  }

 private:
  // The elements of a host tensor of dtype T, for `op`: the dtype is checked first, then the
  // memory. A tensor's canonical device name has "/device:GPU:" exactly when its buffer is
  // device memory (the core's in_host_memory()); no allocation on the OK path.
  template <class T>
  Result<Span<T>> host_elements(const char* op) const {
    Result<dist_dtype_t> d = dtype();
    if (!d) return d.status();
    if (*d != dtype_of_v<T>) {
      return Status(DIST_INVALID_ARGUMENT, std::string(op) + ": the tensor holds " + dist_dtype_name(*d) +
                                               ", not " + dist_dtype_name(dtype_of_v<T>));
    }
    Result<const char*> device_name = device();
    if (!device_name) return device_name.status();
    if (std::strstr(*device_name, "/device:GPU:") != nullptr) {
      return Status(DIST_FAILED_PRECONDITION,
                    std::string(op) + ": the tensor is on " + *device_name +
                        ", in device memory, which host code cannot read: copy it to the host first "
                        "(copy_to_device(\"CPU:0\")) or read one element with read_scalar()");
    }
    Result<int64_t> n = num_elements();
    if (!n) return n.status();
    Result<void*> p = detail::call_out<void*>(dist_tensor_data, value_);
    if (!p) return p.status();
    return Span<T>(static_cast<T*>(*p), static_cast<size_t>(*n));
  }

  dist_value_t* value_ = nullptr;
};

// An owned value handle: destroyed with the Value. Move-only. A default-constructed Value
// is empty (no handle), as is a moved-from one.
class Value : public ValueView {
 public:
  Value() = default;
  // Takes ownership of a handle the C API returned through an out-parameter.
  static Value adopt(dist_value_t* value) { return Value(value); }
  Value(Value&& other) noexcept : ValueView(other.release()) {}
  Value& operator=(Value&& other) noexcept {
    if (this != &other) {
      dist_value_destroy(get());
      static_cast<ValueView&>(*this) = ValueView(other.release());
    }
    return *this;
  }
  Value(const Value&) = delete;
  Value& operator=(const Value&) = delete;
  ~Value() { dist_value_destroy(get()); }

  // Gives up ownership: the caller destroys the handle (or hands it to the C API).
  dist_value_t* release() {
    dist_value_t* value = get();
    static_cast<ValueView&>(*this) = ValueView();
    return value;
  }

 private:
  explicit Value(dist_value_t* value) : ValueView(value) {}
};

namespace detail {

// The result of a C call that creates a value through dist_value_t** out.
template <class Fn, class... Args>
Result<Value> call_value(Fn fn, Args... args) {
  dist_value_t* out = nullptr;
  const dist_status_t code = fn(args..., &out);
  if (code != DIST_OK) return Status::FromCall(code);
  return Value::adopt(out);
}

// Raw pointers for an array of views, on the stack up to kInline entries (the common
// case: no allocation per call).
class RawValues {
 public:
  static constexpr size_t kInline = 16;
  template <class V>
  explicit RawValues(Span<V> values) : size_(values.size()) {
    if (size_ > kInline) heap_.resize(size_);
    dist_value_t** out = size_ > kInline ? heap_.data() : inline_;
    for (size_t i = 0; i < size_; ++i) out[i] = values[i].get();
  }
  RawValues(const RawValues&) = delete;
  RawValues& operator=(const RawValues&) = delete;
  const dist_value_t* const* data() const { return size_ > kInline ? heap_.data() : inline_; }
  int32_t size() const { return static_cast<int32_t>(size_); }

 private:
  size_t size_;
  dist_value_t* inline_[kInline] = {};
  std::vector<dist_value_t*> heap_;
};

// Out-slots for `count` new values, moved into Values afterwards.
class RawOuts {
 public:
  explicit RawOuts(size_t count) : size_(count) {
    if (size_ > RawValues::kInline) heap_.assign(size_, nullptr);
  }
  RawOuts(const RawOuts&) = delete;
  RawOuts& operator=(const RawOuts&) = delete;
  ~RawOuts() {
    for (size_t i = 0; i < size_; ++i) dist_value_destroy(data()[i]);
  }
  dist_value_t** data() { return size_ > RawValues::kInline ? heap_.data() : inline_; }
  int32_t size() const { return static_cast<int32_t>(size_); }
  // Moves the handles into `outs` (replacing what they held).
  void move_to(Span<Value> outs) {
    for (size_t i = 0; i < size_ && i < outs.size(); ++i) {
      outs[i] = Value::adopt(data()[i]);
      data()[i] = nullptr;
    }
  }

 private:
  size_t size_;
  dist_value_t* inline_[RawValues::kInline] = {};
  std::vector<dist_value_t*> heap_;
};

}  // namespace detail

inline Result<Value> ValueView::component(int32_t index) const {
  return detail::call_value(dist_value_component, value_, index);
}
inline Result<Value> ValueView::component_tensor(int32_t index) const {
  return detail::call_value(dist_value_component_tensor, value_, index);
}
inline Result<Value> ValueView::copy_to_device(const char* device) const {
  return detail::call_value(dist_tensor_copy_to_device, value_, device);
}
inline Result<Value> ValueView::read() const { return detail::call_value(dist_variable_read, value_); }

// ---- Making tensors ----

// A tensor of dtype T holding a copy of `data`, with `shape` (row-major; sizes must agree).
// `device` NULL means "CPU:0".
template <class T>
Result<Value> tensor(Span<const T> data, Span<const int64_t> shape, const char* device = nullptr) {
  return detail::call_value(dist_tensor_create, dtype_of_v<T>, shape.data(),
                            static_cast<int32_t>(shape.size()), static_cast<const void*>(data.data()),
                            data.size() * sizeof(T), device);
}

// A zero-filled tensor.
inline Result<Value> zeros(dist_dtype_t dtype, Span<const int64_t> shape, const char* device = nullptr) {
  return detail::call_value(dist_tensor_create, dtype, shape.data(), static_cast<int32_t>(shape.size()),
                            static_cast<const void*>(nullptr), size_t{0}, device);
}

// A rank-0 tensor.
template <class T>
Result<Value> scalar(T value, const char* device = nullptr) {
  return detail::call_value(dist_tensor_create, dtype_of_v<T>, static_cast<const int64_t*>(nullptr), 0,
                            static_cast<const void*>(&value), sizeof(T), device);
}

// A host tensor that borrows `data` without copying (dist_tensor_wrap): the caller keeps
// the memory valid until every value sharing it is destroyed. The engine pattern: wrap
// the engine's own arrays each step instead of copying them in.
template <class T>
Result<Value> wrap(Span<T> data, Span<const int64_t> shape, const char* device = nullptr) {
  static_assert(!std::is_const_v<T>, "the library may write a wrapped buffer in place");
  return detail::call_value(dist_tensor_wrap, dtype_of_v<T>, shape.data(), static_cast<int32_t>(shape.size()),
                            static_cast<void*>(data.data()), data.size() * sizeof(T), device,
                            static_cast<dist_release_fn>(nullptr), static_cast<void*>(nullptr));
}

// ---- Distributed values ----

// A PerReplica value of `components` (shared, not copied).
inline Result<Value> per_replica(Span<const Value> components) {
  detail::RawValues raw(components);
  return detail::call_value(dist_value_create_per_replica, raw.data(), raw.size());
}
// A Mirrored value of `components` (equal dtype and shape; the caller vouches for equal data).
inline Result<Value> mirrored(Span<const Value> components) {
  detail::RawValues raw(components);
  return detail::call_value(dist_value_create_mirrored, raw.data(), raw.size());
}

// A variable of the current strategy initialised from `initial_value` (dist_variable_create).
inline Result<Value> variable(ValueView initial_value, dist_variable_sync_t synchronization = DIST_SYNC_AUTO,
                              dist_variable_aggregation_t aggregation = DIST_AGGREGATION_NONE,
                              const char* name = nullptr) {
  return detail::call_value(dist_variable_create, static_cast<const dist_value_t*>(initial_value.get()),
                            synchronization, aggregation, name);
}

}  // namespace dist

#endif  // DISTRIBUTE_CPP_VALUE_HPP_
