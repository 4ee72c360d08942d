// Typed reads convert nothing (issue 42): data<T>() and scalar<T>() read only a tensor of
// T's dtype, and read_scalar<T>() (the library's getters) the same; any other dtype is
// INVALID_ARGUMENT naming both. A float32 1.0 read as int32 once gave 1065353216 in
// another binding. Reads of device memory are in device_read_test.cc (fake GPU plugin).
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "distribute/distribute.hpp"

namespace {

// The element types the wrapper reads, and every dtype a tensor may have.
using ReadTypes = std::tuple<float, double, int32_t, int64_t, int16_t, int8_t, uint8_t, bool>;
const dist_dtype_t kDtypes[] = {DIST_FLOAT32, DIST_FLOAT64, DIST_INT32, DIST_INT64, DIST_INT16,
                                DIST_INT8,    DIST_UINT8,   DIST_BOOL,  DIST_FLOAT16, DIST_BFLOAT16};

// A one-element tensor of `dtype` holding 1 (float16 0x3c00, bfloat16 0x3f80).
dist::Value one_of(dist_dtype_t dtype) {
  switch (dtype) {
    case DIST_FLOAT32: return dist::scalar<float>(1.0f).value();
    case DIST_FLOAT64: return dist::scalar<double>(1.0).value();
    case DIST_INT32: return dist::scalar<int32_t>(1).value();
    case DIST_INT64: return dist::scalar<int64_t>(1).value();
    case DIST_INT16: return dist::scalar<int16_t>(1).value();
    case DIST_INT8: return dist::scalar<int8_t>(1).value();
    case DIST_UINT8: return dist::scalar<uint8_t>(1).value();
    case DIST_BOOL: return dist::scalar<bool>(true).value();
    default: {
      const uint16_t bits = dtype == DIST_FLOAT16 ? 0x3c00 : 0x3f80;
      dist_value_t* out = nullptr;
      EXPECT_EQ(dist_tensor_create(dtype, nullptr, 0, &bits, sizeof bits, nullptr, &out), DIST_OK);
      return dist::Value::adopt(out);
    }
  }
}

// The expected refusal of reading a `have` tensor as `want`, by `op`.
template <class R>
void expect_dtype_refused(const dist::Result<R>& r, dist_dtype_t have, dist_dtype_t want, const std::string& what) {
  ASSERT_FALSE(r.ok()) << what << " read a " << dist_dtype_name(have) << " tensor";
  EXPECT_EQ(r.status().code(), DIST_INVALID_ARGUMENT) << what << ": " << r.status().to_string();
  const std::string& m = r.status().message();
  EXPECT_NE(m.find(dist_dtype_name(have)), std::string::npos) << what << ": " << m;
  EXPECT_NE(m.find(dist_dtype_name(want)), std::string::npos) << what << ": " << m;
}

// data<T>() and scalar<T>() of every dtype: T's own dtype reads 1, every other is refused.
template <class T>
int check_reads_of(dist_dtype_t have, const dist::Value& t) {
  const dist_dtype_t want = dist::dtype_of_v<T>;
  const std::string name = std::string("<") + dist_dtype_name(want) + "> of " + dist_dtype_name(have);
  dist::Result<dist::Span<T>> d = t.data<T>();
  dist::Result<T> s = t.scalar<T>();
  if (have == want) {
    EXPECT_TRUE(d.ok()) << "data" << name << ": " << d.status().to_string();
    EXPECT_TRUE(s.ok()) << "scalar" << name << ": " << s.status().to_string();
    if (d.ok()) {
      EXPECT_EQ(d->size(), 1u);
      EXPECT_EQ((*d)[0], static_cast<T>(1)) << "data" << name;
    }
    if (s.ok()) {
      EXPECT_EQ(*s, static_cast<T>(1)) << "scalar" << name;
    }
    return 0;
  }
  expect_dtype_refused(d, have, want, "data" + name);
  expect_dtype_refused(s, have, want, "scalar" + name);
  EXPECT_NE(d.status().message().find("dist::ValueView::data: the tensor holds " + std::string(dist_dtype_name(have)) +
                                      ", not " + dist_dtype_name(want)),
            std::string::npos)
      << d.status().message();
  EXPECT_NE(s.status().message().find("dist::ValueView::scalar: the tensor holds"), std::string::npos)
      << s.status().message();
  return 2;
}

template <class... T>
int check_all_reads(dist_dtype_t have, const dist::Value& t, std::tuple<T...>*) {
  return (check_reads_of<T>(have, t) + ...);
}

// The library's getters behind read_scalar<T>(): the same rule.
template <class T>
int check_read_scalar(dist_dtype_t have, const dist::Value& t) {
  const dist_dtype_t want = dist::dtype_of_v<T>;
  dist::Result<T> r = t.read_scalar<T>();
  if (have == want) {
    EXPECT_TRUE(r.ok()) << r.status().to_string();
    if (r.ok()) {
      EXPECT_EQ(*r, static_cast<T>(1));
    }
    return 0;
  }
  expect_dtype_refused(r, have, want, std::string("read_scalar<") + dist_dtype_name(want) + ">");
  return 1;
}

// The case: float32 1.0 read as int32 is refused, not 1065353216.
TEST(TypedReadTest, IntReadOfFloatTensorIsRefused) {
  dist::Value f = dist::scalar<float>(1.0f).value();
  dist::Result<dist::Span<int32_t>> d = f.data<int32_t>();
  ASSERT_FALSE(d.ok()) << "read " << (*d)[0];
  EXPECT_EQ(d.status().code(), DIST_INVALID_ARGUMENT);
  EXPECT_EQ(d.status().message(), "dist::ValueView::data: the tensor holds float32, not int32");
  dist::Result<int32_t> s = f.scalar<int32_t>();
  ASSERT_FALSE(s.ok()) << "read " << *s;
  EXPECT_EQ(s.status().message(), "dist::ValueView::scalar: the tensor holds float32, not int32");
  dist::Result<int32_t> r = f.read_scalar<int32_t>();
  ASSERT_FALSE(r.ok()) << "read " << *r;
  EXPECT_EQ(r.status().code(), DIST_INVALID_ARGUMENT);
  EXPECT_EQ(f.data<float>().value()[0], 1.0f) << "still readable as itself";
}

TEST(TypedReadTest, EveryTypedReadChecksTheDtype) {
  int refused = 0;
  for (dist_dtype_t have : kDtypes) {
    const dist::Value t = one_of(have);
    ASSERT_EQ(t.dtype().value(), have);
    refused += check_all_reads(have, t, static_cast<ReadTypes*>(nullptr));
    refused += check_read_scalar<float>(have, t) + check_read_scalar<double>(have, t) +
               check_read_scalar<int32_t>(have, t) + check_read_scalar<int64_t>(have, t);
  }
  // 10 dtypes x 8 types x (data, scalar), 8 of the pairs matching; 10 x 4 read_scalar, 4 matching.
  EXPECT_EQ(refused, (10 * 8 - 8) * 2 + (10 * 4 - 4));
}

// An empty handle is refused by every read, not dereferenced.
TEST(TypedReadTest, EmptyHandleIsRefused) {
  const dist::Value empty;
  EXPECT_EQ(empty.data<float>().status().code(), DIST_INVALID_ARGUMENT);
  EXPECT_EQ(empty.scalar<float>().status().code(), DIST_INVALID_ARGUMENT);
  EXPECT_EQ(empty.read_scalar<float>().status().code(), DIST_INVALID_ARGUMENT);
}

}  // namespace
