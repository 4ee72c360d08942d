// Value: a tensor value gives its tensor back; kinds have readable names.
#include "core/values/value.h"

#include <cstdint>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "tests/core/release_probe.h"
#include "tests/core/status_test_util.h"

namespace distribute {
namespace {

using ::distribute::testing::CountingRelease;
using ::distribute::testing::HasError;
using ::distribute::testing::IsOk;
using ::distribute::testing::ReleaseProbe;

absl::StatusOr<Tensor> MakeTensor(std::vector<int32_t>& memory, ReleaseProbe* probe) {
  static const std::vector<int64_t> dims = {2, 2};
  Tensor::Description desc;
  desc.dtype = 3;  // int32
  desc.dims = dims;
  desc.byte_size = memory.size() * sizeof(int32_t);
  return Tensor::Wrap(desc, memory.data(), CountingRelease(probe));
}

TEST(ValueTest, TensorValueGivesItsTensorBack) {
  ReleaseProbe probe;
  std::vector<int32_t> memory = {1, 2, 3, 4};
  absl::StatusOr<Tensor> tensor = MakeTensor(memory, &probe);
  ASSERT_TRUE(IsOk(tensor));
  const Value value(*tensor);
  EXPECT_EQ(value.kind(), ValueKind::kTensor);
  ASSERT_EQ(value.components().size(), 1u);

  absl::StatusOr<const Tensor*> as_tensor = value.AsTensor();
  ASSERT_TRUE(IsOk(as_tensor));
  ASSERT_NE(*as_tensor, nullptr);
  EXPECT_EQ(*as_tensor, &value.components().front());
  EXPECT_EQ((*as_tensor)->data(), memory.data());
  EXPECT_EQ((*as_tensor)->dtype(), DType::kInt32);
  EXPECT_EQ((*as_tensor)->shape().dims(), (distribute::Dims{2, 2}));
  EXPECT_EQ((*as_tensor)->buffer(), tensor->buffer());
  // Asking twice gives the same tensor.
  EXPECT_EQ(*value.AsTensor(), *as_tensor);
}

TEST(ValueTest, ValueSharesTheTensorsBuffer) {
  ReleaseProbe probe;
  std::vector<int32_t> memory = {5, 6, 7, 8};
  {
    std::vector<Value> values;
    {
      absl::StatusOr<Tensor> tensor = MakeTensor(memory, &probe);
      ASSERT_TRUE(IsOk(tensor));
      values.emplace_back(std::move(*tensor));
      values.push_back(values.front());
    }
    EXPECT_EQ(probe.calls, 0);
    values.erase(values.begin());
    EXPECT_EQ(probe.calls, 0);
    EXPECT_EQ((*values.front().AsTensor())->data(), memory.data());
  }
  EXPECT_EQ(probe.calls, 1);
}

// The distributed kinds are being added by the strategy layer; the check compiles only
// where Value::PerReplica / Value::Mirrored exist, and skips otherwise.
template <typename V = Value>
void ExpectAsTensorRejectsDistributedKinds() {
  if constexpr (requires(std::vector<Tensor> c) {
                  V::PerReplica(std::move(c));
                  V::Mirrored(std::move(c));
                }) {
    ReleaseProbe probe_a, probe_b;
    std::vector<int32_t> a = {1, 2, 3, 4}, b = {5, 6, 7, 8};
    absl::StatusOr<Tensor> ta = MakeTensor(a, &probe_a);
    absl::StatusOr<Tensor> tb = MakeTensor(b, &probe_b);
    ASSERT_TRUE(IsOk(ta));
    ASSERT_TRUE(IsOk(tb));
    absl::StatusOr<V> per_replica = V::PerReplica({*ta, *tb});
    ASSERT_TRUE(IsOk(per_replica));
    EXPECT_TRUE(HasError(per_replica->AsTensor(), absl::StatusCode::kInvalidArgument,
                         {"PerReplica value", "not a tensor"}));
    absl::StatusOr<V> mirrored = V::Mirrored({*ta, *tb});
    ASSERT_TRUE(IsOk(mirrored));
    EXPECT_TRUE(HasError(mirrored->AsTensor(), absl::StatusCode::kInvalidArgument,
                         {"Mirrored value", "not a tensor"}));
  } else {
    GTEST_SKIP() << "Value has no distributed kinds yet";
  }
}

TEST(ValueTest, AsTensorRejectsDistributedKindsNamingTheKind) {
  ExpectAsTensorRejectsDistributedKinds();
}

TEST(ValueTest, KindNames) {
  EXPECT_EQ(ValueKindName(ValueKind::kTensor), "tensor");
  EXPECT_EQ(ValueKindName(ValueKind::kPerReplica), "PerReplica value");
  EXPECT_EQ(ValueKindName(ValueKind::kMirrored), "Mirrored value");
  EXPECT_EQ(ValueKindName(ValueKind::kMirroredVariable), "MirroredVariable");
  EXPECT_EQ(ValueKindName(ValueKind::kSyncOnReadVariable), "SyncOnReadVariable");
  EXPECT_EQ(ValueKindName(ValueKind::kVariable), "variable");
  EXPECT_EQ(ValueKindName(static_cast<ValueKind>(0)), "value of unknown kind");
  EXPECT_EQ(ValueKindName(static_cast<ValueKind>(99)), "value of unknown kind");
}

TEST(ValueTest, KindNumbers) {
  // The numbers cross the C ABI.
  EXPECT_EQ(static_cast<int32_t>(ValueKind::kTensor), 1);
  EXPECT_EQ(static_cast<int32_t>(ValueKind::kPerReplica), 2);
  EXPECT_EQ(static_cast<int32_t>(ValueKind::kMirrored), 3);
  EXPECT_EQ(static_cast<int32_t>(ValueKind::kMirroredVariable), 4);
  EXPECT_EQ(static_cast<int32_t>(ValueKind::kSyncOnReadVariable), 5);
  EXPECT_EQ(static_cast<int32_t>(ValueKind::kVariable), 6);
}

}  // namespace
}  // namespace distribute
