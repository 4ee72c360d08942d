#include "core/cluster/slurm_hostlist.h"

#include <cctype>

#include "absl/strings/str_cat.h"
#include "core/util/quote.h"

namespace distribute {
namespace {

constexpr size_t kMaxDigits = 9;

absl::Status Bad(absl::string_view what, absl::string_view text, size_t at, absl::string_view problem) {
  return absl::InvalidArgumentError(
      absl::StrCat(what, ": ", problem, " at byte ", at, " of ", Quoted(text)));
}

// Reads the decimal number at `text[*pos]` (1 to kMaxDigits digits).
absl::StatusOr<std::string> ReadDigits(absl::string_view what, absl::string_view text, size_t* pos) {
  const size_t start = *pos;
  while (*pos < text.size() && std::isdigit(static_cast<unsigned char>(text[*pos]))) ++*pos;
  if (*pos == start) return Bad(what, text, start, "a number was expected");
  if (*pos - start > kMaxDigits) return Bad(what, text, start, "a number has more than 9 digits");
  return std::string(text.substr(start, *pos - start));
}

// The numbers of one bracket group "01-04,07" (the text between '[' and ']'), as strings
// with their padding.
absl::StatusOr<std::vector<std::string>> ExpandGroup(absl::string_view what, absl::string_view text, size_t begin,
                                                     size_t end, size_t budget) {
  std::vector<std::string> out;
  size_t pos = begin;
  while (true) {
    absl::StatusOr<std::string> first = ReadDigits(what, text, &pos);
    if (!first.ok()) return first.status();
    std::string last = *first;
    if (pos < end && text[pos] == '-') {
      ++pos;
      absl::StatusOr<std::string> upper = ReadDigits(what, text, &pos);
      if (!upper.ok()) return upper.status();
      last = *upper;
    }
    const int64_t lo = std::stoll(*first);
    const int64_t hi = std::stoll(last);
    if (hi < lo) return Bad(what, text, pos, absl::StrCat("the range ", *first, "-", last, " runs backwards"));
    if (static_cast<uint64_t>(hi - lo) + 1 + out.size() > budget) {
      return Bad(what, text, pos, absl::StrCat("the list names more than ", kMaxSlurmHosts, " hosts"));
    }
    for (int64_t n = lo; n <= hi; ++n) {
      std::string number = std::to_string(n);
      if (number.size() < first->size()) number.insert(0, first->size() - number.size(), '0');
      out.push_back(std::move(number));
    }
    if (pos == end) return out;
    if (text[pos] != ',') return Bad(what, text, pos, "',' or ']' was expected");
    ++pos;
  }
}

bool IsNameChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' || c == '_';
}

}  // namespace

absl::StatusOr<std::vector<std::string>> ExpandSlurmHostlist(absl::string_view what, absl::string_view hostlist) {
  std::vector<std::string> hosts;
  if (hostlist.empty()) return Bad(what, hostlist, 0, "the host list is empty");
  size_t pos = 0;
  while (pos <= hostlist.size()) {
    // One item: literal runs and bracket groups until a ',' outside brackets or the end.
    std::vector<std::string> names = {""};
    const size_t item_start = pos;
    while (pos < hostlist.size() && hostlist[pos] != ',') {
      const char c = hostlist[pos];
      if (c == '[') {
        const size_t close = hostlist.find(']', pos);
        if (close == absl::string_view::npos) return Bad(what, hostlist, pos, "unclosed '['");
        const size_t room = kMaxSlurmHosts - hosts.size();
        absl::StatusOr<std::vector<std::string>> numbers =
            ExpandGroup(what, hostlist, pos + 1, close, room / names.size());
        if (!numbers.ok()) return numbers.status();
        std::vector<std::string> product;
        product.reserve(names.size() * numbers->size());
        for (const std::string& name : names) {
          for (const std::string& number : *numbers) product.push_back(name + number);
        }
        names = std::move(product);
        pos = close + 1;
      } else if (IsNameChar(c)) {
        for (std::string& name : names) name.push_back(c);
        ++pos;
      } else {
        return Bad(what, hostlist, pos, absl::StrCat("'", std::string(1, c), "' cannot be part of a host name"));
      }
    }
    if (pos == item_start) return Bad(what, hostlist, pos, "an empty host name");
    if (hosts.size() + names.size() > kMaxSlurmHosts) {
      return Bad(what, hostlist, pos, absl::StrCat("the list names more than ", kMaxSlurmHosts, " hosts"));
    }
    hosts.insert(hosts.end(), names.begin(), names.end());
    if (pos == hostlist.size()) break;
    ++pos;  // the ','
    if (pos == hostlist.size()) return Bad(what, hostlist, pos, "an empty host name");
  }
  return hosts;
}

absl::StatusOr<std::vector<int32_t>> ExpandSlurmTasksPerNode(absl::string_view what, absl::string_view spec) {
  std::vector<int32_t> counts;
  if (spec.empty()) return Bad(what, spec, 0, "the task counts are empty");
  size_t pos = 0;
  while (true) {
    absl::StatusOr<std::string> count = ReadDigits(what, spec, &pos);
    if (!count.ok()) return count.status();
    const int64_t tasks = std::stoll(*count);
    if (tasks < 1) return Bad(what, spec, pos, "a node runs no task");
    int64_t repeat = 1;
    if (pos < spec.size() && spec[pos] == '(') {
      if (pos + 1 >= spec.size() || spec[pos + 1] != 'x') return Bad(what, spec, pos + 1, "'x' was expected");
      pos += 2;
      absl::StatusOr<std::string> times = ReadDigits(what, spec, &pos);
      if (!times.ok()) return times.status();
      repeat = std::stoll(*times);
      if (repeat < 1) return Bad(what, spec, pos, "a count is repeated 0 times");
      if (pos >= spec.size() || spec[pos] != ')') return Bad(what, spec, pos, "')' was expected");
      ++pos;
    }
    if (static_cast<uint64_t>(repeat) + counts.size() > kMaxSlurmHosts) {
      return Bad(what, spec, pos, absl::StrCat("the list names more than ", kMaxSlurmHosts, " nodes"));
    }
    counts.insert(counts.end(), static_cast<size_t>(repeat), static_cast<int32_t>(tasks));
    if (pos == spec.size()) return counts;
    if (spec[pos] != ',') return Bad(what, spec, pos, "',' was expected");
    ++pos;
  }
}

}  // namespace distribute
