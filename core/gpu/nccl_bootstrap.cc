#include "core/gpu/nccl_bootstrap.h"

#include <chrono>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/device/gpu_runtime.h"
#include "core/util/status_macros.h"

namespace distribute {
namespace {

std::string Key(const NcclJob& job, absl::string_view what) {
  return absl::StrCat(job.key_prefix, "nccl/", what);
}

// Every worker must bring as many GPU replicas: each publishes its count and reads all.
absl::Status AgreeOnReplicaCount(const NcclJob& job, int32_t mine, const Deadline& deadline) {
  RETURN_IF_ERROR(job.coordination->Set(Key(job, absl::StrCat("gpus/", job.worker)), absl::StrCat(mine)));
  for (int32_t w = 0; w < job.num_workers; ++w) {
    ASSIGN_OR_RETURN(const std::string text, job.coordination->Get(Key(job, absl::StrCat("gpus/", w)), deadline));
    int32_t theirs = 0;
    if (!absl::SimpleAtoi(text, &theirs) || theirs != mine) {
      return absl::InvalidArgumentError(absl::StrCat(
          "worker ", w, " has ", text, " GPU replica(s) and worker ", job.worker, " has ", mine,
          ": every worker of a MultiWorkerMirroredStrategy must bring as many GPUs"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<GpuRuntime::UniqueId> SharedUniqueId(const NcclJob& job, const Deadline& deadline) {
  const GpuRuntime& gpu = GpuRuntime::Get();
  GpuRuntime::UniqueId id{};
  if (job.worker == 0) {
    ASSIGN_OR_RETURN(id, gpu.NewUniqueId());
    RETURN_IF_ERROR(job.coordination->Set(
        Key(job, "id"), absl::string_view(reinterpret_cast<const char*>(id.data()), id.size())));
    return id;
  }
  ASSIGN_OR_RETURN(const std::string bytes, job.coordination->Get(Key(job, "id"), deadline));
  if (bytes.size() != id.size()) {
    return absl::InternalError(absl::StrCat("the NCCL unique id in the key-value store has ", bytes.size(),
                                            " bytes, expected ", id.size()));
  }
  std::copy(bytes.begin(), bytes.end(), reinterpret_cast<char*>(id.data()));
  return id;
}

}  // namespace

absl::Status ExplainNcclCreationFailure(const absl::Status& failure) {
  if (failure.ok() || !absl::StrContains(failure.message(), "Duplicate GPU")) return failure;
  return absl::FailedPreconditionError(absl::StrCat(
      "two workers of this job use the same GPU, which NCCL refuses: give each worker GPUs of its own "
      "(on one machine, CUDA_VISIBLE_DEVICES per worker); ", failure.message()));
}

absl::StatusOr<std::unique_ptr<NcclCommunicators>> ConnectNcclJob(const NcclJob& job,
                                                                  std::span<const int32_t> devices,
                                                                  const Deadline& deadline) {
  const GpuRuntime& gpu = GpuRuntime::Get();
  RETURN_IF_ERROR(gpu.CheckReplicaSupport());
  const auto local = static_cast<int32_t>(devices.size());
  RETURN_IF_ERROR(AgreeOnReplicaCount(job, local, deadline));
  ASSIGN_OR_RETURN(const GpuRuntime::UniqueId id, SharedUniqueId(job, deadline));
  const int32_t nranks = job.num_workers * local;
  // Each rank is created from a thread of its own, as NCCL wants for the ranks of one
  // process without a group call; creation does not block (the plugin's non-blocking
  // config), so the threads are short.
  std::vector<void*> comms(devices.size(), nullptr);
  std::vector<absl::Status> started(devices.size());
  {
    std::vector<std::thread> threads;
    for (int32_t r = 0; r < local; ++r) {
      threads.emplace_back([&, r] {
        absl::StatusOr<void*> comm = gpu.InitCommunicatorRank(devices[static_cast<size_t>(r)], nranks, id,
                                                              job.worker * local + r);
        if (comm.ok()) {
          comms[static_cast<size_t>(r)] = *comm;
        } else {
          started[static_cast<size_t>(r)] = comm.status();
        }
      });
    }
    for (std::thread& t : threads) t.join();
  }
  auto abort_all = [&] {
    for (void* comm : comms) gpu.AbortCommunicator(comm);
  };
  for (const absl::Status& s : started) {
    if (!s.ok()) {
      abort_all();
      return ExplainNcclCreationFailure(s);
    }
  }
  // Every rank of the job must join before any is ready: poll until then.
  auto wait = std::chrono::microseconds(100);
  while (true) {
    std::vector<int32_t> pending;
    for (int32_t r = 0; r < local; ++r) {
      absl::StatusOr<bool> ready = gpu.CommunicatorReady(comms[static_cast<size_t>(r)]);
      if (!ready.ok()) {
        abort_all();
        return ExplainNcclCreationFailure(ready.status());
      }
      if (!*ready) pending.push_back(job.worker * local + r);
    }
    if (pending.empty()) break;
    if (deadline.Expired()) {
      abort_all();
      return absl::DeadlineExceededError(absl::StrCat(
          "the NCCL communicator of ", nranks, " ranks (", job.num_workers, " workers x ", local,
          " GPUs) was not complete within the ", deadline.timeout_ms, " ms deadline; this worker's ranks ",
          absl::StrJoin(pending, ", "), " were still waiting for the others"));
    }
    std::this_thread::sleep_for(wait);
    wait = std::min(wait * 2, std::chrono::microseconds(10'000));
  }
  return NcclCommunicators::Adopt(std::move(comms));
}

}  // namespace distribute
