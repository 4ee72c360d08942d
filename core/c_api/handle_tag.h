// Misuse detection for the opaque handles, after sqlite3SafetyCheckOk: every struct behind
// a public handle starts with a 64-bit tag naming its type and state, and the shim checks
// that tag before it touches anything else, so a handle of another type, a destroyed
// handle (whose memory the quarantine keeps unreused for a while) or a handle a callback
// does not own becomes INVALID_ARGUMENT naming the expected type instead of a crash.
//
// The check is one 8-byte load and a masked compare. It cannot make every wild pointer
// safe: a pointer to unmapped memory still faults, and a destroyed handle whose memory
// was reused reads whatever lives there now (documented in distribute/types.h).
#ifndef DISTRIBUTE_CORE_C_API_HANDLE_TAG_H_
#define DISTRIBUTE_CORE_C_API_HANDLE_TAG_H_

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace distribute::c_api {

// One value per public handle type; the number is part of the tag, never of the ABI.
enum class HandleType : uint8_t {
  kDevice = 1,
  kValue,
  kStrategy,
  kContext,
  kDataset,
  kDistributedDataset,
  kIterator,
  kInputContext,
  kInputOptions,
  kCluster,
  kServer,
  kServerOptions,
  kCrossDeviceOps,
  kCommunicationOptions,
  kParameterServerOptions,
  kCoordinator,
  kRemoteValue,
  kPerWorker,
  kClosureArgs,
};

// What the handle is now. A borrowed handle is one the library owns and lends (the
// arguments of a callback): it may be used but neither destroyed nor handed back as a
// result.
enum class HandleState : uint8_t { kOwned = 0x5a, kBorrowed = 0xb4, kDestroyed = 0xd7 };

// "dist_strategy_t" for HandleType::kStrategy.
absl::string_view HandleTypeName(HandleType type);

// The tag word: a constant marker in the high 48 bits (so that an integer or a pointer
// found where a tag should be is most unlikely to pass), then the state, then the type.
constexpr uint64_t kHandleMarker = 0x4449'5354'4841'0000ULL;  // "DISTHA"
constexpr uint64_t TagWord(HandleType type, HandleState state) {
  return kHandleMarker | (uint64_t{static_cast<uint8_t>(state)} << 8) | static_cast<uint8_t>(type);
}

// The first base of every handle struct, so that its tag sits at offset 0 whatever the
// type; the destructor poisons it, which catches a stale borrowed handle as well.
template <HandleType kType>
class TaggedHandle {
 public:
  static constexpr HandleType kHandleType = kType;

  TaggedHandle() = default;
  TaggedHandle(const TaggedHandle&) : TaggedHandle() {}
  TaggedHandle& operator=(const TaggedHandle&) { return *this; }
  // volatile: a store into an object whose lifetime ends would otherwise be elided.
  ~TaggedHandle() { *const_cast<volatile uint64_t*>(&tag_) = TagWord(kType, HandleState::kDestroyed); }

  // For handles the library lends to a callback and destroys itself afterwards.
  void MarkBorrowed() { tag_ = TagWord(kType, HandleState::kBorrowed); }

 private:
  uint64_t tag_ = TagWord(kType, HandleState::kOwned);
};

// The tag at the start of `handle`, whatever type it really has (memcpy: the memory may
// hold another handle type, so no typed read is allowed).
inline uint64_t ReadTag(const void* handle) {
  uint64_t tag;
  std::memcpy(&tag, handle, sizeof(tag));
  return tag;
}

template <typename T>
concept Handle = std::is_base_of_v<TaggedHandle<T::kHandleType>, T> && !std::is_polymorphic_v<T>;

// The message for a non-NULL handle that failed the check: "argument 'strategy' is not a
// dist_strategy_t (it is a dist_dataset_t)", "... was destroyed", or a borrowed handle where
// an owned one is required.
absl::Status WrongHandle(uint64_t tag, HandleType expected, absl::string_view argument);

// A required handle argument: NULL, another type and a destroyed handle are invalid.
template <Handle T>
absl::Status CheckHandle(const T* handle, absl::string_view argument) {
  if (handle == nullptr) return absl::InvalidArgumentError(absl::StrCat(argument, " is NULL"));
  const uint64_t tag = ReadTag(handle);
  if (tag == TagWord(T::kHandleType, HandleState::kOwned) ||
      tag == TagWord(T::kHandleType, HandleState::kBorrowed)) {
    return absl::OkStatus();
  }
  return WrongHandle(tag, T::kHandleType, argument);
}

// An optional handle argument: NULL is fine, anything else is checked.
template <Handle T>
absl::Status CheckOptionalHandle(const T* handle, absl::string_view argument) {
  if (handle == nullptr) return absl::OkStatus();
  return CheckHandle(handle, argument);
}

// A handle the caller gives up (a callback's result): it must be owned, never borrowed.
template <Handle T>
absl::Status CheckOwnedHandle(const T* handle, absl::string_view argument) {
  if (handle == nullptr) return absl::InvalidArgumentError(absl::StrCat(argument, " is NULL"));
  const uint64_t tag = ReadTag(handle);
  if (tag == TagWord(T::kHandleType, HandleState::kOwned)) return absl::OkStatus();
  return WrongHandle(tag, T::kHandleType, argument);
}

}  // namespace distribute::c_api

#endif  // DISTRIBUTE_CORE_C_API_HANDLE_TAG_H_
