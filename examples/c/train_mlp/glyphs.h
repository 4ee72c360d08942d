/* The demo's data set: noisy images of the ten digit glyphs, generated from a seed.
 *
 * Each image is a 5x7 digit drawn at a random place on a GLYPHS_SIDE x GLYPHS_SIDE canvas,
 * slanted, sometimes bold, with faded and missing stroke pixels, stray pixels and
 * background noise. A linear classifier does poorly on it (the digit can be anywhere); a
 * one-hidden-layer MLP learns it well.
 *
 * File format (read back with dist_dataset_from_fixed_length_records): a GLYPHS_HEADER_BYTES
 * header (the magic "GLYPHS1\n", then little-endian uint32 count, uint16 side, uint16
 * classes), then `count` records of GLYPHS_RECORD_BYTES: one label byte (0-9) and
 * side*side pixel bytes (0-255), row-major. */
#ifndef TRAIN_MLP_GLYPHS_H_
#define TRAIN_MLP_GLYPHS_H_

#include <stdint.h>

#define GLYPHS_SIDE 12
#define GLYPHS_PIXELS (GLYPHS_SIDE * GLYPHS_SIDE)
#define GLYPHS_CLASSES 10
#define GLYPHS_HEADER_BYTES 16
#define GLYPHS_RECORD_BYTES (1 + GLYPHS_PIXELS)

/* Writes `count` images drawn with `seed` to `path`. Returns 0, or -1 with errno set. */
int glyphs_write_file(const char* path, int64_t count, uint64_t seed);

/* Checks the header of `path`. Returns the number of records, or -1 with a reason (a
 * static string) in *why. */
int64_t glyphs_check_file(const char* path, const char** why);

/* A small deterministic generator (splitmix64), shared with the weight initialisation. */
typedef struct {
  uint64_t state;
} glyphs_rng_t;

uint64_t glyphs_rng_next(glyphs_rng_t* rng);
/* Uniform in [0, 1). */
double glyphs_rng_uniform(glyphs_rng_t* rng);
/* Standard normal (Box-Muller). */
double glyphs_rng_normal(glyphs_rng_t* rng);

#endif /* TRAIN_MLP_GLYPHS_H_ */
