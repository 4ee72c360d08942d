// Zero-copy exchange of tensors with other frameworks through DLPack (0.6 ABI).
#ifndef DISTRIBUTE_CORE_TENSOR_DLPACK_EXCHANGE_H_
#define DISTRIBUTE_CORE_TENSOR_DLPACK_EXCHANGE_H_

#include <dlpack/dlpack.h>

#include "absl/status/statusor.h"
#include "core/tensor/tensor.h"

namespace distribute {

// DLPack >= 0.8 type code for bool; Debian's dlpack.h (0.6) predates it.
inline constexpr uint8_t kDLBoolCode = 6;

// A new DLManagedTensor sharing the tensor's buffer; its deleter drops that share.
DLManagedTensor* ExportDlpack(const Tensor& tensor);

// A tensor over `managed`'s memory. On success the tensor owns `managed` and calls its
// deleter once; on error nothing is taken.
absl::StatusOr<Tensor> ImportDlpack(DLManagedTensor* managed);

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_TENSOR_DLPACK_EXCHANGE_H_
