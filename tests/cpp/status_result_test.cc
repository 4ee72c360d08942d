// Status, Result<T> and Span: the wrapper's error model and views.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "distribute/distribute.hpp"

namespace {

TEST(StatusTest, DefaultIsOk) {
  dist::Status s;
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.code(), DIST_OK);
  EXPECT_EQ(s.to_string(), "OK");
}

TEST(StatusTest, FromCallReadsTheLibraryMessage) {
  dist_value_t* out = nullptr;
  const int64_t shape[] = {-3};
  const dist_status_t code = dist_tensor_create(DIST_FLOAT32, shape, 1, nullptr, 0, nullptr, &out);
  dist::Status s = dist::Status::FromCall(code);
  EXPECT_EQ(s.code(), DIST_INVALID_ARGUMENT);
  EXPECT_NE(s.message().find("shape[0] is -3"), std::string::npos) << s.message();
  EXPECT_EQ(s.to_string().rfind("INVALID_ARGUMENT: ", 0), 0u) << s.to_string();
}

TEST(ResultTest, HoldsAValue) {
  dist::Result<int> r(7);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(static_cast<bool>(r));
  EXPECT_EQ(*r, 7);
  EXPECT_EQ(r.value(), 7);
  EXPECT_TRUE(r.status().ok());
}

TEST(ResultTest, HoldsAnError) {
  dist::Result<int> r(dist::Status(DIST_NOT_FOUND, "no such thing"));
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), DIST_NOT_FOUND);
  EXPECT_EQ(r.value_or(5), 5);
}

TEST(ResultTest, AnOkStatusWithoutValueBecomesInternal) {
  dist::Result<int> r{dist::Status()};
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), DIST_INTERNAL);
}

TEST(ResultTest, ValueOfAnErrorThrowsDistError) {
  dist::Result<int> r(dist::Status(DIST_OUT_OF_RANGE, "past the end"));
  try {
    (void)r.value();
    FAIL() << "value() returned";
  } catch (const dist::Error& e) {
    EXPECT_EQ(e.status().code(), DIST_OUT_OF_RANGE);
    EXPECT_STREQ(e.what(), "OUT_OF_RANGE: past the end");
  }
}

TEST(ResultTest, ThrowIfError) {
  EXPECT_NO_THROW(dist::throw_if_error(dist::Status()));
  EXPECT_THROW(dist::throw_if_error(dist::Status(DIST_ABORTED, "x")), dist::Error);
}

TEST(ResultTest, MovesOnlyValues) {
  dist::Result<dist::Value> r = dist::scalar<float>(2.5f);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  dist::Value v = std::move(r).value();
  EXPECT_EQ(v.scalar<float>().value(), 2.5f);
}

TEST(SpanTest, ViewsContainersArraysAndLists) {
  std::vector<int> v = {1, 2, 3};
  dist::Span<int> a(v);
  EXPECT_EQ(a.size(), 3u);
  a[1] = 20;
  EXPECT_EQ(v[1], 20);
  std::array<int, 2> arr = {4, 5};
  dist::Span<const int> b(arr);
  EXPECT_EQ(b[1], 5);
  int raw[4] = {6, 7, 8, 9};
  dist::Span<int> c(raw);
  EXPECT_EQ(c.size(), 4u);
  EXPECT_EQ(c.subspan(1, 2)[1], 8);
  auto sum = [](dist::Span<const int64_t> s) {
    int64_t t = 0;
    for (int64_t x : s) t += x;
    return t;
  };
  EXPECT_EQ(sum({1, 2, 3, 4}), 10);
  EXPECT_EQ(sum({}), 0);
  dist::Span<const int> d = a;  // Span<T> to Span<const T>
  EXPECT_EQ(d[1], 20);
}

TEST(VersionTest, MatchesTheHeader) {
  EXPECT_STREQ(dist::version(), DIST_VERSION_STRING);
  EXPECT_EQ(dist::version_number(), DIST_VERSION_NUMBER);
}

}  // namespace
