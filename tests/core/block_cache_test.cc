// The CUDA plugin's cache of freed device blocks (core/cuda/block_cache.h), on CPU: the
// cache only does bookkeeping, so plain addresses stand in for device memory.
#include "core/cuda/block_cache.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

namespace distribute::gpu_plugin {
namespace {

void* Block(uintptr_t address) { return reinterpret_cast<void*>(address); }

TEST(BlockCacheTest, RoundsUpToTheGranule) {
  EXPECT_EQ(BlockCache::RoundUp(0), 512u);
  EXPECT_EQ(BlockCache::RoundUp(1), 512u);
  EXPECT_EQ(BlockCache::RoundUp(512), 512u);
  EXPECT_EQ(BlockCache::RoundUp(513), 1024u);
  EXPECT_EQ(BlockCache::RoundUp(SIZE_MAX), 0u);  // no size: the plugin refuses it
}

TEST(BlockCacheTest, AFreedBlockServesTheNextRequestOfItsSize) {
  BlockCache cache(1 << 20);
  EXPECT_EQ(cache.Take(1024), nullptr);  // empty: the plugin allocates
  cache.Track(Block(0x1000), 1024);
  EXPECT_EQ(cache.blocks_in_use(), 1u);
  EXPECT_TRUE(cache.Give(Block(0x1000)));
  EXPECT_EQ(cache.idle_bytes(), 1024u);
  EXPECT_EQ(cache.Take(512), nullptr);  // another size never gets it
  EXPECT_EQ(cache.Take(1024), Block(0x1000));
  EXPECT_EQ(cache.idle_bytes(), 0u);
  EXPECT_EQ(cache.Take(1024), nullptr);  // handed out once only
  EXPECT_TRUE(cache.Give(Block(0x1000)));
}

TEST(BlockCacheTest, PastTheLimitTheCallerFrees) {
  BlockCache cache(2048);
  cache.Track(Block(0x1000), 1024);
  cache.Track(Block(0x2000), 1024);
  cache.Track(Block(0x3000), 1024);
  EXPECT_TRUE(cache.Give(Block(0x1000)));
  EXPECT_TRUE(cache.Give(Block(0x2000)));
  EXPECT_FALSE(cache.Give(Block(0x3000)));  // would make 3072 idle bytes
  EXPECT_EQ(cache.idle_bytes(), 2048u);
  EXPECT_EQ(cache.blocks_in_use(), 0u);
}

TEST(BlockCacheTest, ABlockLargerThanTheLimitIsNeverKept) {
  BlockCache cache(1024);
  cache.Track(Block(0x1000), 4096);
  EXPECT_FALSE(cache.Give(Block(0x1000)));
  EXPECT_EQ(cache.idle_bytes(), 0u);
}

TEST(BlockCacheTest, UnknownPointersAreTheCallersToFree) {
  BlockCache cache(1 << 20);
  EXPECT_FALSE(cache.Give(Block(0x1000)));
  cache.Track(Block(0x1000), 512);
  EXPECT_TRUE(cache.Give(Block(0x1000)));
  EXPECT_FALSE(cache.Give(Block(0x1000)));  // a second release is not a second idle block
  EXPECT_EQ(cache.idle_bytes(), 512u);
}

TEST(BlockCacheTest, DrainHandsBackEveryIdleBlockAndKeepsTheOnesInUse) {
  BlockCache cache(1 << 20);
  cache.Track(Block(0x1000), 512);
  cache.Track(Block(0x2000), 1024);
  cache.Track(Block(0x3000), 1024);
  cache.Track(Block(0x4000), 512);
  ASSERT_TRUE(cache.Give(Block(0x1000)));
  ASSERT_TRUE(cache.Give(Block(0x2000)));
  ASSERT_TRUE(cache.Give(Block(0x3000)));
  std::vector<void*> drained = cache.Drain();
  std::sort(drained.begin(), drained.end());
  EXPECT_EQ(drained, (std::vector<void*>{Block(0x1000), Block(0x2000), Block(0x3000)}));
  EXPECT_EQ(cache.idle_bytes(), 0u);
  EXPECT_EQ(cache.Take(1024), nullptr);
  EXPECT_EQ(cache.blocks_in_use(), 1u);  // 0x4000 is still out
  EXPECT_TRUE(cache.Give(Block(0x4000)));
}

TEST(BlockCacheTest, ThreadsTakingAndGivingNeverShareABlock) {
  BlockCache cache(1 << 20);
  constexpr int kThreads = 4;
  constexpr int kBlocks = 8;
  for (int b = 0; b < kBlocks; ++b) {
    cache.Track(Block(0x1000 * (b + 1)), 512);
    ASSERT_TRUE(cache.Give(Block(0x1000 * (b + 1))));
  }
  std::vector<std::thread> threads;
  std::vector<int> collisions(kThreads, 0);
  std::vector<std::atomic<int>> owners(kBlocks + 1);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 2000; ++i) {
        void* block = cache.Take(512);
        if (block == nullptr) continue;
        const auto slot = reinterpret_cast<uintptr_t>(block) / 0x1000;
        if (owners[slot].fetch_add(1) != 0) ++collisions[t];
        owners[slot].fetch_sub(1);
        EXPECT_TRUE(cache.Give(block));
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int c : collisions) EXPECT_EQ(c, 0);
  EXPECT_EQ(cache.idle_bytes(), kBlocks * 512u);
  EXPECT_EQ(cache.blocks_in_use(), 0u);
}

}  // namespace
}  // namespace distribute::gpu_plugin
