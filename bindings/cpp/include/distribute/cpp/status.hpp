// distribute C++ wrapper — Status and Result<T>, the one error model of the wrapper.
//
// Why results and not exceptions: the wrapper is made for engines, and many engines build
// with -fno-exceptions. A Result<T> works in both worlds; where exceptions are enabled,
// Result::value() on an error throws dist::Error, so code that prefers exceptions can
// write `auto t = dist::tensor<float>(...).value();`. Without exceptions it prints the
// status and aborts, as std::expected's value() cannot do otherwise there.
//
// A Status is the C status code plus the message dist_last_error_message() gave for it.
// It allocates only on failure (the message), never on the OK path.
#ifndef DISTRIBUTE_CPP_STATUS_HPP_
#define DISTRIBUTE_CPP_STATUS_HPP_

#include <cstdio>
#include <cstdlib>
#include <new>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>

#if defined(__cpp_exceptions) || defined(__EXCEPTIONS)
#define DIST_CPP_EXCEPTIONS 1
#include <exception>
#include <stdexcept>
#else
#define DIST_CPP_EXCEPTIONS 0
#endif

#include "distribute/distribute.h"

namespace dist {

// The outcome of a call: DIST_OK, or a code with the library's (or a callback's) message.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(dist_status_t code, std::string message) : code_(code), message_(std::move(message)) {}

  // The status of a C call that just returned `code` on this thread: its message is read
  // from dist_last_error_message() (valid until the next dist_ call, so read it now).
  static Status FromCall(dist_status_t code) {
    if (code == DIST_OK) return Status();
    return Status(code, dist_last_error_message());
  }

  bool ok() const { return code_ == DIST_OK; }
  dist_status_t code() const { return code_; }
  const std::string& message() const { return message_; }
  // "INVALID_ARGUMENT: <message>", or "OK".
  std::string to_string() const {
    std::string text = dist_status_name(code_);
    if (!message_.empty()) text.append(": ").append(message_);
    return text;
  }

 private:
  dist_status_t code_ = DIST_OK;
  std::string message_;
};

#if DIST_CPP_EXCEPTIONS
// Thrown by Result::value() and throw_if_error() on a failed status.
class Error : public std::runtime_error {
 public:
  explicit Error(Status status) : std::runtime_error(status.to_string()), status_(std::move(status)) {}
  const Status& status() const { return status_; }

 private:
  Status status_;
};

// Throws dist::Error when `status` is not OK.
inline void throw_if_error(const Status& status) {
  if (!status.ok()) throw Error(status);
}
#endif

namespace detail {

[[noreturn]] inline void fail_on_error(const Status& status) {
#if DIST_CPP_EXCEPTIONS
  throw Error(status);
#else
  std::fprintf(stderr, "distribute: value() of a failed Result: %s\n", status.to_string().c_str());
  std::abort();
#endif
}

}  // namespace detail

// A value or the status that explains why there is none (std::expected's shape, C++17).
template <class T>
class [[nodiscard]] Result {
 public:
  // Implicit from a value and from a failed status, so that functions can `return x;`.
  Result(T value) : value_(std::move(value)) {}  // NOLINT(google-explicit-constructor)
  Result(Status status) : status_(std::move(status)) {  // NOLINT(google-explicit-constructor)
    if (status_.ok()) status_ = Status(DIST_INTERNAL, "Result made from an OK status without a value");
  }

  bool ok() const { return value_.has_value(); }
  explicit operator bool() const { return ok(); }
  // OK when there is a value.
  const Status& status() const { return status_; }

  T& value() & {
    if (!ok()) detail::fail_on_error(status_);
    return *value_;
  }
  const T& value() const& {
    if (!ok()) detail::fail_on_error(status_);
    return *value_;
  }
  // By value, not T&&: `for (float x : tensor.data<float>().value())` must not dangle.
  T value() && {
    if (!ok()) detail::fail_on_error(status_);
    return std::move(*value_);
  }
  // Unchecked access, as std::optional's: only after ok() returned true.
  T& operator*() & { return *value_; }
  const T& operator*() const& { return *value_; }
  T operator*() && { return std::move(*value_); }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }

  template <class U>
  T value_or(U&& fallback) const& {
    return ok() ? *value_ : static_cast<T>(std::forward<U>(fallback));
  }

 private:
  std::optional<T> value_;
  Status status_;
};

namespace detail {

// Calls a C function that fills one out-parameter and returns a status: the result, or
// the status with the library's message.
template <class T, class Fn, class... Args>
Result<T> call_out(Fn fn, Args... args) {
  T out{};
  const dist_status_t code = fn(args..., &out);
  if (code != DIST_OK) return Status::FromCall(code);
  return out;
}

}  // namespace detail

}  // namespace dist

#endif  // DISTRIBUTE_CPP_STATUS_HPP_
