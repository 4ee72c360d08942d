#include "core/c_api/current_context_handle.h"

namespace distribute::c_api {
namespace {

dist_context*& Registered() {
  thread_local dist_context* handle = nullptr;
  return handle;
}

dist_context* BorrowedHandle(ReplicaContext* context) {
  auto* handle = new dist_context(context);
  handle->MarkBorrowed();
  return handle;
}

}  // namespace

ScopedCurrentContextHandle::ScopedCurrentContextHandle(dist_context* handle)
    : previous_(Registered()) {
  Registered() = handle;
}

ScopedCurrentContextHandle::~ScopedCurrentContextHandle() { Registered() = previous_; }

void SetJoinedContextHandle(dist_context* handle) { Registered() = handle; }

void ClearJoinedContextHandle(const dist_context* handle) {
  if (Registered() == handle) Registered() = nullptr;
}

dist_context_t* CurrentContextHandle(ReplicaContext* current) {
  if (current == nullptr) return nullptr;
  if (Registered() != nullptr && Registered()->context == current) return Registered();
  // The default context lives as long as the process, and so does its one handle.
  static dist_context* const default_handle = BorrowedHandle(&ReplicaContext::DefaultContext());
  if (current == default_handle->context) return default_handle;
  thread_local dist_context fallback(nullptr);
  fallback.MarkBorrowed();
  fallback.context = current;
  return &fallback;
}

}  // namespace distribute::c_api
