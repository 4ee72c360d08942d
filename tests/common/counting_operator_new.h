// Replaces the global operator new of a test program with one that counts its calls, for
// tests that bound how many heap allocations something makes (malloc itself is not
// counted). Include it in exactly one file of the program: the replacements are
// definitions.
#ifndef DISTRIBUTE_TESTS_COMMON_COUNTING_OPERATOR_NEW_H_
#define DISTRIBUTE_TESTS_COMMON_COUNTING_OPERATOR_NEW_H_

#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <new>

namespace counting_operator_new {
inline std::atomic<long> allocations{0};
}  // namespace counting_operator_new

void* operator new(std::size_t size) {
  counting_operator_new::allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t size) { return operator new(size); }
void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
  counting_operator_new::allocations.fetch_add(1, std::memory_order_relaxed);
  return std::malloc(size == 0 ? 1 : size);
}
void* operator new[](std::size_t size, const std::nothrow_t& tag) noexcept { return operator new(size, tag); }
// Every delete that can receive these blocks, the array forms too: under ASan the
// sanitizer's own delete[] would otherwise see a malloc'd block. GCC takes each
// replacement pair for a mismatch of new and free.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
#pragma GCC diagnostic pop

namespace counting_operator_new {

// Allocations through operator new made by `body`.
template <typename Body>
long AllocationsOf(Body&& body) {
  const long before = allocations.load();
  body();
  return allocations.load() - before;
}

}  // namespace counting_operator_new

#endif  // DISTRIBUTE_TESTS_COMMON_COUNTING_OPERATOR_NEW_H_
