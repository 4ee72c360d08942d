// Which dist_context_t handle stands for this thread's current replica context, so that
// dist_current_replica_context hands out the very handle the replica function received
// (or the joined replica's own), and a tagged handle in every other case.
#ifndef DISTRIBUTE_CORE_C_API_CURRENT_CONTEXT_HANDLE_H_
#define DISTRIBUTE_CORE_C_API_CURRENT_CONTEXT_HANDLE_H_

#include "core/c_api/handles.h"
#include "core/strategy/replica_context.h"

namespace distribute::c_api {

// Makes `handle` this thread's current context handle for the scope's lifetime (a
// replica function's call), restoring the previous one after.
class ScopedCurrentContextHandle {
 public:
  explicit ScopedCurrentContextHandle(dist_context* handle);
  ~ScopedCurrentContextHandle();
  ScopedCurrentContextHandle(const ScopedCurrentContextHandle&) = delete;
  ScopedCurrentContextHandle& operator=(const ScopedCurrentContextHandle&) = delete;

 private:
  dist_context* previous_;
};

// A joined replica's handle is current on its thread from join until leave.
void SetJoinedContextHandle(dist_context* handle);
void ClearJoinedContextHandle(const dist_context* handle);

// The handle for `current` (this thread's replica context, or null): the registered one
// when it wraps `current`, else a borrowed handle that lives as long as this thread (the
// process for the default context).
dist_context_t* CurrentContextHandle(ReplicaContext* current);

}  // namespace distribute::c_api

#endif  // DISTRIBUTE_CORE_C_API_CURRENT_CONTEXT_HANDLE_H_
