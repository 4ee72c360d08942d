/** @file
 * distribute — tf.distribute for every runtime that can call C. Umbrella header.
 *
 * Conventions (see docs/strategies.md, "API conventions"):
 * - Errors: every fallible function returns dist_status_t (DIST_OK = 0); on failure its
 *   outputs are NULL / 0, nothing changed, and dist_last_error_message() says why.
 * - Ownership: a handle that comes back through a `T** out` parameter is always the
 *   caller's, released with the type's `dist_<object>_destroy` (which accepts NULL; a joined
 *   replica's context with dist_context_leave). Borrowed results look different: a
 *   borrowed handle is a function's return value (dist_current_replica_context), and a
 *   borrowed string or buffer comes back through an out-parameter named
 *   `out_borrowed_<what>`; the function's comment states how long it stays valid. Static
 *   strings (dist_status_name, dist_dtype_name) are returned directly.
 * - Options: configuration is a `dist_<thing>_options_t` handle with _create, _destroy and
 *   typed setters. Every duration is int64_t milliseconds with `_ms` in its name.
 * - Callbacks: a callback typedef takes `void* user_data` last; a function taking a
 *   callback takes `fn, user_data` side by side, then `free_fn` where the library keeps
 *   user_data beyond the call.
 * - Cleanup: `dist_*_destroy` return void; the other cleanup calls (scope_exit,
 *   colocate_vars_with_exit, dist_context_leave, dist_server_stop) return a status but are
 *   not warn-unused-result, so failure paths may call them unconditionally.
 * - Threading: each function's comment states its thread-safety ("Thread-safety: ..."),
 *   and every blocking call says what bounds its wait. */
#ifndef DISTRIBUTE_DISTRIBUTE_H_
#define DISTRIBUTE_DISTRIBUTE_H_

#include "distribute/export.h"
#include "distribute/status.h"
#include "distribute/version.h"
#include "distribute/types.h"
#include "distribute/device.h"
#include "distribute/value.h"
#include "distribute/tensor.h"
#include "distribute/cross_device_ops.h"
#include "distribute/strategy.h"
#include "distribute/context.h"
#include "distribute/variable.h"
#include "distribute/dataset.h"
#include "distribute/input.h"
#include "distribute/cluster.h"
#include "distribute/server.h"
#include "distribute/parameter_server.h"
#include "distribute/coordinator.h"

#endif /* DISTRIBUTE_DISTRIBUTE_H_ */
