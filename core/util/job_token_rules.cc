#include "core/util/job_token_rules.h"

#include <algorithm>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace distribute {

absl::Status ValidateJobToken(absl::string_view source, absl::string_view token) {
  if (token.empty()) return absl::OkStatus();
  if (token.size() < kMinJobTokenBytes || token.size() > kMaxJobTokenBytes) {
    return absl::InvalidArgumentError(absl::StrCat(source, " has ", token.size(), " characters: a job token has ",
                                                   kMinJobTokenBytes, " to ", kMaxJobTokenBytes));
  }
  for (char c : token) {
    if (c <= ' ' || c > '~') {
      return absl::InvalidArgumentError(absl::StrCat(
          source, " holds a character other than printable ASCII without spaces (byte 0x",
          absl::BytesToHexString(absl::string_view(&c, 1)), ")"));
    }
  }
  return absl::OkStatus();
}

bool JobTokenMatches(absl::string_view expected, absl::string_view given) {
  // Every byte of the longer string is looked at, whatever differs first.
  const size_t n = std::max(expected.size(), given.size());
  unsigned char difference = expected.size() == given.size() ? 0 : 1;
  for (size_t i = 0; i < n; ++i) {
    const unsigned char a = i < expected.size() ? static_cast<unsigned char>(expected[i]) : 0;
    const unsigned char b = i < given.size() ? static_cast<unsigned char>(given[i]) : 0;
    difference |= static_cast<unsigned char>(a ^ b);
  }
  return difference == 0;
}

}  // namespace distribute
