// Fuzz target for Slurm's hostlist and tasks-per-node syntax and the resolver built on
// them. The input is "<nodelist>\n<tasks per node>". Any input must give host names made
// of name characters (at most kMaxSlurmHosts), counts >= 1, or an InvalidArgument naming
// the variable; the resolver, given those as a 2-task step, must give a 2-worker cluster
// with distinct addresses or an error. Built with -fsanitize=fuzzer under clang, and with
// tests/core/fuzz_replay_main.cc as a corpus-replay test under any compiler.
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/string_view.h"
#include "core/cluster/slurm_hostlist.h"
#include "core/cluster/slurm_resolver.h"

namespace {

[[noreturn]] void Fail(const char* what, const absl::Status& status = absl::OkStatus()) {
  std::fprintf(stderr, "slurm_fuzz: %s: %s\n", what, status.ToString().c_str());
  std::abort();
}

void CheckError(const absl::Status& status, absl::string_view prefix) {
  if (status.code() != absl::StatusCode::kInvalidArgument) Fail("an error that is not InvalidArgument", status);
  if (!absl::StartsWith(status.message(), prefix)) Fail("an error that does not name the variable", status);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  const size_t newline = input.find('\n');
  const std::string nodes = input.substr(0, newline);
  const std::string per_node = newline == std::string::npos ? "1" : input.substr(newline + 1);

  absl::StatusOr<std::vector<std::string>> hosts = distribute::ExpandSlurmHostlist("NODES", nodes);
  if (hosts.ok()) {
    if (hosts->empty() || hosts->size() > distribute::kMaxSlurmHosts) Fail("a host count out of bounds");
    for (const std::string& host : *hosts) {
      if (host.empty()) Fail("an empty host name");
      for (char c : host) {
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '.' && c != '_') Fail("a bad character");
      }
    }
  } else {
    CheckError(hosts.status(), "NODES: ");
  }
  absl::StatusOr<std::vector<int32_t>> counts = distribute::ExpandSlurmTasksPerNode("TASKS", per_node);
  if (counts.ok()) {
    if (counts->empty() || counts->size() > distribute::kMaxSlurmHosts) Fail("a node count out of bounds");
    for (int32_t c : *counts) {
      if (c < 1) Fail("a node with no task");
    }
  } else {
    CheckError(counts.status(), "TASKS: ");
  }

  const std::map<std::string, std::string> env = {{"SLURM_PROCID", "1"},
                                                  {"SLURM_STEP_NUM_TASKS", "2"},
                                                  {"SLURM_STEP_NODELIST", nodes},
                                                  {"SLURM_STEP_TASKS_PER_NODE", per_node}};
  absl::StatusOr<distribute::ClusterSpec> spec = distribute::ClusterSpecFromSlurm(
      distribute::SlurmSettings{}, [&env](const char* name) -> std::optional<std::string> {
        auto it = env.find(name);
        if (it == env.end()) return std::nullopt;
        return it->second;
      });
  if (spec.ok()) {
    if (spec->num_workers() != 2) Fail("a 2-task step that is not 2 workers");
    absl::StatusOr<const std::string*> a = spec->task_address("worker", 0);
    absl::StatusOr<const std::string*> b = spec->task_address("worker", 1);
    if (!a.ok() || !b.ok() || **a == **b) Fail("workers without distinct addresses");
  } else if (spec.status().code() != absl::StatusCode::kInvalidArgument) {
    Fail("a resolver error that is not InvalidArgument", spec.status());
  }
  return 0;
}
