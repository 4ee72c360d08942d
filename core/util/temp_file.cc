#include "core/util/temp_file.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "core/util/errno_status.h"
#include "core/util/quote.h"

namespace distribute {
namespace {

constexpr char kTempMarker[] = ".tmp-";
constexpr char kUnknownBoot[] = "0";
constexpr size_t kBootDigits = 8;
constexpr size_t kUniqueDigits = 8;
constexpr size_t kMaxDecimalDigits = 19;  // what a uint64_t holds without overflow check
constexpr size_t kMaxProcFileBytes = 4096;

// Who writes a temporary: the parts of its name before <unique>.
struct WriterId {
  std::string boot = kUnknownBoot;
  uint64_t pid_namespace = 0;
  uint64_t pid = 0;
  uint64_t start = 0;
};

// A small /proc file, or nullopt with errno set.
std::optional<std::string> ReadProcFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::string text(kMaxProcFileBytes, '\0');
  size_t filled = 0;
  while (filled < text.size()) {
    const ssize_t got = ::read(fd, text.data() + filled, text.size() - filled);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    filled += static_cast<size_t>(got);
  }
  const int saved = errno;
  ::close(fd);
  errno = saved;
  text.resize(filled);
  return text;
}

std::optional<uint64_t> ParseDecimal(absl::string_view text) {
  if (text.empty() || text.size() > kMaxDecimalDigits) return std::nullopt;
  uint64_t value = 0;
  for (char c : text) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) return std::nullopt;
    value = value * 10 + static_cast<uint64_t>(c - '0');
  }
  return value;
}

bool IsLowerHex(absl::string_view text, size_t digits) {
  if (text.size() != digits) return false;
  return std::all_of(text.begin(), text.end(), [](char c) {
    return absl::ascii_isdigit(static_cast<unsigned char>(c)) || (c >= 'a' && c <= 'f');
  });
}

// Field 22 (starttime) of /proc/<pid>/stat. The command name (field 2) is in parentheses
// and may hold spaces and ')': the fields after it start after the last ')'.
std::optional<uint64_t> StartTimeIn(absl::string_view stat) {
  const size_t close = stat.rfind(')');
  if (close == absl::string_view::npos) return std::nullopt;
  const std::vector<absl::string_view> fields =
      absl::StrSplit(stat.substr(close + 1), ' ', absl::SkipEmpty());
  constexpr size_t kStartTimeAfterName = 22 - 3;  // fields[0] is field 3 (state)
  if (fields.size() <= kStartTimeAfterName) return std::nullopt;
  return ParseDecimal(fields[kStartTimeAfterName]);
}

WriterId ThisWriter() {
  WriterId id;
  id.pid = static_cast<uint64_t>(::getpid());
  const std::optional<std::string> boot_id = ReadProcFile("/proc/sys/kernel/random/boot_id");
  struct stat pid_namespace {};
  const std::optional<std::string> stat = ReadProcFile("/proc/self/stat");
  const std::optional<uint64_t> start = stat ? StartTimeIn(*stat) : std::nullopt;
  if (!boot_id || !IsLowerHex(absl::string_view(*boot_id).substr(0, kBootDigits), kBootDigits) ||
      ::stat("/proc/self/ns/pid", &pid_namespace) != 0 || !start) {
    return id;  // unknown: its temporaries are never judged
  }
  id.boot = boot_id->substr(0, kBootDigits);
  id.pid_namespace = static_cast<uint64_t>(pid_namespace.st_ino);
  id.start = *start;
  return id;
}

std::string WriterText(const WriterId& id) {
  return absl::StrCat(id.boot, "-", id.pid_namespace, "-", id.pid, "-", id.start);
}

// The writer of a temporary named "<target>.tmp-<suffix>", when `suffix` has the form of
// this file's names.
std::optional<WriterId> ParseWriter(absl::string_view suffix) {
  const std::vector<absl::string_view> parts = absl::StrSplit(suffix, '-');
  if (parts.size() != 5 || !IsLowerHex(parts[0], kBootDigits) ||
      !IsLowerHex(parts[4], kUniqueDigits)) {
    return std::nullopt;
  }
  const std::optional<uint64_t> pid_namespace = ParseDecimal(parts[1]);
  const std::optional<uint64_t> pid = ParseDecimal(parts[2]);
  const std::optional<uint64_t> start = ParseDecimal(parts[3]);
  if (!pid_namespace || !pid || !start || *pid == 0 || *pid > INT32_MAX) return std::nullopt;
  return WriterId{std::string(parts[0]), *pid_namespace, *pid, *start};
}

// Whether the process that wrote as `writer` is certainly gone: no process has its pid,
// or the one that has it started at another time (the pid was reused).
bool WriterIsGone(const WriterId& writer) {
  const std::optional<std::string> stat = ReadProcFile(absl::StrCat("/proc/", writer.pid, "/stat"));
  if (!stat) {
    if (errno != ENOENT && errno != ESRCH) return false;
    return ::kill(static_cast<pid_t>(writer.pid), 0) != 0 && errno == ESRCH;
  }
  const std::optional<uint64_t> start = StartTimeIn(*stat);
  return start.has_value() && *start != writer.start;
}

uint32_t UniqueSuffix(uint64_t count) {
  // splitmix64 over pid, time and a counter: distinct across threads and processes.
  uint64_t x = (static_cast<uint64_t>(::getpid()) << 32) ^ count ^
               static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return static_cast<uint32_t>(x ^ (x >> 31));
}

// Makes a rename durable. Best effort: the new file is already in place, and a failure
// here cannot be undone, so it is not reported.
void SyncDirectoryOf(const std::string& path) {
  const std::filesystem::path directory = std::filesystem::path(path).parent_path();
  const int fd =
      ::open(directory.empty() ? "." : directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  (void)::fsync(fd);
  ::close(fd);
}

}  // namespace

TempFile::~TempFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!name_.empty()) ::unlink(name_.c_str());
}

absl::Status TempFile::Create(const std::string& path) {
  static std::atomic<uint64_t> counter{0};
  const std::string prefix = absl::StrCat(path, kTempMarker, WriterText(ThisWriter()), "-");
  for (int attempt = 0; attempt < 100; ++attempt) {
    const std::string name =
        absl::StrCat(prefix, absl::Hex(UniqueSuffix(counter++), absl::kZeroPad8));
    const int fd = ::open(name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd >= 0) {
      fd_ = fd;
      name_ = name;
      return absl::OkStatus();
    }
    if (errno != EEXIST) {
      return ErrnoStatus(errno, absl::StrCat("cannot write ", Quoted(path),
                                             ": creating the temporary file ", Quoted(name)));
    }
  }
  return absl::AlreadyExistsError(
      absl::StrCat("cannot write ", Quoted(path), ": no free temporary file name beside it"));
}

absl::Status TempFile::Write(const char* data, size_t size) {
  while (size > 0) {
    const size_t chunk = std::min<size_t>(size, size_t{1} << 30);
    const ssize_t written = ::write(fd_, data, chunk);
    if (written < 0 && errno == EINTR) continue;
    if (written <= 0) return ErrnoStatus(written < 0 ? errno : EIO, Context("writing"));
    data += written;
    size -= static_cast<size_t>(written);
  }
  return absl::OkStatus();
}

absl::Status TempFile::CommitAs(const std::string& path) {
  if (::fsync(fd_) != 0) return ErrnoStatus(errno, Context("flushing"));
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) return ErrnoStatus(errno, Context("closing"));
  if (::rename(name_.c_str(), path.c_str()) != 0) {
    return ErrnoStatus(errno, absl::StrCat("cannot write ", Quoted(path), ": renaming ",
                                           Quoted(name_), " to it"));
  }
  name_.clear();
  SyncDirectoryOf(path);
  return absl::OkStatus();
}

std::string TempFile::Context(const char* action) const {
  return absl::StrCat("cannot write ", Quoted(name_), ": ", action);
}

int RemoveStaleTemporaries(const std::string& path) {
  const std::filesystem::path target(path);
  const std::string prefix = absl::StrCat(target.filename().string(), kTempMarker);
  const WriterId self = ThisWriter();
  if (prefix.size() == sizeof(kTempMarker) - 1 || self.boot == kUnknownBoot) return 0;
  const std::filesystem::path parent = target.parent_path();
  DIR* directory = ::opendir(parent.empty() ? "." : parent.c_str());
  if (directory == nullptr) return 0;
  int removed = 0;
  while (const dirent* entry = ::readdir(directory)) {
    const absl::string_view name(entry->d_name);
    if (!absl::StartsWith(name, prefix)) continue;
    const std::optional<WriterId> writer = ParseWriter(name.substr(prefix.size()));
    if (!writer || writer->boot != self.boot || writer->pid_namespace != self.pid_namespace ||
        !WriterIsGone(*writer)) {
      continue;
    }
    if (::unlinkat(::dirfd(directory), entry->d_name, 0) == 0) ++removed;
  }
  ::closedir(directory);
  return removed;
}

}  // namespace distribute
