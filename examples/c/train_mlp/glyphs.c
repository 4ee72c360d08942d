#include "glyphs.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#define GLYPHS_JITTER 2

static const char kMagic[8] = {'G', 'L', 'Y', 'P', 'H', 'S', '1', '\n'};

/* A 5x7 font: one string per row, '#' for ink. */
static const char* const kDigits[GLYPHS_CLASSES][7] = {
    {".###.", "#...#", "#..##", "#.#.#", "##..#", "#...#", ".###."},
    {"..#..", ".##..", "..#..", "..#..", "..#..", "..#..", ".###."},
    {".###.", "#...#", "....#", "...#.", "..#..", ".#...", "#####"},
    {"#####", "...#.", "..#..", "...#.", "....#", "#...#", ".###."},
    {"...#.", "..##.", ".#.#.", "#..#.", "#####", "...#.", "...#."},
    {"#####", "#....", "####.", "....#", "....#", "#...#", ".###."},
    {"..##.", ".#...", "#....", "####.", "#...#", "#...#", ".###."},
    {"#####", "....#", "...#.", "..#..", ".#...", ".#...", ".#..."},
    {".###.", "#...#", "#...#", ".###.", "#...#", "#...#", ".###."},
    {".###.", "#...#", "#...#", ".####", "....#", "...#.", ".##.."},
};

uint64_t glyphs_rng_next(glyphs_rng_t* rng) {
  uint64_t z = (rng->state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

double glyphs_rng_uniform(glyphs_rng_t* rng) {
  return (double)(glyphs_rng_next(rng) >> 11) * (1.0 / 9007199254740992.0);
}

double glyphs_rng_normal(glyphs_rng_t* rng) {
  const double u = 1.0 - glyphs_rng_uniform(rng); /* (0, 1] */
  const double v = glyphs_rng_uniform(rng);
  return sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v);
}

static int rng_below(glyphs_rng_t* rng, int n) { return (int)(glyphs_rng_next(rng) % (uint64_t)n); }

static void put(float* image, int row, int col, float value) {
  if (row < 0 || row >= GLYPHS_SIDE || col < 0 || col >= GLYPHS_SIDE) return;
  float* pixel = &image[row * GLYPHS_SIDE + col];
  if (value > *pixel) *pixel = value;
}

/* One image of digit `label` in [0, 1]. */
static void draw(int label, glyphs_rng_t* rng, float* image) {
  memset(image, 0, GLYPHS_PIXELS * sizeof *image);
  const int slant = rng_below(rng, 3) - 1;        /* -1, 0, +1 pixel at the top */
  const int bold = glyphs_rng_uniform(rng) < 0.3; /* strokes two pixels wide */
  /* Centred, then moved by up to GLYPHS_JITTER pixels each way. */
  const int left =
      (GLYPHS_SIDE - 5 - bold) / 2 + rng_below(rng, 2 * GLYPHS_JITTER + 1) - GLYPHS_JITTER;
  const int top = (GLYPHS_SIDE - 7) / 2 + rng_below(rng, 2 * GLYPHS_JITTER + 1) - GLYPHS_JITTER;
  const double ink = 0.6 + 0.4 * glyphs_rng_uniform(rng);
  for (int r = 0; r < 7; ++r) {
    const int shift = (int)lrint(slant * (3 - r) / 3.0); /* +-1 in the top and bottom rows */
    for (int c = 0; c < 5; ++c) {
      if (kDigits[label][r][c] != '#') continue;
      for (int b = 0; b <= bold; ++b) {
        if (glyphs_rng_uniform(rng) < 0.05) continue; /* a missing stroke pixel */
        put(image, top + r, left + c + b + shift,
            (float)(ink * (0.7 + 0.3 * glyphs_rng_uniform(rng))));
      }
    }
  }
  /* A stray scratch: a short horizontal or vertical line. */
  if (glyphs_rng_uniform(rng) < 0.25) {
    const int vertical = rng_below(rng, 2);
    const int length = 3 + rng_below(rng, 4);
    int row = rng_below(rng, GLYPHS_SIDE), col = rng_below(rng, GLYPHS_SIDE);
    for (int i = 0; i < length; ++i) {
      put(image, row, col, (float)(0.4 + 0.3 * glyphs_rng_uniform(rng)));
      if (vertical)
        ++row;
      else
        ++col;
    }
  }
  /* Stray pixels and background noise. */
  const int strays = rng_below(rng, 5);
  for (int i = 0; i < strays; ++i) {
    put(image, rng_below(rng, GLYPHS_SIDE), rng_below(rng, GLYPHS_SIDE),
        (float)(0.4 + 0.6 * glyphs_rng_uniform(rng)));
  }
  for (int i = 0; i < GLYPHS_PIXELS; ++i) {
    const double noisy = image[i] + 0.10 * glyphs_rng_normal(rng);
    image[i] = (float)(noisy < 0 ? 0 : noisy > 1 ? 1 : noisy);
  }
}

static void put_u32(unsigned char* out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out[i] = (unsigned char)(v >> (8 * i));
}

static void put_u16(unsigned char* out, uint16_t v) {
  out[0] = (unsigned char)v;
  out[1] = (unsigned char)(v >> 8);
}

int glyphs_write_file(const char* path, int64_t count, uint64_t seed) {
  if (count < 0 || count > UINT32_MAX) {
    errno = EINVAL;
    return -1;
  }
  FILE* file = fopen(path, "wb");
  if (file == NULL) return -1;
  unsigned char header[GLYPHS_HEADER_BYTES];
  memcpy(header, kMagic, sizeof kMagic);
  put_u32(header + 8, (uint32_t)count);
  put_u16(header + 12, GLYPHS_SIDE);
  put_u16(header + 14, GLYPHS_CLASSES);
  int ok = fwrite(header, sizeof header, 1, file) == 1;
  glyphs_rng_t rng = {seed};
  float image[GLYPHS_PIXELS];
  unsigned char record[GLYPHS_RECORD_BYTES];
  for (int64_t i = 0; ok && i < count; ++i) {
    const int label = rng_below(&rng, GLYPHS_CLASSES);
    draw(label, &rng, image);
    record[0] = (unsigned char)label;
    for (int p = 0; p < GLYPHS_PIXELS; ++p)
      record[1 + p] = (unsigned char)lrintf(image[p] * 255.0f);
    ok = fwrite(record, sizeof record, 1, file) == 1;
  }
  if (fclose(file) != 0) ok = 0;
  return ok ? 0 : -1;
}

int64_t glyphs_check_file(const char* path, const char** why) {
  FILE* file = fopen(path, "rb");
  if (file == NULL) {
    *why = strerror(errno);
    return -1;
  }
  unsigned char header[GLYPHS_HEADER_BYTES];
  const int read_header = fread(header, sizeof header, 1, file) == 1;
  long size = -1;
  if (read_header && fseek(file, 0, SEEK_END) == 0) size = ftell(file);
  fclose(file);
  if (!read_header || memcmp(header, kMagic, sizeof kMagic) != 0) {
    *why = "not a glyphs file (no GLYPHS1 header)";
    return -1;
  }
  const uint32_t count = (uint32_t)header[8] | (uint32_t)header[9] << 8 |
                         (uint32_t)header[10] << 16 | (uint32_t)header[11] << 24;
  const unsigned side = header[12] | header[13] << 8;
  const unsigned classes = header[14] | header[15] << 8;
  if (side != GLYPHS_SIDE || classes != GLYPHS_CLASSES) {
    *why = "the images are not 12x12 with 10 classes";
    return -1;
  }
  if (size != (long)(GLYPHS_HEADER_BYTES + (int64_t)count * GLYPHS_RECORD_BYTES)) {
    *why = "the file size does not match the record count in its header";
    return -1;
  }
  return count;
}
