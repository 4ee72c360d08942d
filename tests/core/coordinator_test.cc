// The coordinator's scheduling and fault tolerance against fake workers
// (core/server/closure_client.h): a ps task's server and the chief's ParameterServerStrategy
// run in this process, and every worker is a FakeWorker the test can take down, bring back
// as a new incarnation, or make forget its resources. Expectations are coordinator.h's.
#include "core/coordinator/coordinator.h"

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/coordinator/wire_values.h"
#include "core/server/server.h"
#include "gtest/gtest.h"
#include "tests/common/free_ports.h"
#include "tests/core/status_test_util.h"

namespace distribute::coordinator {
namespace {

using ::distribute::testing::FreePorts;
using ::distribute::testing::HasError;
using ::distribute::testing::IsOk;

// A worker that answers in process: RunClosure echoes its first (tensor) argument, after
// checking that every iterator argument's resource was created on it.
class FakeWorker final : public ClosureClient {
 public:
  explicit FakeWorker(std::string task) : task_(std::move(task)) {}
  const std::string& task() const override { return task_; }

  absl::Status RunClosure(const closures::RunClosureRequest& request, closures::RunClosureResponse* response,
                          Deadline) override {
    while (held_.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    std::lock_guard<std::mutex> lock(mu_);
    if (!up_) return absl::UnavailableError(absl::StrCat(task_, " is down"));
    if (die_on_next_run_) {
      die_on_next_run_ = false;
      up_ = false;
      return absl::UnavailableError(absl::StrCat(task_, " died mid-closure"));
    }
    response->set_incarnation(incarnation_);
    for (const closures::Argument& argument : request.arguments()) {
      if (argument.has_iterator() && !resources_.contains(argument.iterator())) {
        response->set_missing_resource(true);
        response->mutable_status()->set_code(static_cast<int>(absl::StatusCode::kNotFound));
        return absl::OkStatus();
      }
    }
    ++runs_;
    if (request.function() == "fails") {
      response->mutable_status()->set_code(static_cast<int>(absl::StatusCode::kInvalidArgument));
      response->mutable_status()->set_message("the function failed");
      return absl::OkStatus();
    }
    if (request.arguments_size() > 0 && request.arguments(0).has_tensor()) {
      *response->mutable_result() = request.arguments(0).tensor();
    }
    return absl::OkStatus();
  }
  absl::Status CreateResource(const closures::CreateResourceRequest& request,
                              closures::CreateResourceResponse* response, Deadline) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (!up_) return absl::UnavailableError(absl::StrCat(task_, " is down"));
    response->set_incarnation(incarnation_);
    if (request.has_iterator_of() && !resources_.contains(request.iterator_of())) {
      response->set_missing_resource(true);
      response->mutable_status()->set_code(static_cast<int>(absl::StatusCode::kNotFound));
      return absl::OkStatus();
    }
    resources_.insert(request.id());
    ++creations_;
    return absl::OkStatus();
  }
  absl::Status ReleaseResources(const closures::ReleaseResourcesRequest& request,
                                closures::ReleaseResourcesResponse* response, Deadline) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (!up_) return absl::UnavailableError("down");
    for (uint64_t id : request.ids()) resources_.erase(id);
    response->set_incarnation(incarnation_);
    return absl::OkStatus();
  }
  absl::Status Ping(closures::PingResponse* response, Deadline) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (!up_) return absl::UnavailableError(absl::StrCat(task_, " is down"));
    response->set_incarnation(incarnation_);
    return absl::OkStatus();
  }
  void Cancel() override {}

  // While held, a closure sent to this worker waits (the queue behind it fills up).
  void Hold(bool held) { held_.store(held); }
  void Down() {
    std::lock_guard<std::mutex> lock(mu_);
    up_ = false;
  }
  void DieOnNextRun() {
    std::lock_guard<std::mutex> lock(mu_);
    die_on_next_run_ = true;
  }
  // A restarted process: a new incarnation without the old one's resources.
  void Restart() {
    std::lock_guard<std::mutex> lock(mu_);
    up_ = true;
    ++incarnation_;
    resources_.clear();
  }
  void ForgetResources() {
    std::lock_guard<std::mutex> lock(mu_);
    resources_.clear();
  }
  int runs() {
    std::lock_guard<std::mutex> lock(mu_);
    return runs_;
  }
  int creations() {
    std::lock_guard<std::mutex> lock(mu_);
    return creations_;
  }

 private:
  const std::string task_;
  std::mutex mu_;
  bool up_ = true;
  bool die_on_next_run_ = false;
  std::atomic<bool> held_{false};
  uint64_t incarnation_ = 1;
  std::set<uint64_t> resources_;
  int runs_ = 0;
  int creations_ = 0;
};

class CoordinatorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ports_ = FreePorts(4);  // chief, worker 0, worker 1, ps 0
    chief_cluster_ = ClusterAs("chief");
    ASSERT_TRUE(IsOk(unsetenv("DIST_JOB_TOKEN") == 0 ? absl::OkStatus() : absl::InternalError("unsetenv")));
    std::thread ps([this] {
      absl::StatusOr<std::unique_ptr<Server>> server = Server::Start(ClusterAs("ps"), Server::Options{});
      if (server.ok()) ps_ = *std::move(server);
    });
    CommunicationOptions options;
    options.timeout_ms = 600;
    absl::StatusOr<std::shared_ptr<Strategy>> strategy = Strategy::CreateParameterServer(
        &chief_cluster_, options, ps::PlacementPolicy::kRoundRobin, std::nullopt);
    ps.join();
    ASSERT_TRUE(IsOk(strategy.status()));
    ASSERT_NE(ps_, nullptr);
    strategy_ = *std::move(strategy);
    workers_ = {std::make_shared<FakeWorker>("worker:0"), std::make_shared<FakeWorker>("worker:1")};
    absl::StatusOr<std::unique_ptr<Coordinator>> coordinator = Coordinator::Create(
        strategy_, [this](const std::string& task, const std::string&) -> absl::StatusOr<std::unique_ptr<ClosureClient>> {
          const int index = task == "worker:0" ? 0 : 1;
          return std::unique_ptr<ClosureClient>(new SharedWorker(workers_[index]));
        });
    ASSERT_TRUE(IsOk(coordinator.status()));
    coordinator_ = *std::move(coordinator);
  }
  void TearDown() override {
    coordinator_.reset();
    strategy_.reset();
    ps_.reset();
  }

  ClusterSpec ClusterAs(absl::string_view job) {
    ClusterSpec cluster;
    (void)cluster.AddTask("chief", 0, absl::StrCat("127.0.0.1:", ports_[0]));
    (void)cluster.AddTask("worker", 0, absl::StrCat("127.0.0.1:", ports_[1]));
    (void)cluster.AddTask("worker", 1, absl::StrCat("127.0.0.1:", ports_[2]));
    (void)cluster.AddTask("ps", 0, absl::StrCat("127.0.0.1:", ports_[3]));
    (void)cluster.SetTask(job, 0);
    return cluster;
  }

  static ClosureArguments Scalar(float value) {
    ClosureArguments arguments;
    ClosureArgument argument;
    const int64_t dims[1] = {1};
    absl::StatusOr<Tensor> tensor = Tensor::Create({1, std::span<const int64_t>(dims, 1), sizeof(value)}, &value);
    argument.value = Value(*tensor);
    arguments.items.push_back(std::move(argument));
    return arguments;
  }

  static float Result(RemoteValue& value) {
    absl::StatusOr<std::optional<Tensor>> result = value.Fetch();
    EXPECT_TRUE(IsOk(result.status()));
    if (!result.ok() || !result->has_value()) return -1;
    return *static_cast<const float*>((*result)->data());
  }

  // The coordinator owns its clients; each forwards to the test's shared FakeWorker.
  class SharedWorker final : public ClosureClient {
   public:
    explicit SharedWorker(std::shared_ptr<FakeWorker> worker) : worker_(std::move(worker)) {}
    const std::string& task() const override { return worker_->task(); }
    absl::Status RunClosure(const closures::RunClosureRequest& r, closures::RunClosureResponse* o, Deadline d) override {
      return worker_->RunClosure(r, o, d);
    }
    absl::Status CreateResource(const closures::CreateResourceRequest& r, closures::CreateResourceResponse* o,
                                Deadline d) override {
      return worker_->CreateResource(r, o, d);
    }
    absl::Status ReleaseResources(const closures::ReleaseResourcesRequest& r, closures::ReleaseResourcesResponse* o,
                                  Deadline d) override {
      return worker_->ReleaseResources(r, o, d);
    }
    absl::Status Ping(closures::PingResponse* o, Deadline d) override { return worker_->Ping(o, d); }
    void Cancel() override {}

   private:
    std::shared_ptr<FakeWorker> worker_;
  };

  std::vector<int> ports_;
  ClusterSpec chief_cluster_;
  std::unique_ptr<Server> ps_;
  std::shared_ptr<Strategy> strategy_;
  std::vector<std::shared_ptr<FakeWorker>> workers_;
  std::unique_ptr<Coordinator> coordinator_;
};

TEST_F(CoordinatorTest, EveryClosureResolvesOnceWithItsResult) {
  std::vector<std::shared_ptr<RemoteValue>> values;
  for (int i = 0; i < 300; ++i) {
    absl::StatusOr<std::shared_ptr<RemoteValue>> value = coordinator_->Schedule("echo", Scalar(float(i)));
    ASSERT_TRUE(IsOk(value.status()));
    values.push_back(*value);
  }
  ASSERT_TRUE(IsOk(coordinator_->Join()));
  for (int i = 0; i < 300; ++i) EXPECT_EQ(Result(*values[i]), float(i));
  EXPECT_EQ(workers_[0]->runs() + workers_[1]->runs(), 300);
  absl::StatusOr<bool> done = coordinator_->Done();
  ASSERT_TRUE(IsOk(done.status()));
  EXPECT_TRUE(*done);
}

TEST_F(CoordinatorTest, AWorkerThatDiesMidClosureHasItRunElsewhere) {
  workers_[1]->DieOnNextRun();
  std::vector<std::shared_ptr<RemoteValue>> values;
  for (int i = 0; i < 50; ++i) values.push_back(*coordinator_->Schedule("echo", Scalar(float(i))));
  ASSERT_TRUE(IsOk(coordinator_->Join()));
  for (int i = 0; i < 50; ++i) EXPECT_EQ(Result(*values[i]), float(i));
  EXPECT_EQ(workers_[0]->runs() + workers_[1]->runs(), 50);  // the killed attempt never ran
}

TEST_F(CoordinatorTest, ARestartedWorkerGetsItsResourcesBackBeforeItsNextClosure) {
  absl::StatusOr<std::shared_ptr<PerWorkerResource>> dataset =
      coordinator_->CreatePerWorkerDataset("data", InputOptions{}, false);
  ASSERT_TRUE(IsOk(dataset.status()));
  absl::StatusOr<std::shared_ptr<PerWorkerResource>> iterator = PerWorkerResource::MakeIterator(*dataset);
  ASSERT_TRUE(IsOk(iterator.status()));
  const auto with_iterator = [&](float x) {
    ClosureArguments arguments = Scalar(x);
    ClosureArgument argument;
    argument.kind = ArgumentKind::kIterator;
    argument.per_worker = *iterator;
    arguments.items.push_back(std::move(argument));
    return arguments;
  };
  workers_[0]->Down();  // only worker 1 runs
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(IsOk(coordinator_->Schedule("echo", with_iterator(1)).status()));
  ASSERT_TRUE(IsOk(coordinator_->Join()));
  EXPECT_EQ(workers_[1]->creations(), 2);  // the dataset, then its iterator, once
  workers_[1]->Down();
  workers_[1]->Restart();  // a new incarnation, without them
  workers_[1]->ForgetResources();
  std::shared_ptr<RemoteValue> value = *coordinator_->Schedule("echo", with_iterator(7));
  ASSERT_TRUE(IsOk(coordinator_->Join()));
  EXPECT_EQ(Result(*value), 7.0f);
  EXPECT_EQ(workers_[1]->creations(), 4);
  // A worker that forgets them without restarting says so: made again, sent again.
  workers_[1]->ForgetResources();
  value = *coordinator_->Schedule("echo", with_iterator(8));
  ASSERT_TRUE(IsOk(coordinator_->Join()));
  EXPECT_EQ(Result(*value), 8.0f);
  EXPECT_EQ(workers_[1]->creations(), 6);
  // The worker that was down comes back and is used again.
  workers_[0]->Restart();
  const int before = workers_[0]->runs();
  for (int round = 0; round < 100 && workers_[0]->runs() == before; ++round) {
    for (int i = 0; i < 10; ++i) ASSERT_TRUE(IsOk(coordinator_->Schedule("echo", Scalar(1)).status()));
    ASSERT_TRUE(IsOk(coordinator_->Join()));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_GT(workers_[0]->runs(), before);
}

TEST_F(CoordinatorTest, AFailedClosureIsReportedOnceAndCancelsTheQueue) {
  workers_[1]->Down();
  workers_[0]->Hold(true);  // its failure comes once everything below is queued
  std::shared_ptr<RemoteValue> failing = *coordinator_->Schedule("fails", ClosureArguments{});
  std::vector<std::shared_ptr<RemoteValue>> queued;
  for (int i = 0; i < 200; ++i) {
    absl::StatusOr<std::shared_ptr<RemoteValue>> value = coordinator_->Schedule("echo", Scalar(1));
    if (!value.ok()) {
      EXPECT_TRUE(HasError(value.status(), absl::StatusCode::kInvalidArgument, {"the function failed"}));
      break;  // reported by schedule; nothing left to report
    }
    queued.push_back(*value);
  }
  workers_[0]->Hold(false);
  const absl::Status joined = coordinator_->Join();
  EXPECT_TRUE(joined.ok() || HasError(joined, absl::StatusCode::kInvalidArgument, {"the function failed"}));
  EXPECT_TRUE(IsOk(coordinator_->Join()));
  EXPECT_TRUE(HasError(failing->Fetch().status(), absl::StatusCode::kInvalidArgument, {"the function failed"}));
  int cancelled = 0;
  for (const std::shared_ptr<RemoteValue>& value : queued) {
    const absl::Status status = value->Fetch().status();
    EXPECT_TRUE(status.ok() || absl::IsCancelled(status)) << status;
    cancelled += absl::IsCancelled(status) ? 1 : 0;
  }
  EXPECT_GT(cancelled, 0);
}

TEST_F(CoordinatorTest, JoinGivesUpWhenNoWorkerAnswersNamingThem) {
  workers_[0]->Down();
  workers_[1]->Down();
  std::shared_ptr<RemoteValue> value = *coordinator_->Schedule("echo", Scalar(1));
  const auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(HasError(coordinator_->Join(), absl::StatusCode::kDeadlineExceeded,
                       {"no closure finished or was put back for 600 ms", "worker:0", "worker:1"}));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  EXPECT_TRUE(HasError(value->Fetch().status(), absl::StatusCode::kDeadlineExceeded, {"lost workers"}));
  EXPECT_FALSE(value->ready());
}

TEST_F(CoordinatorTest, ShutdownCancelsWhatIsQueued) {
  workers_[0]->Down();
  workers_[1]->Down();
  std::vector<std::shared_ptr<RemoteValue>> values;
  for (int i = 0; i < 10; ++i) values.push_back(*coordinator_->Schedule("echo", Scalar(1)));
  coordinator_.reset();
  for (const std::shared_ptr<RemoteValue>& value : values) {
    const absl::Status status = value->Fetch().status();
    EXPECT_TRUE(HasError(status, absl::StatusCode::kCancelled, {"cancelled"})) << status;
  }
}

TEST_F(CoordinatorTest, OneCoordinatorPerStrategyAndCheckedNames) {
  EXPECT_TRUE(HasError(Coordinator::Create(strategy_).status(), absl::StatusCode::kAlreadyExists,
                       {"has a coordinator already"}));
  EXPECT_TRUE(HasError(coordinator_->Schedule("", ClosureArguments{}).status(), absl::StatusCode::kInvalidArgument,
                       {"closure function name"}));
  EXPECT_EQ(coordinator_->num_workers(), 2);
}

}  // namespace
}  // namespace distribute::coordinator
