// RETURN_IF_ERROR and ASSIGN_OR_RETURN: early return with the original status, the value
// moved (never copied) into a new declaration or an existing variable, and each operand
// evaluated exactly once.
#include "core/util/status_macros.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gtest/gtest.h"

namespace distribute {
namespace {

int evaluations = 0;

absl::Status Counted(absl::Status status) {
  ++evaluations;
  return status;
}

template <typename T>
absl::StatusOr<T> CountedOr(absl::StatusOr<T> value) {
  ++evaluations;
  return value;
}

// --- RETURN_IF_ERROR -------------------------------------------------------------------

absl::Status TwoSteps(absl::Status first, absl::Status second, int* reached) {
  RETURN_IF_ERROR(Counted(first));
  *reached = 1;
  RETURN_IF_ERROR(Counted(second));
  *reached = 2;
  return absl::OkStatus();
}

TEST(ReturnIfErrorTest, ContinuesOnOk) {
  evaluations = 0;
  int reached = 0;
  EXPECT_TRUE(TwoSteps(absl::OkStatus(), absl::OkStatus(), &reached).ok());
  EXPECT_EQ(reached, 2);
  EXPECT_EQ(evaluations, 2);
}

TEST(ReturnIfErrorTest, ReturnsTheFirstErrorUnchanged) {
  evaluations = 0;
  int reached = 0;
  const absl::Status error = absl::NotFoundError("no such thing");
  const absl::Status returned = TwoSteps(error, absl::InternalError("never seen"), &reached);
  EXPECT_EQ(returned, error);
  EXPECT_EQ(returned.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(returned.message(), "no such thing");
  EXPECT_EQ(reached, 0);
  EXPECT_EQ(evaluations, 1);

  evaluations = 0;
  const absl::Status second = TwoSteps(absl::OkStatus(), absl::DeadlineExceededError("late"), &reached);
  EXPECT_EQ(second.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(second.message(), "late");
  EXPECT_EQ(reached, 1);
  EXPECT_EQ(evaluations, 2);
}

TEST(ReturnIfErrorTest, KeepsPayloads) {
  absl::Status error = absl::UnavailableError("peer lost");
  error.SetPayload("type.example/peer", absl::Cord("3"));
  int reached = 0;
  const absl::Status returned = TwoSteps(error, absl::OkStatus(), &reached);
  ASSERT_TRUE(returned.GetPayload("type.example/peer").has_value());
  EXPECT_EQ(*returned.GetPayload("type.example/peer"), "3");
}

absl::StatusOr<int> ReturnIfErrorInStatusOr(absl::Status status) {
  RETURN_IF_ERROR(status);
  return 7;
}

TEST(ReturnIfErrorTest, WorksInFunctionsReturningStatusOr) {
  EXPECT_EQ(*ReturnIfErrorInStatusOr(absl::OkStatus()), 7);
  const absl::StatusOr<int> failed = ReturnIfErrorInStatusOr(absl::AbortedError("stop"));
  EXPECT_EQ(failed.status().code(), absl::StatusCode::kAborted);
  EXPECT_EQ(failed.status().message(), "stop");
}

absl::Status ReturnIfErrorAsIfBody(bool check, absl::Status status) {
  // A single statement: usable as the body of an unbraced if/else.
  if (check)
    RETURN_IF_ERROR(status);
  else
    return absl::CancelledError("not checked");
  return absl::OkStatus();
}

TEST(ReturnIfErrorTest, IsASingleStatement) {
  EXPECT_TRUE(ReturnIfErrorAsIfBody(true, absl::OkStatus()).ok());
  EXPECT_EQ(ReturnIfErrorAsIfBody(true, absl::InternalError("x")).code(),
            absl::StatusCode::kInternal);
  EXPECT_EQ(ReturnIfErrorAsIfBody(false, absl::OkStatus()).code(), absl::StatusCode::kCancelled);
}

// --- ASSIGN_OR_RETURN ------------------------------------------------------------------

// Counts copies and moves of itself.
struct Tracked {
  static int copies;
  static int moves;
  std::string payload;
  explicit Tracked(std::string p) : payload(std::move(p)) {}
  Tracked(const Tracked& other) : payload(other.payload) { ++copies; }
  Tracked(Tracked&& other) noexcept : payload(std::move(other.payload)) { ++moves; }
  Tracked& operator=(const Tracked& other) {
    payload = other.payload;
    ++copies;
    return *this;
  }
  Tracked& operator=(Tracked&& other) noexcept {
    payload = std::move(other.payload);
    ++moves;
    return *this;
  }
};
int Tracked::copies = 0;
int Tracked::moves = 0;

absl::StatusOr<Tracked> MakeTracked(bool ok) {
  if (!ok) return absl::InvalidArgumentError("bad tracked");
  return Tracked("a long enough payload to live on the heap, not in SSO");
}

absl::StatusOr<std::string> IntoDeclaration(absl::StatusOr<Tracked> input, int* reached) {
  ASSIGN_OR_RETURN(Tracked value, CountedOr(std::move(input)));
  *reached = 1;
  return value.payload;
}

TEST(AssignOrReturnTest, DeclarationGetsTheMovedValue) {
  evaluations = 0;
  int reached = 0;
  absl::StatusOr<Tracked> input = MakeTracked(true);
  Tracked::copies = 0;
  const absl::StatusOr<std::string> result = IntoDeclaration(std::move(input), &reached);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(*result, "a long enough payload to live on the heap, not in SSO");
  EXPECT_EQ(reached, 1);
  EXPECT_EQ(evaluations, 1);
  EXPECT_EQ(Tracked::copies, 0);
}

TEST(AssignOrReturnTest, ErrorReturnsEarlyWithTheStatus) {
  evaluations = 0;
  int reached = 0;
  const absl::StatusOr<std::string> result = IntoDeclaration(MakeTracked(false), &reached);
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(result.status().message(), "bad tracked");
  EXPECT_EQ(reached, 0);
  EXPECT_EQ(evaluations, 1);
}

absl::Status IntoExisting(absl::StatusOr<Tracked> input, Tracked& target) {
  ASSIGN_OR_RETURN(target, CountedOr(std::move(input)));
  return absl::OkStatus();
}

TEST(AssignOrReturnTest, ExistingVariableIsMoveAssigned) {
  Tracked target("old");
  absl::StatusOr<Tracked> input = MakeTracked(true);
  Tracked::copies = 0;
  Tracked::moves = 0;
  ASSERT_TRUE(IntoExisting(std::move(input), target).ok());
  EXPECT_EQ(target.payload, "a long enough payload to live on the heap, not in SSO");
  EXPECT_EQ(Tracked::copies, 0);
  EXPECT_GE(Tracked::moves, 1);

  // On error the variable keeps its value.
  Tracked untouched("keep");
  const absl::Status status = IntoExisting(MakeTracked(false), untouched);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(untouched.payload, "keep");
}

absl::StatusOr<int> MoveOnly(bool ok, int* out) {
  absl::StatusOr<std::unique_ptr<int>> made =
      ok ? absl::StatusOr<std::unique_ptr<int>>(std::make_unique<int>(41))
         : absl::StatusOr<std::unique_ptr<int>>(absl::ResourceExhaustedError("no memory"));
  ASSIGN_OR_RETURN(std::unique_ptr<int> p, std::move(made));
  ASSIGN_OR_RETURN(auto q, absl::StatusOr<std::unique_ptr<int>>(std::make_unique<int>(1)));
  *out = *p + *q;
  return *out;
}

TEST(AssignOrReturnTest, MoveOnlyTypesAndSeveralUsesInOneFunction) {
  int out = 0;
  const absl::StatusOr<int> ok = MoveOnly(true, &out);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(*ok, 42);
  EXPECT_EQ(out, 42);
  out = 0;
  const absl::StatusOr<int> failed = MoveOnly(false, &out);
  EXPECT_EQ(failed.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(out, 0);
}

absl::Status StructuredTarget(std::pair<int, std::string>& pair, std::vector<int>& vec) {
  ASSIGN_OR_RETURN(pair.second, absl::StatusOr<std::string>("second"));
  ASSIGN_OR_RETURN(vec[1], absl::StatusOr<int>(9));
  ASSIGN_OR_RETURN(const int constant, absl::StatusOr<int>(3));
  pair.first = constant;
  return absl::OkStatus();
}

TEST(AssignOrReturnTest, MemberAndElementTargetsAndConstDeclarations) {
  std::pair<int, std::string> pair{0, ""};
  std::vector<int> vec = {1, 2, 3};
  ASSERT_TRUE(StructuredTarget(pair, vec).ok());
  EXPECT_EQ(pair.first, 3);
  EXPECT_EQ(pair.second, "second");
  EXPECT_EQ(vec, (std::vector<int>{1, 9, 3}));
}

absl::StatusOr<int> Chain(int depth) {
  if (depth == 0) return absl::OutOfRangeError("bottom");
  ASSIGN_OR_RETURN(int below, Chain(depth - 1));
  return below + 1;
}

TEST(AssignOrReturnTest, PropagatesThroughCallChains) {
  const absl::StatusOr<int> result = Chain(5);
  EXPECT_EQ(result.status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(result.status().message(), "bottom");
}

}  // namespace
}  // namespace distribute
