// Destroying a handle: only a live handle the caller owns is destroyed; NULL, a handle of
// another type, a destroyed one and one the library lent are left alone (the destroy
// functions return void, so there is nobody to tell). The memory of a destroyed handle is
// kept in a bounded FIFO quarantine of the destroying thread, its tag poisoned, so that a use soon after destroy
// reads "was destroyed" rather than freed (ASan: use-after-free) or reused memory.
#ifndef DISTRIBUTE_CORE_C_API_HANDLE_DESTROY_H_
#define DISTRIBUTE_CORE_C_API_HANDLE_DESTROY_H_

#include <cstddef>
#include <new>

#include "core/c_api/handle_tag.h"

namespace distribute::c_api {

// How many destroyed handles keep their memory, per thread; the oldest is freed past that. Handles
// are small (the payload is released at destroy), so this holds a few tens of KiB per thread.
inline constexpr size_t kHandleQuarantineSize = 256;

// Takes the memory of a handle whose destructor has run (allocated by a plain `new`).
void QuarantineHandleMemory(void* memory);

// True for a live handle of type T that the caller owns.
template <Handle T>
bool IsOwnedHandle(const T* handle) {
  return handle != nullptr && ReadTag(handle) == TagWord(T::kHandleType, HandleState::kOwned);
}

template <Handle T>
void DestroyHandle(T* handle) noexcept {
  static_assert(alignof(T) <= __STDCPP_DEFAULT_NEW_ALIGNMENT__, "freed with plain operator delete");
  if (!IsOwnedHandle(handle)) return;
  handle->~T();  // releases the payload now; the poisoned tag stays in the memory
  QuarantineHandleMemory(handle);
}

}  // namespace distribute::c_api

#endif  // DISTRIBUTE_CORE_C_API_HANDLE_DESTROY_H_
