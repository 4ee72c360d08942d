#include "core/shm/shared_segment.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <random>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/util/errno_status.h"

namespace distribute::shm {
namespace {

constexpr char kPrefix[] = "/dist-";
constexpr size_t kRandomHexDigits = 32;

absl::StatusOr<char*> Map(int fd, size_t bytes, const std::string& name) {
  void* data = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  const int error = errno;
  close(fd);
  if (data == MAP_FAILED) return ErrnoStatus(error, absl::StrCat("mapping shared memory ", name));
  return static_cast<char*>(data);
}

}  // namespace

absl::StatusOr<std::unique_ptr<SharedSegment>> SharedSegment::Create(const std::string& name,
                                                                      size_t bytes) {
  const int fd = shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return ErrnoStatus(errno, absl::StrCat("creating shared memory ", name));
  // Reserved now, not on first touch: a full /dev/shm (a container's is often 64 MiB) then
  // fails here with ENOSPC instead of killing the process with SIGBUS mid-collective.
  if (const int error = posix_fallocate(fd, 0, static_cast<off_t>(bytes)); error != 0) {
    close(fd);
    UnlinkSegment(name);
    return ErrnoStatus(error, absl::StrCat("reserving ", bytes, " bytes of shared memory for ", name));
  }
  absl::StatusOr<char*> data = Map(fd, bytes, name);
  if (!data.ok()) {
    UnlinkSegment(name);
    return data.status();
  }
  return std::unique_ptr<SharedSegment>(new SharedSegment(*data, bytes));
}

absl::StatusOr<std::unique_ptr<SharedSegment>> SharedSegment::Open(const std::string& name,
                                                                    size_t bytes) {
  const int fd = shm_open(name.c_str(), O_RDWR | O_CLOEXEC, 0);
  if (fd < 0) return ErrnoStatus(errno, absl::StrCat("opening shared memory ", name));
  struct stat info;
  if (fstat(fd, &info) != 0) {
    const int error = errno;
    close(fd);
    return ErrnoStatus(error, absl::StrCat("inspecting shared memory ", name));
  }
  if (info.st_uid != geteuid() || static_cast<size_t>(info.st_size) != bytes) {
    close(fd);
    return absl::FailedPreconditionError(absl::StrFormat(
        "shared memory %s is not this job's: owner %d and %d bytes, expected %d and %d bytes", name,
        info.st_uid, info.st_size, geteuid(), bytes));
  }
  absl::StatusOr<char*> data = Map(fd, bytes, name);
  if (!data.ok()) return data.status();
  return std::unique_ptr<SharedSegment>(new SharedSegment(*data, bytes));
}

SharedSegment::~SharedSegment() { munmap(data_, size_); }

void UnlinkSegment(const std::string& name) { (void)shm_unlink(name.c_str()); }

std::string NewSegmentName(int32_t rank) {
  std::random_device random;
  std::string hex;
  while (hex.size() < kRandomHexDigits) absl::StrAppend(&hex, absl::Hex(random(), absl::kZeroPad8));
  return absl::StrCat(kPrefix, hex.substr(0, kRandomHexDigits), "-", rank);
}

bool IsSegmentName(const std::string& name) {
  if (!absl::StartsWith(name, kPrefix)) return false;
  const std::string rest = name.substr(sizeof(kPrefix) - 1);
  if (rest.size() < kRandomHexDigits + 2 || rest[kRandomHexDigits] != '-') return false;
  for (size_t i = 0; i < kRandomHexDigits; ++i) {
    const char c = rest[i];
    if (!absl::ascii_isdigit(c) && !(c >= 'a' && c <= 'f')) return false;
  }
  int32_t rank;
  const std::string digits = rest.substr(kRandomHexDigits + 1);
  return digits.size() <= 10 && std::all_of(digits.begin(), digits.end(), [](char c) { return absl::ascii_isdigit(static_cast<unsigned char>(c)); }) &&
         absl::SimpleAtoi(digits, &rank) && rank >= 0;
}

}  // namespace distribute::shm
