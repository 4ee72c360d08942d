// Status propagation macros. Debian's Abseil 20220623 ships none, so the project has its
// own; they work with absl::Status and absl::StatusOr<T>.
#ifndef DISTRIBUTE_CORE_UTIL_STATUS_MACROS_H_
#define DISTRIBUTE_CORE_UTIL_STATUS_MACROS_H_

#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define DIST_STATUS_CONCAT_INNER_(a, b) a##b
#define DIST_STATUS_CONCAT_(a, b) DIST_STATUS_CONCAT_INNER_(a, b)

// Returns from the enclosing function with the status of `expr` (an absl::Status; use
// .status() on a StatusOr) when it is not OK.
#define RETURN_IF_ERROR(expr)                                   \
  do {                                                          \
    const ::absl::Status dist_status_macro_status_ = (expr);    \
    if (!dist_status_macro_status_.ok()) {                      \
      return dist_status_macro_status_;                         \
    }                                                           \
  } while (false)

// Evaluates `rexpr` (an absl::StatusOr<T>); on error returns its status, otherwise moves
// the value into `lhs`, which may be a declaration ("auto x") or an existing variable.
// It expands to several statements: use it as a statement of its own, never as the
// unbraced body of an if or loop.
#define ASSIGN_OR_RETURN(lhs, rexpr) \
  DIST_ASSIGN_OR_RETURN_IMPL_(DIST_STATUS_CONCAT_(dist_statusor_, __COUNTER__), lhs, rexpr)

#define DIST_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, rexpr) \
  auto statusor = (rexpr);                                \
  if (!statusor.ok()) {                                   \
    return std::move(statusor).status();                  \
  }                                                       \
  lhs = std::move(statusor).value()

#endif  // DISTRIBUTE_CORE_UTIL_STATUS_MACROS_H_
