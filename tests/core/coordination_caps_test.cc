// CoordinationService's caps without sockets: the key-value store's bytes (keys and values;
// an overwrite counts the new size less the old) and keys, the barriers (apart from the
// store, so a full store cannot stop them), and the waits of remote callers pending at
// once. Past each cap: kResourceExhausted naming the cap, and nothing changed. The byte
// counts expected are worked out by hand from the keys and values the tests store.
#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "core/server/coordination_service.h"
#include "gtest/gtest.h"
#include "tests/core/status_test_util.h"

namespace distribute {
namespace {

using ::distribute::testing::HasError;
using ::distribute::testing::IsOk;

constexpr int64_t kLongMs = 30'000;

CoordinationService::Options TwoWorkers() {
  CoordinationService::Options options;
  options.tasks = {"worker:0", "worker:1"};
  options.barrier_tasks = {"worker:0", "worker:1"};
  options.heartbeat_timeout_ms = 60'000;
  options.max_value_bytes = 1024;
  return options;
}

TEST(CoordinationCapsTest, StoreBytesCountKeysValuesAndOverwritesByDifference) {
  CoordinationService::Options options = TwoWorkers();
  options.max_store_bytes = 100;
  CoordinationService service(options);
  ASSERT_TRUE(IsOk(service.Set("a", std::string(50, 'x'))));  // 1 + 50 = 51 bytes
  ASSERT_TRUE(IsOk(service.Set("b", std::string(48, 'y'))));  // 1 + 48 = 49: 100 in all
  EXPECT_TRUE(HasError(service.Set("c", ""), absl::StatusCode::kResourceExhausted,
                       {"holds 100 bytes", "key 'c'", "would add 1 more", "cap of 100 bytes",
                        "max_store_bytes", "nothing was stored"}));
  EXPECT_TRUE(HasError(service.Get("c", Deadline::AfterMs(0)), absl::StatusCode::kDeadlineExceeded));
  // Growing a value by one byte is refused as well, and the old value stays.
  EXPECT_TRUE(HasError(service.Set("a", std::string(51, 'z')), absl::StatusCode::kResourceExhausted,
                       {"would add 1 more"}));
  EXPECT_EQ(*service.Get("a", Deadline::AfterMs(0)), std::string(50, 'x'));
  // Shrinking "a" by one byte (99 in all) makes room for "c" with an empty value (100).
  ASSERT_TRUE(IsOk(service.Set("a", std::string(49, 'z'))));
  ASSERT_TRUE(IsOk(service.Set("c", "")));
  EXPECT_EQ(*service.Get("c", Deadline::AfterMs(0)), "");
  // Overwriting with the same size needs no room.
  ASSERT_TRUE(IsOk(service.Set("b", std::string(48, 'w'))));
  EXPECT_EQ(*service.Get("b", Deadline::AfterMs(0)), std::string(48, 'w'));
}

TEST(CoordinationCapsTest, StoreKeysAreCapped) {
  CoordinationService::Options options = TwoWorkers();
  options.max_store_keys = 2;
  CoordinationService service(options);
  ASSERT_TRUE(IsOk(service.Set("k1", "v")));
  ASSERT_TRUE(IsOk(service.Set("k2", "v")));
  EXPECT_TRUE(HasError(service.Set("k3", "v"), absl::StatusCode::kResourceExhausted,
                       {"holds 2 keys", "max_store_keys", "key 'k3'", "nothing was stored"}));
  EXPECT_TRUE(HasError(service.Get("k3", Deadline::AfterMs(0)), absl::StatusCode::kDeadlineExceeded));
  // Overwriting an existing key needs no new one.
  ASSERT_TRUE(IsOk(service.Set("k2", "w")));
  EXPECT_EQ(*service.Get("k2", Deadline::AfterMs(0)), "w");
}

TEST(CoordinationCapsTest, BarriersAreCappedApartFromAFullStore) {
  CoordinationService::Options options = TwoWorkers();
  options.max_store_bytes = 8;
  options.max_barriers = 2;
  CoordinationService service(options);
  ASSERT_TRUE(IsOk(service.Register("worker:0", 1, /*expects_heartbeats=*/false)));
  ASSERT_TRUE(IsOk(service.Set("key", "value")));  // 8 bytes: the store is full
  // A barrier that times out stays (its failure is sticky): two of them fill the cap.
  for (const char* name : {"b1", "b2"}) {
    EXPECT_TRUE(HasError(service.Barrier(name, "worker:0", Deadline::AfterMs(0)),
                         absl::StatusCode::kDeadlineExceeded, {"did not arrive"}));
  }
  EXPECT_TRUE(HasError(service.Barrier("b3", "worker:0", Deadline::AfterMs(0)),
                       absl::StatusCode::kResourceExhausted,
                       {"holds 2 barriers", "max_barriers", "barrier 'b3' cannot be added"}));
  // An existing barrier is no new one: b1 answers with its own sticky failure.
  EXPECT_TRUE(HasError(service.Barrier("b1", "worker:0", Deadline::AfterMs(0)),
                       absl::StatusCode::kDeadlineExceeded, {"barrier 'b1' timed out"}));
}

// `count` remote Gets of `key`, each on a thread of its own, which must succeed (the test
// sets the key before this object goes away).
struct RemoteGets {
  RemoteGets(CoordinationService& service, const CoordinationService::RemoteCaller& caller, int count,
             const std::string& key) {
    for (int i = 0; i < count; ++i) {
      threads.emplace_back([&service, &caller, key] {
        EXPECT_TRUE(IsOk(service.Get(key, Deadline::AfterMs(kLongMs), &caller)));
      });
    }
  }
  ~RemoteGets() {
    for (std::thread& thread : threads) thread.join();
  }
  std::vector<std::thread> threads;
};

// A remote Get whose caller has already gone: refused for the cap when the cap is reached,
// and otherwise cancelled before it waits, so it never takes a place another wait needs.
absl::Status ProbeWaitRoom(CoordinationService& service) {
  const CoordinationService::RemoteCaller gone{[] { return true; }};
  return service.Get("probe", Deadline::AfterMs(kLongMs), &gone).status();
}

// Whether the cap on pending waits is reached within `timeout_ms`.
bool CapReachedWithin(CoordinationService& service, int64_t timeout_ms) {
  const Deadline deadline = Deadline::AfterMs(timeout_ms);
  while (!deadline.Expired()) {
    if (ProbeWaitRoom(service).code() == absl::StatusCode::kResourceExhausted) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return false;
}

TEST(CoordinationCapsTest, RemoteWaitsAreCappedLocalOnesAndImmediateAnswersAreNot) {
  CoordinationService::Options options = TwoWorkers();
  options.max_pending_waits = 3;
  CoordinationService service(options);
  ASSERT_TRUE(IsOk(service.Register("worker:0", 1, /*expects_heartbeats=*/false)));
  ASSERT_TRUE(IsOk(service.Register("worker:1", 2)));
  ASSERT_TRUE(IsOk(service.Set("here", "v")));
  const CoordinationService::RemoteCaller caller{[] { return false; }};
  {
    RemoteGets waiting(service, caller, 3, "later");
    ASSERT_TRUE(CapReachedWithin(service, kLongMs));
    EXPECT_TRUE(HasError(service.Get("other", Deadline::AfterMs(kLongMs), &caller),
                         absl::StatusCode::kResourceExhausted,
                         {"already has 3 waits of other tasks pending", "max_pending_waits", "a Get of key 'other'",
                          "nothing changed"}));
    // A remote barrier arrival that would wait is refused without arriving ...
    EXPECT_TRUE(HasError(service.Barrier("b", "worker:1", Deadline::AfterMs(kLongMs), &caller),
                         absl::StatusCode::kResourceExhausted, {"task worker:1's arrival at barrier 'b'"}));
    // ... so the chief, arriving in process (not capped), still waits for it: a short
    // deadline shows worker:1 is missing.
    EXPECT_TRUE(HasError(service.Barrier("b", "worker:0", Deadline::AfterMs(20)),
                         absl::StatusCode::kDeadlineExceeded, {"task worker:1 did not arrive"}));
    // What needs no wait is answered, and the chief's own waits are not capped.
    EXPECT_EQ(*service.Get("here", Deadline::AfterMs(kLongMs), &caller), "v");
    std::thread local([&] { EXPECT_EQ(*service.Get("later2", Deadline::AfterMs(kLongMs)), "w"); });
    ASSERT_TRUE(IsOk(service.Set("later2", "w")));
    local.join();
    ASSERT_TRUE(IsOk(service.Set("later", "v")));  // releases the three
  }
  // The released waits no longer count.
  EXPECT_TRUE(HasError(ProbeWaitRoom(service), absl::StatusCode::kCancelled));
}

TEST(CoordinationCapsTest, AnArrivalThatCompletesABarrierNeedsNoRoom) {
  CoordinationService::Options options = TwoWorkers();
  options.max_pending_waits = 1;
  CoordinationService service(options);
  ASSERT_TRUE(IsOk(service.Register("worker:0", 1, /*expects_heartbeats=*/false)));
  ASSERT_TRUE(IsOk(service.Register("worker:1", 2)));
  const CoordinationService::RemoteCaller caller{[] { return false; }};
  // worker:0's arrival is the one remote wait allowed ...
  absl::Status first;
  std::thread arriving([&] { first = service.Barrier("b", "worker:0", Deadline::AfterMs(kLongMs), &caller); });
  ASSERT_TRUE(CapReachedWithin(service, kLongMs));
  // ... and worker:1's, which completes the barrier, waits for nothing.
  EXPECT_TRUE(IsOk(service.Barrier("b", "worker:1", Deadline::AfterMs(kLongMs), &caller)));
  arriving.join();
  EXPECT_TRUE(IsOk(first));
}

}  // namespace
}  // namespace distribute
