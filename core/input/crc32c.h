// CRC32C (Castagnoli), as TFRecord files use it, with TensorFlow's mask.
#ifndef DISTRIBUTE_CORE_INPUT_CRC32C_H_
#define DISTRIBUTE_CORE_INPUT_CRC32C_H_

#include <cstddef>
#include <cstdint>

namespace distribute {

// The CRC32C of data[0, n) continuing from `crc` (the CRC of the bytes before them; 0 to
// start).
uint32_t Crc32cExtend(uint32_t crc, const void* data, size_t n);

inline uint32_t Crc32c(const void* data, size_t n) { return Crc32cExtend(0, data, n); }

// TFRecord stores masked CRCs: a CRC of data that itself holds CRCs is then unlikely to
// collide with them.
inline uint32_t MaskCrc32c(uint32_t crc) {
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

inline uint32_t UnmaskCrc32c(uint32_t masked) {
  const uint32_t rot = masked - 0xa282ead8u;
  return (rot >> 17) | (rot << 15);
}

// The portable table-driven version (tests compare it with the hardware one).
uint32_t Crc32cExtendPortable(uint32_t crc, const void* data, size_t n);

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_INPUT_CRC32C_H_
