// Replacing a file atomically: the new contents go to a temporary file beside it, which is
// flushed and renamed over it, so that the file holds either its old contents or the new
// ones, never a part.
//
// A writer killed before the rename leaves its temporary behind. Its name says who wrote
// it, so that the next writer of the same file can tell a leftover from a write in
// progress:
//
//   <path>.tmp-<boot>-<pidns>-<pid>-<start>-<unique>
//
// <boot> is the first 8 hex digits of /proc/sys/kernel/random/boot_id, <pidns> the inode
// of /proc/self/ns/pid (decimal), <pid> the writer's process id and <start> its start time
// (field 22 of /proc/<pid>/stat, decimal), <unique> 8 hex digits. Boot and namespace
// confine the judgement to processes this one can see (a file on a shared disk written
// from another machine or container is never judged); the start time tells a reused pid
// from the writer. Where /proc cannot be read, <boot> is "0", and such temporaries are
// never removed.
#ifndef DISTRIBUTE_CORE_UTIL_TEMP_FILE_H_
#define DISTRIBUTE_CORE_UTIL_TEMP_FILE_H_

#include <string>

#include "absl/status/status.h"

namespace distribute {

// A temporary file beside a destination, removed unless committed by a rename.
// Thread-safety: one thread at a time.
class TempFile {
 public:
  TempFile() = default;
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  ~TempFile();

  // Creates the temporary for `path` (named as above).
  absl::Status Create(const std::string& path);
  absl::Status Write(const char* data, size_t size);
  // Flushes, closes and renames over `path`; the file then no longer needs removing.
  absl::Status CommitAs(const std::string& path);

 private:
  std::string Context(const char* action) const;

  int fd_ = -1;
  std::string name_;
};

// Removes the temporaries of `path` whose writer is gone: named as above, with this
// machine's boot and this process's pid namespace, and no process with their pid and start
// time. A temporary of a live writer, of another machine, container or target, or with a
// name of another form stays. Best effort (a directory that cannot be listed or a file
// that cannot be removed is left as it is); returns how many were removed.
int RemoveStaleTemporaries(const std::string& path);

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_UTIL_TEMP_FILE_H_
