#include "core/cuda/block_cache.h"

#include <cstdint>

namespace distribute::gpu_plugin {

size_t BlockCache::RoundUp(size_t bytes) {
  if (bytes == 0) return kGranularity;
  if (bytes > SIZE_MAX - (kGranularity - 1)) return 0;
  return (bytes + kGranularity - 1) / kGranularity * kGranularity;
}

void* BlockCache::Take(size_t rounded) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto bin = idle_.find(rounded);
  if (bin == idle_.end() || bin->second.empty()) return nullptr;
  void* block = bin->second.back();
  bin->second.pop_back();
  idle_bytes_ -= rounded;
  in_use_.emplace(block, rounded);
  return block;
}

void BlockCache::Track(void* block, size_t rounded) {
  std::lock_guard<std::mutex> lock(mutex_);
  in_use_[block] = rounded;
}

bool BlockCache::Give(void* block) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto used = in_use_.find(block);
  if (used == in_use_.end()) return false;
  const size_t rounded = used->second;
  in_use_.erase(used);
  if (rounded > limit_bytes_ - idle_bytes_) return false;  // idle_bytes_ <= limit_bytes_ always
  idle_[rounded].push_back(block);
  idle_bytes_ += rounded;
  return true;
}

std::vector<void*> BlockCache::Drain() {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<void*> blocks;
  for (auto& [size, bin] : idle_) blocks.insert(blocks.end(), bin.begin(), bin.end());
  idle_.clear();
  idle_bytes_ = 0;
  return blocks;
}

size_t BlockCache::idle_bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return idle_bytes_;
}

size_t BlockCache::blocks_in_use() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return in_use_.size();
}

}  // namespace distribute::gpu_plugin
