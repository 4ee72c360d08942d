#include "core/cluster/slurm_resolver.h"

#include <algorithm>
#include <cctype>
#include <optional>

#include "absl/strings/str_cat.h"
#include "core/cluster/slurm_hostlist.h"
#include "core/util/quote.h"
#include "core/util/status_macros.h"

namespace distribute {
namespace {

struct Variable {
  std::string name;
  std::string value;
};

// The first of `names` that is set (its name and value), or kNotFound naming them all.
absl::StatusOr<Variable> FirstSet(const EnvironmentLookup& environment, std::initializer_list<const char*> names) {
  std::string tried;
  for (const char* name : names) {
    if (std::optional<std::string> value = environment(name); value.has_value()) return Variable{name, *value};
    absl::StrAppend(&tried, tried.empty() ? "" : " or ", name);
  }
  return absl::NotFoundError(absl::StrCat("the Slurm environment has no ", tried,
                                          " (run the program with srun, inside a Slurm allocation)"));
}

absl::StatusOr<int64_t> NonNegative(const Variable& variable) {
  const std::string& text = variable.value;
  if (text.empty() || text.size() > 9 ||
      !std::all_of(text.begin(), text.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); })) {
    return absl::InvalidArgumentError(
        absl::StrCat(variable.name, " is ", Quoted(text), ": a number from 0 to 999999999 was expected"));
  }
  return std::stoll(text);
}

}  // namespace

absl::StatusOr<ClusterSpec> ClusterSpecFromSlurm(const SlurmSettings& given, const EnvironmentLookup& environment) {
  SlurmSettings settings = given;
  if (settings.port_base == 0) {
    settings.port_base = kDefaultSlurmPortBase;
    if (std::optional<std::string> text = environment("DIST_SLURM_PORT_BASE"); text.has_value()) {
      ASSIGN_OR_RETURN(const int64_t base, NonNegative(Variable{"DIST_SLURM_PORT_BASE", *text}));
      if (base < 1 || base > 65535) {
        return absl::InvalidArgumentError(absl::StrCat("DIST_SLURM_PORT_BASE is ", base, " (1 to 65535)"));
      }
      settings.port_base = static_cast<int32_t>(base);
    }
  }
  if (settings.port_base < 1 || settings.port_base > 65535) {
    return absl::InvalidArgumentError(absl::StrCat("port_base is ", settings.port_base, " (1 to 65535)"));
  }
  if (settings.tasks_per_node < 0) {
    return absl::InvalidArgumentError(absl::StrCat("tasks_per_node is ", settings.tasks_per_node,
                                                   ": expected 0 (Slurm's count) or more"));
  }
  ASSIGN_OR_RETURN(const Variable rank_variable, FirstSet(environment, {"SLURM_PROCID"}));
  ASSIGN_OR_RETURN(const int64_t rank, NonNegative(rank_variable));
  ASSIGN_OR_RETURN(const Variable tasks_variable, FirstSet(environment, {"SLURM_STEP_NUM_TASKS", "SLURM_NTASKS"}));
  ASSIGN_OR_RETURN(const int64_t num_tasks, NonNegative(tasks_variable));
  if (num_tasks < 1 || num_tasks > static_cast<int64_t>(kMaxSlurmHosts)) {
    return absl::InvalidArgumentError(
        absl::StrCat(tasks_variable.name, " is ", num_tasks, " (1 to ", kMaxSlurmHosts, ")"));
  }
  if (rank >= num_tasks) {
    return absl::InvalidArgumentError(absl::StrCat(rank_variable.name, " is ", rank, " but ", tasks_variable.name,
                                                   " says the step runs ", num_tasks, " tasks"));
  }
  ASSIGN_OR_RETURN(const Variable nodes_variable,
                   FirstSet(environment, {"SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST"}));
  ASSIGN_OR_RETURN(const std::vector<std::string> hosts, ExpandSlurmHostlist(nodes_variable.name, nodes_variable.value));
  std::vector<int32_t> per_node;
  if (settings.tasks_per_node > 0) {
    per_node.assign(hosts.size(), settings.tasks_per_node);
  } else {
    ASSIGN_OR_RETURN(const Variable per_node_variable,
                     FirstSet(environment, {"SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE"}));
    ASSIGN_OR_RETURN(per_node, ExpandSlurmTasksPerNode(per_node_variable.name, per_node_variable.value));
    if (per_node.size() != hosts.size()) {
      return absl::InvalidArgumentError(absl::StrCat(per_node_variable.name, " counts tasks on ", per_node.size(),
                                                     " nodes but ", nodes_variable.name, " names ", hosts.size()));
    }
  }

  // The jobs in name order, as TF sorts them.
  std::vector<SlurmJob> jobs = settings.jobs;
  if (jobs.empty()) jobs.push_back(SlurmJob{"worker", static_cast<int32_t>(num_tasks)});
  int64_t asked = 0;
  for (const SlurmJob& job : jobs) {
    RETURN_IF_ERROR(JobFromName(job.name).status());
    if (job.tasks < 1) {
      return absl::InvalidArgumentError(absl::StrCat("job ", Quoted(job.name), " has ", job.tasks,
                                                     " tasks: expected at least 1"));
    }
    asked += job.tasks;
  }
  std::sort(jobs.begin(), jobs.end(), [](const SlurmJob& a, const SlurmJob& b) { return a.name < b.name; });
  for (size_t i = 1; i < jobs.size(); ++i) {
    if (jobs[i].name == jobs[i - 1].name) {
      return absl::InvalidArgumentError(absl::StrCat("job ", Quoted(jobs[i].name), " is given twice"));
    }
  }
  if (asked != num_tasks) {
    return absl::InvalidArgumentError(absl::StrCat("the jobs ask for ", asked, " tasks but ", tasks_variable.name,
                                                   " says the step runs ", num_tasks));
  }

  // Task slots: each node's tasks in node order, task j at port_base + j.
  std::vector<std::string> addresses;
  for (size_t node = 0; node < hosts.size() && static_cast<int64_t>(addresses.size()) < num_tasks; ++node) {
    for (int32_t j = 0; j < per_node[node] && static_cast<int64_t>(addresses.size()) < num_tasks; ++j) {
      const int64_t port = int64_t{settings.port_base} + j;
      if (port > 65535) {
        return absl::InvalidArgumentError(absl::StrCat("node ", Quoted(hosts[node]), " runs ", per_node[node],
                                                       " tasks: port ", port, " is past 65535 (port_base ",
                                                       settings.port_base, ")"));
      }
      addresses.push_back(absl::StrCat(hosts[node], ":", port));
    }
  }
  if (static_cast<int64_t>(addresses.size()) < num_tasks) {
    return absl::InvalidArgumentError(absl::StrCat("the nodes of ", nodes_variable.name, " offer ", addresses.size(),
                                                   " task slots but the step runs ", num_tasks, " tasks"));
  }

  ClusterSpec spec;
  int64_t next = 0;
  std::optional<std::pair<std::string, int64_t>> current;
  for (const SlurmJob& job : jobs) {
    for (int32_t index = 0; index < job.tasks; ++index, ++next) {
      RETURN_IF_ERROR(spec.AddTask(job.name, index, addresses[static_cast<size_t>(next)]));
      if (next == rank) current.emplace(job.name, index);
    }
  }
  RETURN_IF_ERROR(spec.SetTask(current->first, current->second));
  return spec;
}

}  // namespace distribute
