// Where workers run (core/backend/worker_place.h): CPU lists in the kernel's form, both
// ways, with every malformed one refused; and the count behind Gloo's background loop:
// workers of one machine (boot id, whatever the hostname and network namespace) whose
// CPUs meet compete for the union of their CPUs, workers pinned apart do not.
#include "core/backend/worker_place.h"

#include <gtest/gtest.h>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"

#include "status_test_util.h"

namespace distribute {
namespace {

using ::distribute::testing::HasError;
using ::distribute::testing::IsOk;

CpuSet Cpus(std::initializer_list<size_t> cpus) {
  CpuSet set;
  for (size_t cpu : cpus) set.set(cpu);
  return set;
}

TEST(WorkerPlaceTest, CpuListsRoundTripInTheKernelsForm) {
  EXPECT_EQ(FormatCpuList(CpuSet{}), "");
  EXPECT_EQ(FormatCpuList(Cpus({0})), "0");
  EXPECT_EQ(FormatCpuList(Cpus({0, 1, 2, 3, 8, 10, 11})), "0-3,8,10-11");
  EXPECT_EQ(FormatCpuList(Cpus({kMaxCpus - 2, kMaxCpus - 1})), "1022-1023");
  for (const char* list : {"", "0", "0-3,8,10-11", "5,7", "1023", "0-1023"}) {
    absl::StatusOr<CpuSet> parsed = ParseCpuList(list);
    ASSERT_TRUE(IsOk(parsed)) << list;
    EXPECT_EQ(FormatCpuList(*parsed), list);
  }
  EXPECT_EQ(ParseCpuList("0-1023")->count(), kMaxCpus);
}

TEST(WorkerPlaceTest, MalformedCpuListsAreRefused) {
  for (const char* list : {"x", "1-", "-1", "3-1", "1024", "0-1024", "1,,2", "1-2-3", ",", "1 ", " 1", "+1", "99999999999"}) {
    EXPECT_TRUE(HasError(ParseCpuList(list), absl::StatusCode::kInvalidArgument, {"CPU list"})) << list;
  }
  // More ranges than CPUs cannot be well formed (a peer's entry is bounded by that).
  std::string many = "0";
  for (size_t i = 0; i < kMaxCpus; ++i) many += ",0-1023";
  EXPECT_TRUE(HasError(ParseCpuList(many), absl::StatusCode::kInvalidArgument, {"CPU list of 1025 ranges"}));
  std::string every;
  for (size_t cpu = 0; cpu < kMaxCpus; cpu += 2) every += (every.empty() ? "" : ",") + std::to_string(cpu);
  ASSERT_TRUE(IsOk(ParseCpuList(every)));  // 512 single CPUs: the longest real list
  EXPECT_EQ(ParseCpuList(every)->count(), kMaxCpus / 2);
}

// The kernel says the same in its own words: Cpus_allowed_list of this thread's status.
TEST(WorkerPlaceTest, ThisPlaceIsTheCallingThreadsAffinity) {
  std::ifstream status("/proc/thread-self/status");
  ASSERT_TRUE(status.good());
  std::string line;
  std::string allowed;
  while (std::getline(status, line)) {
    if (line.rfind("Cpus_allowed_list:", 0) == 0) allowed = std::string(absl::StripAsciiWhitespace(line.substr(18)));
  }
  ASSERT_FALSE(allowed.empty());
  const WorkerPlace here = ThisWorkerPlace();
  EXPECT_EQ(FormatCpuList(here.cpus), allowed);
  EXPECT_FALSE(here.host.empty());
}

// Four cores per machine; two busy threads per worker.
TEST(WorkerPlaceTest, WorkersOfOneMachineWhoseCpusMeetCompete) {
  const CpuSet all = Cpus({0, 1, 2, 3});
  // Machine boot1: two containers (hostnames a and c) with every core; machine boot2 alone.
  const std::vector<WorkerPlace> shared = {{"a boot1 net:[1]", all}, {"b boot2 net:[2]", all},
                                           {"a boot1 net:[1]", all}, {"c boot1 net:[3]", all}};
  EXPECT_TRUE(BusyThreadsOutnumberCores(shared, 0, 2));   // 3 workers x 2 > 4 cores
  EXPECT_FALSE(BusyThreadsOutnumberCores(shared, 1, 2));  // alone on its machine: 2 <= 4
  EXPECT_TRUE(BusyThreadsOutnumberCores(shared, 3, 2));
  EXPECT_FALSE(BusyThreadsOutnumberCores(shared, 0, 1));  // one thread each: 3 <= 4
  // Pinned apart: two cores each, nobody competes; pinned to one core each, the caller and
  // the loop of each worker compete for it.
  const std::vector<WorkerPlace> pinned = {{"a boot1 net:[1]", Cpus({0, 1})}, {"a boot1 net:[1]", Cpus({2, 3})}};
  EXPECT_FALSE(BusyThreadsOutnumberCores(pinned, 0, 2));
  EXPECT_FALSE(BusyThreadsOutnumberCores(pinned, 1, 2));
  const std::vector<WorkerPlace> single = {{"a boot1 net:[1]", Cpus({0})}, {"a boot1 net:[1]", Cpus({1})}};
  EXPECT_TRUE(BusyThreadsOutnumberCores(single, 0, 2));
  // Overlapping: worker 1 (cores 0-2) meets both others (3 workers x 2 > 3 cores); worker
  // 0 (core 0) meets worker 1 only (2 x 2 > the 3 cores 0-2).
  const std::vector<WorkerPlace> overlapping = {{"h b n", Cpus({0})}, {"h b n", Cpus({0, 1, 2})}, {"h b n", Cpus({2})}};
  EXPECT_TRUE(BusyThreadsOutnumberCores(overlapping, 1, 2));
  EXPECT_TRUE(BusyThreadsOutnumberCores(overlapping, 0, 2));
  EXPECT_FALSE(BusyThreadsOutnumberCores(overlapping, 0, 1));  // 2 threads on cores 0-2
  // A worker pinned to one core beside one with 64: its own two threads share that core.
  CpuSet many;
  for (size_t cpu = 0; cpu < 64; ++cpu) many.set(cpu);
  const std::vector<WorkerPlace> lopsided = {{"h b n", Cpus({0})}, {"h b n", many}};
  EXPECT_TRUE(BusyThreadsOutnumberCores(lopsided, 0, 2));
  EXPECT_FALSE(BusyThreadsOutnumberCores(lopsided, 1, 2));  // 2 x 2 <= 64
  EXPECT_FALSE(BusyThreadsOutnumberCores(lopsided, 0, 1));
  // Without a boot id only equal identities share a machine.
  const std::vector<WorkerPlace> no_boot_id = {{"d  net:[4]", all}, {"d  net:[4]", all}, {"d  net:[5]", all}};
  EXPECT_FALSE(BusyThreadsOutnumberCores(no_boot_id, 0, 2));  // 2 x 2 <= 4
  EXPECT_FALSE(BusyThreadsOutnumberCores(no_boot_id, 2, 2));
  EXPECT_TRUE(BusyThreadsOutnumberCores(no_boot_id, 0, 3));   // 2 x 3 > 4
}

TEST(WorkerPlaceTest, ARankOutsideThePlacesIsNeverCrowded) {
  const std::vector<WorkerPlace> places = {{"a b n", Cpus({0})}};
  EXPECT_FALSE(BusyThreadsOutnumberCores(places, -1, 2));
  EXPECT_FALSE(BusyThreadsOutnumberCores(places, 1, 2));
  EXPECT_FALSE(BusyThreadsOutnumberCores({}, 0, 2));
}

// A worker that could not tell its CPUs may run on any: the cores counted are this
// process's then.
TEST(WorkerPlaceTest, UnknownCpusCountThisProcesssCores) {
  const size_t cores = ThisWorkerPlace().cpus.count();
  ASSERT_GT(cores, 0u);
  std::vector<WorkerPlace> places(cores, WorkerPlace{"a b n", CpuSet{}});
  EXPECT_TRUE(BusyThreadsOutnumberCores(places, 0, 2));   // 2 x cores > cores
  EXPECT_FALSE(BusyThreadsOutnumberCores(places, 0, 1));  // cores <= cores
}

}  // namespace
}  // namespace distribute
