// Strategies for the core tests: a MirroredStrategy over the first n logical CPU devices.
#ifndef DISTRIBUTE_TESTS_CORE_STRATEGY_TEST_UTIL_H_
#define DISTRIBUTE_TESTS_CORE_STRATEGY_TEST_UTIL_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/strategy/strategy.h"
#include "gtest/gtest.h"
#include "tests/core/status_test_util.h"

namespace distribute::testing {

// MirroredStrategy on CPU:0 ... CPU:n-1 (the test sets enough logical CPU devices).
inline std::shared_ptr<Strategy> MirroredOnCpus(int32_t n) {
  std::vector<std::string> devices;
  for (int32_t i = 0; i < n; ++i) devices.push_back(absl::StrCat("CPU:", i));
  absl::StatusOr<std::shared_ptr<Strategy>> strategy = Strategy::CreateMirrored(devices, std::nullopt);
  EXPECT_TRUE(IsOk(strategy));
  return strategy.ok() ? *strategy : nullptr;
}

}  // namespace distribute::testing

#endif  // DISTRIBUTE_TESTS_CORE_STRATEGY_TEST_UTIL_H_
