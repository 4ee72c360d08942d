// Tensors, distributed values and variables through the wrapper.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "distribute/distribute.hpp"

namespace {

TEST(TensorTest, CopiesDataWithShapeAndDtype) {
  const std::vector<float> data = {1, 2, 3, 4, 5, 6};
  dist::Result<dist::Value> t = dist::tensor<float>(data, {2, 3});
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  EXPECT_EQ(t->kind().value(), DIST_VALUE_TENSOR);
  EXPECT_EQ(t->dtype().value(), DIST_FLOAT32);
  EXPECT_EQ(t->rank().value(), 2);
  EXPECT_EQ(t->shape().value(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(t->num_elements().value(), 6);
  EXPECT_EQ(t->byte_size().value(), 6 * sizeof(float));
  EXPECT_STREQ(t->device().value(), "/device:CPU:0");
  dist::Span<float> view = t->data<float>().value();
  ASSERT_EQ(view.size(), 6u);
  EXPECT_EQ(std::vector<float>(view.begin(), view.end()), data);
  EXPECT_NE(view.data(), data.data()) << "tensor() copies";
}

TEST(TensorTest, ShapeIntoCallerStorage) {
  dist::Value t = dist::zeros(DIST_INT32, {4, 1, 2}).value();
  int64_t dims[3] = {0, 0, 0};
  ASSERT_TRUE(t.shape(dims).ok());
  EXPECT_EQ(dims[0], 4);
  EXPECT_EQ(dims[2], 2);
  int64_t small[2];
  dist::Status s = t.shape(small);
  EXPECT_EQ(s.code(), DIST_INVALID_ARGUMENT);
}

TEST(TensorTest, ZerosAndScalars) {
  dist::Value z = dist::zeros(DIST_FLOAT64, {3}).value();
  for (double x : z.data<double>().value()) EXPECT_EQ(x, 0.0);
  EXPECT_EQ(dist::scalar<int64_t>(-7).value().scalar<int64_t>().value(), -7);
  EXPECT_EQ(dist::scalar<int32_t>(12).value().rank().value(), 0);
  EXPECT_EQ(dist::scalar<uint8_t>(200).value().scalar<uint8_t>().value(), 200);
  EXPECT_EQ(dist::scalar<bool>(true).value().dtype().value(), DIST_BOOL);
}

TEST(TensorTest, WrapBorrowsTheBuffer) {
  std::vector<int32_t> engine_array = {10, 20, 30};
  dist::Value t = dist::wrap<int32_t>(engine_array, {3}).value();
  EXPECT_EQ(t.data<int32_t>().value().data(), engine_array.data());
  engine_array[1] = 99;
  EXPECT_EQ(t.data<int32_t>().value()[1], 99);
}

TEST(TensorTest, WrongDtypeOrElementCountIsAnError) {
  dist::Value t = dist::tensor<float>({1.0f, 2.0f}, {2}).value();
  dist::Result<dist::Span<double>> d = t.data<double>();
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), DIST_INVALID_ARGUMENT);
  EXPECT_NE(d.status().message().find("holds float32, not float64"), std::string::npos) << d.status().message();
  dist::Result<float> s = t.scalar<float>();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("2 elements"), std::string::npos);
}

TEST(TensorTest, BadInputIsAStatusNotACrash) {
  dist::Result<dist::Value> size_mismatch = dist::tensor<float>({1.0f, 2.0f}, {3});
  EXPECT_EQ(size_mismatch.status().code(), DIST_INVALID_ARGUMENT);
  dist::Result<dist::Value> bad_device = dist::scalar<float>(1.0f, "TPU:0");
  EXPECT_FALSE(bad_device.ok());
  dist::Result<dist::Value> missing = dist::scalar<float>(1.0f, "CPU:999");
  EXPECT_EQ(missing.status().code(), DIST_NOT_FOUND);
  dist::ValueView empty;
  EXPECT_EQ(empty.dtype().status().code(), DIST_INVALID_ARGUMENT);
  EXPECT_EQ(empty.kind().status().code(), DIST_INVALID_ARGUMENT);
}

TEST(TensorTest, CopyToDeviceMakesAnIndependentTensor) {
  ASSERT_TRUE(dist::set_logical_cpu_device_count(2).ok());
  dist::Value a = dist::tensor<double>({1.0, 2.0}, {2}).value();
  dist::Value b = a.copy_to_device("CPU:1").value();
  EXPECT_STREQ(b.device().value(), "/device:CPU:1");
  a.data<double>().value()[0] = 5.0;
  EXPECT_EQ(b.data<double>().value()[0], 1.0);
}

TEST(ValueTest, MoveTransfersOwnership) {
  dist::Value a = dist::scalar<float>(1.0f).value();
  dist_value_t* raw = a.get();
  dist::Value b = std::move(a);
  EXPECT_EQ(a.get(), nullptr);  // NOLINT(bugprone-use-after-move): moved-from is empty
  EXPECT_EQ(b.get(), raw);
  dist::Value c;
  c = std::move(b);
  EXPECT_EQ(c.get(), raw);
  dist_value_t* released = c.release();
  EXPECT_EQ(released, raw);
  EXPECT_FALSE(static_cast<bool>(c));
  dist::Value adopted = dist::Value::adopt(released);
  EXPECT_EQ(adopted.scalar<float>().value(), 1.0f);
}

TEST(ValueTest, PerReplicaAndMirroredComponents) {
  std::vector<dist::Value> parts;
  parts.push_back(dist::scalar<float>(1.0f).value());
  parts.push_back(dist::scalar<float>(2.0f).value());
  dist::Value pr = dist::per_replica(parts).value();
  EXPECT_EQ(pr.kind().value(), DIST_VALUE_PER_REPLICA);
  EXPECT_EQ(pr.num_components().value(), 2);
  EXPECT_EQ(pr.component(1).value().scalar<float>().value(), 2.0f);
  EXPECT_EQ(pr.component_tensor(0).value().scalar<float>().value(), 1.0f);
  EXPECT_EQ(pr.component(2).status().code(), DIST_OUT_OF_RANGE);

  std::vector<dist::Value> same;
  same.push_back(dist::scalar<float>(4.0f).value());
  same.push_back(dist::scalar<float>(4.0f).value());
  dist::Value m = dist::mirrored(same).value();
  EXPECT_EQ(m.kind().value(), DIST_VALUE_MIRRORED);
  EXPECT_EQ(dist::per_replica(dist::Span<const dist::Value>()).status().code(), DIST_INVALID_ARGUMENT);
}

TEST(VariableTest, PlainVariableWithoutScope) {
  dist::Value init = dist::tensor<float>({1.0f, 2.0f}, {2}).value();
  dist::Value v = dist::variable(init, DIST_SYNC_AUTO, DIST_AGGREGATION_NONE, "w").value();
  EXPECT_EQ(v.kind().value(), DIST_VALUE_VARIABLE);
  EXPECT_STREQ(v.variable_name().value(), "w");
  EXPECT_EQ(v.variable_device_count().value(), 1);
  ASSERT_TRUE(v.assign_add(dist::tensor<float>({0.5f, 0.5f}, {2}).value()).ok());
  dist::Value read = v.read().value();
  EXPECT_EQ(read.data<float>().value()[0], 1.5f);
  EXPECT_EQ(read.data<float>().value()[1], 2.5f);
  ASSERT_TRUE(v.assign_sub(dist::tensor<float>({1.5f, 1.5f}, {2}).value()).ok());
  ASSERT_TRUE(v.assign(dist::tensor<float>({7.0f, 8.0f}, {2}).value()).ok());
  EXPECT_EQ(v.read().value().data<float>().value()[1], 8.0f);
  dist::Status wrong_shape = v.assign(dist::scalar<float>(1.0f).value());
  EXPECT_EQ(wrong_shape.code(), DIST_INVALID_ARGUMENT);
  EXPECT_EQ(v.read().value().data<float>().value()[1], 8.0f) << "a failed assign changes nothing";
  EXPECT_EQ(init.variable_name().status().code(), DIST_INVALID_ARGUMENT) << "a tensor is not a variable";
}

}  // namespace
