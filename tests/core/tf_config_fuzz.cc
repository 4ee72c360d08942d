// Fuzz target for the TF_CONFIG parser. Any input must give a cluster spec or an
// InvalidArgument error starting "TF_CONFIG: "; a parsed spec must have consistent derived
// facts (counts, addresses, the chief rule, valid and distinct addresses) and must rebuild
// task by task into the same spec. Built with -fsanitize=fuzzer under clang, and with
// tests/core/fuzz_replay_main.cc as a corpus-replay test under any compiler.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/string_view.h"
#include "core/cluster/cluster_spec.h"
#include "core/cluster/tf_config.h"

namespace {

[[noreturn]] void Fail(const char* what, const absl::Status& status = absl::OkStatus()) {
  std::fprintf(stderr, "tf_config_fuzz: %s: %s\n", what, status.ToString().c_str());
  std::abort();
}

void Check(bool condition, const char* what) {
  if (!condition) Fail(what);
}

void CheckConsistent(const distribute::ClusterSpec& spec) {
  using distribute::Job;
  Check(!spec.empty() && spec.has_task(), "a parsed spec is empty or has no task");
  const auto tasks = spec.tasks();
  int32_t total = 0;
  for (int32_t j = 0; j < distribute::kNumJobs; ++j) total += spec.num_tasks(static_cast<Job>(j));
  Check(static_cast<int32_t>(tasks.size()) == total, "tasks() disagrees with num_tasks");
  Check(spec.num_workers() == spec.num_tasks(Job::kChief) + spec.num_tasks(Job::kWorker),
        "num_workers is not chief + worker");
  Check(spec.num_tasks(Job::kChief) <= 1, "more than one chief");

  std::set<std::string> addresses;
  distribute::ClusterSpec rebuilt;
  for (const auto& task : tasks) {
    const char* job = distribute::JobName(task.job);
    absl::StatusOr<const std::string*> address = spec.task_address(job, task.index);
    if (!address.ok()) Fail("a listed task has no address", address.status());
    Check(**address == task.address, "task_address disagrees with tasks()");
    Check(addresses.insert(absl::AsciiStrToLower(task.address)).second, "two tasks share an address");
    const absl::Status valid = distribute::ValidateTaskAddress("entry", task.address);
    if (!valid.ok()) Fail("a parsed address does not validate", valid);
    const absl::Status added = rebuilt.AddTask(job, task.index, task.address);
    if (!added.ok()) Fail("a parsed task does not add to a new spec", added);
  }

  const Job type = *spec.task_type();
  const int32_t index = *spec.task_index();
  if (!spec.task_address(distribute::JobName(type), index).ok()) Fail("the current task is not in the cluster");
  // TF's multi_worker_util.is_chief: the chief, else worker 0 when there is no chief; an
  // evaluator is the chief of its own cluster of evaluators.
  const bool expected_chief =
      type == Job::kChief || type == Job::kEvaluator ||
      (type == Job::kWorker && index == 0 && spec.num_tasks(Job::kChief) == 0);
  Check(*spec.is_chief() == expected_chief, "is_chief breaks the chief rule");

  const absl::Status set = rebuilt.SetTask(distribute::JobName(type), index);
  if (!set.ok()) Fail("the parsed task does not set on the rebuilt spec", set);
  Check(rebuilt.num_workers() == spec.num_workers() && *rebuilt.is_chief() == *spec.is_chief() &&
            rebuilt.tasks().size() == tasks.size(),
        "the rebuilt spec differs");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view json(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<distribute::ClusterSpec> spec = distribute::ParseTfConfig(json);
  if (!spec.ok()) {
    if (spec.status().code() != absl::StatusCode::kInvalidArgument) Fail("unexpected error code", spec.status());
    if (!absl::StartsWith(spec.status().message(), "TF_CONFIG: ")) {
      Fail("message does not start with TF_CONFIG", spec.status());
    }
    return 0;
  }
  CheckConsistent(*spec);
  return 0;
}
