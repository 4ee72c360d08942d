/* The independent model (model.h): TF's documented semantics in double precision. */
#include "model.h"

#include <math.h>
#include <string.h>

int ModelIsInteger(dist_dtype_t dtype) {
  return dtype == DIST_INT32 || dtype == DIST_INT64 || dtype == DIST_INT16 || dtype == DIST_INT8 ||
         dtype == DIST_UINT8;
}

double ModelInput(int32_t replica, int32_t element, dist_reduce_op_t op, dist_dtype_t dtype) {
  if (op == DIST_REDUCE_PRODUCT) return (double)((replica + element) % 2 + 1);
  const int32_t step = (replica * 7 + element * 3) % 11 - 5;  /* -5 ... 5 */
  if (dtype == DIST_UINT8) return (double)(step + 5);
  return ModelIsInteger(dtype) ? (double)step : step / 2.0;
}

/* Rounds to `mantissa_bits` bits after the leading one, ties to even (nearbyint's default
 * mode); values below the smallest normal keep the subnormal quantum. */
static double RoundBinary(double value, int mantissa_bits, int min_exponent) {
  if (value == 0.0 || !isfinite(value)) return value;
  int exponent = 0;
  frexp(value, &exponent);  /* value = f * 2^exponent, 0.5 <= |f| < 1 */
  int e = exponent - 1;
  if (e < min_exponent) e = min_exponent;
  const double quantum = ldexp(1.0, e - mantissa_bits);
  return nearbyint(value / quantum) * quantum;
}

double ModelRound(dist_dtype_t dtype, double value) {
  switch (dtype) {
    case DIST_FLOAT32:
      return (double)(float)value;
    case DIST_FLOAT16:
      return RoundBinary(value, 10, -14);
    case DIST_BFLOAT16:
      return RoundBinary(value, 7, -126);
    case DIST_FLOAT64:
      return value;
    default:
      return trunc(value);
  }
}

static uint16_t HalfBits(double value) {
  const double rounded = RoundBinary(value, 10, -14);
  uint16_t sign = rounded < 0 ? 0x8000u : 0;
  const double magnitude = fabs(rounded);
  if (magnitude == 0.0) return sign;
  int exponent = 0;
  const double fraction = frexp(magnitude, &exponent);  /* magnitude = fraction * 2^exponent */
  const int e = exponent - 1;
  if (e < -14) return (uint16_t)(sign | (uint16_t)(magnitude / ldexp(1.0, -24)));
  const uint16_t mantissa = (uint16_t)((fraction * 2.0 - 1.0) * 1024.0);
  return (uint16_t)(sign | (uint16_t)((e + 15) << 10) | mantissa);
}

static double HalfValue(uint16_t bits) {
  const int exponent = (bits >> 10) & 0x1f;
  const int mantissa = bits & 0x3ff;
  double magnitude = exponent == 0 ? ldexp(mantissa, -24) : ldexp(1024 + mantissa, exponent - 25);
  if (exponent == 31) magnitude = mantissa ? NAN : INFINITY;
  return (bits & 0x8000u) ? -magnitude : magnitude;
}

/* The dtypes that are C types: a conversion and a copy of their bytes. */
#define FOR_EACH_C_DTYPE(X) \
  X(DIST_FLOAT32, float)    \
  X(DIST_FLOAT64, double)   \
  X(DIST_INT32, int32_t)    \
  X(DIST_INT64, int64_t)    \
  X(DIST_INT16, int16_t)    \
  X(DIST_INT8, int8_t)      \
  X(DIST_UINT8, uint8_t)    \
  X(DIST_BOOL, uint8_t)

void ModelEncode(dist_dtype_t dtype, double value, void* element) {
  uint16_t bits = 0;
  switch (dtype) {
#define ENCODE(DTYPE, TYPE)          \
  case DTYPE: {                      \
    const TYPE v = (TYPE)value;      \
    memcpy(element, &v, sizeof v);   \
    return;                          \
  }
    FOR_EACH_C_DTYPE(ENCODE)
#undef ENCODE
    case DIST_FLOAT16:
      bits = HalfBits(value);
      break;
    case DIST_BFLOAT16: {
      /* Exactly representable values only (the model's inputs): the top half of a float. */
      const float v = (float)ModelRound(DIST_BFLOAT16, value);
      uint32_t word = 0;
      memcpy(&word, &v, sizeof word);
      bits = (uint16_t)(word >> 16);
      break;
    }
    default:
      return;
  }
  memcpy(element, &bits, sizeof bits);
}

double ModelDecode(dist_dtype_t dtype, const void* element) {
  uint16_t bits = 0;
  switch (dtype) {
#define DECODE(DTYPE, TYPE)          \
  case DTYPE: {                      \
    TYPE v;                          \
    memcpy(&v, element, sizeof v);   \
    return (double)v;                \
  }
    FOR_EACH_C_DTYPE(DECODE)
#undef DECODE
    case DIST_FLOAT16:
      memcpy(&bits, element, sizeof bits);
      return HalfValue(bits);
    case DIST_BFLOAT16: {
      memcpy(&bits, element, sizeof bits);
      const uint32_t word = (uint32_t)bits << 16;
      float v;
      memcpy(&v, &word, sizeof v);
      return v;
    }
    default:
      return NAN;
  }
}

void ModelAllReduce(dist_reduce_op_t op, dist_dtype_t dtype, int32_t replicas, double* out,
                    dist_dtype_t* out_dtype) {
  *out_dtype = dtype;
  if (op == DIST_REDUCE_MEAN && ModelIsInteger(dtype) && replicas > 1) {
    *out_dtype = (dtype == DIST_INT32 || dtype == DIST_INT64) ? DIST_FLOAT64 : DIST_FLOAT32;
  }
  for (int32_t i = 0; i < kModelElements; ++i) {
    double acc = ModelInput(0, i, op, dtype);
    for (int32_t g = 1; g < replicas; ++g) {
      const double x = ModelInput(g, i, op, dtype);
      switch (op) {
        case DIST_REDUCE_SUM:
        case DIST_REDUCE_MEAN:
          acc += x;
          break;
        case DIST_REDUCE_MIN:
          acc = x < acc ? x : acc;
          break;
        case DIST_REDUCE_MAX:
          acc = x > acc ? x : acc;
          break;
        case DIST_REDUCE_PRODUCT:
          acc *= x;
          break;
        default:
          break;
      }
    }
    if (op == DIST_REDUCE_MEAN) acc /= replicas;
    out[i] = ModelRound(*out_dtype, acc);
  }
}

double ModelInitial(void) { return 10.0; }
double ModelUpdate(int32_t replica) { return (double)(replica + 1); }

static double Apply(int kind, double current, double value) {
  return kind == 0 ? value : kind == 1 ? current + value : current - value;
}

/* The cross-replica value of a SyncOnRead variable's copies. */
static void ReadOnRead(dist_variable_aggregation_t aggregation, dist_dtype_t dtype, int32_t replicas,
                       ModelVariableOutcome* out) {
  double sum = 0;
  for (int32_t g = 0; g < replicas; ++g) sum += out->copy[g];
  out->read_refused = aggregation == DIST_AGGREGATION_NONE;
  out->cross_replica = aggregation == DIST_AGGREGATION_SUM    ? ModelRound(dtype, sum)
                       : aggregation == DIST_AGGREGATION_MEAN ? ModelRound(dtype, sum / replicas)
                                                              : out->copy[0];
}

void ModelVariableInReplicaContext(dist_variable_sync_t sync, dist_variable_aggregation_t aggregation,
                                   int kind, dist_dtype_t dtype, int32_t replicas,
                                   ModelVariableOutcome* out) {
  memset(out, 0, sizeof *out);
  if (sync == DIST_SYNC_ON_READ) {
    /* Each replica writes its own copy; nothing is aggregated until a cross-replica read. */
    for (int32_t g = 0; g < replicas; ++g) out->copy[g] = ModelRound(dtype, Apply(kind, ModelInitial(), ModelUpdate(g)));
    ReadOnRead(aggregation, dtype, replicas, out);
    return;
  }
  if (aggregation == DIST_AGGREGATION_NONE && replicas > 1) {
    /* The reference page: assign in replica context needs an aggregation. */
    out->refused = 1;
    for (int32_t g = 0; g < replicas; ++g) out->copy[g] = ModelInitial();
    out->cross_replica = ModelInitial();
    return;
  }
  double sum = 0;
  for (int32_t g = 0; g < replicas; ++g) sum += ModelUpdate(g);
  const double aggregated = aggregation == DIST_AGGREGATION_SUM    ? sum
                            : aggregation == DIST_AGGREGATION_MEAN ? ModelRound(dtype, sum / replicas)
                                                                   : ModelUpdate(0);
  const double updated = ModelRound(dtype, Apply(kind, ModelInitial(), aggregated));
  for (int32_t g = 0; g < replicas; ++g) out->copy[g] = updated;
  out->cross_replica = updated;
}

void ModelVariableInCrossReplicaContext(dist_variable_sync_t sync, dist_variable_aggregation_t aggregation,
                                        int kind, dist_dtype_t dtype, int32_t replicas, double value,
                                        ModelVariableOutcome* out) {
  memset(out, 0, sizeof *out);
  if (sync == DIST_SYNC_ON_READ && aggregation == DIST_AGGREGATION_SUM && kind != 0) {
    out->refused = 1;
    for (int32_t g = 0; g < replicas; ++g) out->copy[g] = ModelInitial();
    ReadOnRead(aggregation, dtype, replicas, out);
    return;
  }
  /* A SyncOnRead SUM variable's value is shared out so that its sum is the value. */
  const double written = sync == DIST_SYNC_ON_READ && aggregation == DIST_AGGREGATION_SUM && kind == 0
                             ? ModelRound(dtype, value / replicas)
                             : value;
  for (int32_t g = 0; g < replicas; ++g) out->copy[g] = ModelRound(dtype, Apply(kind, ModelInitial(), written));
  if (sync == DIST_SYNC_ON_READ) {
    ReadOnRead(aggregation, dtype, replicas, out);
  } else {
    out->cross_replica = out->copy[0];
  }
}
