// A worker serves one coordinator at a time (issue 43, finding 4): requests carrying
// another coordinator id, forged or from a second coordinator pointed at the same workers by
// mistake, are refused while the first coordinator's session is alive, and cannot evict its
// per-worker datasets and iterators (before, 296 of 296 such RunClosures restarted the
// worker's iterator from element 0, and a CreateResource flood ended the job). The
// session is handed over once its coordinator ends it. The worker's closure host runs in
// this process against a real ps task and chief.
#include <atomic>
#include <chrono>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/coordinator/closure_registry.h"
#include "core/coordinator/worker_closure_host.h"
#include "core/input/sources.h"
#include "core/input/transformations.h"
#include "core/server/server.h"
#include "core/strategy/strategy.h"
#include "core/util/status_macros.h"
#include "gtest/gtest.h"
#include "tests/common/free_ports.h"
#include "tests/core/status_test_util.h"

namespace distribute::coordinator {
namespace {

using ::distribute::testing::FreePorts;
using ::distribute::testing::IsOk;

constexpr uint64_t kFirst = 0x1111;
constexpr uint64_t kSecond = 0x2222;
constexpr uint64_t kDataset = 1;
constexpr uint64_t kIterator = 2;

class WorkerSessionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ports_ = FreePorts(3);  // chief, worker 0, ps 0
    unsetenv("DIST_JOB_TOKEN");
    std::thread ps([this] {
      absl::StatusOr<std::unique_ptr<Server>> server = Server::Start(ClusterAs("ps"), Server::Options{});
      if (server.ok()) ps_ = *std::move(server);
    });
    chief_cluster_ = ClusterAs("chief");
    CommunicationOptions options;
    options.timeout_ms = 5000;
    absl::StatusOr<std::shared_ptr<Strategy>> chief = Strategy::CreateParameterServer(
        &chief_cluster_, options, ps::PlacementPolicy::kRoundRobin, std::nullopt);
    ps.join();
    ASSERT_TRUE(IsOk(chief.status()));
    ASSERT_NE(ps_, nullptr);
    chief_ = *std::move(chief);
    (void)DatasetFunctions().Register("dataset function", "session_test/range", [](const InputContext&) {
      absl::StatusOr<DatasetPtr> range = Range(0, 100, 1);
      if (!range.ok()) return range;
      return Batch(*std::move(range), 1, false);
    }, nullptr);
    (void)Closures().Register("closure function", "session_test/next",
                              [](const std::shared_ptr<Strategy>&, const ClosureArguments& arguments)
                                  -> absl::StatusOr<std::optional<Tensor>> {
      std::vector<Value> element;
      ASSIGN_OR_RETURN(const bool has, arguments.items.at(0).iterator->GetNext(&element));
      if (!has) return absl::OutOfRangeError("end");
      ASSIGN_OR_RETURN(Tensor part, element.front().ComponentSnapshot(0));
      return std::optional<Tensor>(std::move(part));
    }, nullptr);
    absl::StatusOr<std::unique_ptr<ClosureHost>> host =
        NewWorkerClosureHost(ClosureHostContext{ClusterAs("worker"), "", {}, 7});
    ASSERT_TRUE(IsOk(host.status()));
    host_ = *std::move(host);
  }
  void TearDown() override {
    host_.reset();
    chief_.reset();
    ps_.reset();
  }

  ClusterSpec ClusterAs(absl::string_view job) {
    ClusterSpec cluster;
    (void)cluster.AddTask("chief", 0, absl::StrCat("127.0.0.1:", ports_[0]));
    (void)cluster.AddTask("worker", 0, absl::StrCat("127.0.0.1:", ports_[1]));
    (void)cluster.AddTask("ps", 0, absl::StrCat("127.0.0.1:", ports_[2]));
    (void)cluster.SetTask(job, 0);
    return cluster;
  }

  static closures::Session SessionOf(uint64_t coordinator) {
    closures::Session session;
    session.set_coordinator(coordinator);
    session.set_replicas_per_worker(1);
    session.set_timeout_ms(5000);
    return session;
  }

  absl::Status Create(uint64_t coordinator, uint64_t id, bool iterator) {
    closures::CreateResourceRequest request;
    *request.mutable_session() = SessionOf(coordinator);
    request.set_id(id);
    if (iterator) {
      request.set_iterator_of(kDataset);
    } else {
      closures::DatasetSpec* spec = request.mutable_dataset();
      spec->set_function("session_test/range");
      spec->set_num_workers(1);
      spec->set_worker_index(0);
      spec->set_replication_mode(1);  // PER_WORKER
    }
    closures::CreateResourceResponse response;
    RETURN_IF_ERROR(host_->CreateResource(request, &response));
    return absl::Status(static_cast<absl::StatusCode>(response.status().code()), response.status().message());
  }

  // The next element of the first coordinator's iterator, through session `coordinator`.
  absl::StatusOr<int64_t> Next(uint64_t coordinator) {
    closures::RunClosureRequest request;
    *request.mutable_session() = SessionOf(coordinator);
    request.set_function("session_test/next");
    request.set_closure_id(1);
    request.add_arguments()->set_iterator(kIterator);
    closures::RunClosureResponse response;
    RETURN_IF_ERROR(host_->RunClosure(request, &response));
    RETURN_IF_ERROR(absl::Status(static_cast<absl::StatusCode>(response.status().code()), response.status().message()));
    return *static_cast<const int64_t*>(static_cast<const void*>(response.result().data().data()));
  }

  std::vector<int> ports_;
  ClusterSpec chief_cluster_;
  std::unique_ptr<Server> ps_;
  std::shared_ptr<Strategy> chief_;
  std::unique_ptr<ClosureHost> host_;
};

TEST_F(WorkerSessionTest, AnotherCoordinatorIsRefusedAndEvictsNothingUntilTheFirstEnds) {
  ASSERT_TRUE(IsOk(Create(kFirst, kDataset, false)));
  ASSERT_TRUE(IsOk(Create(kFirst, kIterator, true)));
  ASSERT_EQ(*Next(kFirst), 0);
  ASSERT_EQ(*Next(kFirst), 1);
  // 300 RunClosures and 300 CreateResources of another coordinator: every one refused.
  for (int i = 0; i < 300; ++i) {
    EXPECT_TRUE(testing::HasError(Next(kSecond).status(), absl::StatusCode::kFailedPrecondition,
                                  {"worker:0 serves another coordinator's session", "one coordinator at a time"}));
    EXPECT_TRUE(testing::HasError(Create(kSecond, 100 + i, false), absl::StatusCode::kFailedPrecondition,
                                  {"serves another coordinator's session"}));
  }
  // The first coordinator's iterator went on where it was.
  ASSERT_EQ(*Next(kFirst), 2);
  // Once it ends its session, the worker serves the next coordinator (with nothing of the
  // first's left: its iterator is gone).
  closures::ReleaseResourcesRequest end;
  *end.mutable_session() = SessionOf(kFirst);
  end.set_end_session(true);
  closures::ReleaseResourcesResponse ended;
  ASSERT_TRUE(IsOk(host_->ReleaseResources(end, &ended)));
  ASSERT_TRUE(IsOk(Create(kSecond, kDataset, false)));
  ASSERT_TRUE(IsOk(Create(kSecond, kIterator, true)));
  EXPECT_EQ(*Next(kSecond), 0);
  EXPECT_TRUE(testing::HasError(Next(kFirst).status(), absl::StatusCode::kFailedPrecondition,
                                {"serves another coordinator's session"}));
}

// Issue 45, item 4: the host held its lock while a user's closure ran, so a hung closure
// blocked every resource request on that worker. Now a closure that never returns leaves
// CreateResource and ReleaseResources prompt, a second closure waits for it at most half
// the session's timeout (then the worker answers Unavailable, and its coordinator puts the
// closure back), and once the hung one returns closures run again.
std::atomic<bool> hung_started{false};
std::atomic<bool> release_hung{false};

TEST_F(WorkerSessionTest, AHungClosureBlocksNoResourceRequest) {
  (void)Closures().Register("closure function", "session_test/hang",
                            [](const std::shared_ptr<Strategy>&, const ClosureArguments&)
                                -> absl::StatusOr<std::optional<Tensor>> {
    hung_started.store(true);
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (!release_hung.load() && std::chrono::steady_clock::now() < give_up) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return std::optional<Tensor>();
  }, nullptr);
  ASSERT_TRUE(IsOk(Create(kFirst, kDataset, false)));
  absl::Status hung_status;
  std::thread hung([&] {
    closures::RunClosureRequest request;
    *request.mutable_session() = SessionOf(kFirst);
    request.set_function("session_test/hang");
    request.set_closure_id(9);
    closures::RunClosureResponse response;
    hung_status = host_->RunClosure(request, &response);
    if (hung_status.ok()) hung_status = absl::Status(static_cast<absl::StatusCode>(response.status().code()),
                                                     response.status().message());
  });
  while (!hung_started.load()) std::this_thread::sleep_for(std::chrono::milliseconds(5));

  // Resource requests go through while it hangs (before, each waited for the closure).
  const auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(IsOk(Create(kFirst, kIterator, true)));
  EXPECT_TRUE(IsOk(Create(kFirst, 3, false)));
  closures::ReleaseResourcesRequest release;
  *release.mutable_session() = SessionOf(kFirst);
  release.add_ids(3);
  closures::ReleaseResourcesResponse released;
  EXPECT_TRUE(IsOk(host_->ReleaseResources(release, &released)));
  const auto resources_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count();
  std::cout << "three resource requests beside a hung closure took " << resources_ms << " ms\n";
  EXPECT_LT(resources_ms, 2500);  // well below the closure's 60 s

  // A second closure waits half the timeout (2.5 s of 5 s) for the gate, then Unavailable.
  const auto second_start = std::chrono::steady_clock::now();
  EXPECT_TRUE(testing::HasError(Next(kFirst).status(), absl::StatusCode::kUnavailable,
                                {"worker:0 still runs an earlier closure after 2500 ms"}));
  EXPECT_GE(std::chrono::steady_clock::now() - second_start, std::chrono::milliseconds(2400));

  release_hung.store(true);
  hung.join();
  EXPECT_TRUE(IsOk(hung_status));
  EXPECT_EQ(*Next(kFirst), 0);  // the iterator made beside the hung closure starts at 0
}

}  // namespace
}  // namespace distribute::coordinator
