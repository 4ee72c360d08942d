// SplitMix64: a cheap, well-mixing 64-bit hash, for deriving independent seeds from
// (seed, pass) pairs in the input pipeline.
#ifndef DISTRIBUTE_CORE_UTIL_MIX_H_
#define DISTRIBUTE_CORE_UTIL_MIX_H_

#include <cstdint>

namespace distribute {

inline uint64_t SplitMix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_UTIL_MIX_H_
