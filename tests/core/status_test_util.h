// Assertions on absl::Status / absl::StatusOr for the core tests: the code, and that the
// message names every given part (so a test can demand that an error points at the bad
// input).
#ifndef DISTRIBUTE_TESTS_CORE_STATUS_TEST_UTIL_H_
#define DISTRIBUTE_TESTS_CORE_STATUS_TEST_UTIL_H_

#include <initializer_list>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/string_view.h"
#include "gtest/gtest.h"

namespace distribute::testing {

inline const absl::Status& StatusOf(const absl::Status& status) { return status; }

template <typename T>
const absl::Status& StatusOf(const absl::StatusOr<T>& status_or) {
  return status_or.status();
}

template <typename S>
::testing::AssertionResult IsOk(const S& s) {
  const absl::Status& status = StatusOf(s);
  if (status.ok()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "expected OK, got " << status.ToString();
}

// The status has `code` and its message contains each of `parts`.
template <typename S>
::testing::AssertionResult HasError(const S& s, absl::StatusCode code,
                                    std::initializer_list<absl::string_view> parts = {}) {
  const absl::Status& status = StatusOf(s);
  if (status.ok()) {
    return ::testing::AssertionFailure()
           << "expected " << absl::StatusCodeToString(code) << ", got OK";
  }
  if (status.code() != code) {
    return ::testing::AssertionFailure() << "expected " << absl::StatusCodeToString(code)
                                         << ", got " << status.ToString();
  }
  for (absl::string_view part : parts) {
    if (!absl::StrContains(status.message(), part)) {
      return ::testing::AssertionFailure()
             << "message \"" << std::string(status.message()) << "\" does not contain \""
             << std::string(part) << "\"";
    }
  }
  return ::testing::AssertionSuccess();
}

}  // namespace distribute::testing

#endif  // DISTRIBUTE_TESTS_CORE_STATUS_TEST_UTIL_H_
