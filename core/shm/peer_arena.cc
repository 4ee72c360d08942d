#include "core/shm/peer_arena.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "core/tensor/shared_host_arena.h"
#include "core/util/errno_status.h"

namespace distribute::shm {

absl::StatusOr<std::string> PeerArena::Describe() {
  if (!SharedHostArenaEnabled()) return absl::FailedPreconditionError("this process has no shared host arena");
  absl::StatusOr<SharedHostArenaInfo> info = EnableSharedHostArena();
  if (!info.ok()) return info.status();
  return absl::StrCat(getpid(), ":", info->fd, ":", info->bytes);
}

absl::StatusOr<std::unique_ptr<PeerArena>> PeerArena::Map(const std::string& description) {
  const std::vector<std::string> parts = absl::StrSplit(description, ':');
  int32_t pid = 0, fd = 0;
  uint64_t bytes = 0;
  if (parts.size() != 3 || !absl::SimpleAtoi(parts[0], &pid) || !absl::SimpleAtoi(parts[1], &fd) ||
      !absl::SimpleAtoi(parts[2], &bytes) || pid <= 0 || fd < 0 || bytes == 0 ||
      bytes > static_cast<uint64_t>(INT64_MAX)) {
    return absl::InvalidArgumentError(absl::StrCat("a malformed arena description \"",
                                                   description.substr(0, 64), "\""));
  }
  const std::string path = absl::StrCat("/proc/", pid, "/fd/", fd);
  const int opened = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (opened < 0) return ErrnoStatus(errno, absl::StrCat("opening ", path));
  struct stat st;
  const int seals = fcntl(opened, F_GET_SEALS);
  absl::Status usable;
  if (fstat(opened, &st) != 0) {
    usable = ErrnoStatus(errno, absl::StrCat("inspecting ", path));
  } else if (!S_ISREG(st.st_mode) || st.st_uid != geteuid() || static_cast<uint64_t>(st.st_size) != bytes) {
    usable = absl::FailedPreconditionError(absl::StrCat(
        path, " is not an arena of this user of ", bytes, " bytes (", st.st_size, " bytes, owner ", st.st_uid, ")"));
  } else if (seals < 0 || (seals & F_SEAL_SHRINK) == 0) {
    usable = absl::FailedPreconditionError(absl::StrCat(path, " may shrink (not sealed)"));
  }
  if (!usable.ok()) {
    close(opened);
    return usable;
  }
  void* data = mmap(nullptr, bytes, PROT_READ, MAP_SHARED | MAP_NORESERVE, opened, 0);
  const int error = errno;
  close(opened);
  if (data == MAP_FAILED) return ErrnoStatus(error, absl::StrCat("mapping ", path));
  return std::unique_ptr<PeerArena>(new PeerArena(static_cast<const char*>(data), bytes));
}

PeerArena::~PeerArena() { munmap(const_cast<char*>(data_), size_); }

const char* PeerArena::At(uint64_t offset, size_t bytes) const {
  if (offset > size_ || bytes > size_ - offset) return nullptr;
  return data_ + offset;
}

}  // namespace distribute::shm
