// Fuzz target for the safetensors parser. Any input must give tensors or a DataLoss /
// InvalidArgument error naming the input; parsed tensors must serialize and parse back
// to the same names, dtypes, shapes and bytes. Built with -fsanitize=fuzzer under clang,
// and with tests/core/fuzz_replay_main.cc as a corpus-replay test under any compiler.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/string_view.h"
#include "core/values/safetensors.h"

namespace {

[[noreturn]] void Fail(const char* what, const absl::Status& status) {
  std::fprintf(stderr, "safetensors_fuzz: %s: %s\n", what, status.ToString().c_str());
  std::abort();
}

bool SameBytes(const distribute::Tensor& a, const distribute::Tensor& b) {
  return a.byte_size() == b.byte_size() &&
         (a.byte_size() == 0 || std::memcmp(a.data(), b.data(), a.byte_size()) == 0);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using distribute::NamedTensors;
  const absl::string_view bytes(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<NamedTensors> parsed = distribute::ParseSafetensors(bytes, "fuzz.safetensors");
  if (!parsed.ok()) {
    const absl::StatusCode code = parsed.status().code();
    if (code != absl::StatusCode::kDataLoss && code != absl::StatusCode::kInvalidArgument) {
      Fail("unexpected error code", parsed.status());
    }
    if (!absl::StartsWith(parsed.status().message(), "fuzz.safetensors: ")) {
      Fail("message does not name the input", parsed.status());
    }
    return 0;
  }

  absl::StatusOr<std::string> serialized = distribute::SerializeSafetensors(*parsed);
  if (!serialized.ok()) Fail("parsed tensors do not serialize", serialized.status());
  absl::StatusOr<NamedTensors> reparsed = distribute::ParseSafetensors(*serialized, "again");
  if (!reparsed.ok()) Fail("serialized tensors do not parse", reparsed.status());
  if (reparsed->size() != parsed->size()) Fail("round trip changed the count", absl::OkStatus());
  for (size_t i = 0; i < parsed->size(); ++i) {
    const auto& [name, tensor] = (*parsed)[i];
    const auto& [name2, tensor2] = (*reparsed)[i];
    if (name != name2 || tensor.dtype() != tensor2.dtype() || !(tensor.shape() == tensor2.shape()) ||
        !SameBytes(tensor, tensor2)) {
      Fail("round trip changed a tensor", absl::OkStatus());
    }
  }
  return 0;
}
