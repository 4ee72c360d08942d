// C entry points for DLPack exchange.
#include "core/c_api/api_guard.h"
#include "core/c_api/handles.h"
#include "core/tensor/dlpack_exchange.h"
#include "core/util/status_macros.h"
#include "distribute/dlpack_interop.h"

using distribute::c_api::CheckHandle;
using distribute::c_api::ClearOut;
using distribute::c_api::Guard;
using distribute::c_api::NullArgument;

extern "C" {

dist_status_t dist_tensor_to_dlpack(const dist_value_t* tensor, DLManagedTensor** out) {
  ClearOut(out);
  return Guard(__func__, [&]() -> absl::Status {
    RETURN_IF_ERROR(CheckHandle(tensor, "tensor"));
    if (out == nullptr) return NullArgument("out");
    ASSIGN_OR_RETURN(const distribute::Tensor* t, tensor->value.AsTensor());
    *out = distribute::ExportDlpack(*t);
    return absl::OkStatus();
  });
}

dist_status_t dist_tensor_from_dlpack(DLManagedTensor* managed, dist_value_t** out) {
  ClearOut(out);
  return Guard(__func__, [&]() -> absl::Status {
    if (managed == nullptr) return NullArgument("managed");
    if (out == nullptr) return NullArgument("out");
    ASSIGN_OR_RETURN(distribute::Tensor t, distribute::ImportDlpack(managed));
    *out = new dist_value(distribute::Value(std::move(t)));
    return absl::OkStatus();
  });
}

}  // extern "C"
