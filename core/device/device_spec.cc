#include "core/device/device_spec.h"

#include <cctype>
#include <charconv>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "core/util/quote.h"
#include "core/util/status_macros.h"

namespace distribute {
namespace {

absl::Status Malformed(absl::string_view name, absl::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrCat("malformed device name ", Quoted(name), ": ", why,
                   "; expected a name like '/job:worker/replica:0/task:1/device:GPU:0' or "
                   "'CPU:0'"));
}

// A non-negative decimal that fits in int32_t.
absl::StatusOr<int32_t> ParseNumber(absl::string_view name, absl::string_view part,
                                    absl::string_view text) {
  int32_t value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || ptr != end || value < 0 ||
      !std::isdigit(static_cast<unsigned char>(text.front()))) {
    return Malformed(name, absl::StrCat(part, " ", Quoted(text), " is not a number from 0 to 2147483647"));
  }
  return value;
}

absl::StatusOr<DeviceType> ParseType(absl::string_view name, absl::string_view text) {
  const std::string upper = absl::AsciiStrToUpper(text);
  if (upper == "CPU") return DeviceType::kCpu;
  if (upper == "GPU") return DeviceType::kGpu;
  return absl::InvalidArgumentError(absl::StrCat("unknown device type ", Quoted(text), " in device name ",
                                                 Quoted(name), ": expected CPU or GPU"));
}

// "TYPE", "TYPE:INDEX" or "TYPE:*" into spec.
absl::Status ParseTypeAndIndex(absl::string_view name, absl::string_view text, DeviceSpec& spec) {
  const size_t colon = text.find(':');
  const absl::string_view type_text = text.substr(0, colon);
  if (type_text.empty()) return Malformed(name, "the device type is empty");
  ASSIGN_OR_RETURN(spec.type, ParseType(name, type_text));
  if (colon == absl::string_view::npos) return absl::OkStatus();
  const absl::string_view index_text = text.substr(colon + 1);
  if (index_text == "*") return absl::OkStatus();
  ASSIGN_OR_RETURN(spec.index, ParseNumber(name, "device index", index_text));
  return absl::OkStatus();
}

bool IsValidJobName(absl::string_view job) {
  if (job.empty() || !std::isalpha(static_cast<unsigned char>(job.front()))) return false;
  for (char c : job) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  }
  return true;
}

}  // namespace

absl::string_view DeviceTypeName(DeviceType type) {
  switch (type) {
    case DeviceType::kCpu:
      return "CPU";
    case DeviceType::kGpu:
      return "GPU";
    case DeviceType::kUnspecified:
      break;
  }
  return "";
}

absl::StatusOr<DeviceSpec> DeviceSpec::Parse(absl::string_view name) {
  DeviceSpec spec;
  if (name.empty()) return Malformed(name, "the name is empty");
  if (name.front() != '/') {
    // Short form: "CPU:0", "gpu:1", "CPU", optionally prefixed by "device:".
    absl::string_view rest = name;
    if (absl::AsciiStrToLower(rest.substr(0, 7)) == "device:") rest.remove_prefix(7);
    RETURN_IF_ERROR(ParseTypeAndIndex(name, rest, spec));
    return spec;
  }
  // Parts must come in this order, each at most once.
  enum Stage { kStart, kJob, kReplica, kTask, kDevice };
  Stage stage = kStart;
  const std::vector<absl::string_view> parts = absl::StrSplit(name.substr(1), '/');
  for (absl::string_view part : parts) {
    if (part.empty()) return Malformed(name, "it has an empty part");
    const size_t colon = part.find(':');
    if (colon == absl::string_view::npos) {
      return Malformed(name, absl::StrCat("part ", Quoted(part), " has no ':'"));
    }
    const std::string key = absl::AsciiStrToLower(part.substr(0, colon));
    const absl::string_view value = part.substr(colon + 1);
    Stage next;
    if (key == "job") {
      next = kJob;
    } else if (key == "replica") {
      next = kReplica;
    } else if (key == "task") {
      next = kTask;
    } else {
      next = kDevice;
    }
    if (next <= stage) {
      return Malformed(name, absl::StrCat("part ", Quoted(part),
                                          " is repeated or out of order (job, replica, task, "
                                          "device)"));
    }
    stage = next;
    if (next == kJob) {
      if (!IsValidJobName(value)) {
        return Malformed(name, absl::StrCat("job name ", Quoted(value),
                                            " must start with a letter and hold only letters, "
                                            "digits and '_'"));
      }
      spec.job = std::string(value);
    } else if (next == kReplica) {
      ASSIGN_OR_RETURN(spec.replica, ParseNumber(name, "replica", value));
    } else if (next == kTask) {
      ASSIGN_OR_RETURN(spec.task, ParseNumber(name, "task", value));
    } else {
      // "device:TYPE:INDEX", or the legacy "cpu:0" / "gpu:0".
      RETURN_IF_ERROR(ParseTypeAndIndex(name, key == "device" ? value : part, spec));
    }
  }
  return spec;
}

std::string DeviceSpec::ToString() const {
  std::string out;
  if (!job.empty()) absl::StrAppend(&out, "/job:", job);
  if (replica >= 0) absl::StrAppend(&out, "/replica:", replica);
  if (task >= 0) absl::StrAppend(&out, "/task:", task);
  if (type != DeviceType::kUnspecified) {
    absl::StrAppend(&out, "/device:", DeviceTypeName(type), ":");
    if (index >= 0) {
      absl::StrAppend(&out, index);
    } else {
      out += '*';
    }
  }
  return out;
}

DeviceSpec DeviceSpec::WithDefaults() const {
  DeviceSpec resolved = *this;
  if (resolved.type == DeviceType::kUnspecified) resolved.type = DeviceType::kCpu;
  if (resolved.index < 0) resolved.index = 0;
  return resolved;
}

}  // namespace distribute
