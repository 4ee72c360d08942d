// A cluster of tasks as TensorFlow describes it (tf.train.ClusterSpec plus the current task
// of TF_CONFIG): the jobs chief, worker, ps and evaluator, each a map from task index to a
// "host:port" address, and the task this process runs.
//
// Facts derived as MultiWorkerMirroredStrategy derives them: the workers are the chief and
// the worker tasks (never ps or evaluator); the chief is the "chief" task, or worker 0 when
// the cluster has no chief. What a user asks about the current task follows TF's
// multi_worker_util and TFConfigClusterResolver: an evaluator is its own chief of a
// cluster of the evaluators (is_chief, worker_count), a ps task has no worker count.
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

// Parts of a validated "host:port" task address. `host` is without IPv6 brackets.
struct HostPort {
  std::string host;
  std::string port;
};
HostPort SplitTaskAddress(absl::string_view address);
// The address to listen on or dial for a task's validated `address`: "localhost" becomes
// the IPv4 loopback, so that a server and its clients agree on one address whatever the
// resolver says localhost is.
std::string DialAddress(absl::string_view address);
// The host alone (no brackets), with "localhost" as the IPv4 loopback: where a task's
// other listeners (the Gloo transport) bind.
std::string ListenHost(absl::string_view address);

struct ClusterTask {
  Job job;
  int32_t index;
  std::string address;

  // "worker:1": how messages and the coordination service name a task.
  std::string name() const;
};

// "worker:1" for task `index` of `job`.
std::string TaskName(Job job, int32_t index);

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
  // Whether the current task is the chief, as TF's multi_worker_util.is_chief says: the
  // chief (above), and an evaluator, which is its own chief (kFailedPrecondition before
  // SetTask).
  absl::StatusOr<bool> is_chief() const;
  // TF's multi_worker_util.worker_count for the current task: the evaluators for an
  // evaluator, kInvalidArgument for a ps task, else (and without a current task)
  // num_workers().
  absl::StatusOr<int32_t> worker_count() const;

  // TF_CONFIG's "rpc_layer" and "environment" ("" when not given).
  void set_rpc_layer(std::string rpc_layer);
  void set_environment(std::string environment) { environment_ = std::move(environment); }
  const std::string& rpc_layer() const { return rpc_layer_; }
  const std::string& environment() const { return environment_; }
  // TFConfigClusterResolver.master(): the current task's address, as
  // "<rpc_layer>://host:port" when there is an rpc_layer; "" when the cluster is a single
  // task or there is no current task. The reference stays valid until the next mutation.
  const std::string& master() const { return master_; }

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
  // The tasks of `job`, by index.
  std::vector<ClusterTask> tasks(Job job) const;
  // The workers in rank order: the chief task, then the worker tasks by index. Workers
  // train (MultiWorkerMirrored, and the parameter-server strategy's workers); ps tasks
  // and the evaluator never count among them.
  std::vector<ClusterTask> workers() const;
  // The task that hosts the coordination service and is rank 0: the "chief" task, or
  // worker 0 when the cluster has no chief (kInvalidArgument when it has neither).
  absl::StatusOr<ClusterTask> chief() const;
  // The current task (kFailedPrecondition before SetTask).
  absl::StatusOr<ClusterTask> current_task() const;
  // The current task's rank among workers(): kFailedPrecondition before SetTask,
  // kInvalidArgument when it is a ps task or the evaluator (naming it; `what` says who
  // needs a worker, e.g. "MultiWorkerMirroredStrategy runs on the chief and the worker
  // tasks").
  absl::StatusOr<int32_t> worker_rank(absl::string_view what) const;

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

  // Recomputes master_ after a mutation.
  void UpdateMaster();

  std::array<std::map<int32_t, std::string>, kNumJobs> jobs_;
  // Every task by its address in lower case: finds a repeated address in O(log n), so
  // that a cluster of n tasks is built in O(n log n).
  std::map<std::string, CurrentTask> address_owners_;
  std::optional<CurrentTask> task_;
  std::string rpc_layer_;
  std::string environment_;
  std::string master_;
};

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_CLUSTER_CLUSTER_SPEC_H_
