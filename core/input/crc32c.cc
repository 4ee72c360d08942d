#include "core/input/crc32c.h"

#include <array>
#include <cstring>

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

namespace distribute {
namespace {

constexpr uint32_t kPoly = 0x82f63b78u;  // reflected Castagnoli polynomial

// Slicing-by-8 tables: kTables[k][b] is the CRC of byte b followed by k zero bytes.
struct Tables {
  std::array<std::array<uint32_t, 256>, 8> t;
  constexpr Tables() : t() {
    for (uint32_t b = 0; b < 256; ++b) {
      uint32_t crc = b;
      for (int i = 0; i < 8; ++i) crc = (crc >> 1) ^ ((crc & 1u) ? kPoly : 0u);
      t[0][b] = crc;
    }
    for (uint32_t b = 0; b < 256; ++b) {
      for (int k = 1; k < 8; ++k) t[k][b] = (t[k - 1][b] >> 8) ^ t[0][t[k - 1][b] & 0xffu];
    }
  }
};

constexpr Tables kTables;

uint32_t Load32(const unsigned char* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;  // little-endian hosts only
}

#if defined(__x86_64__)
// The hardware instruction has a latency of 3 cycles but a throughput of 1, so three
// independent streams run about three times faster than one. Each round covers three
// blocks; the states of the second and third are merged into the first with a shift
// table, since the CRC state is linear: state(s, X || Y) = zeros_shift(state(s, X), |Y|)
// ^ state(0, Y).
constexpr size_t kStreamBlock = 1024;

struct ShiftTable {
  uint32_t t[4][256];  // t[k][b]: the state (b << 8k) after kStreamBlock zero bytes
};

uint32_t RawPortable(uint32_t state, const void* data, size_t n) {
  return ~Crc32cExtendPortable(~state, data, n);
}

const ShiftTable& BlockShift() {
  static const ShiftTable* const table = [] {
    auto* table = new ShiftTable();
    static const unsigned char zeros[kStreamBlock] = {};
    uint32_t basis[32];
    for (int i = 0; i < 32; ++i) basis[i] = RawPortable(1u << i, zeros, kStreamBlock);
    for (int k = 0; k < 4; ++k) {
      for (uint32_t b = 0; b < 256; ++b) {
        uint32_t v = 0;
        for (int j = 0; j < 8; ++j) {
          if (b & (1u << j)) v ^= basis[8 * k + j];
        }
        table->t[k][b] = v;
      }
    }
    return table;
  }();
  return *table;
}

inline uint32_t ShiftBlock(const ShiftTable& s, uint32_t state) {
  return s.t[0][state & 0xff] ^ s.t[1][(state >> 8) & 0xff] ^ s.t[2][(state >> 16) & 0xff] ^
         s.t[3][state >> 24];
}

__attribute__((target("sse4.2"))) uint32_t ExtendHardware(uint32_t crc, const void* data,
                                                          size_t n) {
  const unsigned char* p = static_cast<const unsigned char*>(data);
  uint64_t c = ~crc;
  while (n > 0 && (reinterpret_cast<uintptr_t>(p) & 7u) != 0) {
    c = _mm_crc32_u8(static_cast<uint32_t>(c), *p++);
    --n;
  }
  if (n >= 3 * kStreamBlock) {
    const ShiftTable& shift = BlockShift();
    while (n >= 3 * kStreamBlock) {
      uint64_t c1 = 0, c2 = 0;
      const unsigned char* p1 = p + kStreamBlock;
      const unsigned char* p2 = p + 2 * kStreamBlock;
      for (size_t i = 0; i < kStreamBlock; i += 8) {
        uint64_t a, b, d;
        std::memcpy(&a, p + i, 8);
        std::memcpy(&b, p1 + i, 8);
        std::memcpy(&d, p2 + i, 8);
        c = _mm_crc32_u64(c, a);
        c1 = _mm_crc32_u64(c1, b);
        c2 = _mm_crc32_u64(c2, d);
      }
      uint32_t merged = ShiftBlock(shift, static_cast<uint32_t>(c)) ^ static_cast<uint32_t>(c1);
      merged = ShiftBlock(shift, merged) ^ static_cast<uint32_t>(c2);
      c = merged;
      p += 3 * kStreamBlock;
      n -= 3 * kStreamBlock;
    }
  }
  while (n >= 8) {
    uint64_t a;
    std::memcpy(&a, p, 8);
    c = _mm_crc32_u64(c, a);
    p += 8;
    n -= 8;
  }
  while (n > 0) {
    c = _mm_crc32_u8(static_cast<uint32_t>(c), *p++);
    --n;
  }
  return ~static_cast<uint32_t>(c);
}
#endif

using ExtendFn = uint32_t (*)(uint32_t, const void*, size_t);

ExtendFn ChooseExtend() {
#if defined(__x86_64__)
  if (__builtin_cpu_supports("sse4.2")) return &ExtendHardware;
#endif
  return &Crc32cExtendPortable;
}

}  // namespace

uint32_t Crc32cExtendPortable(uint32_t crc, const void* data, size_t n) {
  const unsigned char* p = static_cast<const unsigned char*>(data);
  const auto& t = kTables.t;
  uint32_t c = ~crc;
  while (n >= 8) {
    const uint32_t lo = Load32(p) ^ c;
    const uint32_t hi = Load32(p + 4);
    c = t[7][lo & 0xff] ^ t[6][(lo >> 8) & 0xff] ^ t[5][(lo >> 16) & 0xff] ^ t[4][lo >> 24] ^
        t[3][hi & 0xff] ^ t[2][(hi >> 8) & 0xff] ^ t[1][(hi >> 16) & 0xff] ^ t[0][hi >> 24];
    p += 8;
    n -= 8;
  }
  while (n > 0) {
    c = (c >> 8) ^ t[0][(c ^ *p++) & 0xff];
    --n;
  }
  return ~c;
}

uint32_t Crc32cExtend(uint32_t crc, const void* data, size_t n) {
  static const ExtendFn extend = ChooseExtend();
  return extend(crc, data, n);
}

}  // namespace distribute
