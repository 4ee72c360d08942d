/** @file
 * distribute — status codes and error details.
 *
 * Every fallible function returns a dist_status_t: DIST_OK (0) on success, otherwise one
 * of the codes below, numbered as Abseil's and gRPC's status codes. On failure, outputs
 * are set to NULL / 0 and the call changed nothing; dist_last_error_message() tells what
 * went wrong and what was expected. */
#ifndef DISTRIBUTE_STATUS_H_
#define DISTRIBUTE_STATUS_H_

#include <stdint.h>

#include "distribute/export.h"

DIST_EXTERN_C_BEGIN

/** @name Status codes */ /** @{ */
/** A status code. Values are the DIST_* codes below; a future version may add codes, so
 * treat an unknown value as an error. */
typedef int32_t dist_status_t;

#define DIST_OK 0
#define DIST_CANCELLED 1
#define DIST_UNKNOWN 2
#define DIST_INVALID_ARGUMENT 3
#define DIST_DEADLINE_EXCEEDED 4
#define DIST_NOT_FOUND 5
#define DIST_ALREADY_EXISTS 6
#define DIST_PERMISSION_DENIED 7
#define DIST_RESOURCE_EXHAUSTED 8
#define DIST_FAILED_PRECONDITION 9
#define DIST_ABORTED 10
#define DIST_OUT_OF_RANGE 11
#define DIST_UNIMPLEMENTED 12
#define DIST_INTERNAL 13
#define DIST_UNAVAILABLE 14
#define DIST_DATA_LOSS 15
#define DIST_UNAUTHENTICATED 16
/** @} */

/** The name of a status code ("OK", "INVALID_ARGUMENT", ...), or "UNKNOWN_STATUS_CODE" for
 * a value that is not a code. The string is static: never free it.
 * Thread-safety: safe. */
DIST_API const char* dist_status_name(dist_status_t code);

/** The message of the last dist_ call on this thread that returned a status: the empty
 * string when that call succeeded. Strings the caller passed (names, paths, addresses) are
 * quoted in it escaped, and cut after 256 bytes with their full length:
 * 'xxxx...' (1048576 bytes). The pointer is owned by the library and valid until
 * the next dist_ call on the same thread (dist_status_name and this function excepted).
 * Thread-safety: safe; each thread has its own message. */
DIST_API const char* dist_last_error_message(void);

/** Sets this thread's last error message to a copy of `message` (NULL or "" clears it).
 * For a callback the library calls (a replica, merge, value, update, generator, map or
 * closure function) that is about to return a status other than DIST_OK: the library
 * reports that status with this message, prefixed with where it came from ("replica 1:
 * <message>"), to every caller the failure reaches, as it does with the message of a
 * failed dist_ call. Call it last, just before returning: any other dist_ call on the
 * thread replaces the message. A message longer than DIST_MAX_ERROR_MESSAGE_BYTES is cut
 * there, at a UTF-8 character boundary. Outside a callback it only changes what
 * dist_last_error_message() returns until the next dist_ call.
 * Thread-safety: safe; each thread has its own message. */
DIST_API void dist_set_last_error_message(const char* message);

/** The longest message dist_set_last_error_message keeps, in bytes. */
#define DIST_MAX_ERROR_MESSAGE_BYTES 4096

DIST_EXTERN_C_END

#endif /* DISTRIBUTE_STATUS_H_ */
