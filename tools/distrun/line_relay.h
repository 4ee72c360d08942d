// Forwards a child's byte stream line by line with a "[rank] " prefix.
#ifndef DISTRIBUTE_TOOLS_DISTRUN_LINE_RELAY_H_
#define DISTRIBUTE_TOOLS_DISTRUN_LINE_RELAY_H_

#include <cstddef>
#include <string>

namespace distrun {

// Writes all of [data, data+size) to fd, retrying on EINTR/EAGAIN. Write errors
// (a closed reader: distrun ignores SIGPIPE) drop the output; the job goes on.
void WriteAll(int fd, const char* data, size_t size);

// Buffers one stream and writes only whole prefixed lines, each with a single
// WriteAll, so lines from different ranks never interleave: distrun is the only
// writer of its stdout/stderr and is single-threaded.
class LineRelay {
 public:
  // A line longer than this is cut into several prefixed lines, so a child that never
  // writes a newline cannot grow distrun's memory without bound.
  static constexpr size_t kMaxLineBytes = 64 * 1024;

  LineRelay(std::string prefix, int out_fd) : prefix_(std::move(prefix)), out_fd_(out_fd) {}

  // Appends child output and forwards every line it completes.
  void Append(const char* data, size_t size);
  // Forwards a pending partial line, terminated with '\n'. Call at end of stream.
  void Flush();

 private:
  std::string prefix_;
  int out_fd_;
  std::string pending_;  // bytes after the last '\n' seen
};

}  // namespace distrun

#endif  // DISTRIBUTE_TOOLS_DISTRUN_LINE_RELAY_H_
