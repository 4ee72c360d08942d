#include "core/cluster/cluster_spec.h"

#include <arpa/inet.h>

#include <cstddef>
#include <limits>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "core/util/quote.h"

namespace distribute {
namespace {

constexpr const char* kJobNames[kNumJobs] = {"chief", "worker", "ps", "evaluator"};
// How a message counts the tasks of each job: "2 workers", "1 ps task".
constexpr const char* kJobNounSingular[kNumJobs] = {"chief", "worker", "ps task", "evaluator"};
constexpr const char* kJobNounPlural[kNumJobs] = {"chiefs", "workers", "ps tasks", "evaluators"};

constexpr size_t kMaxHostnameLength = 253;
constexpr size_t kMaxLabelLength = 63;

std::string Entry(Job job, int64_t index) { return absl::StrCat(JobName(job), "[", index, "]"); }

bool AllDigits(absl::string_view text) {
  if (text.empty()) return false;
  for (char c : text) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

// A decimal number in [0, max] without leading zeros (except "0" itself).
std::optional<int64_t> ParseCanonicalNumber(absl::string_view text, int64_t max) {
  if (!AllDigits(text) || (text.size() > 1 && text[0] == '0') || text.size() > 10) return std::nullopt;
  int64_t value = 0;
  for (char c : text) value = value * 10 + (c - '0');
  if (value > max) return std::nullopt;
  return value;
}

// Empty when `host` is a valid IPv4 address or hostname, else what is wrong with it.
std::string HostProblem(absl::string_view host) {
  if (host.empty()) return "the host is empty";
  if (host.size() > kMaxHostnameLength) {
    return absl::StrCat("the host has ", host.size(), " characters: at most ", kMaxHostnameLength);
  }
  const std::vector<absl::string_view> labels = absl::StrSplit(host, '.');
  bool all_numeric = true;
  for (absl::string_view label : labels) all_numeric = all_numeric && AllDigits(label);
  if (all_numeric) {
    if (labels.size() != 4) return "the host looks like an IPv4 address but does not have 4 parts";
    for (absl::string_view part : labels) {
      if (!ParseCanonicalNumber(part, 255)) {
        return absl::StrCat("the IPv4 part ", Quoted(part), " is not a number from 0 to 255");
      }
    }
    return "";
  }
  for (absl::string_view label : labels) {
    if (label.empty()) return "the host has an empty label (two dots, or a leading or trailing dot)";
    if (label.size() > kMaxLabelLength) {
      return absl::StrCat("the host label ", Quoted(label), " is longer than ", kMaxLabelLength,
                          " characters");
    }
    for (char c : label) {
      if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '-') {
        return absl::StrCat("the host contains ", Quoted(absl::string_view(&c, 1)),
                            ": a hostname has letters, digits, '-' and '.'");
      }
    }
    if (label.front() == '-' || label.back() == '-') {
      return absl::StrCat("the host label ", Quoted(label), " starts or ends with '-'");
    }
  }
  return "";
}

}  // namespace

const char* JobName(Job job) {
  const auto i = static_cast<int32_t>(job);
  return i >= 0 && i < kNumJobs ? kJobNames[i] : "invalid";
}

absl::StatusOr<Job> JobFromName(absl::string_view name) {
  for (int32_t i = 0; i < kNumJobs; ++i) {
    if (name == kJobNames[i]) return static_cast<Job>(i);
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown job ", Quoted(name), ": expected chief, worker, ps or evaluator"));
}

absl::Status ValidateTaskAddress(absl::string_view entry, absl::string_view address) {
  auto malformed = [&](absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat(entry, " address ", Quoted(address),
                                                   " is malformed: ", why,
                                                   " (expected host:port, host a hostname, "
                                                   "IPv4 address or [IPv6 address])"));
  };
  absl::string_view host;
  absl::string_view port;
  if (!address.empty() && address.front() == '[') {
    const size_t close = address.find(']');
    if (close == absl::string_view::npos) return malformed("the IPv6 address has no closing ']'");
    host = address.substr(1, close - 1);
    const absl::string_view rest = address.substr(close + 1);
    if (rest.empty() || rest.front() != ':') return malformed("no ':port' after the IPv6 address");
    port = rest.substr(1);
    const std::string host_copy(host);
    in6_addr parsed;
    if (host.empty() || host.size() > INET6_ADDRSTRLEN || host_copy.find('\0') != std::string::npos ||
        inet_pton(AF_INET6, host_copy.c_str(), &parsed) != 1) {
      return malformed(absl::StrCat(Quoted(host), " is not an IPv6 address"));
    }
  } else {
    const size_t colon = address.rfind(':');
    if (colon == absl::string_view::npos) return malformed("there is no ':port'");
    host = address.substr(0, colon);
    port = address.substr(colon + 1);
    if (host.find(':') != absl::string_view::npos) {
      return malformed("more than one ':' (write an IPv6 host in brackets: [::1]:port)");
    }
    const std::string problem = HostProblem(host);
    if (!problem.empty()) return malformed(problem);
  }
  if (!ParseCanonicalNumber(port, 65535).value_or(0)) {
    return malformed(absl::StrCat("the port ", Quoted(port), " is not a number from 1 to 65535"));
  }
  return absl::OkStatus();
}

absl::Status ClusterSpec::AddTask(absl::string_view job_name, int64_t index, absl::string_view address) {
  absl::StatusOr<Job> job = JobFromName(job_name);
  if (!job.ok()) return job.status();
  const std::string entry = Entry(*job, index);
  if (index < 0 || index > std::numeric_limits<int32_t>::max()) {
    return absl::InvalidArgumentError(
        absl::StrCat(entry, ": a task index must be from 0 to ", std::numeric_limits<int32_t>::max()));
  }
  const absl::Status address_status = ValidateTaskAddress(entry, address);
  if (!address_status.ok()) return address_status;
  const auto& same_job = job_tasks(*job);
  if (same_job.count(static_cast<int32_t>(index)) != 0) {
    return absl::InvalidArgumentError(absl::StrCat(entry, " is already in the cluster"));
  }
  if (*job == Job::kChief) {
    if (!same_job.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("cluster has two chiefs: ", entry, " ",
                                                     Quoted(address),
                                                     " (a cluster has at most one chief, task 0)"));
    }
    if (index != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(entry, ": the chief must be task 0 (a cluster has at most one chief)"));
    }
  }
  // Host names are case-insensitive: "A:1" and "a:1" are one task's address.
  std::string lowered = absl::AsciiStrToLower(address);
  if (const auto owner = address_owners_.find(lowered); owner != address_owners_.end()) {
    return absl::InvalidArgumentError(absl::StrCat(entry, " address ", Quoted(address),
                                                   " is already used by ",
                                                   Entry(owner->second.job, owner->second.index)));
  }
  jobs_[static_cast<size_t>(*job)].emplace(static_cast<int32_t>(index), std::string(address));
  address_owners_.emplace(std::move(lowered), CurrentTask{*job, static_cast<int32_t>(index)});
  UpdateMaster();
  return absl::OkStatus();
}

absl::Status ClusterSpec::MissingTask(Job job, int64_t index) const {
  const auto& tasks = job_tasks(job);
  if (tasks.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("task type '", JobName(job), "' is not in the cluster"));
  }
  const auto n = static_cast<int64_t>(tasks.size());
  const bool contiguous = tasks.rbegin()->first == n - 1;
  if (contiguous || index < 0) {
    return absl::InvalidArgumentError(absl::StrCat("task index ", index, " is out of range: cluster has ", n,
                                                   " ", n == 1 ? kJobNounSingular[static_cast<int>(job)]
                                                               : kJobNounPlural[static_cast<int>(job)]));
  }
  std::vector<int32_t> indices;
  for (const auto& [i, unused] : tasks) indices.push_back(i);
  return absl::InvalidArgumentError(absl::StrCat("task index ", index, " is not in the cluster: the ",
                                                 JobName(job), " task indices are ",
                                                 absl::StrJoin(indices, ", ")));
}

absl::Status ClusterSpec::SetTask(absl::string_view job_name, int64_t index) {
  absl::StatusOr<Job> job = JobFromName(job_name);
  if (!job.ok()) return job.status();
  const auto& tasks = job_tasks(*job);
  if (index < 0 || index > std::numeric_limits<int32_t>::max() ||
      tasks.count(static_cast<int32_t>(index)) == 0) {
    return MissingTask(*job, index);
  }
  task_ = CurrentTask{*job, static_cast<int32_t>(index)};
  UpdateMaster();
  return absl::OkStatus();
}

void ClusterSpec::set_rpc_layer(std::string rpc_layer) {
  rpc_layer_ = std::move(rpc_layer);
  UpdateMaster();
}

void ClusterSpec::UpdateMaster() {
  master_.clear();
  // TF returns "" for a cluster of one task: there is no other task to connect to.
  if (!task_ || address_owners_.size() <= 1) return;
  const std::string& address = job_tasks(task_->job).at(task_->index);
  master_ = rpc_layer_.empty() ? address : absl::StrCat(rpc_layer_, "://", address);
}

bool ClusterSpec::empty() const {
  for (const auto& tasks : jobs_) {
    if (!tasks.empty()) return false;
  }
  return true;
}

namespace {
absl::Status NoTask() {
  return absl::FailedPreconditionError("the cluster has no current task: set one first");
}
}  // namespace

absl::StatusOr<Job> ClusterSpec::task_type() const {
  if (!task_) return NoTask();
  return task_->job;
}

absl::StatusOr<int32_t> ClusterSpec::task_index() const {
  if (!task_) return NoTask();
  return task_->index;
}

absl::StatusOr<bool> ClusterSpec::is_chief() const {
  if (!task_) return NoTask();
  if (task_->job == Job::kEvaluator) return true;
  const absl::StatusOr<ClusterTask> chief_task = chief();
  return chief_task.ok() && chief_task->job == task_->job && chief_task->index == task_->index;
}

std::string TaskName(Job job, int32_t index) { return absl::StrCat(JobName(job), ":", index); }

std::string ClusterTask::name() const { return TaskName(job, index); }

HostPort SplitTaskAddress(absl::string_view address) {
  const size_t colon = address.rfind(':');
  absl::string_view host = address.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  return HostPort{std::string(host), std::string(address.substr(colon + 1))};
}

std::string DialAddress(absl::string_view address) {
  const HostPort split = SplitTaskAddress(address);
  if (split.host == "localhost") return absl::StrCat("127.0.0.1:", split.port);
  return std::string(address);
}

std::string ListenHost(absl::string_view address) {
  HostPort split = SplitTaskAddress(address);
  if (split.host == "localhost") return "127.0.0.1";
  return split.host;
}

std::vector<ClusterTask> ClusterSpec::tasks(Job job) const {
  std::vector<ClusterTask> found;
  for (const auto& [index, address] : job_tasks(job)) found.push_back(ClusterTask{job, index, address});
  return found;
}

std::vector<ClusterTask> ClusterSpec::workers() const {
  std::vector<ClusterTask> found = tasks(Job::kChief);
  for (ClusterTask& task : tasks(Job::kWorker)) found.push_back(std::move(task));
  return found;
}

absl::StatusOr<ClusterTask> ClusterSpec::chief() const {
  for (const ClusterTask& task : workers()) {
    if (task.job == Job::kChief || task.index == 0) return task;
  }
  return absl::InvalidArgumentError(
      "the cluster has no chief: the coordination service runs on the \"chief\" task, or on worker 0 "
      "when there is no chief task");
}

absl::StatusOr<ClusterTask> ClusterSpec::current_task() const {
  if (!task_) return NoTask();
  return ClusterTask{task_->job, task_->index, job_tasks(task_->job).at(task_->index)};
}

absl::StatusOr<int32_t> ClusterSpec::worker_rank(absl::string_view what) const {
  if (!task_) return NoTask();
  const std::vector<ClusterTask> all = workers();
  for (size_t rank = 0; rank < all.size(); ++rank) {
    if (all[rank].job == task_->job && all[rank].index == task_->index) return static_cast<int32_t>(rank);
  }
  return absl::InvalidArgumentError(
      absl::StrCat("task ", TaskName(task_->job, task_->index), " is not a worker: ", what));
}

absl::StatusOr<int32_t> ClusterSpec::worker_count() const {
  if (!task_) return num_workers();
  switch (task_->job) {
    case Job::kEvaluator:
      // The evaluator runs in its own cluster (or its own partition of one).
      return num_tasks(Job::kEvaluator);
    case Job::kPs:
      return absl::InvalidArgumentError(absl::StrCat(
          "task ", TaskName(task_->job, task_->index),
          " is a ps task, which has no worker count: TF's multi_worker_util.worker_count "
          "counts workers for the chief, worker and evaluator tasks only"));
    default:
      return num_workers();
  }
}

int32_t ClusterSpec::num_workers() const { return num_tasks(Job::kChief) + num_tasks(Job::kWorker); }

int32_t ClusterSpec::num_tasks(Job job) const { return static_cast<int32_t>(job_tasks(job).size()); }

absl::StatusOr<int32_t> ClusterSpec::num_tasks(absl::string_view job_name) const {
  absl::StatusOr<Job> job = JobFromName(job_name);
  if (!job.ok()) return job.status();
  return num_tasks(*job);
}

absl::StatusOr<const std::string*> ClusterSpec::task_address(absl::string_view job_name, int64_t index) const {
  absl::StatusOr<Job> job = JobFromName(job_name);
  if (!job.ok()) return job.status();
  const auto& tasks = job_tasks(*job);
  if (index < 0 || index > std::numeric_limits<int32_t>::max()) return MissingTask(*job, index);
  const auto it = tasks.find(static_cast<int32_t>(index));
  if (it == tasks.end()) return MissingTask(*job, index);
  return &it->second;
}

absl::StatusOr<int32_t> ClusterSpec::task_index_at(absl::string_view job_name, int64_t position) const {
  absl::StatusOr<Job> job = JobFromName(job_name);
  if (!job.ok()) return job.status();
  const auto& tasks = job_tasks(*job);
  if (position < 0 || position >= static_cast<int64_t>(tasks.size())) {
    return absl::InvalidArgumentError(absl::StrCat("position ", position, " is out of range: cluster has ",
                                                   tasks.size(), " ",
                                                   tasks.size() == 1 ? kJobNounSingular[static_cast<int>(*job)]
                                                                     : kJobNounPlural[static_cast<int>(*job)]));
  }
  // A job whose indices are 0..n-1 (TF_CONFIG's list form, the usual one) has each task at
  // the position of its index: no walk, so visiting every position stays linear.
  if (tasks.begin()->first == 0 && tasks.rbegin()->first == static_cast<int32_t>(tasks.size()) - 1) {
    return static_cast<int32_t>(position);
  }
  auto it = tasks.begin();
  std::advance(it, position);
  return it->first;
}

std::vector<ClusterTask> ClusterSpec::tasks() const {
  std::vector<ClusterTask> all;
  for (int32_t j = 0; j < kNumJobs; ++j) {
    for (ClusterTask& task : tasks(static_cast<Job>(j))) all.push_back(std::move(task));
  }
  return all;
}

}  // namespace distribute
