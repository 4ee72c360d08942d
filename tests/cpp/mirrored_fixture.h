// A Mirrored strategy over two logical CPU devices, the setting most wrapper tests use.
#ifndef DISTRIBUTE_TESTS_CPP_MIRRORED_FIXTURE_H_
#define DISTRIBUTE_TESTS_CPP_MIRRORED_FIXTURE_H_

#include <gtest/gtest.h>

#include <optional>

#include "distribute/distribute.hpp"

class MirroredTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(dist::set_logical_cpu_device_count(2).ok());
    const char* devices[] = {"CPU:0", "CPU:1"};
    dist::Result<dist::Strategy> s = dist::Strategy::mirrored(devices);
    ASSERT_TRUE(s.ok()) << s.status().to_string();
    strategy_.emplace(std::move(*s));
    // Failures in these tests are expected errors, never slow peers: keep waits short.
    ASSERT_TRUE(strategy_->set_timeout_ms(20000).ok());
  }
  dist::Strategy& strategy() { return *strategy_; }

 private:
  std::optional<dist::Strategy> strategy_;
};

#endif  // DISTRIBUTE_TESTS_CPP_MIRRORED_FIXTURE_H_
