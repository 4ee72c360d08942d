/* One worker of the multi-process FILE auto-sharding check (tf.data's AutoShardPolicy.FILE
 * under MultiWorkerMirroredStrategy), or the writer of its input files.
 *
 *   mw_file_shard --write DIR FILES RECORDS   FILES files of RECORDS 8-byte records each
 *                                             (DIR/part-<f>.bin; record i of file f holds
 *                                             the id f * 1000 + i, little-endian)
 *   mw_file_shard --read DIR FILES BATCH POLICY OUT
 *                                             under distrun: the files as fixed-length
 *                                             records, batched by the global BATCH,
 *                                             distributed with POLICY (file, auto, data or
 *                                             off); writes every id this worker's replicas
 *                                             got, one per line, to OUT.<rank>, or the
 *                                             refusal's status and message to OUT.<rank>.error
 *
 * The script (file_shard_test.sh) checks the ids against what TF gives each worker. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "distribute/distribute.h"
#include "mw_check.h"

enum { kMaxFiles = 16, kRecordBytes = 8 };

static void PathOf(char* path, size_t size, const char* dir, int f) {
  snprintf(path, size, "%s/part-%d.bin", dir, f);
}

static int WriteFiles(const char* dir, int files, int records) {
  for (int f = 0; f < files; ++f) {
    char path[512];
    PathOf(path, sizeof path, dir, f);
    FILE* out = fopen(path, "wb");
    if (out == NULL) {
      fprintf(stderr, "cannot write %s\n", path);
      return 1;
    }
    for (int i = 0; i < records; ++i) {
      const uint64_t id = (uint64_t)f * 1000u + (uint64_t)i;
      unsigned char bytes[kRecordBytes];
      for (int k = 0; k < kRecordBytes; ++k) bytes[k] = (unsigned char)(id >> (8 * k));
      fwrite(bytes, 1, sizeof bytes, out);
    }
    fclose(out);
  }
  return 0;
}

/* A record's 8 bytes as its int64 id. */
static dist_status_t ParseId(const dist_value_t* const* inputs, int32_t num_inputs,
                             dist_value_t** outputs, int32_t num_outputs, void* user_data) {
  (void)num_inputs;
  (void)num_outputs;
  (void)user_data;
  void* data = NULL;
  int64_t count = 0;
  if (dist_tensor_num_elements(inputs[0], &count) != DIST_OK || count != kRecordBytes) return DIST_INTERNAL;
  if (dist_tensor_data(inputs[0], &data) != DIST_OK) return DIST_INTERNAL;
  int64_t id = 0;
  for (int k = kRecordBytes - 1; k >= 0; --k) id = (id << 8) | ((const unsigned char*)data)[k];
  return dist_tensor_create(DIST_INT64, NULL, 0, &id, sizeof id, NULL, &outputs[0]);
}

static int Policy(const char* name, dist_auto_shard_policy_t* policy) {
  const char* const names[] = {"off", "auto", "file", "data"};
  const dist_auto_shard_policy_t values[] = {DIST_AUTO_SHARD_OFF, DIST_AUTO_SHARD_AUTO, DIST_AUTO_SHARD_FILE,
                                             DIST_AUTO_SHARD_DATA};
  for (int k = 0; k < 4; ++k) {
    if (strcmp(name, names[k]) == 0) {
      *policy = values[k];
      return 1;
    }
  }
  return 0;
}

static int ReadShard(const char* dir, int files, int64_t batch, dist_auto_shard_policy_t policy,
                     const char* prefix) {
  const char* rank_text = getenv("DIST_RANK");
  const int rank = rank_text ? atoi(rank_text) : 0;
  char paths_storage[kMaxFiles][512];
  const char* paths[kMaxFiles];
  for (int f = 0; f < files; ++f) {
    PathOf(paths_storage[f], sizeof paths_storage[f], dir, f);
    paths[f] = paths_storage[f];
  }
  dist_strategy_t* strategy = NULL;
  dist_communication_options_t* options = NULL;
  CHECK(dist_communication_options_create(&options));
  CHECK(dist_communication_options_set_timeout_ms(options, 30000));
  CHECK(dist_strategy_create_multi_worker_mirrored(NULL, options, &strategy));
  dist_communication_options_destroy(options);

  dist_dataset_t *records = NULL, *ids = NULL, *batched = NULL;
  CHECK(dist_dataset_from_fixed_length_records(paths, files, kRecordBytes, 0, 0, &records));
  CHECK(dist_dataset_map(records, ParseId, NULL, NULL, 1, 1, &ids));
  CHECK(dist_dataset_batch(ids, batch, 0, &batched));
  dist_input_options_t* input = NULL;
  CHECK(dist_input_options_create(&input));
  CHECK(dist_input_options_set_auto_shard_policy(input, policy));

  char path[512];
  dist_distributed_dataset_t* distributed = NULL;
  const dist_status_t made = dist_strategy_distribute_dataset(strategy, batched, input, &distributed);
  if (made != DIST_OK) {
    snprintf(path, sizeof path, "%s.%d.error", prefix, rank);
    FILE* out = fopen(path, "w");
    if (out == NULL) return 1;
    fprintf(out, "%s: %s\n", dist_status_name(made), dist_last_error_message());
    fclose(out);
  } else {
    snprintf(path, sizeof path, "%s.%d", prefix, rank);
    FILE* out = fopen(path, "w");
    if (out == NULL) return 1;
    dist_iterator_t* iterator = NULL;
    CHECK(dist_distributed_dataset_make_iterator(distributed, &iterator));
    for (;;) {
      dist_value_t* element = NULL;
      int32_t has = 0;
      CHECK(dist_iterator_get_next_as_optional(iterator, &element, 1, &has));
      if (!has) break;
      int32_t replicas = 0;
      CHECK(dist_value_num_components(element, &replicas));
      for (int32_t r = 0; r < replicas; ++r) {
        dist_value_t* rows = NULL;
        void* data = NULL;
        int64_t count = 0;
        CHECK(dist_value_component(element, r, &rows));
        CHECK(dist_tensor_num_elements(rows, &count));
        CHECK(dist_tensor_data(rows, &data));
        for (int64_t i = 0; i < count; ++i) fprintf(out, "%lld\n", (long long)((const int64_t*)data)[i]);
        dist_value_destroy(rows);
      }
      dist_value_destroy(element);
    }
    fclose(out);
    dist_iterator_destroy(iterator);
    dist_distributed_dataset_destroy(distributed);
  }
  dist_input_options_destroy(input);
  dist_dataset_destroy(batched);
  dist_dataset_destroy(ids);
  dist_dataset_destroy(records);
  /* Destroying the strategy waits for the other workers (see mw_collectives.c). */
  dist_strategy_destroy(strategy);
  return 0;
}

int main(int argc, char** argv) {
  if (argc == 5 && strcmp(argv[1], "--write") == 0) {
    const int files = atoi(argv[3]), records = atoi(argv[4]);
    if (files < 1 || files > kMaxFiles || records < 0) return 2;
    return WriteFiles(argv[2], files, records);
  }
  dist_auto_shard_policy_t policy = DIST_AUTO_SHARD_AUTO;
  if (argc == 7 && strcmp(argv[1], "--read") == 0 && Policy(argv[5], &policy)) {
    const int files = atoi(argv[3]);
    const int64_t batch = atoll(argv[4]);
    if (files < 1 || files > kMaxFiles || batch < 1) return 2;
    return ReadShard(argv[2], files, batch, policy, argv[6]);
  }
  fprintf(stderr,
          "usage: mw_file_shard --write DIR FILES RECORDS\n"
          "       mw_file_shard --read DIR FILES BATCH off|auto|file|data OUT\n");
  return 2;
}
