// A cluster of tasks as TensorFlow describes it (tf.train.ClusterSpec plus the current task
// of TF_CONFIG): the jobs chief, worker, ps and evaluator, each a map from task index to a
// "host:port" address, and the task this process runs.
//
// Facts derived as MultiWorkerMirroredStrategy derives them: the workers are the chief and
// the worker tasks (never ps or evaluator); the chief is the "chief" task, or worker 0 when
// the cluster has no chief.
//
// Every mutation validates first and changes nothing when it fails. All errors are
// kInvalidArgument and name the entry at fault ("worker[1]"), except a query about the
// current task before one is set (kFailedPrecondition).
#ifndef DISTRIBUTE_CORE_CLUSTER_CLUSTER_SPEC_H_
#define DISTRIBUTE_CORE_CLUSTER_CLUSTER_SPEC_H_

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace distribute {

// The jobs of a cluster, in the order tasks are listed.
enum class Job : int32_t { kChief = 0, kWorker = 1, kPs = 2, kEvaluator = 3 };
inline constexpr int32_t kNumJobs = 4;

// "chief", "worker", "ps", "evaluator": static strings.
const char* JobName(Job job);
// The job called `name`, or InvalidArgument naming it and the known jobs.
absl::StatusOr<Job> JobFromName(absl::string_view name);

// Checks that `address` is "host:port": port a decimal number from 1 to 65535 without
// leading zeros; host a hostname (letters, digits, '-' and '.'-separated labels), a
// dotted IPv4 address, or an IPv6 address in brackets ("[::1]:2222"). The message names
// `entry` and says what is wrong.
absl::Status ValidateTaskAddress(absl::string_view entry, absl::string_view address);

struct ClusterTask {
  Job job;
  int32_t index;
  std::string address;
};

class ClusterSpec {
 public:
  // Adds task `index` (>= 0) of `job` at `address`. Fails on an unknown job, a negative
  // index, a malformed address, a task or an address already in the cluster, and a second
  // chief or a chief other than task 0.
  absl::Status AddTask(absl::string_view job, int64_t index, absl::string_view address);

  // Makes task `index` of `job` the current task; it must be in the cluster.
  absl::Status SetTask(absl::string_view job, int64_t index);

  bool empty() const;
  bool has_task() const { return task_.has_value(); }

  // The current task (kFailedPrecondition before SetTask).
  absl::StatusOr<Job> task_type() const;
  absl::StatusOr<int32_t> task_index() const;
  // Whether the current task is the chief (kFailedPrecondition before SetTask).
  absl::StatusOr<bool> is_chief() const;

  // The chief and the worker tasks.
  int32_t num_workers() const;
  int32_t num_tasks(Job job) const;
  absl::StatusOr<int32_t> num_tasks(absl::string_view job) const;

  // The address of task `index` of `job`. The reference stays valid while the spec lives,
  // even when tasks are added later.
  absl::StatusOr<const std::string*> task_address(absl::string_view job, int64_t index) const;
  // The index of the `position`-th task of `job` (0 <= position < num_tasks), in ascending
  // order of index.
  absl::StatusOr<int32_t> task_index_at(absl::string_view job, int64_t position) const;

  // Every task: jobs in Job order, then by index.
  std::vector<ClusterTask> tasks() const;

 private:
  struct CurrentTask {
    Job job;
    int32_t index;
  };
  const std::map<int32_t, std::string>& job_tasks(Job job) const {
    return jobs_[static_cast<size_t>(job)];
  }
  // InvalidArgument for task `index` of `job` not being in the cluster.
  absl::Status MissingTask(Job job, int64_t index) const;

  std::array<std::map<int32_t, std::string>, kNumJobs> jobs_;
  std::optional<CurrentTask> task_;
};

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_CLUSTER_CLUSTER_SPEC_H_
