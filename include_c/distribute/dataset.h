/** @file
 * distribute — input pipelines (tf.data) and distributed input (tf.distribute).
 *
 * A dataset is an immutable description of a sequence of elements; each element is a
 * fixed number of tensors (its components). Sources make datasets, transformations make
 * new datasets from old ones (the old one is unchanged and may be used again), and an
 * iterator walks one pass over a dataset. Datasets are reference-counted: destroying a
 * dataset that another dataset or an iterator was built from is safe.
 *
 * Distribution follows tf.distribute (see input.h): dist_strategy_distribute_dataset makes
 * a dist_distributed_dataset_t that splits each global batch of a batched dataset across
 * the replicas in sync (a partial last batch fills the
 * replicas in order with the per-replica batch size; replicas left without data get empty
 * batches), and dist_strategy_distribute_datasets_from_function calls a function once per
 * input pipeline with a dist_input_context_t. Iterators over distributed datasets
 * (dist_distributed_dataset_make_iterator) yield PerReplica values, which
 * dist_strategy_run unwraps per replica; both kinds of iterator are a dist_iterator_t.
 *
 * Element tensors are host tensors on CPU:0 (distributed ones on each replica's device).
 * Text and record sources yield uint8 tensors of rank 1 holding the bytes of a line or
 * record. Thread-safety: datasets are safe to share between threads; an iterator is used
 * by one thread at a time. */
#ifndef DISTRIBUTE_DATASET_H_
#define DISTRIBUTE_DATASET_H_

#include <stddef.h>
#include <stdint.h>

#include "distribute/export.h"
#include "distribute/status.h"
#include "distribute/types.h"

DIST_EXTERN_C_BEGIN

/* ---- Callbacks ---- */

/** Releases user_data when the library no longer needs it; runs exactly once, on any
 * thread, after the last call of the callback it came with. */
typedef void (*dist_free_fn)(void* user_data);

/** A generator source: called repeatedly, from one thread at a time (not necessarily the
 * same one), with index 0, 1, 2, ... It either stores num_components new tensors in
 * components[] (pre-set to NULL; the library takes them) or sets *out_end = 1 to end the
 * sequence. A status other than DIST_OK fails the iterator's get_next with that status. */
typedef dist_status_t (*dist_generator_fn)(int64_t index, dist_value_t** components,
                                           int32_t num_components, int32_t* out_end,
                                           void* user_data);

/** A map function: turns one element (num_inputs borrowed tensors) into num_outputs new
 * tensors stored in outputs[] (pre-set to NULL). With num_parallel_calls > 1 it is called
 * concurrently from library threads; the output order is the input order regardless. */
typedef dist_status_t (*dist_map_fn)(const dist_value_t* const* inputs, int32_t num_inputs,
                                     dist_value_t** outputs, int32_t num_outputs,
                                     void* user_data);

/* ---- Sources ---- */

/** Slices every component along its first axis (tf.data.Dataset.from_tensor_slices): element
 * i is (components[0][i], components[1][i], ...). All components must have rank >= 1 and
 * the same first dimension. The tensors are shared, not copied. Thread-safety: safe. */
DIST_API DIST_NODISCARD dist_status_t dist_dataset_from_tensor_slices(
    const dist_value_t* const* components, int32_t num_components, dist_dataset_t** out);

/** start, start + step, ... up to (excluding) stop, as int64 scalars; step != 0.
 * Thread-safety: safe. */
DIST_API DIST_NODISCARD dist_status_t dist_dataset_range(int64_t start, int64_t stop, int64_t step,
                                                         dist_dataset_t** out);

/** Elements from a generator callback (see dist_generator_fn). Each iterator restarts the
 * generator at index 0. `free_fn` (may be NULL) releases user_data when the dataset and
 * every iterator over it are gone; if this call fails it is not called.
 * Thread-safety: safe. */
DIST_API DIST_NODISCARD dist_status_t dist_dataset_from_generator(dist_generator_fn fn,
                                                                  void* user_data,
                                                                  dist_free_fn free_fn,
                                                                  int32_t num_components,
                                                                  dist_dataset_t** out);

/** The lines of text files, in file order, without their line terminators ("\n" or "\r\n"),
 * each as a uint8 [length] tensor (tf.data.TextLineDataset). Thread-safety: safe. */
DIST_API DIST_NODISCARD dist_status_t dist_dataset_from_text_files(const char* const* paths,
                                                                   int32_t num_paths,
                                                                   dist_dataset_t** out);

/** Fixed-length records (tf.data.FixedLengthRecordDataset): each file is header_bytes, then
 * records of record_bytes (> 0), then footer_bytes; a file whose body is not a whole
 * number of records is an error naming the file. Thread-safety: safe. */
DIST_API DIST_NODISCARD dist_status_t dist_dataset_from_fixed_length_records(
    const char* const* paths, int32_t num_paths, int64_t record_bytes, int64_t header_bytes,
    int64_t footer_bytes, dist_dataset_t** out);

/** TFRecord files (tf.data.TFRecordDataset, uncompressed): each record is a uint64 length,
 * the masked CRC32C of the length, the data, and the masked CRC32C of the data. A corrupt
 * or truncated record fails get_next with DIST_DATA_LOSS naming the file and offset.
 * Thread-safety: safe. */
DIST_API DIST_NODISCARD dist_status_t dist_dataset_from_tfrecord_files(const char* const* paths,
                                                                       int32_t num_paths,
                                                                       dist_dataset_t** out);

/** @name Compression */ /** @{ */
/** How TFRecord files are compressed (tf.io.TFRecordOptions.compression_type). Values are
 * the DIST_COMPRESSION_* constants. */
typedef int32_t dist_compression_t;

#define DIST_COMPRESSION_NONE 0 /**< compression_type "" (or None) */
#define DIST_COMPRESSION_ZLIB 1 /**< "ZLIB": a zlib stream (RFC 1950) */
#define DIST_COMPRESSION_GZIP 2 /**< "GZIP": a gzip file (RFC 1952; members may be concatenated) */
/** @} */

/** TFRecord files written compressed: tf.data.TFRecordDataset(paths,
 * compression_type="ZLIB" or "GZIP") of the files a tf.io.TFRecordWriter with
 * TFRecordOptions(compression_type=...) writes. The records are what
 * dist_dataset_from_tfrecord_files reads from the decompressed bytes; NONE reads plain
 * files as that function does. An uncompressed reader given a compressed file fails with
 * a message saying the file looks ZLIB- or GZIP-compressed. A corrupt or truncated file
 * fails get_next with DIST_DATA_LOSS naming the file and offset.
 * Errors: DIST_INVALID_ARGUMENT for a negative num_paths, NULL `paths` with num_paths > 0,
 * a NULL path, NULL `out` or an unknown `compression` (nothing is created).
 * Thread-safety: safe. */
DIST_API DIST_NODISCARD dist_status_t dist_dataset_from_compressed_tfrecord_files(
    const char* const* paths, int32_t num_paths, dist_compression_t compression,
    dist_dataset_t** out);

/* ---- Transformations (each returns a new dataset) ---- */

/** Stacks batch_size (> 0) consecutive elements along a new first axis; the last batch may
 * be smaller unless drop_remainder != 0. Components must keep their shapes across elements.
 * Thread-safety: safe. */
DIST_API DIST_NODISCARD dist_status_t dist_dataset_batch(const dist_dataset_t* dataset,
                                                         int64_t batch_size, int32_t drop_remainder,
                                                         dist_dataset_t** out);

/** Every num_shards-th element, starting at element `index` (0 <= index < num_shards).
 * Thread-safety: safe. */
DIST_API DIST_NODISCARD dist_status_t dist_dataset_shard(const dist_dataset_t* dataset,
                                                         int64_t num_shards, int64_t index,
                                                         dist_dataset_t** out);

/** The dataset `count` times (count >= 0), or forever when count is -1.
 * Thread-safety: safe. */
DIST_API DIST_NODISCARD dist_status_t dist_dataset_repeat(const dist_dataset_t* dataset,
                                                          int64_t count, dist_dataset_t** out);

/** Shuffles with a buffer of buffer_size (> 0) elements. The order is reproducible: pass k
 * over the shuffled dataset (k counts the repetitions of a repeat that follows it) draws
 * from a generator seeded with (seed, k), so two iterators give the same sequence and
 * every epoch of a repeat gets a different order, as TF's reshuffle_each_iteration.
 * Thread-safety: safe. */
DIST_API DIST_NODISCARD dist_status_t dist_dataset_shuffle(const dist_dataset_t* dataset,
                                                           int64_t buffer_size, uint64_t seed,
                                                           dist_dataset_t** out);

/** tf.data.AUTOTUNE: let the library choose. As num_parallel_calls of dist_dataset_map,
 * as many calls at a time as the machine has hardware threads; as buffer_size of
 * dist_dataset_prefetch, 2 elements ahead. */
#define DIST_AUTOTUNE (-1)

/** Applies `fn` to every element (see dist_map_fn), num_parallel_calls (>= 1, or
 * DIST_AUTOTUNE) at a time. The calls run on library threads, started one by one as the
 * elements in flight need them (so at most one more than the elements there are), and
 * at most 4 per hardware thread of the machine: a larger num_parallel_calls is accepted
 * and runs at that bound. The same bound caps the results computed ahead of
 * get_next. `free_fn` (may be NULL) releases user_data when the dataset and its
 * iterators are gone; if this call fails it is not called.
 * Errors: DIST_INVALID_ARGUMENT for num_parallel_calls 0 or negative other than
 * DIST_AUTOTUNE, num_outputs < 1, a NULL dataset, fn or out (nothing is created).
 * Thread-safety: safe. */
DIST_API DIST_NODISCARD dist_status_t dist_dataset_map(const dist_dataset_t* dataset,
                                                       dist_map_fn fn, void* user_data,
                                                       dist_free_fn free_fn, int32_t num_outputs,
                                                       int32_t num_parallel_calls,
                                                       dist_dataset_t** out);

/** Produces up to buffer_size (>= 0; 0 means no prefetching) elements ahead on a library
 * thread. DIST_AUTOTUNE lets the library choose: it keeps 2 elements ahead (tf.data tunes
 * the buffer while it runs; a fixed double buffer is what it usually settles on for one
 * consumer). The buffer holds what it is asked to: a large buffer_size costs that many
 * elements of memory.
 * Errors: DIST_INVALID_ARGUMENT for a negative buffer_size other than DIST_AUTOTUNE, a
 * NULL dataset or out (nothing is created). Thread-safety: safe. */
DIST_API DIST_NODISCARD dist_status_t dist_dataset_prefetch(const dist_dataset_t* dataset,
                                                            int64_t buffer_size,
                                                            dist_dataset_t** out);

/** The first `count` elements (count >= 0, or -1 for all). Thread-safety: safe. */
DIST_API DIST_NODISCARD dist_status_t dist_dataset_take(const dist_dataset_t* dataset,
                                                        int64_t count, dist_dataset_t** out);

/** All but the first `count` elements (count >= 0). Thread-safety: safe. */
DIST_API DIST_NODISCARD dist_status_t dist_dataset_skip(const dist_dataset_t* dataset,
                                                        int64_t count, dist_dataset_t** out);

/** The number of components of each element. Thread-safety: safe. */
DIST_API DIST_NODISCARD dist_status_t dist_dataset_num_components(const dist_dataset_t* dataset,
                                                                  int32_t* out_count);

/** Releases a dataset. Accepts NULL. Thread-safety: one thread at a time per handle. */
DIST_API void dist_dataset_destroy(dist_dataset_t* dataset);

/* ---- Iterators ---- */

/** A new iterator at the start of `dataset`, owned by the caller. Every iterator is an
 * independent pass. (A distributed dataset has dist_distributed_dataset_make_iterator.)
 * Thread-safety: safe. */
DIST_API DIST_NODISCARD dist_status_t dist_dataset_make_iterator(const dist_dataset_t* dataset,
                                                                 dist_iterator_t** out);

/** The next element: `count` must equal the number of components; outs[i] receives a new
 * value owned by the caller (a tensor for a plain dataset, a PerReplica value for a
 * distributed one). At the
 * end: DIST_OUT_OF_RANGE, outs all NULL, and every later call returns it again. An error
 * from a source or callback is returned with its message; the iterator stays destroyable.
 * Blocks while the pipeline produces the element: bounded by the sources and callbacks
 * (file reads, generator and map functions), not by a timeout.
 * Thread-safety: one thread at a time per iterator. */
DIST_API DIST_NODISCARD dist_status_t dist_iterator_get_next(dist_iterator_t* iterator,
                                                             dist_value_t** outs, int32_t count);

/** As dist_iterator_get_next, but the end is *out_has_value = 0 and DIST_OK.
 * Thread-safety: one thread at a time per iterator. */
DIST_API DIST_NODISCARD dist_status_t dist_iterator_get_next_as_optional(dist_iterator_t* iterator,
                                                                         dist_value_t** outs,
                                                                         int32_t count,
                                                                         int32_t* out_has_value);

/** Releases an iterator, stopping its background threads (they finish the element they are
 * on; no element is lost or duplicated for other iterators). Accepts NULL.
 * Thread-safety: one thread at a time per handle, with no get_next in flight. */
DIST_API void dist_iterator_destroy(dist_iterator_t* iterator);

DIST_EXTERN_C_END

#endif /* DISTRIBUTE_DATASET_H_ */
