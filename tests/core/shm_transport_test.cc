// The shared-memory transport on its own, between threads of this process (each maps the
// segments as a process would; an in-process coordination service is the rendezvous):
// what CrossWorker's suite (cross_worker_test, run over both transports) does not reach.
// Messages many times the ring's size, in both directions at once; a message longer than
// its receive; a silent peer (the deadline) and a peer that closed its end (at once, not
// at the deadline); start-up refusals; and no segment left in /dev/shm.
#include "core/shm/shm_transport.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <future>
#include <functional>
#include <set>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/server/coordination_service.h"
#include "core/server/local_coordination_client.h"
#include "core/shm/shared_segment.h"
#include "core/shm/shm_layout.h"
#include "core/tensor/host_allocator.h"
#include "core/util/mutex.h"
#include "status_test_util.h"
#include "worker_threads.h"

namespace distribute::shm {
namespace {

using ::distribute::testing::HasError;
using ::distribute::testing::IsOk;

std::set<std::string> SegmentsInDevShm() {
  std::set<std::string> names;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator("/dev/shm", error)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("dist-", 0) == 0) names.insert(name);
  }
  return names;
}

// Runs fn(rank, transport) on `workers` connected transports, one thread each.
void RunWorkers(int32_t workers, const std::function<void(int32_t, ShmTransport&)>& fn) {
  ::distribute::testing::RunWorkerThreads(
      workers, [&](int32_t w, CoordinationClient& client, const std::vector<std::string>& names,
                   const std::string& prefix) {
        auto transport = ShmTransport::Connect(client, prefix, w, names, Deadline::AfterMs(30000));
        ASSERT_TRUE(transport.ok()) << transport.status();
        fn(w, **transport);
      });
}

uint8_t Byte(int32_t from, size_t i) { return static_cast<uint8_t>((from * 131 + i * 7 + (i >> 12)) & 0xff); }

TEST(ShmTransportTest, MessagesManyTimesTheRingCrossBothWays) {
  // 9 MiB each way at once through 1 MiB rings, plus an empty message on another channel.
  constexpr size_t kBytes = (size_t{9} << 20) + 12345;
  ASSERT_EQ(ShmTransport::RingBytes(2), uint64_t{1} << 20);
  RunWorkers(2, [&](int32_t rank, ShmTransport& transport) {
    std::vector<uint8_t> mine(kBytes), theirs(kBytes + 100, 0);
    for (size_t i = 0; i < kBytes; ++i) mine[i] = Byte(rank, i);
    const int32_t peer = 1 - rank;
    char nothing = 0;
    const Transport::Transfer sends[2] = {{peer, 0, mine.data(), kBytes}, {peer, 1, &nothing, 0}};
    const Transport::Transfer receives[2] = {{peer, 1, &nothing, 1}, {peer, 0, theirs.data(), kBytes + 100}};
    ASSERT_TRUE(IsOk(transport.Exchange(sends, receives, Deadline::AfterMs(30000), nullptr)));
    for (size_t i = 0; i < kBytes; ++i) ASSERT_EQ(theirs[i], Byte(peer, i)) << "byte " << i;
    ASSERT_EQ(theirs[kBytes], 0) << "wrote past the message";
  });
}

TEST(ShmTransportTest, NoSegmentIsLeftInDevShmOnceConnected) {
  const std::set<std::string> before = SegmentsInDevShm();
  Mutex mu;
  std::set<std::string> seen;
  RunWorkers(3, [&](int32_t, ShmTransport& transport) {
    // Connected: every name is gone already (the segments stay mapped).
    MutexLock lock(&mu);
    for (const std::string& name : SegmentsInDevShm()) {
      if (before.count(name) == 0) seen.insert(name);
    }
    EXPECT_TRUE(IsOk(transport.health()));
  });
  // A test in another process may hold a name for the moment of its own start-up: only a
  // name that stays is ours, leaked.
  for (int i = 0; i < 30 && !seen.empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    const std::set<std::string> now = SegmentsInDevShm();
    std::erase_if(seen, [&](const std::string& name) { return now.count(name) == 0; });
  }
  EXPECT_TRUE(seen.empty()) << "left in /dev/shm while connected: " << *seen.begin();
}

TEST(ShmTransportTest, AMessageLongerThanItsReceiveFailsNamingTheSender) {
  RunWorkers(2, [&](int32_t rank, ShmTransport& transport) {
    std::vector<char> data(100, 'x');
    absl::Status status;
    if (rank == 0) {
      const Transport::Transfer send{1, 0, data.data(), 100};
      status = transport.Exchange({&send, 1}, {}, Deadline::AfterMs(5000), nullptr);
      EXPECT_TRUE(IsOk(status));  // buffered in the ring: the send is done
    } else {
      const Transport::Transfer receive{0, 0, data.data(), 50};
      status = transport.Exchange({}, {&receive, 1}, Deadline::AfterMs(5000), nullptr);
      EXPECT_FALSE(status.ok());
      EXPECT_NE(status.message().find("worker:0"), std::string::npos) << status;
      EXPECT_NE(status.message().find("100 bytes"), std::string::npos) << status;
      // Final: the next call fails at once with the same cause.
      EXPECT_EQ(transport.Exchange({}, {&receive, 1}, Deadline::AfterMs(5000), nullptr).code(), status.code());
    }
  });
}

TEST(ShmTransportTest, ASilentPeerHitsTheDeadline) {
  RunWorkers(2, [&](int32_t rank, ShmTransport& transport) {
    if (rank == 1) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // connected, but never sends
      return;
    }
    char byte = 0;
    const Transport::Transfer receive{1, 0, &byte, 1};
    const auto start = Clock::now();
    const absl::Status status = transport.Exchange({}, {&receive, 1}, Deadline::AfterMs(300), nullptr);
    EXPECT_TRUE(HasError(status, absl::StatusCode::kDeadlineExceeded, {"timed out after 300 ms"}));
    EXPECT_GE(Clock::now() - start, std::chrono::milliseconds(290));
  });
}

TEST(ShmTransportTest, APeerThatClosedItsEndFailsTheCallBeforeTheDeadline) {
  RunWorkers(2, [&](int32_t rank, ShmTransport& transport) {
    if (rank == 1) return;  // its transport is destroyed: it closes its end
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    char byte = 0;
    const Transport::Transfer receive{1, 0, &byte, 1};
    const auto start = Clock::now();
    const absl::Status status = transport.Exchange({}, {&receive, 1}, Deadline::AfterMs(20000), nullptr);
    EXPECT_TRUE(HasError(status, absl::StatusCode::kUnavailable, {"worker:1", "closed its end"}));
    EXPECT_LT(Clock::now() - start, std::chrono::seconds(5)) << "waited for the deadline";
  });
}

TEST(ShmTransportTest, StartUpRefusesBadRanksAndTooManyWorkers) {
  CoordinationService::Options options;
  options.tasks = {"worker:0"};
  CoordinationService service(options);
  LocalCoordinationClient client(&service, "worker:0");
  EXPECT_TRUE(HasError(ShmTransport::Connect(client, "p/", 1, {"worker:0"}, Deadline::AfterMs(1000)),
                       absl::StatusCode::kInvalidArgument, {"rank 1"}));
  std::vector<std::string> many;
  for (int i = 0; i < 65; ++i) many.push_back(absl::StrCat("worker:", i));
  EXPECT_TRUE(HasError(ShmTransport::Connect(client, "p/", 0, many, Deadline::AfterMs(1000)),
                       absl::StatusCode::kFailedPrecondition, {"at most 64 workers"}));
}

// A worker that dies before it sets up its shared memory fails its peer's start-up,
// naming it, as soon as the coordination service knows (with a plain key read the peer
// waited for the whole deadline).
TEST(ShmTransportTest, AWorkerThatDiesDuringStartUpIsNamedAtOnce) {
  constexpr uint64_t kIncarnation = 11;
  CoordinationService::Options options;
  options.tasks = {"worker:0", "worker:1"};
  options.barrier_tasks = options.tasks;
  CoordinationService service(options);
  LocalCoordinationClient client(&service, "worker:0");
  ASSERT_TRUE(IsOk(service.Register("worker:1", kIncarnation)));
  ASSERT_TRUE(IsOk(service.OpenWatch("worker:1", kIncarnation)));
  std::thread death([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    service.ReportConnectionClosed("worker:1", kIncarnation);
  });
  auto transport = ShmTransport::Connect(client, "died/", 0, options.tasks, Deadline::AfterMs(30000));
  death.join();
  // With a plain key read: kDeadlineExceeded after the 30 s.
  EXPECT_TRUE(HasError(transport, absl::StatusCode::kUnavailable, {"worker:1", "shared memory"}));
  // Its own segment is gone too (only its name is looked for: other tests' segments come
  // and go in /dev/shm meanwhile).
  absl::StatusOr<std::string> name = client.Get("died/shm/name/0", Deadline::AfterMs(1000));
  ASSERT_TRUE(IsOk(name));
  ASSERT_TRUE(IsSegmentName(*name)) << *name;  // "/dist-...": its file is /dev/shm/dist-...
  EXPECT_FALSE(std::filesystem::exists("/dev/shm" + *name)) << *name;
}

// Shared memory is tried only between workers of one host, and at most 64 of them.
TEST(ShmTransportTest, AllOnOneHostNeedsEqualIdentitiesAndAtMost64) {
  EXPECT_TRUE(AllOnOneHost(std::vector<std::string>{"a b net:[1]"}));
  EXPECT_TRUE(AllOnOneHost(std::vector<std::string>{"a b net:[1]", "a b net:[1]"}));
  EXPECT_FALSE(AllOnOneHost(std::vector<std::string>{"a b net:[1]", "a b net:[2]"}));
  EXPECT_FALSE(AllOnOneHost(std::vector<std::string>{"a b net:[1]", "a b net:[1]", "c b net:[1]"}));
  EXPECT_FALSE(AllOnOneHost(std::vector<std::string>{}));
  EXPECT_TRUE(AllOnOneHost(std::vector<std::string>(64, "a b net:[1]")));
  EXPECT_FALSE(AllOnOneHost(std::vector<std::string>(65, "a b net:[1]")));
}

TEST(ShmTransportTest, ExchangeRefusesPeersThatAreNotThere) {
  RunWorkers(2, [&](int32_t rank, ShmTransport& transport) {
    char byte = 0;
    const Transport::Transfer to_self{rank, 0, &byte, 1};
    const Transport::Transfer to_nobody{7, 0, &byte, 1};
    EXPECT_TRUE(HasError(transport.Exchange({&to_self, 1}, {}, Deadline::AfterMs(1000), nullptr),
                         absl::StatusCode::kInvalidArgument, {"no peer"}));
    EXPECT_TRUE(HasError(transport.Exchange({}, {&to_nobody, 1}, Deadline::AfterMs(1000), nullptr),
                         absl::StatusCode::kInvalidArgument, {"no peer 7"}));
    EXPECT_TRUE(IsOk(transport.health()));  // nothing moved: the communicator is fine
  });
}

// What a relay makes of byte i of a message: anything the receiver can check.
uint8_t Relayed(uint8_t byte, size_t i) { return static_cast<uint8_t>(byte ^ 0x5a ^ (i >> 6)); }

TEST(ShmTransportTest, RelayedMessagesComeBackTransformedBothWaysAtOnce) {
  // Each worker sends 5 MiB (five rings' worth) and relays the other's, transformed, back
  // to it. Every run continues the message, and is whole lines long unless it ends it.
  constexpr size_t kBytes = (size_t{5} << 20) + 1000;
  RunWorkers(2, [&](int32_t rank, ShmTransport& transport) {
    ASSERT_TRUE(transport.relays());
    const int32_t peer = 1 - rank;
    std::vector<uint8_t> mine(kBytes), back(kBytes + 64, 0), relayed(kBytes + 64, 0);
    for (size_t i = 0; i < kBytes; ++i) mine[i] = Byte(rank, i);
    size_t next = 0;
    bool runs_ok = true;
    const Transport::Relay relay{peer, 2, relayed.data(), [&](size_t offset, const char* in, size_t n) {
                                   runs_ok = runs_ok && offset == next && (n % 64 == 0 || offset + n == kBytes);
                                   next = offset + n;
                                   for (size_t k = 0; k < n; ++k) {
                                     relayed[offset + k] = Relayed(static_cast<uint8_t>(in[k]), offset + k);
                                   }
                                 }};
    char unused = 0;
    const Transport::Transfer sends[1] = {{peer, 1, mine.data(), kBytes}};
    const Transport::Transfer receives[2] = {{peer, 1, &unused, kBytes + 64, &relay},
                                             {peer, 2, back.data(), kBytes + 64}};
    ASSERT_TRUE(IsOk(transport.Exchange(sends, receives, Deadline::AfterMs(30000), nullptr)));
    EXPECT_TRUE(runs_ok);
    EXPECT_EQ(next, kBytes);
    EXPECT_EQ(unused, 0) << "a relayed message was stored in its receive";
    for (size_t i = 0; i < kBytes; ++i) {
      ASSERT_EQ(relayed[i], Relayed(Byte(peer, i), i)) << "relayed byte " << i;
      ASSERT_EQ(back[i], Relayed(Byte(rank, i), i)) << "byte " << i << " that came back";
    }
    EXPECT_EQ(back[kBytes], 0) << "wrote past the message";
  });
}

TEST(ShmTransportTest, AnEmptyRelayedMessageIsPassedOnAsNothing) {
  RunWorkers(2, [&](int32_t rank, ShmTransport& transport) {
    char byte = 0;
    if (rank == 0) {
      const Transport::Transfer send{1, 1, &byte, 0};
      ASSERT_TRUE(IsOk(transport.Exchange({&send, 1}, {}, Deadline::AfterMs(10000), nullptr)));
    } else {
      bool consumed = false;
      const Transport::Relay relay{0, 2, &byte, [&](size_t, const char*, size_t) { consumed = true; }};
      const Transport::Transfer receive{0, 1, &byte, 64, &relay};
      ASSERT_TRUE(IsOk(transport.Exchange({}, {&receive, 1}, Deadline::AfterMs(10000), nullptr)));
      EXPECT_FALSE(consumed);
    }
    // Nothing is left in flight: a next exchange between them matches.
    char in = 0, out = static_cast<char>(rank + 1);
    const Transport::Transfer send{1 - rank, 0, &out, 1};
    const Transport::Transfer receive{1 - rank, 0, &in, 1};
    ASSERT_TRUE(IsOk(transport.Exchange({&send, 1}, {&receive, 1}, Deadline::AfterMs(10000), nullptr)));
    EXPECT_EQ(in, static_cast<char>(2 - rank));
  });
}

TEST(ShmTransportTest, ExchangeRefusesRelaysToNobodyOrWithoutAConsumer) {
  RunWorkers(2, [&](int32_t rank, ShmTransport& transport) {
    char byte = 0;
    const Transport::Relay to_self{rank, 2, &byte, [](size_t, const char*, size_t) {}};
    const Transport::Relay no_consumer{1 - rank, 2, &byte, nullptr};
    for (const Transport::Relay* relay : {&to_self, &no_consumer}) {
      const Transport::Transfer receive{1 - rank, 1, &byte, 1, relay};
      EXPECT_TRUE(HasError(transport.Exchange({}, {&receive, 1}, Deadline::AfterMs(1000), nullptr),
                           absl::StatusCode::kInvalidArgument, {"relay"}));
    }
    const Transport::Relay relay{1 - rank, 2, &byte, [](size_t, const char*, size_t) {}};
    const Transport::Transfer relayed_send{1 - rank, 1, &byte, 1, &relay};
    EXPECT_TRUE(HasError(transport.Exchange({&relayed_send, 1}, {}, Deadline::AfterMs(1000), nullptr),
                         absl::StatusCode::kInvalidArgument, {"a send cannot have a relay"}));
    const Transport::Relay no_data{1 - rank, 2, nullptr, [](size_t, const char*, size_t) {}};
    const Transport::Transfer receive{1 - rank, 1, &byte, 1, &no_data};
    EXPECT_TRUE(HasError(transport.Exchange({}, {&receive, 1}, Deadline::AfterMs(1000), nullptr),
                         absl::StatusCode::kInvalidArgument, {"no consumer or no data"}));
    EXPECT_TRUE(IsOk(transport.health()));  // nothing moved: the communicator is fine
  });
}

TEST(ShmTransportTest, PeersReadEachOthersArenaTensorsInPlace) {
  // Connecting turns the shared host arena on; each worker then finds a peer's large block
  // (allocated after the connection) through the place the peer's SharedPlace gives.
  constexpr size_t kBytes = size_t{2} << 20;
  uint64_t places[3] = {};
  void* blocks[3] = {};
  Mutex mu;
  RunWorkers(3, [&](int32_t w, ShmTransport& transport) {
    ASSERT_TRUE(transport.shares_memory());
    auto* block = static_cast<char*>(HostAllocate(kBytes));
    ASSERT_NE(block, nullptr);
    std::memset(block, 'a' + w, kBytes);
    const std::optional<uint64_t> place = transport.SharedPlace(block, kBytes);
    ASSERT_TRUE(place.has_value());
    std::vector<char> private_bytes(64);
    EXPECT_FALSE(transport.SharedPlace(private_bytes.data(), private_bytes.size()).has_value());
    {
      MutexLock lock(&mu);
      places[w] = *place;
      blocks[w] = block;
    }
    char flag = 1;  // every worker has published its place
    std::vector<Transport::Transfer> sends, receives;
    std::vector<char> flags(3);
    for (int32_t p = 0; p < 3; ++p) {
      if (p == w) continue;
      sends.push_back({p, 9, &flag, 1});
      receives.push_back({p, 9, &flags[p], 1});
    }
    ASSERT_TRUE(IsOk(transport.Exchange(sends, receives, Deadline::AfterMs(30000), nullptr)));
    for (int32_t p = 0; p < 3; ++p) {
      uint64_t theirs;
      {
        MutexLock lock(&mu);
        theirs = places[p];
      }
      const char* seen = transport.PeerBytes(p, theirs, kBytes);
      if (p == w) {
        EXPECT_EQ(seen, nullptr) << "a worker reads its own memory directly";
        continue;
      }
      ASSERT_NE(seen, nullptr);
      EXPECT_EQ(seen[0], 'a' + p);
      EXPECT_EQ(seen[kBytes - 1], 'a' + p);
      EXPECT_EQ(transport.PeerBytes(p, UINT64_MAX - 8, kBytes), nullptr);
      EXPECT_EQ(transport.PeerBytes(-1, theirs, kBytes), nullptr);
      EXPECT_EQ(transport.PeerBytes(3, theirs, kBytes), nullptr);
    }
    ASSERT_TRUE(IsOk(transport.Exchange(sends, receives, Deadline::AfterMs(30000), nullptr)));  // all read
  });
  for (void* block : blocks) HostRelease(block, kBytes);
}

TEST(ShmTransportTest, SegmentNamesAreChecked) {
  const std::string name = NewSegmentName(3);
  EXPECT_TRUE(IsSegmentName(name)) << name;
  EXPECT_FALSE(IsSegmentName("/dist-../../etc/passwd"));
  EXPECT_FALSE(IsSegmentName("/dist-0123456789abcdef0123456789abcdef-"));
  EXPECT_FALSE(IsSegmentName("/dist-0123456789ABCDEF0123456789abcdef-1"));
  EXPECT_FALSE(IsSegmentName("dist-0123456789abcdef0123456789abcdef-1"));
  EXPECT_TRUE(IsSegmentName("/dist-0123456789abcdef0123456789abcdef-12"));
  // A segment of the wrong size is not opened.
  auto segment = SharedSegment::Create(name, 4096);
  ASSERT_TRUE(segment.ok()) << segment.status();
  EXPECT_TRUE(HasError(SharedSegment::Open(name, 8192), absl::StatusCode::kFailedPrecondition, {"not this job's"}));
  EXPECT_TRUE(SharedSegment::Open(name, 4096).ok());
  UnlinkSegment(name);
  EXPECT_FALSE(SharedSegment::Open(name, 4096).ok());
}

// ---- A ring written by a broken peer or a stranger ----

// This process's mapping of worker 0's segment (both workers are threads here): the last
// "/dev/shm/dist-...-0 (deleted)" line of /proc/self/maps of the segment's size.
char* MappedSegmentOfWorker0(size_t bytes) {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  char* found = nullptr;
  while (std::getline(maps, line)) {
    if (line.find("/dev/shm/dist-") == std::string::npos || line.find("-0 (deleted)") == std::string::npos) continue;
    uintptr_t begin = 0;
    uintptr_t end = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx", &begin, &end) != 2) continue;
    if (end - begin >= bytes && end - begin < bytes + 4096) found = reinterpret_cast<char*>(begin);
  }
  return found;
}

struct Corruption {
  const char* what;
  // Writes into the ring (data, capacity) that worker 1 writes to; returns the head to publish.
  std::function<uint64_t(char* data, uint64_t ring_bytes)> write;
  const char* message;  // part of the error
};

RecordHeader Data(uint32_t tag, uint32_t bytes, uint64_t message_bytes, uint64_t offset) {
  return RecordHeader{static_cast<uint32_t>(RecordKind::kData), tag, 0, bytes, message_bytes, offset};
}

// Whatever a peer (or a stranger who mapped the segment) writes into a ring, the receiver
// fails its communicator with an error naming the writer, and never reads or writes out of
// bounds (ASan runs this test too); the failure is sticky.
TEST(ShmTransportTest, ACorruptedRingFailsTheCommunicatorNotTheProcess) {
  const std::vector<Corruption> cases = {
      {"a head past the ring's size", [](char*, uint64_t ring) { return ring + kLine; }, "corrupted the ring"},
      {"an unknown record kind",
       [](char* data, uint64_t) {
         RecordHeader r = Data(1, 8, 8, 0);
         r.kind = 7;
         std::memcpy(data, &r, sizeof r);
         return uint64_t{kLine} * 2;
       },
       "malformed record"},
      {"a record longer than the ring",
       [](char* data, uint64_t ring) {
         const RecordHeader r = Data(1, static_cast<uint32_t>(ring), ring, 0);
         std::memcpy(data, &r, sizeof r);
         return ring;
       },
       "malformed record"},
      {"a message longer than the receive",
       [](char* data, uint64_t) {
         const RecordHeader r = Data(1, 8, uint64_t{1} << 40, 0);
         std::memcpy(data, &r, sizeof r);
         return uint64_t{kLine} * 2;
       },
       "were expected"},
      {"a record out of place",
       [](char* data, uint64_t) {
         const RecordHeader r = Data(1, 8, 16, 8);
         std::memcpy(data, &r, sizeof r);
         return uint64_t{kLine} * 2;
       },
       "out of place"},
      {"a record past its message",
       [](char* data, uint64_t) {
         const RecordHeader r = Data(1, 32, 16, 0);
         std::memcpy(data, &r, sizeof r);
         return uint64_t{kLine} * 2;
       },
       "out of place"},
      {"a record of an earlier call",
       [](char* data, uint64_t) {
         const RecordHeader r = Data(0, 8, 8, 0);
         std::memcpy(data, &r, sizeof r);
         return uint64_t{kLine} * 2;
       },
       "earlier call"},
      {"padding past the data",
       [](char* data, uint64_t) {
         RecordHeader r = Data(1, 0, 0, 0);
         r.kind = static_cast<uint32_t>(RecordKind::kPadding);
         std::memcpy(data, &r, sizeof r);
         return uint64_t{kLine};
       },
       "padded past its data"},
  };
  for (const Corruption& corruption : cases) {
    SCOPED_TRACE(corruption.what);
    std::promise<void> victim_done;
    std::shared_future<void> done = victim_done.get_future().share();
    RunWorkers(2, [&](int32_t w, ShmTransport& transport) {
      if (w == 1) {  // stays connected, silent, while worker 0 reads what "it" wrote
        done.wait();
        return;
      }
      const uint64_t ring_bytes = ShmTransport::RingBytes(2);
      char* segment = MappedSegmentOfWorker0(SegmentBytes(2, ring_bytes));
      ASSERT_NE(segment, nullptr);
      auto* ring = reinterpret_cast<RingControl*>(segment + RingOffset(0, 1, ring_bytes));
      char* data = reinterpret_cast<char*>(ring) + sizeof(RingControl);
      ring->head.store(corruption.write(data, ring_bytes), std::memory_order_release);
      std::vector<char> into(64);
      const Transport::Transfer receive{1, 0, into.data(), into.size()};
      const absl::Status status = transport.Exchange({}, {&receive, 1}, Deadline::AfterMs(5000), nullptr);
      // As every transport failure: UNAVAILABLE, with the cause.
      EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable) << status;
      EXPECT_NE(status.message().find("worker:1"), std::string::npos) << status;
      EXPECT_NE(status.message().find(corruption.message), std::string::npos) << status;
      EXPECT_FALSE(transport.health().ok());
      EXPECT_FALSE(transport.Exchange({}, {&receive, 1}, Deadline::AfterMs(1000), nullptr).ok());
      victim_done.set_value();
    });
  }
}

}  // namespace
}  // namespace distribute::shm
