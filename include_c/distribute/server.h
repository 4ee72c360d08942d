/** @file
 * distribute — the in-process server of one task of a cluster (tf.distribute.Server),
 * and the cluster's coordination service.
 *
 * Every task of a multi-worker job runs one server, created from the cluster (see
 * cluster.h) with the task's own entry as the current task. It listens on the address
 * the cluster gives the task ("localhost" means 127.0.0.1) and accepts only typed requests
 * of bounded size (values up to about 4 MiB).
 *
 * The chief's server (the "chief" task, or worker 0 when there is none) hosts the
 * coordination service; every other server connects to it at creation, waiting up to the
 * startup timeout for the chief to come up. Through any task's server a program can use
 * the service:
 * - a key-value store: set a value under a key; get it, waiting until some task sets it;
 * - barriers: wait until every worker (the chief and the worker tasks) arrives at the
 *   barrier of the same name; on timeout the message names the tasks that did not arrive;
 * - peer health: whether every task is still alive. A task whose process dies is noticed
 *   within a fraction of a second (its connection closes); a task that stops answering
 *   (stopped, hung, its host gone) after the heartbeat timeout. A task that stops its
 *   server cleanly is not a failure.
 *
 * Connections between servers are plaintext unless TLS is set up
 * (dist_server_options_set_tls_files, or the DIST_TLS_* environment variables).
 *
 * Errors: DIST_INVALID_ARGUMENT for NULL arguments and values out of range, naming the
 * function and argument; DIST_DEADLINE_EXCEEDED when a wait runs out;
 * DIST_UNAVAILABLE when a peer or the coordination service is gone (the message names the
 * task, as "worker:1"), and after the server was stopped.
 *
 * Thread-safety of a server: every function may be called concurrently on one server,
 * except dist_server_destroy, which needs every other call on it to have returned. */
#ifndef DISTRIBUTE_SERVER_H_
#define DISTRIBUTE_SERVER_H_

#include <stddef.h>
#include <stdint.h>

#include "distribute/export.h"
#include "distribute/status.h"
#include "distribute/types.h"

DIST_EXTERN_C_BEGIN

/** Creates server options with the defaults: startup timeout 60000 ms, heartbeat interval
 * 500 ms, heartbeat timeout 10000 ms. On success *out is owned by the caller.
 * Thread-safety: safe. */
DIST_API DIST_NODISCARD dist_status_t dist_server_options_create(dist_server_options_t** out);

/** Releases options (servers created with them keep their own copy). Accepts NULL.
 * Thread-safety: owner thread only. */
DIST_API void dist_server_options_destroy(dist_server_options_t* options);

/** How long a task's server waits for the chief's coordination service when it is
 * created. Errors: DIST_INVALID_ARGUMENT unless 1 <= timeout_ms <= 86400000 (a day).
 * Thread-safety: one thread at a time per options. */
DIST_API DIST_NODISCARD dist_status_t dist_server_options_set_startup_timeout_ms(
    dist_server_options_t* options, int64_t timeout_ms);

/** How often a task tells the chief it is alive. Must stay below the heartbeat timeout
 * (checked by dist_server_create). Errors: DIST_INVALID_ARGUMENT unless
 * 1 <= interval_ms <= 86400000.
 * Thread-safety: one thread at a time per options. */
DIST_API DIST_NODISCARD dist_status_t dist_server_options_set_heartbeat_interval_ms(
    dist_server_options_t* options, int64_t interval_ms);

/** How long a task (or the chief) may stay silent before the others consider it lost.
 * Errors: DIST_INVALID_ARGUMENT unless 1 <= timeout_ms <= 86400000.
 * Thread-safety: one thread at a time per options. */
DIST_API DIST_NODISCARD dist_status_t dist_server_options_set_heartbeat_timeout_ms(
    dist_server_options_t* options, int64_t timeout_ms);

/** The job token: the secret every request between this job's servers carries, checked in
 * constant time; a request without it is refused with DIST_UNAUTHENTICATED and changes
 * nothing (docs/security.md). `token` (copied) is 16 to 1024 printable ASCII characters
 * without spaces, the same in every process of the job; NULL or "": the DIST_JOB_TOKEN
 * environment variable, read by dist_server_create (distrun sets a fresh one per job), or
 * none. Errors: DIST_INVALID_ARGUMENT for a malformed token (nothing changes).
 * Thread-safety: one thread at a time per options. */
DIST_API DIST_NODISCARD dist_status_t dist_server_options_set_job_token(dist_server_options_t* options,
                                                                        const char* token);

/** A job without a token runs only when every task of its cluster is on a loopback
 * address; allow = 1 lets it run on any address (as DIST_ALLOW_UNAUTHENTICATED=1 does),
 * trusting everyone who can reach its ports. Errors: DIST_INVALID_ARGUMENT unless allow
 * is 0 or 1. Thread-safety: one thread at a time per options. */
DIST_API DIST_NODISCARD dist_status_t dist_server_options_set_allow_unauthenticated(
    dist_server_options_t* options, int32_t allow);

/** TLS for this task's server and for its connection to the chief, through gRPC's own SSL
 * credentials (docs/security.md). `cert_path` names this task's certificate chain (PEM,
 * leaf first), which its server serves and its client presents; `key_path` the
 * certificate's private key (PEM, unencrypted); `ca_path` (NULL or "": none) the CAs to
 * trust. With a CA, TLS is mutual: a server accepts only clients that present a
 * certificate one of those CAs signed, and a client accepts only a server whose
 * certificate they signed. Without one, a server asks clients for no certificate and a
 * client checks the server's against gRPC's default roots. A client also checks that the
 * server's certificate names the host it dials: the host of the task's address in the
 * cluster ("localhost" is dialled as 127.0.0.1, so give the certificate an IP SAN). Every
 * task of a job uses TLS, or none; the job token still applies on top.
 * All three NULL or "": TLS as the environment says (DIST_TLS_CERT, DIST_TLS_KEY,
 * DIST_TLS_CA, the same three files, read by dist_server_create), else none.
 * The paths are copied; the files are read (at most 1 MiB each) and checked when a server
 * is created, which then fails, naming the file, with DIST_NOT_FOUND when it is missing
 * and DIST_INVALID_ARGUMENT when it is not a regular file, cannot be read, is larger, or
 * does not hold what is expected (PEM certificates; an unencrypted PEM private key that
 * belongs to the certificate).
 * Errors: DIST_INVALID_ARGUMENT for a certificate without a key or a key without a
 * certificate, a CA without both, or a path longer than 4096 bytes (nothing changes).
 * Thread-safety: one thread at a time per options. */
DIST_API DIST_NODISCARD dist_status_t dist_server_options_set_tls_files(dist_server_options_t* options,
                                                                        const char* cert_path,
                                                                        const char* key_path,
                                                                        const char* ca_path);

/** The bounds a task's server keeps, so that neither a stranger who can reach its port nor
 * a buggy process of the job can exhaust it: a request past one is refused (most with
 * DIST_RESOURCE_EXHAUSTED naming the bound), a connection past one is closed. Values are
 * the DIST_SERVER_LIMIT_* constants; docs/security.md lists each with its default. */
typedef int32_t dist_server_limit_t;

/** @name Connection caps */ /** @{ */
/** Connections (every task): accepted connections in total, and from one IP address (0:
 * the default, 1024 in total, at least 4 per task, and 256 per address, both at most a
 * quarter of the process's file limit). Past a cap the connections that never carried a
 * call with the job's token go first, then the newest. 0 to 1048576. */
#define DIST_SERVER_LIMIT_MAX_CONNECTIONS 1
#define DIST_SERVER_LIMIT_MAX_CONNECTIONS_PER_PEER 2
/** @} */
/** Calls at once on one connection (further calls of a client wait): 1 to 2^31-1, 128. */
#define DIST_SERVER_LIMIT_MAX_STREAMS_PER_CONNECTION 3
/** A connection without a call for this long is closed (a client of the job reconnects
 * when it next calls): 1 to 86400000 ms, 120000. */
#define DIST_SERVER_LIMIT_CONNECTION_IDLE_TIMEOUT_MS 4
/** A connection whose TLS and HTTP/2 handshake takes longer is closed: 1 to 86400000
 * ms, 10000. */
#define DIST_SERVER_LIMIT_HANDSHAKE_TIMEOUT_MS 5
/** A request that streams a tensor and sends nothing for this long is cancelled: 1 to
 * 86400000 ms, 10000. */
#define DIST_SERVER_LIMIT_STREAM_IDLE_TIMEOUT_MS 6
/** The largest message either way: 10240 to 2^31-1 bytes, 4 MiB; a coordination value may
 * take up to this less about 5 KiB. */
#define DIST_SERVER_LIMIT_MAX_MESSAGE_BYTES 7
/** @name Coordination service caps */ /** @{ */
/** The chief's coordination service: the key-value store's bytes (64 MiB) and keys
 * (65536), barriers (16384), and other tasks' waits pending at once (0: the default for
 * the cluster's size; at most 65536). At least 1, but the pending waits. */
#define DIST_SERVER_LIMIT_MAX_STORE_BYTES 8
#define DIST_SERVER_LIMIT_MAX_STORE_KEYS 9
#define DIST_SERVER_LIMIT_MAX_BARRIERS 10
#define DIST_SERVER_LIMIT_MAX_PENDING_WAITS 11
/** @} */
/** @name ps task caps */ /** @{ */
/** A ps task: the bytes of its variables and slots (half the machine's memory, at most
 * 16 GiB) and their count (1 to 4194304; 1048576); the tensor bytes of one request (1 GiB)
 * and of all requests in flight together (an eighth of the memory within 1 to 4 GiB; not
 * below one request's, checked by dist_server_create). At least 1. */
#define DIST_SERVER_LIMIT_MAX_VARIABLE_BYTES 12
#define DIST_SERVER_LIMIT_MAX_VARIABLES 13
#define DIST_SERVER_LIMIT_MAX_VARIABLE_REQUEST_BYTES 14
#define DIST_SERVER_LIMIT_MAX_VARIABLE_INFLIGHT_BYTES 15
/** @} */

/** Sets one bound (the ranges are above). Bounds that depend on each other (the heartbeat
 * interval and timeout, a ps task's request and in-flight bytes) are checked together by
 * dist_server_create.
 * Errors: DIST_INVALID_ARGUMENT for an unknown limit or a value out of its range, naming
 * both (nothing changes).
 * Thread-safety: one thread at a time per options. */
DIST_API DIST_NODISCARD dist_status_t dist_server_options_set_limit(dist_server_options_t* options,
                                                                    dist_server_limit_t limit, int64_t value);

/** The bound `limit` has in `options`: what was set, else its default (0 for the
 * connection caps and pending waits, whose defaults follow the cluster).
 * Errors: DIST_INVALID_ARGUMENT for an unknown limit or a NULL argument.
 * Thread-safety: safe while no thread changes the options. */
DIST_API DIST_NODISCARD dist_status_t dist_server_options_get_limit(const dist_server_options_t* options,
                                                                    dist_server_limit_t limit,
                                                                    int64_t* out_value);

/** Starts the server of the cluster's current task and, on any task but the chief,
 * connects it to the chief's coordination service. `cluster` and `options` (NULL: the
 * defaults) are copied. On success *out is a running server owned by the caller.
 * Blocks at most the startup timeout (plus about a second).
 * Errors: DIST_FAILED_PRECONDITION when the cluster has no current task, or the job has no
 * token and a task is not on a loopback address; DIST_UNAUTHENTICATED when the chief
 * refuses this task's token; DIST_ALREADY_EXISTS when the chief's service has this task
 * registered already by a live server (a second one never replaces it: docs/security.md);
 * DIST_INVALID_ARGUMENT for a cluster without a chief or a heartbeat interval not below
 * the heartbeat timeout; DIST_NOT_FOUND or DIST_INVALID_ARGUMENT for a TLS file (see
 * dist_server_options_set_tls_files); DIST_UNAVAILABLE when the task's address cannot be
 * listened on (the message says why, e.g. "Address already in use") or the chief's service
 * cannot be reached within the startup timeout (the message names the chief task and its
 * address; a TLS handshake that fails, as with a chief whose certificate this task does not
 * trust, or a chief without TLS, looks the same, and the message then says so).
 * Thread-safety: safe. */
DIST_API DIST_NODISCARD dist_status_t dist_server_create(const dist_cluster_t* cluster,
                                                         const dist_server_options_t* options,
                                                         dist_server_t** out);

/** The port the server listens on.
 * Thread-safety: safe. */
DIST_API DIST_NODISCARD dist_status_t dist_server_port(const dist_server_t* server, int32_t* out_port);

/** Stops the server: disconnects from the coordination service cleanly (the chief shuts
 * the service down, releasing every task's waiting calls with DIST_UNAVAILABLE) and stops
 * listening. Idempotent. Blocks about a second at most.
 * Thread-safety: safe. */
DIST_API dist_status_t dist_server_stop(dist_server_t* server);

/** Blocks until the server has been stopped by dist_server_stop (from another thread) and
 * its shutdown has completed; returns at once when it already was. This is the one call
 * of the library that waits without a deadline, like TensorFlow's Server.join().
 * Thread-safety: safe. */
DIST_API DIST_NODISCARD dist_status_t dist_server_join(dist_server_t* server);

/** Stops the server (as dist_server_stop) and releases it. Accepts NULL.
 * Thread-safety: owner thread only, with no other call on this server in flight. */
DIST_API void dist_server_destroy(dist_server_t* server);

/** Stores `size` bytes from `value` (copied; NULL only with size 0) under `key` (a
 * non-empty string of at most 4096 bytes), replacing any earlier value, and wakes every
 * task waiting for the key.
 * Errors: DIST_INVALID_ARGUMENT for a bad key or a value larger than a message holds;
 * DIST_RESOURCE_EXHAUSTED, storing nothing, when the store would pass its caps for the job
 * (64 MiB of keys and values, 65536 keys; the message names the cap).
 * Thread-safety: safe. */
DIST_API DIST_NODISCARD dist_status_t dist_server_key_value_set(dist_server_t* server, const char* key,
                                                                const void* value, size_t size);

/** The value under `key`, waiting up to `timeout_ms` (0: only look; at most 86400000) for
 * some task to set it. On success *out_value is a new 1-D DIST_UINT8 host tensor holding
 * the value's bytes, owned by the caller (release it with dist_value_destroy).
 * Errors: DIST_DEADLINE_EXCEEDED naming the key when it was not set in time;
 * DIST_RESOURCE_EXHAUSTED when this task would wait while the chief's service already has
 * its cap of other tasks' waits pending (16 per task of the cluster, at least 64).
 * Thread-safety: safe. */
DIST_API DIST_NODISCARD dist_status_t dist_server_key_value_get(dist_server_t* server, const char* key,
                                                                int64_t timeout_ms,
                                                                dist_value_t** out_value);

/** Waits until every worker task (the chief and the worker tasks) has arrived at the
 * barrier called `name`, up to `timeout_ms` (0 to 86400000). A barrier that passed may be
 * used again; one that failed stays failed: later calls with its name fail at once.
 * Errors: DIST_DEADLINE_EXCEEDED naming the tasks that did not arrive ("barrier 'x' timed
 * out after 5000 ms: tasks worker:1, worker:2 did not arrive"); DIST_UNAVAILABLE naming a
 * task that was lost; DIST_INVALID_ARGUMENT on a task that is not a worker (ps,
 * evaluator); DIST_RESOURCE_EXHAUSTED, without arriving, past the chief's cap on pending
 * waits (as dist_server_key_value_get) or on barriers (16384 names).
 * Thread-safety: safe. */
DIST_API DIST_NODISCARD dist_status_t dist_server_barrier(dist_server_t* server, const char* name,
                                                          int64_t timeout_ms);

/** DIST_OK while every task is known to be alive; else DIST_UNAVAILABLE naming the first
 * task lost and how it was noticed ("task worker:1 is unavailable: its connection to the
 * coordination service closed"). Never blocks.
 * Thread-safety: safe. */
DIST_API DIST_NODISCARD dist_status_t dist_server_peer_health(dist_server_t* server);

DIST_EXTERN_C_END

#endif /* DISTRIBUTE_SERVER_H_ */
