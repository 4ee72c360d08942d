// CrossWorker over each transport between threads of this process (real Gloo connections,
// real shared-memory segments; one thread per worker, an in-process coordination service
// as the rendezvous): all-reduce in both
// paths (inline, and reduce-scatter + all-gather with the header in the first frame, one
// and several frames) against a tree reduction computed here, every worker getting the
// same bits; all-gather, broadcast and barrier; and a disagreement that every worker
// reports naming the tasks, with nobody left waiting.
#include "core/collective/cross_worker.h"

#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <optional>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/kernels/reduce_kernels.h"
#include "core/gloo/gloo_transport.h"
#include "core/server/coordination_service.h"
#include "core/server/local_coordination_client.h"
#include "core/shm/shm_transport.h"
#include "core/tensor/buffer.h"
#include "core/tensor/shared_host_arena.h"
#include "core/util/status_macros.h"
#include "status_test_util.h"
#include "worker_threads.h"

namespace distribute {
namespace {

class CrossWorkerTest : public ::testing::TestWithParam<std::string> {
 protected:
  // Where the workers' packs and outputs live: the library's host memory (a peer maps it
  // on shared memory), private memory, or the library's except on worker 1.
  enum class Memory { kPrivate, kLibrary, kLibraryButWorker1 };
  // Every worker all-reduces `count` floats of its own; every one must get the tree sum.
  // Returns each worker's count of in-place all-reduces.
  std::vector<uint64_t> CheckAllReduce(int32_t workers, size_t count, Memory memory = Memory::kPrivate);
  // Whether CheckAllReduce(workers, count) sent whole packs (the gathered protocol) on
  // every worker: true, false, or an empty optional when the workers differ.
  std::optional<bool> Gathered(int32_t workers, size_t count);
  // The largest float count that goes whole between `workers` workers on this transport:
  // Transport::Pipelining's gathered_bytes (16 KiB over shared memory, 256 KiB over TCP)
  // between two, 2 / W of it between W.
  size_t GatheredMaxFloats(int32_t workers) const {
    return (GetParam() == "shm" ? size_t{16} << 10 : size_t{256} << 10) * 2 / static_cast<size_t>(workers) / sizeof(float);
  }
  std::vector<uint64_t> gathered_;  // each worker's gathered_calls() after CheckAllReduce

  // Runs fn(worker) on `workers` connected CrossWorkers, one thread each.
  void RunWorkers(int32_t workers, const std::function<void(CrossWorker&)>& fn) {
    ::distribute::testing::RunWorkerThreads(
        workers, [&](int32_t w, CoordinationClient& client, const std::vector<std::string>& names,
                     const std::string& prefix) {
          absl::StatusOr<std::unique_ptr<Transport>> transport = Connect(client, prefix, w, names);
          ASSERT_TRUE(transport.ok()) << transport.status();
          CrossWorker cross(*std::move(transport));
          fn(cross);
        });
  }

  // The transport this instance of the suite runs on.
  absl::StatusOr<std::unique_ptr<Transport>> Connect(CoordinationClient& client, const std::string& prefix,
                                                     int32_t w, const std::vector<std::string>& names) {
    const Deadline deadline = Deadline::AfterMs(30000);
    if (GetParam() == "shm") {
      ASSIGN_OR_RETURN(auto shared, shm::ShmTransport::Connect(client, prefix, w, names, deadline, std::nullopt,
                                                               w != private_worker_));
      return std::unique_ptr<Transport>(std::move(shared));
    }
    ASSIGN_OR_RETURN(auto gloo, GlooTransport::Connect(client, prefix, w, names, "127.0.0.1", "", deadline));
    return std::unique_ptr<Transport>(std::move(gloo));
  }

  // Over shared memory, the worker that connects keeping its tensors private (-1: none).
  int32_t private_worker_ = -1;

};

// Worker w's value of element i: arbitrary floats whose sum depends on the order.
float Value(int32_t w, size_t i) {
  uint64_t h = (static_cast<uint64_t>(w) << 32 | i) * 0x9E3779B97F4A7C15ull;
  h ^= h >> 29;
  const float unit = static_cast<float>(h % 100003) / 100003.0f - 0.5f;
  return std::ldexp(unit, static_cast<int>((h >> 40) % 16) - 8);
}

// The canonical order, written here: split after the first ceil(n/2), combine halves.
float Tree(int32_t lo, int32_t hi, size_t i) {
  if (hi - lo == 1) return Value(lo, i);
  const int32_t mid = lo + (hi - lo + 1) / 2;
  volatile float left = Tree(lo, mid, i);
  volatile float right = Tree(mid, hi, i);
  return left + right;
}

// Host memory for a test's pack or output: the library's (Buffer::Allocate, which takes
// large blocks from the shared host arena once a shared-memory transport has connected),
// or a private vector that no peer can map.
class HostBytes {
 public:
  HostBytes(size_t bytes, bool library) {
    if (library) {
      absl::StatusOr<std::shared_ptr<Buffer>> buffer = Buffer::Allocate(DeviceSpec{}.WithDefaults(), bytes, false);
      EXPECT_TRUE(buffer.ok()) << buffer.status();
      if (buffer.ok()) buffer_ = *std::move(buffer);
    } else {
      private_.resize(bytes);
    }
  }
  char* data() { return buffer_ != nullptr ? static_cast<char*>(buffer_->data()) : private_.data(); }
  template <typename T>
  T* as() { return reinterpret_cast<T*>(data()); }

 private:
  std::shared_ptr<Buffer> buffer_;
  std::vector<char> private_;
};

std::vector<uint64_t> CrossWorkerTest::CheckAllReduce(int32_t workers, size_t count, Memory memory) {
  std::vector<std::vector<float>> results(static_cast<size_t>(workers));
  std::vector<uint64_t> in_place(static_cast<size_t>(workers));
  gathered_.assign(static_cast<size_t>(workers), 0);
  RunWorkers(workers, [&](CrossWorker& cross) {
    const int32_t w = cross.worker();
    const bool library = memory == Memory::kLibrary || (memory == Memory::kLibraryButWorker1 && w != 1);
    HostBytes mine(count * sizeof(float), library), out(count * sizeof(float), library);
    for (size_t i = 0; i < count; ++i) mine.as<float>()[i] = Value(w, i);
    void* output = out.data();
    const CrossWorker::Segment segment{DType::kFloat32, count, 0, std::span<void* const>(&output, 1)};
    ASSERT_TRUE(cross.AllReduce(ReduceOp::kSum, mine.data(), count * sizeof(float),
                                std::span<const CrossWorker::Segment>(&segment, 1), 1,
                                "all_reduce float32", Deadline::AfterMs(30000)).ok());
    results[static_cast<size_t>(w)].assign(out.as<float>(), out.as<float>() + count);
    in_place[static_cast<size_t>(w)] = cross.in_place_calls();
    gathered_[static_cast<size_t>(w)] = cross.gathered_calls();
  });
  for (size_t i = 0; i < count; ++i) {
    const float expected = Tree(0, workers, i);
    for (int32_t w = 0; w < workers; ++w) {
      EXPECT_EQ(std::memcmp(&results[w][i], &expected, sizeof(float)), 0)
          << "worker " << w << " element " << i << " of " << count;
      if (std::memcmp(&results[w][i], &expected, sizeof(float)) != 0) return in_place;
    }
  }
  return in_place;
}

std::optional<bool> CrossWorkerTest::Gathered(int32_t workers, size_t count) {
  CheckAllReduce(workers, count);
  for (uint64_t calls : gathered_) {
    if (calls != gathered_[0]) return std::nullopt;
  }
  return gathered_[0] == 1;
}

TEST_P(CrossWorkerTest, AllReduceInlineSmallPack) {
  EXPECT_EQ(Gathered(3, 5), false);
  EXPECT_EQ(Gathered(1, 5), false);  // one worker: its own pack
}

TEST_P(CrossWorkerTest, AllReduceOfWholePacks) {
  // Packs too large for the header, up to the transport's limit for the worker count,
  // travel whole and every worker reduces them all, in worker order: the tree's bits.
  for (const int32_t workers : {2, 3, 4}) {
    EXPECT_EQ(Gathered(workers, 33), true) << workers;  // just past the header's 128 bytes
    EXPECT_EQ(Gathered(workers, 1001), true) << workers;
    EXPECT_EQ(Gathered(workers, GatheredMaxFloats(workers)), true) << workers;
  }
}

TEST_P(CrossWorkerTest, AllReduceScatterOneFrame) {
  // Past the whole-pack limit, chunks within one first frame (64 KiB over shared memory,
  // 1 MiB over TCP).
  EXPECT_EQ(Gathered(2, GatheredMaxFloats(2) + 16), false);
  EXPECT_EQ(Gathered(4, GatheredMaxFloats(4) + 16), false);
  EXPECT_EQ(Gathered(3, GatheredMaxFloats(3) * 2 + 1), false);
}

TEST_P(CrossWorkerTest, AllReduceScatterSeveralFrames) {
  CheckAllReduce(2, 700000);  // 1.4 MiB chunks: more than the 1 MiB first frame
}

TEST_P(CrossWorkerTest, AllReduceScatterPiecesSizedByTheChunk) {
  // Gloo: 3.3 MiB chunks are cut into pieces of about 600 KiB after the 1 MiB first frame
  // (a quarter of the rest, 64-byte aligned), the last worker's chunk shorter; 8 MiB chunks
  // into pieces at the 1 MiB cap. The shared-memory transport keeps its 128 KiB pieces.
  CheckAllReduce(3, 2600000);
  CheckAllReduce(2, 4200000);
}

TEST_P(CrossWorkerTest, MixedDtypesAndMeanAcrossWorkers) {
  // float16 sums in float32 and int8 MEAN in int64, as a single process would.
  constexpr int32_t kWorkers = 2;
  RunWorkers(kWorkers, [&](CrossWorker& cross) {
    const int64_t w = cross.worker();
    // Pack: 100 int64 accumulators (int8 tensor), then 300 float accumulators (float16).
    std::vector<char> pack(100 * 8 + 64 * 0 + 300 * 4 + 64);
    const size_t float_offset = 832;  // 800 rounded up to 64
    pack.resize(float_offset + 300 * 4);
    for (int i = 0; i < 100; ++i) {
      const int64_t v = 100 + w * 27;  // the sum of several int8 replicas, past int8 range
      std::memcpy(pack.data() + i * 8, &v, 8);
    }
    for (int i = 0; i < 300; ++i) {
      const float v = 0.5f + static_cast<float>(w);
      std::memcpy(pack.data() + float_offset + i * 4, &v, 4);
    }
    std::vector<int8_t> ints(100);
    std::vector<uint16_t> halves(300);
    void* int_out = ints.data();
    void* half_out = halves.data();
    const CrossWorker::Segment segments[2] = {
        {DType::kInt8, 100, 0, std::span<void* const>(&int_out, 1)},
        {DType::kFloat16, 300, float_offset, std::span<void* const>(&half_out, 1)}};
    ASSERT_TRUE(cross.AllReduce(ReduceOp::kMean, pack.data(), pack.size(), segments, 4,
                                "mixed", Deadline::AfterMs(30000)).ok());
    // (100 + 127) / 4 = 56 (truncated); (0.5 + 1.5) / 4 = 0.5 = 0x3800 in float16.
    for (int8_t v : ints) ASSERT_EQ(v, 56);
    for (uint16_t v : halves) ASSERT_EQ(v, 0x3800);
  });
}

// Worker w's pack of `ints` int64 accumulators (i % 200 + 27 w) and, from `float_offset`,
// `halves` float32 ones (0.5 + w + i % 7).
void FillMixedPack(int64_t w, size_t ints, size_t float_offset, size_t halves, char* pack) {
  for (size_t i = 0; i < ints; ++i) {
    const int64_t v = static_cast<int64_t>(i % 200) + w * 27;
    std::memcpy(pack + i * 8, &v, 8);
  }
  for (size_t i = 0; i < halves; ++i) {
    const float v = 0.5f + static_cast<float>(w) + static_cast<float>(i % 7);
    std::memcpy(pack + float_offset + i * 4, &v, 4);
  }
}

TEST_P(CrossWorkerTest, MixedDtypesAndMeanOverSeveralPieces) {
  // As above, large enough that each chunk travels in several pieces (relayed, over shared
  // memory): int8 MEAN in int64 accumulators, then float16 in float32 after a 56-byte gap,
  // the two segments meeting inside a piece. Values vary by element.
  constexpr size_t kInts = 40001, kHalves = 100000;
  constexpr size_t kFloatOffset = (kInts * 8 + 63) / 64 * 64;
  RunWorkers(2, [&](CrossWorker& cross) {
    const int64_t w = cross.worker();
    std::vector<char> pack(kFloatOffset + kHalves * 4, 0);
    FillMixedPack(w, kInts, kFloatOffset, kHalves, pack.data());
    std::vector<int8_t> ints(kInts);
    std::vector<uint16_t> halves(kHalves);
    void* int_out = ints.data();
    void* half_out = halves.data();
    const CrossWorker::Segment segments[2] = {
        {DType::kInt8, kInts, 0, std::span<void* const>(&int_out, 1)},
        {DType::kFloat16, kHalves, kFloatOffset, std::span<void* const>(&half_out, 1)}};
    ASSERT_TRUE(cross.AllReduce(ReduceOp::kMean, pack.data(), pack.size(), segments, 4,
                                "mixed, several pieces", Deadline::AfterMs(30000)).ok());
    // (2 (i % 200) + 27) / 4, truncated; (2 + 2 (i % 7)) / 4 = 0.5 + (i % 7) / 2 in float16:
    // 0.5 is 0x3800, then 1.0 0x3C00, 1.5 0x3E00, 2.0 0x4000, 2.5 0x4100, 3.0 0x4200, 3.5 0x4300.
    constexpr uint16_t kHalfBits[7] = {0x3800, 0x3C00, 0x3E00, 0x4000, 0x4100, 0x4200, 0x4300};
    for (size_t i = 0; i < kInts; ++i) ASSERT_EQ(ints[i], (2 * static_cast<int>(i % 200) + 27) / 4) << i;
    for (size_t i = 0; i < kHalves; ++i) ASSERT_EQ(halves[i], kHalfBits[i % 7]) << i;
  });
}

TEST_P(CrossWorkerTest, LargePacksInSharedMemoryAreReducedInPlace) {
  // Over shared memory, a pack of at least kShareableMinBytes whose pack and output lie in
  // the library's host memory on every worker is reduced straight out of the peers' packs:
  // the same bits as the copying path, with 2, 3 and 4 workers (chunks of uneven size, the
  // last one short). Over Gloo, nothing is in place.
  const uint64_t expected = GetParam() == "shm" ? 1 : 0;
  for (const int32_t workers : {2, 3, 4}) {
    for (const size_t count : {kShareableMinBytes / sizeof(float), size_t{2600017}}) {
      const std::vector<uint64_t> in_place = CheckAllReduce(workers, count, Memory::kLibrary);
      EXPECT_EQ(in_place, std::vector<uint64_t>(static_cast<size_t>(workers), expected))
          << workers << " workers, " << count << " floats";
    }
  }
  // Below the threshold every pack takes the copying path.
  EXPECT_EQ(CheckAllReduce(2, kShareableMinBytes / sizeof(float) - 16, Memory::kLibrary),
            std::vector<uint64_t>(2, 0));
}

TEST_P(CrossWorkerTest, OnePrivatePackMakesEveryWorkerCopy) {
  // Worker 1's pack and output are memory its peers cannot map: every worker sees that in
  // the headers and all take the copying path, with the same bits.
  EXPECT_EQ(CheckAllReduce(3, 700000, Memory::kLibraryButWorker1), std::vector<uint64_t>(3, 0));
  EXPECT_EQ(CheckAllReduce(2, 700000, Memory::kPrivate), std::vector<uint64_t>(2, 0));
}

TEST_P(CrossWorkerTest, AWorkerThatKeepsItsTensorsPrivateMakesEveryWorkerCopy) {
  // Worker 1 connects with share_tensors off (DIST_SHARED_TENSORS=off): the workers agree
  // at start-up that none reads another's memory, so even the library's tensors take the
  // copying path, with the same bits. The same agreement covers a worker that cannot map
  // a peer's arena.
  private_worker_ = 1;
  EXPECT_EQ(CheckAllReduce(3, 700000, Memory::kLibrary), std::vector<uint64_t>(3, 0));
  EXPECT_EQ(CheckAllReduce(2, 700000, Memory::kLibrary), std::vector<uint64_t>(2, 0));
}

TEST_P(CrossWorkerTest, MixedDtypesInPlace) {
  // A pack of int8 MEAN accumulators (int64) and float16 ones (float32) in shared memory:
  // reduced in place into a result of the library's, then stored in each output's dtype.
  constexpr size_t kInts = 80001, kHalves = 200000;
  constexpr size_t kFloatOffset = (kInts * 8 + 63) / 64 * 64;
  RunWorkers(3, [&](CrossWorker& cross) {
    const int64_t w = cross.worker();
    HostBytes pack(kFloatOffset + kHalves * 4, true);
    FillMixedPack(w, kInts, kFloatOffset, kHalves, pack.data());
    std::vector<int8_t> ints(kInts);
    std::vector<uint16_t> halves(kHalves), halves_again(kHalves);
    void* int_out = ints.data();
    void* half_outs[2] = {halves.data(), halves_again.data()};
    const CrossWorker::Segment segments[2] = {
        {DType::kInt8, kInts, 0, std::span<void* const>(&int_out, 1)},
        {DType::kFloat16, kHalves, kFloatOffset, std::span<void* const>(half_outs, 2)}};
    ASSERT_TRUE(cross.AllReduce(ReduceOp::kMean, pack.data(), kFloatOffset + kHalves * 4, segments, 6,
                                "mixed, in place", Deadline::AfterMs(30000)).ok());
    EXPECT_EQ(cross.in_place_calls(), GetParam() == "shm" ? 1u : 0u);
    // (3 (i % 200) + 81) / 6, truncated; (4.5 + 3 (i % 7)) / 6 = 0.75 + (i % 7) / 2 in float16.
    constexpr uint16_t kHalfBits[7] = {0x3A00, 0x3D00, 0x3F00, 0x4080, 0x4180, 0x4280, 0x4380};
    for (size_t i = 0; i < kInts; ++i) ASSERT_EQ(ints[i], (3 * static_cast<int>(i % 200) + 81) / 6) << i;
    for (size_t i = 0; i < kHalves; ++i) {
      ASSERT_EQ(halves[i], kHalfBits[i % 7]) << i;
      ASSERT_EQ(halves_again[i], kHalfBits[i % 7]) << i;
    }
  });
}

TEST_P(CrossWorkerTest, ATransportThatDoesNotRelayRefusesRelays) {
  ::distribute::testing::RunWorkerThreads(
      2, [&](int32_t w, CoordinationClient& client, const std::vector<std::string>& names,
             const std::string& prefix) {
        absl::StatusOr<std::unique_ptr<Transport>> transport = Connect(client, prefix, w, names);
        ASSERT_TRUE(transport.ok()) << transport.status();
        EXPECT_EQ((*transport)->relays(), GetParam() == "shm");
        if ((*transport)->relays()) return;
        char byte = 0;
        const Transport::Relay relay{1 - w, 2, &byte, [](size_t, const char*, size_t) {}};
        const Transport::Transfer receive{1 - w, 1, &byte, 1, &relay};
        const absl::Status status = (*transport)->Exchange({}, {&receive, 1}, Deadline::AfterMs(5000));
        EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
        EXPECT_NE(status.message().find("relay"), absl::string_view::npos) << status;
        EXPECT_TRUE((*transport)->health().ok());
      });
}

TEST_P(CrossWorkerTest, GatherAlongAxisBroadcastAndBarrier) {
  RunWorkers(3, [&](CrossWorker& cross) {
    const int32_t w = cross.worker();
    // Worker w has w + 1 rows of 2 int32: row r = {100 w + r, -1}.
    std::vector<int32_t> rows;
    for (int32_t r = 0; r <= w; ++r) {
      rows.push_back(100 * w + r);
      rows.push_back(-1);
    }
    Tensor::Description desc;
    desc.dtype = static_cast<int32_t>(DType::kInt32);
    const int64_t dims[2] = {w + 1, 2};
    desc.dims = dims;
    desc.byte_size = rows.size() * sizeof(int32_t);
    auto local = Tensor::Create(desc, rows.data());
    ASSERT_TRUE(local.ok());
    auto all = cross.AllGatherAlongAxis(*local, 0, "gather int32[*, 2]", Deadline::AfterMs(30000));
    ASSERT_TRUE(all.ok()) << all.status();
    ASSERT_EQ(all->shape().dim(0), 6);
    const auto* got = static_cast<const int32_t*>(all->data());
    const int32_t expected_first[6] = {0, 100, 101, 200, 201, 202};
    for (int i = 0; i < 6; ++i) EXPECT_EQ(got[2 * i], expected_first[i]);

    // Along axis 1 (two leading rows, so the blocks interleave), onto a device asked for:
    // worker w has w + 1 columns, row i = {1000 i + 100 w + c}.
    std::vector<int32_t> columns;
    for (int32_t i = 0; i < 2; ++i) {
      for (int32_t c = 0; c <= w; ++c) columns.push_back(1000 * i + 100 * w + c);
    }
    const int64_t side_dims[2] = {2, w + 1};
    desc.dims = side_dims;
    desc.byte_size = columns.size() * sizeof(int32_t);
    auto side_local = Tensor::Create(desc, columns.data());
    ASSERT_TRUE(side_local.ok());
    const absl::StatusOr<DeviceSpec> cpu1 = DeviceSpec::Parse("CPU:1");
    ASSERT_TRUE(cpu1.ok());
    auto side = cross.AllGatherAlongAxis(*side_local, 1, "gather int32[2, *]", Deadline::AfterMs(30000),
                                         cpu1->WithDefaults());
    ASSERT_TRUE(side.ok()) << side.status();
    ASSERT_EQ(side->shape().dim(0), 2);
    ASSERT_EQ(side->shape().dim(1), 6);
    EXPECT_EQ(side->device(), cpu1->WithDefaults());
    const auto* side_got = static_cast<const int32_t*>(side->data());
    const int32_t expected_columns[6] = {0, 100, 101, 200, 201, 202};
    for (int32_t i = 0; i < 2; ++i) {
      for (int c = 0; c < 6; ++c) EXPECT_EQ(side_got[6 * i + c], 1000 * i + expected_columns[c]) << i << "," << c;
    }

    std::vector<double> big(50000, w == 2 ? 3.25 : 0.0);
    ASSERT_TRUE(cross.Broadcast(big.data(), big.size() * sizeof(double), 2, "broadcast float64[50000]",
                                Deadline::AfterMs(30000)).ok());
    for (double v : big) ASSERT_EQ(v, 3.25);
    ASSERT_TRUE(cross.Barrier("end", Deadline::AfterMs(30000)).ok());
  });
}

TEST_P(CrossWorkerTest, BroadcastsBehindTheirHeaders) {
  // From past the header's 128 bytes up to the transport's gathered_bytes (16 KiB over
  // shared memory, 256 KiB over TCP) the root's bytes travel right behind its header;
  // every root, 3 workers; then one just past the limit, through the transport.
  const size_t limit = GetParam() == "shm" ? size_t{16} << 10 : size_t{256} << 10;
  RunWorkers(3, [&](CrossWorker& cross) {
    const int32_t w = cross.worker();
    for (const size_t bytes : {size_t{129}, size_t{1000}, limit, limit + 64}) {
      for (int32_t root = 0; root < 3; ++root) {
        std::vector<unsigned char> data(bytes);
        for (size_t i = 0; i < bytes; ++i) data[i] = static_cast<unsigned char>(w == root ? (i * 7 + root) & 0xFF : 0xEE);
        ASSERT_TRUE(cross.Broadcast(data.data(), bytes, root, absl::StrCat("broadcast uint8[", bytes, "]"),
                                    Deadline::AfterMs(30000)).ok());
        for (size_t i = 0; i < bytes; ++i) {
          ASSERT_EQ(data[i], static_cast<unsigned char>((i * 7 + root) & 0xFF)) << bytes << " bytes from " << root;
        }
      }
    }
  });
  // A job of one worker: its own bytes, through the same exchange with nobody.
  RunWorkers(1, [&](CrossWorker& cross) {
    std::vector<char> data(1000, 5);
    ASSERT_TRUE(cross.Broadcast(data.data(), data.size(), 0, "broadcast int8[1000]", Deadline::AfterMs(30000)).ok());
    EXPECT_EQ(data, std::vector<char>(1000, 5));
    absl::StatusOr<CrossWorker::Gathered> gathered = cross.AllGather(data.data(), data.size(), "gather", Deadline::AfterMs(30000));
    ASSERT_TRUE(gathered.ok()) << gathered.status();
    ASSERT_EQ(gathered->blocks.size(), 1u);
    EXPECT_EQ(std::vector<char>(gathered->blocks[0].begin(), gathered->blocks[0].end()), data);
  });
}

TEST_P(CrossWorkerTest, ABroadcastDisagreementLeavesNothingInFlight) {
  // Two workers that each think they are the root, then different sizes: both fail naming
  // the tasks, and the communicator still works (every message posted was met).
  RunWorkers(2, [&](CrossWorker& cross) {
    const int32_t w = cross.worker();
    std::vector<char> data(1000, static_cast<char>(w));
    absl::Status status = cross.Broadcast(data.data(), data.size(), w, "broadcast int8[1000]", Deadline::AfterMs(20000));
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
    EXPECT_NE(status.message().find("worker:1"), absl::string_view::npos) << status;
    EXPECT_EQ(data, std::vector<char>(1000, static_cast<char>(w)));
    status = cross.Broadcast(data.data(), w == 0 ? 500 : 1000, 0, absl::StrCat("broadcast int8[", w == 0 ? 500 : 1000, "]"),
                             Deadline::AfterMs(20000));
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
    std::vector<char> more(2000, static_cast<char>(w == 1 ? 9 : 0));
    ASSERT_TRUE(cross.Broadcast(more.data(), more.size(), 1, "broadcast int8[2000]", Deadline::AfterMs(20000)).ok());
    EXPECT_EQ(more, std::vector<char>(2000, 9));
  });
  // Against a worker in another call (which waits for nothing past the headers): both
  // fail at once, without waiting for the deadline.
  RunWorkers(2, [&](CrossWorker& cross) {
    const auto start = Clock::now();
    std::vector<char> data(1000, 1);
    const absl::Status status =
        cross.worker() == 0 ? cross.Broadcast(data.data(), data.size(), 1, "broadcast int8[1000]", Deadline::AfterMs(20000))
                            : cross.Barrier("something else", Deadline::AfterMs(20000));
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
    EXPECT_NE(status.message().find("worker:0"), absl::string_view::npos) << status;
    EXPECT_LT(Clock::now() - start, std::chrono::seconds(10)) << "waited for the deadline";
  });
}

TEST_P(CrossWorkerTest, AnAllGatherDisagreementLeavesNothingInFlight) {
  // Blocks of every size (one past the transport's limit, in private memory), one worker
  // naming another call: all fail naming the tasks, and the communicator still works.
  RunWorkers(3, [&](CrossWorker& cross) {
    const int32_t w = cross.worker();
    std::vector<char> block(w == 0 ? 64 : w == 1 ? 3000 : 300000, static_cast<char>(w));
    const absl::Status status = cross.AllGather(block.data(), block.size(), w == 2 ? "gather int8[*, 2]" : "gather int8[*]",
                                                Deadline::AfterMs(20000)).status();
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
    EXPECT_NE(status.message().find("worker:2"), absl::string_view::npos) << status;
    absl::StatusOr<CrossWorker::Gathered> again =
        cross.AllGather(block.data(), block.size(), "gather int8[*]", Deadline::AfterMs(20000));
    ASSERT_TRUE(again.ok()) << again.status();
    for (int32_t q = 0; q < 3; ++q) {
      EXPECT_EQ(std::vector<char>(again->blocks[q].begin(), again->blocks[q].end()),
                std::vector<char>(q == 0 ? 64 : q == 1 ? 3000 : 300000, static_cast<char>(q)));
    }
  });
}

TEST_P(CrossWorkerTest, AllGathersOfBlocksInEveryPlace) {
  // Blocks in the header (up to 128 bytes), right behind it (up to the transport's
  // gathered_bytes: 16 KiB over shared memory, 256 KiB over TCP) and larger ones (in the
  // library's memory, read in place over shared memory; in private memory, through a
  // second exchange), mixed in one call, 4 workers, twice each way.
  const size_t limit = GetParam() == "shm" ? size_t{16} << 10 : size_t{256} << 10;
  const std::vector<size_t> private_sizes = {100, 5000, limit, limit + 64};
  const std::vector<size_t> library_sizes = {100, 5000, 70000, 300000};  // two read in place over shm
  const bool shm = GetParam() == "shm";
  RunWorkers(4, [&](CrossWorker& cross) {
    const int32_t w = cross.worker();
    for (const bool library : {false, true, false}) {
      const std::vector<size_t>& sizes = library ? library_sizes : private_sizes;
      for (const size_t shift : {size_t{0}, size_t{1}, size_t{2}}) {
        auto size_of = [&](int32_t q) { return sizes[(static_cast<size_t>(q) + shift) % sizes.size()]; };
        const uint64_t in_place_before = cross.in_place_calls();
        HostBytes block(size_of(w), library);
        for (size_t i = 0; i < size_of(w); ++i) block.data()[i] = static_cast<char>((i * 13 + static_cast<size_t>(w)) & 0x7F);
        absl::StatusOr<CrossWorker::Gathered> gathered =
            cross.AllGather(block.data(), size_of(w), "gather int8[*]", Deadline::AfterMs(30000));
        ASSERT_TRUE(gathered.ok()) << gathered.status();
        ASSERT_EQ(gathered->blocks.size(), 4u);
        for (int32_t q = 0; q < 4; ++q) {
          ASSERT_EQ(gathered->blocks[q].size(), size_of(q));
          for (size_t i = 0; i < size_of(q); ++i) {
            ASSERT_EQ(gathered->blocks[q][i], static_cast<char>((i * 13 + static_cast<size_t>(q)) & 0x7F))
                << "block " << q << " byte " << i;
          }
        }
        EXPECT_EQ(cross.in_place_calls() - in_place_before, shm && library ? 1u : 0u);
      }
    }
  });
}

TEST_P(CrossWorkerTest, LargeGathersAndBroadcastsInSharedMemoryAreReadInPlace) {
  // Blocks of at least kShareableMinBytes in the library's memory are copied straight out
  // of their owners' memory over shared memory (a small block rides in its header beside
  // them); a block in private memory makes everyone take the transport. Values as through
  // the transport in every case.
  const bool shm = GetParam() == "shm";
  RunWorkers(3, [&](CrossWorker& cross) {
    const int32_t w = cross.worker();
    // Worker w gathers rows of 4 floats: 20000 rows (320,000 bytes), 3 rows on worker 1.
    auto gather = [&](bool library_everywhere) {
      const size_t rows = w == 1 ? 3 : 20000;
      HostBytes block(rows * 4 * sizeof(float), library_everywhere || w != 2);
      for (size_t i = 0; i < rows * 4; ++i) block.as<float>()[i] = static_cast<float>(w * 1000000 + i);
      absl::StatusOr<CrossWorker::Gathered> gathered =
          cross.AllGather(block.data(), rows * 4 * sizeof(float), "gather float32[*, 4]", Deadline::AfterMs(30000));
      ASSERT_TRUE(gathered.ok()) << gathered.status();
      ASSERT_EQ(gathered->blocks.size(), 3u);
      for (int32_t q = 0; q < 3; ++q) {
        const size_t their_rows = q == 1 ? 3 : 20000;
        ASSERT_EQ(gathered->blocks[q].size(), their_rows * 4 * sizeof(float));
        const auto* values = reinterpret_cast<const float*>(gathered->blocks[q].data());
        for (size_t i = 0; i < their_rows * 4; ++i) {
          ASSERT_EQ(values[i], static_cast<float>(q * 1000000 + i)) << "block " << q << " element " << i;
        }
      }
    };
    gather(true);
    EXPECT_EQ(cross.in_place_calls(), shm ? 1u : 0u);
    gather(false);  // worker 2's block is private: through the transport
    EXPECT_EQ(cross.in_place_calls(), shm ? 1u : 0u);

    // A broadcast of 512 KiB from worker 1, whose source is the library's memory; then one
    // whose source is private.
    constexpr size_t kCount = 65536;
    for (const bool library_root : {true, false}) {
      HostBytes data(kCount * sizeof(double), library_root || w != 1);
      for (size_t i = 0; i < kCount; ++i) data.as<double>()[i] = w == 1 ? 0.5 * static_cast<double>(i) : -1.0;
      ASSERT_TRUE(cross.Broadcast(data.data(), kCount * sizeof(double), 1, "broadcast float64[65536]",
                                  Deadline::AfterMs(30000)).ok());
      for (size_t i = 0; i < kCount; ++i) ASSERT_EQ(data.as<double>()[i], 0.5 * static_cast<double>(i)) << i;
    }
    EXPECT_EQ(cross.in_place_calls(), shm ? 2u : 0u);
    ASSERT_TRUE(cross.Barrier("end", Deadline::AfterMs(30000)).ok());
  });
}

TEST_P(CrossWorkerTest, DisagreementFailsEveryWorkerNamingTheTasks) {
  for (const size_t large : {size_t{16}, size_t{4096}}) {  // inline, and in the first frame
    RunWorkers(2, [&](CrossWorker& cross) {
      const size_t count = cross.worker() == 0 ? large : large * 2;
      std::vector<float> mine(count, 1.0f), out(count);
      void* output = out.data();
      const CrossWorker::Segment segment{DType::kFloat32, count, 0, std::span<void* const>(&output, 1)};
      const absl::Status status = cross.AllReduce(
          ReduceOp::kSum, mine.data(), count * sizeof(float),
          std::span<const CrossWorker::Segment>(&segment, 1), 1,
          absl::StrCat("all_reduce float32[", count, "]"), Deadline::AfterMs(30000));
      EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
      EXPECT_NE(status.message().find("worker:0"), absl::string_view::npos) << status;
      EXPECT_NE(status.message().find("worker:1"), absl::string_view::npos) << status;
      EXPECT_NE(status.message().find(absl::StrCat("float32[", large * 2, "]")), absl::string_view::npos)
          << status;
      // The communicator still works afterwards: nothing was left in flight.
      EXPECT_TRUE(cross.Barrier("after", Deadline::AfterMs(30000)).ok());
    });
  }
}

// Every worker all-reduces `counts[w]` floats (the counts disagree), which must fail on
// every worker naming the tasks; then, when `usable_after`, the same workers must still
// all-reduce correctly: every receive posted for the failed call was met, nothing is left
// in flight.
void ExpectDisagreement(CrossWorker& cross, const std::vector<size_t>& counts, bool usable_after) {
  const size_t count = counts[static_cast<size_t>(cross.worker())];
  std::vector<float> mine(count, 1.0f), out(count, -1.0f);
  void* output = out.data();
  const CrossWorker::Segment segment{DType::kFloat32, count, 0, std::span<void* const>(&output, 1)};
  const auto start = Clock::now();
  const absl::Status status = cross.AllReduce(
      ReduceOp::kSum, mine.data(), count * sizeof(float), std::span<const CrossWorker::Segment>(&segment, 1), 1,
      absl::StrCat("all_reduce float32[", count, "]"), Deadline::AfterMs(20000));
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
  EXPECT_NE(status.message().find("workers disagree"), absl::string_view::npos) << status;
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(10)) << "waited for the deadline";
  EXPECT_EQ(out, std::vector<float>(count, -1.0f)) << "a failed all-reduce wrote its output";
  if (!usable_after) return;
  const size_t agreed = 700000;  // between 2 workers, a first frame and a later piece per chunk
  std::vector<float> ones(agreed, 1.0f), sum(agreed, 0.0f);
  void* sum_out = sum.data();
  const CrossWorker::Segment whole{DType::kFloat32, agreed, 0, std::span<void* const>(&sum_out, 1)};
  ASSERT_TRUE(cross.AllReduce(ReduceOp::kSum, ones.data(), agreed * sizeof(float),
                              std::span<const CrossWorker::Segment>(&whole, 1), 1, "all_reduce after",
                              Deadline::AfterMs(30000)).ok());
  EXPECT_EQ(sum, std::vector<float>(agreed, static_cast<float>(cross.num_workers())));
}

TEST_P(CrossWorkerTest, ADisagreementOverSeveralPiecesLeavesNothingInFlight) {
  // Packs cut into different numbers of pieces (chunks of 1.5, 2.7, 3.1 and 5.7 MiB): each
  // worker answers every receive the others posted with an empty message (over shared
  // memory these packs go in place, where only the headers have travelled).
  RunWorkers(2, [&](CrossWorker& cross) { ExpectDisagreement(cross, {800000, 1400000}, true); });
  RunWorkers(3, [&](CrossWorker& cross) { ExpectDisagreement(cross, {1200000, 2400000, 4500000}, true); });
  // A chunk of one piece against chunks of several; four workers whose small pack leaves
  // the last chunks short or empty (33 floats: chunks of 64, 64, 4 and 0 bytes).
  // Over shared memory a pack of kShareableMinBytes or more goes in place, whose protocol
  // starts with the headers alone: against a copying peer (its first frame in flight) the
  // communicator is failed on both sides, at once.
  const bool crossing_usable = GetParam() != "shm";
  RunWorkers(2, [&](CrossWorker& cross) { ExpectDisagreement(cross, {100, 900000}, crossing_usable); });
  RunWorkers(4, [&](CrossWorker& cross) { ExpectDisagreement(cross, {33, 33, 2000000, 33}, crossing_usable); });
}

TEST_P(CrossWorkerTest, ADisagreementBetweenWholePacksAndChunksLeavesNothingInFlight) {
  // Whole packs against other whole packs, and against a worker in the reduce-scatter
  // (which posted receives for later pieces and results): the workers with whole packs
  // answer those with empty messages, the others send them nothing more.
  const size_t two = GatheredMaxFloats(2), three = GatheredMaxFloats(3);
  RunWorkers(2, [&](CrossWorker& cross) { ExpectDisagreement(cross, {40, two}, true); });
  RunWorkers(2, [&](CrossWorker& cross) { ExpectDisagreement(cross, {two, two + 16}, true); });
  RunWorkers(2, [&](CrossWorker& cross) { ExpectDisagreement(cross, {two + 16, 40}, true); });
  RunWorkers(3, [&](CrossWorker& cross) { ExpectDisagreement(cross, {500, three * 3, three}, true); });
  // Against a pack in the header (which posts nothing past the headers): failed at once.
  RunWorkers(2, [&](CrossWorker& cross) { ExpectDisagreement(cross, {8, two}, false); });
}

TEST_P(CrossWorkerTest, ALargeAllReduceMetByASmallOneFailsAtOnce) {
  // Worker 1's pack travels in its header: it posts nothing more and sends no frame, so
  // worker 0 must not wait for one.
  RunWorkers(2, [&](CrossWorker& cross) { ExpectDisagreement(cross, {100000, 8}, false); });
}

TEST_P(CrossWorkerTest, ALargeAllReduceMetByAnotherCallFailsAtOnce) {
  // Worker 1 makes a different call (as a worker does that failed the all-reduce locally):
  // worker 0, in the large all-reduce, must not wait for a data frame that never comes.
  RunWorkers(2, [&](CrossWorker& cross) {
    const auto start = Clock::now();
    absl::Status status;
    if (cross.worker() == 0) {
      std::vector<float> mine(10000, 1.0f), out(10000);
      void* output = out.data();
      const CrossWorker::Segment segment{DType::kFloat32, 10000, 0, std::span<void* const>(&output, 1)};
      status = cross.AllReduce(ReduceOp::kSum, mine.data(), mine.size() * sizeof(float),
                               std::span<const CrossWorker::Segment>(&segment, 1), 1,
                               "all_reduce float32[10000]", Deadline::AfterMs(20000));
    } else {
      status = cross.Barrier("something else", Deadline::AfterMs(20000));
    }
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
    EXPECT_NE(status.message().find("worker:0"), absl::string_view::npos) << status;
    EXPECT_NE(status.message().find("worker:1"), absl::string_view::npos) << status;
    EXPECT_LT(Clock::now() - start, std::chrono::seconds(10)) << "waited for the deadline";
  });
}

INSTANTIATE_TEST_SUITE_P(Transports, CrossWorkerTest, ::testing::Values("gloo", "shm"),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

}  // namespace
}  // namespace distribute
