#include "core/ps/names.h"

#include "absl/strings/str_cat.h"

namespace distribute::ps {

absl::Status CheckPsName(absl::string_view what, absl::string_view name) {
  if (name.empty()) return absl::InvalidArgumentError(absl::StrCat(what, " is empty"));
  if (name.size() > kMaxPsNameBytes) {
    return absl::InvalidArgumentError(absl::StrCat(what, " ", QuotedName(name), " has ",
                                                   name.size(), " bytes; at most ",
                                                   kMaxPsNameBytes, " are allowed"));
  }
  for (size_t i = 0; i < name.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(name[i]);
    if (c < 0x20 || c > 0x7e) {
      return absl::InvalidArgumentError(absl::StrCat(what, " ", QuotedName(name), " has byte ",
                                                     static_cast<int>(c), " at offset ", i,
                                                     ": only printable ASCII is allowed"));
    }
  }
  return absl::OkStatus();
}

std::string QuotedName(absl::string_view name) {
  constexpr size_t kShown = 64;
  std::string out = "'";
  for (size_t i = 0; i < name.size() && i < kShown; ++i) {
    const unsigned char c = static_cast<unsigned char>(name[i]);
    if (c >= 0x20 && c <= 0x7e && c != '\'' && c != '\\') {
      out += static_cast<char>(c);
    } else {
      absl::StrAppend(&out, "\\x", absl::Hex(c, absl::kZeroPad2));
    }
  }
  out += name.size() > kShown ? "'..." : "'";
  return out;
}

std::string ShardName(absl::string_view name, int64_t index) {
  return absl::StrCat(name, "/part_", index);
}

std::string SlotName(absl::string_view variable, absl::string_view slot) {
  return absl::StrCat(variable, "/", slot);
}

}  // namespace distribute::ps
