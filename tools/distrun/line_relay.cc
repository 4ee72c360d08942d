#include "line_relay.h"

#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace distrun {

void WriteAll(int fd, const char* data, size_t size) {
  while (size > 0) {
    ssize_t n = write(fd, data, size);
    if (n > 0) {
      data += n;
      size -= static_cast<size_t>(n);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      // Our stdout was handed to us non-blocking; wait for room instead of spinning.
      pollfd pfd{fd, POLLOUT, 0};
      poll(&pfd, 1, 100);
    } else {
      return;
    }
  }
}

void LineRelay::Append(const char* data, size_t size) {
  std::string out;
  const char* end = data + size;
  while (data < end) {
    const char* newline = static_cast<const char*>(std::memchr(data, '\n', end - data));
    size_t take = newline != nullptr ? static_cast<size_t>(newline - data) : end - data;
    size_t room = kMaxLineBytes - pending_.size();
    if (take > room) {
      // Over-long line: emit what fits as one line and continue with the rest.
      pending_.append(data, room);
      data += room;
      out += prefix_;
      out += pending_;
      out += '\n';
      pending_.clear();
      continue;
    }
    pending_.append(data, take);
    data += take;
    if (newline == nullptr) break;
    ++data;  // the '\n'
    out += prefix_;
    out += pending_;
    out += '\n';
    pending_.clear();
  }
  if (!out.empty()) WriteAll(out_fd_, out.data(), out.size());
}

void LineRelay::Flush() {
  if (pending_.empty()) return;
  std::string out = prefix_ + pending_ + '\n';
  pending_.clear();
  WriteAll(out_fd_, out.data(), out.size());
}

}  // namespace distrun
