// The machine's physical memory, which several defaults are sized from (the shared host
// arena, a ps task's store and in-flight bytes).
#ifndef DISTRIBUTE_CORE_UTIL_PHYSICAL_MEMORY_H_
#define DISTRIBUTE_CORE_UTIL_PHYSICAL_MEMORY_H_

#include <unistd.h>

#include <cstdint>
#include <optional>

namespace distribute {

// sysconf's pages times the page size; nullopt when the system does not say.
inline std::optional<uint64_t> PhysicalMemoryBytes() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page_size = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page_size <= 0) return std::nullopt;
  return static_cast<uint64_t>(pages) * static_cast<uint64_t>(page_size);
}

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_UTIL_PHYSICAL_MEMORY_H_
