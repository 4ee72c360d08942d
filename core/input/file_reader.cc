#include "core/input/file_reader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/util/quote.h"
#include "core/util/status_macros.h"

namespace distribute {
namespace {

constexpr size_t kBufferBytes = 256 * 1024;

absl::Status ErrnoStatus(int err, const std::string& message) {
  const std::string text = absl::StrCat(message, ": ", std::strerror(err));
  switch (err) {
    case ENOENT:
    case ENOTDIR:
      return absl::NotFoundError(text);
    case EACCES:
    case EPERM:
      return absl::PermissionDeniedError(text);
    default:
      return absl::UnknownError(text);
  }
}

}  // namespace

FileReader::FileReader(std::string path, int fd, uint64_t size)
    : path_(std::move(path)), fd_(fd), size_(size), buffer_(kBufferBytes) {}

FileReader::~FileReader() { ::close(fd_); }

absl::StatusOr<std::unique_ptr<FileReader>> FileReader::Open(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoStatus(errno, absl::StrCat("cannot open file ", Quoted(path)));
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return ErrnoStatus(err, absl::StrCat("cannot stat file ", Quoted(path)));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return absl::InvalidArgumentError(
        absl::StrCat("cannot read file ", Quoted(path), ": not a regular file"));
  }
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
  return std::unique_ptr<FileReader>(new FileReader(path, fd, static_cast<uint64_t>(st.st_size)));
}

absl::Status FileReader::ReadError(int err) const {
  return ErrnoStatus(err, absl::StrCat("cannot read file ", Quoted(path_), " at offset ", offset_));
}

absl::Status FileReader::Fill() {
  begin_ = end_ = 0;
  while (!eof_) {
    const ssize_t got = ::read(fd_, buffer_.data(), buffer_.size());
    if (got < 0) {
      if (errno == EINTR) continue;
      return ReadError(errno);
    }
    if (got == 0) eof_ = true;
    end_ = static_cast<size_t>(got);
    break;
  }
  return absl::OkStatus();
}

absl::StatusOr<size_t> FileReader::Read(void* dst, size_t n) {
  char* out = static_cast<char*>(dst);
  size_t done = 0;
  while (done < n) {
    if (begin_ < end_) {
      const size_t take = std::min(n - done, end_ - begin_);
      std::memcpy(out + done, buffer_.data() + begin_, take);
      begin_ += take;
      done += take;
      continue;
    }
    if (eof_) break;
    if (n - done >= buffer_.size()) {
      // Large reads go straight to the destination.
      const ssize_t got = ::read(fd_, out + done, n - done);
      if (got < 0) {
        if (errno == EINTR) continue;
        const int err = errno;
        offset_ += done;
        return ReadError(err);
      }
      if (got == 0) {
        eof_ = true;
        break;
      }
      done += static_cast<size_t>(got);
      continue;
    }
    const uint64_t before = offset_;
    offset_ += done;
    const absl::Status filled = Fill();
    offset_ = before;
    RETURN_IF_ERROR(filled);
  }
  offset_ += done;
  return done;
}

absl::StatusOr<size_t> FileReader::Skip(size_t n) {
  size_t done = 0;
  while (done < n) {
    if (begin_ == end_) {
      if (eof_) break;
      RETURN_IF_ERROR(Fill());
      continue;
    }
    const size_t take = std::min(n - done, end_ - begin_);
    begin_ += take;
    done += take;
    offset_ += take;
  }
  return done;
}

absl::StatusOr<bool> FileReader::ReadLine(std::string* line) {
  line->clear();
  bool any = false;
  while (true) {
    if (begin_ == end_) {
      if (eof_) break;
      RETURN_IF_ERROR(Fill());
      continue;
    }
    any = true;
    const char* start = buffer_.data() + begin_;
    const size_t avail = end_ - begin_;
    const void* newline = std::memchr(start, '\n', avail);
    if (newline == nullptr) {
      line->append(start, avail);
      begin_ = end_;
      offset_ += avail;
      continue;
    }
    const size_t len = static_cast<size_t>(static_cast<const char*>(newline) - start);
    line->append(start, len);
    begin_ += len + 1;
    offset_ += len + 1;
    if (!line->empty() && line->back() == '\r') line->pop_back();
    return true;
  }
  if (!any) return false;
  if (!line->empty() && line->back() == '\r') line->pop_back();
  return true;
}

}  // namespace distribute
