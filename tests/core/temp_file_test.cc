// Temporaries of killed writers: a save removes the ones whose writer is gone and keeps
// every other (a live writer's, another machine's or container's, another target's, a name
// of another form). The writer's identity in each name is computed here from /proc, by
// the rules written in core/util/temp_file.h, not by the code under test.
#include "core/util/temp_file.h"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "core/values/safetensors.h"
#include "gtest/gtest.h"
#include "tests/core/status_test_util.h"

namespace distribute {
namespace {

namespace fs = std::filesystem;
using ::distribute::testing::IsOk;

std::string ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// The first 8 hex digits of this boot's id.
std::string BootPrefix() { return ReadText("/proc/sys/kernel/random/boot_id").substr(0, 8); }

uint64_t PidNamespace() {
  struct stat info {};
  EXPECT_EQ(::stat("/proc/self/ns/pid", &info), 0);
  return static_cast<uint64_t>(info.st_ino);
}

// Field 22 of /proc/<pid>/stat; the fields after the command name follow its last ')'.
uint64_t StartTimeOf(pid_t pid) {
  const std::string stat = ReadText(absl::StrCat("/proc/", pid, "/stat"));
  const std::vector<std::string> fields =
      absl::StrSplit(stat.substr(stat.rfind(')') + 2), ' ');
  return std::stoull(fields.at(22 - 3));
}

// A process id that no process has: a child that has exited and been reaped.
pid_t DeadPid() {
  const pid_t child = ::fork();
  if (child == 0) std::_Exit(0);
  int status = 0;
  EXPECT_EQ(::waitpid(child, &status, 0), child);
  return child;
}

std::vector<std::string> DirectoryEntries(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) names.push_back(entry.path().filename());
  std::sort(names.begin(), names.end());
  return names;
}

NamedTensors OneTensor() {
  const float values[2] = {1.5f, -2.0f};
  const int64_t dims[1] = {2};
  Tensor::Description desc;
  desc.dtype = static_cast<int32_t>(DType::kFloat32);
  desc.dims = dims;
  desc.byte_size = sizeof(values);
  absl::StatusOr<Tensor> tensor = Tensor::Create(desc, values);
  EXPECT_TRUE(IsOk(tensor));
  NamedTensors tensors;
  tensors.emplace_back("w", *std::move(tensor));
  return tensors;
}

class TempFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (BootPrefix().size() != 8) GTEST_SKIP() << "no /proc/sys/kernel/random/boot_id";
    std::string pattern = (fs::temp_directory_path() / "temp_file_test.XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override {
    std::error_code ignored;
    if (!dir_.empty()) fs::remove_all(dir_, ignored);
  }

  // "<target>.tmp-<boot>-<pidns>-<pid>-<start>-<unique>", as the header describes it.
  static std::string TempName(const std::string& target, const std::string& boot, uint64_t pidns,
                              int64_t pid, uint64_t start, const std::string& unique) {
    return absl::StrCat(target, ".tmp-", boot, "-", pidns, "-", pid, "-", start, "-", unique);
  }

  void Touch(const std::string& name) const {
    std::ofstream out(dir_ / name);
    out << "partial checkpoint";
  }

  fs::path dir_;
};

TEST_F(TempFileTest, ASaveRemovesOnlyTemporariesWhoseWriterIsGone) {
  const std::string boot = BootPrefix();
  const std::string other_boot = absl::StrCat(boot[0] == '0' ? "1" : "0", boot.substr(1));
  const uint64_t pidns = PidNamespace();
  const pid_t dead = DeadPid();
  const pid_t self = ::getpid();
  const pid_t parent = ::getppid();
  const std::string target = "model.safetensors";

  const std::string stale = TempName(target, boot, pidns, dead, 4242, "0badf00d");
  // This process's pid with another start time: the pid of a writer that is gone, reused.
  const std::string reused = TempName(target, boot, pidns, self, StartTimeOf(self) + 1, "0badf00e");
  const std::vector<std::string> kept = {
      target,  // the file itself
      TempName(target, boot, pidns, self, StartTimeOf(self), "00c0ffee"),     // live: this process
      TempName(target, boot, pidns, parent, StartTimeOf(parent), "00c0ffef"),  // live: another
      TempName(target, other_boot, pidns, dead, 4242, "0badf00f"),  // another machine or boot
      TempName(target, boot, pidns + 1, dead, 4242, "0badf010"),    // another pid namespace
      TempName("other.safetensors", boot, pidns, dead, 4242, "0badf011"),  // another target
      TempName(target + "x", boot, pidns, dead, 4242, "0badf012"),  // a target with a longer name
      target + ".tmp-0badf013",                                      // the old form: no writer
      TempName(target, boot, pidns, dead, 4242, "0badf014") + "-x",  // not this form
      TempName(target, "0", 0, dead, 0, "0badf015"),                 // a writer without /proc
  };
  Touch(stale);
  Touch(reused);
  for (const std::string& name : kept) {
    if (name != target) Touch(name);
  }

  ASSERT_TRUE(IsOk(WriteSafetensors((dir_ / target).string(), OneTensor())));

  std::vector<std::string> expected = kept;
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(DirectoryEntries(dir_), expected);
}

// End to end: a writer killed after creating its temporary (here: a child that exits
// without committing or cleaning up) leaves it; the next save of the target removes it.
TEST_F(TempFileTest, TheTemporaryOfAKilledWriterGoesAtTheNextSave) {
  const std::string path = (dir_ / "w.safetensors").string();
  const pid_t child = ::fork();
  if (child == 0) {
    TempFile file;
    const bool ok = file.Create(path).ok() && file.Write("half", 4).ok();
    std::_Exit(ok ? 0 : 1);  // no destructor: the temporary stays, as after SIGKILL
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  const std::vector<std::string> left = DirectoryEntries(dir_);
  ASSERT_EQ(left.size(), 1u);
  EXPECT_EQ(left[0].rfind("w.safetensors.tmp-" + BootPrefix() + "-", 0), 0u) << left[0];
  EXPECT_NE(left[0].find(absl::StrCat("-", child, "-")), std::string::npos) << left[0];

  ASSERT_TRUE(IsOk(WriteSafetensors(path, OneTensor())));
  EXPECT_EQ(DirectoryEntries(dir_), std::vector<std::string>{"w.safetensors"});
  EXPECT_EQ(RemoveStaleTemporaries(path), 0);
}

// A temporary of a writer still at work is never taken from it, even by itself.
TEST_F(TempFileTest, ALiveWritersTemporaryStays) {
  const std::string path = (dir_ / "w.safetensors").string();
  TempFile in_progress;
  ASSERT_TRUE(IsOk(in_progress.Create(path)));
  ASSERT_TRUE(IsOk(in_progress.Write("data", 4)));
  EXPECT_EQ(RemoveStaleTemporaries(path), 0);
  ASSERT_TRUE(IsOk(WriteSafetensors(path, OneTensor())));
  EXPECT_EQ(DirectoryEntries(dir_).size(), 2u);
  ASSERT_TRUE(IsOk(in_progress.CommitAs(path)));
  EXPECT_EQ(DirectoryEntries(dir_), std::vector<std::string>{"w.safetensors"});
}

}  // namespace
}  // namespace distribute
