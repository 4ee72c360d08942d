#include "core/cuda/dtypes.h"

namespace distribute::gpu_plugin {

const char* DTypeName(int32_t dtype) {
  switch (dtype) {
    case kFloat32: return "float32";
    case kFloat64: return "float64";
    case kInt32: return "int32";
    case kUInt8: return "uint8";
    case kInt16: return "int16";
    case kInt8: return "int8";
    case kInt64: return "int64";
    case kBool: return "bool";
    case kBFloat16: return "bfloat16";
    case kFloat16: return "float16";
    default: return nullptr;
  }
}

const char* ReduceOpName(int32_t op) {
  switch (op) {
    case kReduceSum: return "SUM";
    case kReduceMean: return "MEAN";
    case kReduceMin: return "MIN";
    case kReduceMax: return "MAX";
    case kReduceProduct: return "PRODUCT";
    default: return nullptr;
  }
}

}  // namespace distribute::gpu_plugin
