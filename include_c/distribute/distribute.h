/* distribute — tf.distribute for every runtime that can call C. Umbrella header.
 *
 * Conventions (see README.md, "API conventions"):
 * - Errors: every fallible function returns dist_status_t (DIST_OK = 0); on failure its
 *   outputs are NULL / 0, nothing changed, and dist_last_error_message() says why.
 * - Ownership: what comes back through `**out` is the caller's and is released with the
 *   type's dist_<object>_destroy (which accepts NULL); what is returned through
 *   `const char**` or as a return value is borrowed, with its lifetime documented.
 * - Threading: each function's comment ends with its thread-safety. */
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

#endif /* DISTRIBUTE_DISTRIBUTE_H_ */
