#include "core/util/bounded_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <system_error>

#include "absl/strings/str_cat.h"

namespace distribute {
namespace {

absl::Status Problem(absl::string_view what, const std::string& path, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat(what, ": cannot use '", path, "': ", why));
}

absl::Status ErrnoProblem(absl::string_view what, const std::string& path, int error) {
  const std::string why = std::generic_category().message(error);
  if (error == ENOENT || error == ENOTDIR) {
    return absl::NotFoundError(absl::StrCat(what, ": cannot use '", path, "': ", why));
  }
  return Problem(what, path, why);
}

}  // namespace

absl::StatusOr<std::string> ReadBoundedFile(absl::string_view what, const std::string& path, size_t max_bytes) {
  // O_NONBLOCK: a FIFO put in the file's place after any check must not block the open.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) return ErrnoProblem(what, path, errno);
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};

  struct stat info {};
  if (::fstat(fd, &info) != 0) return ErrnoProblem(what, path, errno);
  if (!S_ISREG(info.st_mode)) return Problem(what, path, "not a regular file");
  const auto too_large = [&] {
    return Problem(what, path, absl::StrCat("it holds more than ", max_bytes, " bytes"));
  };
  if (static_cast<uint64_t>(info.st_size) > max_bytes) return too_large();

  // Read to the end, as the file may have grown since fstat: one byte more than allowed
  // shows that it now holds too much.
  std::string contents(static_cast<size_t>(info.st_size) + 1, '\0');
  size_t filled = 0;
  while (filled <= max_bytes) {
    if (filled == contents.size()) contents.resize(max_bytes + 1);
    const ssize_t got = ::read(fd, contents.data() + filled, contents.size() - filled);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return ErrnoProblem(what, path, errno);
    if (got == 0) break;
    filled += static_cast<size_t>(got);
  }
  if (filled > max_bytes) return too_large();
  contents.resize(filled);
  return contents;
}

}  // namespace distribute
