// Helpers for the input pipeline tests: building tensors and draining datasets.
#ifndef DISTRIBUTE_TESTS_CORE_INPUT_TEST_UTIL_H_
#define DISTRIBUTE_TESTS_CORE_INPUT_TEST_UTIL_H_

#include <cstdint>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "core/input/dataset.h"
#include "core/tensor/tensor.h"
#include "gtest/gtest.h"

namespace distribute::testing {

template <typename T>
Tensor MakeTensor(DType dtype, std::vector<int64_t> dims, const std::vector<T>& values) {
  Tensor::Description desc;
  desc.dtype = static_cast<int32_t>(dtype);
  desc.dims = dims;
  desc.byte_size = values.size() * sizeof(T);
  absl::StatusOr<Tensor> t = Tensor::Create(desc, values.data());
  EXPECT_TRUE(t.ok()) << t.status();
  return *t;
}

inline Tensor Int64Tensor(std::vector<int64_t> dims, const std::vector<int64_t>& values) {
  return MakeTensor(DType::kInt64, std::move(dims), values);
}

template <typename T>
std::vector<T> Values(const Tensor& t) {
  std::vector<T> out(t.byte_size() / sizeof(T));
  if (!out.empty()) std::memcpy(out.data(), t.data(), t.byte_size());
  return out;
}

inline int64_t Scalar(const Tensor& t) {
  EXPECT_EQ(t.dtype(), DType::kInt64);
  EXPECT_EQ(t.shape().rank(), 0);
  return *static_cast<const int64_t*>(t.data());
}

inline std::string Bytes(const Tensor& t) {
  EXPECT_EQ(t.dtype(), DType::kUInt8);
  EXPECT_EQ(t.shape().rank(), 1);
  return std::string(static_cast<const char*>(t.data()), t.byte_size());
}

// Every element of one pass (an error fails the test and ends the pass).
inline std::vector<Element> Collect(const DatasetPtr& dataset, uint64_t pass = 0) {
  std::vector<Element> out;
  absl::StatusOr<std::unique_ptr<DatasetIterator>> it = dataset->MakeIterator(pass);
  EXPECT_TRUE(it.ok()) << it.status();
  if (!it.ok()) return out;
  while (true) {
    Element e;
    absl::StatusOr<bool> got = (*it)->GetNext(&e);
    EXPECT_TRUE(got.ok()) << got.status();
    if (!got.ok() || !*got) break;
    EXPECT_EQ(static_cast<int32_t>(e.size()), dataset->num_components());
    out.push_back(std::move(e));
  }
  return out;
}

// The first component of every element, as int64 scalars.
inline std::vector<int64_t> CollectScalars(const DatasetPtr& dataset, uint64_t pass = 0) {
  std::vector<int64_t> out;
  for (const Element& e : Collect(dataset, pass)) out.push_back(Scalar(e[0]));
  return out;
}

inline std::vector<std::string> CollectBytes(const DatasetPtr& dataset) {
  std::vector<std::string> out;
  for (const Element& e : Collect(dataset)) out.push_back(Bytes(e[0]));
  return out;
}

inline std::string TempPath(const std::string& name) {
  const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
  return ::testing::TempDir() + "/dist_input_" + info->test_suite_name() + "_" + info->name() +
         "_" + name;
}

inline std::string WriteFile(const std::string& name, const std::string& contents) {
  const std::string path = TempPath(name);
  std::ofstream(path, std::ios::binary | std::ios::trunc) << contents;
  return path;
}

}  // namespace distribute::testing

#endif  // DISTRIBUTE_TESTS_CORE_INPUT_TEST_UTIL_H_
