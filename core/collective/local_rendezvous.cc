#include "core/collective/local_rendezvous.h"

#include <algorithm>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/util/status_macros.h"

namespace distribute {

LocalRendezvous::LocalRendezvous(int32_t replicas)
    : n_(replicas),
      barrier_(replicas),
      calls_(static_cast<size_t>(replicas)),
      stages_(AllReduceStages::UsefulFor(replicas) ? std::make_unique<AllReduceStages>(replicas, barrier_)
                                                   : nullptr) {}

absl::Status LocalRendezvous::Publish(int32_t replica, const PublishedCall& call,
                                      const absl::Status& local_check, const Deadline& deadline) {
  // A failure is published in place of the call, so that every replica reports it.
  const PublishedCall failure = PublishedCall::Failure(&local_check);
  Post(replica, local_check.ok() ? call : failure);
  RETURN_IF_ERROR(barrier_.Arrive(replica, deadline));
  return Agree(replica, deadline);
}

absl::StatusOr<bool> LocalRendezvous::PublishAllReduce(int32_t replica, const PublishedCall& call,
                                                       const absl::Status& local_check,
                                                       bool may_stage, const Deadline& deadline) {
  if (!may_stage || stages_ == nullptr || !local_check.ok() || !AllReduceStages::Fits(call)) {
    RETURN_IF_ERROR(Publish(replica, call, local_check, deadline));
    return false;
  }
  // Stable until this replica arrives: the generation moves only when all have.
  const uint64_t generation = barrier_.generation(replica);
  stages_->Stage(replica, generation, call);
  Post(replica, call);
  RETURN_IF_ERROR(barrier_.Arrive(replica, deadline));
  stages_->Prefetch(replica, generation, call);
  if (stages_->AllAgree(generation)) {
    stages_->Reduce(generation, call.op, call.outputs);
    return true;
  }
  // Some replica did not stage this call, or staged another: the usual checks name them
  // (every replica is still inside its call, so every published call is still valid).
  RETURN_IF_ERROR(Agree(replica, deadline));
  return false;
}

void LocalRendezvous::Post(int32_t replica, const PublishedCall& call) {
  CallSlot& slot = calls_[static_cast<size_t>(replica)];
  slot.call = &call;
  const size_t inputs = std::min(call.inputs.size(), kSlotTensors);
  const size_t outputs = std::min(call.outputs.size(), kSlotTensors);
  for (size_t t = 0; t < inputs; ++t) slot.input_data[t] = call.inputs[t].data();
  for (size_t t = 0; t < outputs; ++t) slot.output_data[t] = call.outputs[t].data();
}

absl::Status LocalRendezvous::Agree(int32_t replica, const Deadline& deadline) {
  absl::Status agreement = CheckAgreement();
  if (!agreement.ok()) {
    // Every replica computed the same error; meet once more so nobody reuses its call
    // (or `failure`, on this stack) while another still reads it.
    RETURN_IF_ERROR(barrier_.Arrive(replica, deadline));
  }
  return agreement;
}

absl::Status LocalRendezvous::CheckAgreement() const {
  // A replica that failed its own checks fails the call for everyone, with its reason.
  std::vector<std::string> failures;
  absl::StatusCode code = absl::StatusCode::kOk;
  for (int32_t q = 0; q < n_; ++q) {
    if (calls_[q].call->kind != CallKind::kError) continue;
    if (code == absl::StatusCode::kOk) code = calls_[q].call->error->code();
    failures.push_back(absl::StrCat("replica ", q, ": ", calls_[q].call->error->message()));
  }
  if (!failures.empty()) return absl::Status(code, absl::StrJoin(failures, "; "));
  bool same = true;
  for (int32_t q = 1; q < n_ && same; ++q) same = calls_[q].call->SameCallAs(*calls_[0].call);
  if (same) return absl::OkStatus();
  // Group replicas by what they called, in order of first appearance.
  std::vector<std::pair<std::string, std::vector<int32_t>>> groups;
  for (int32_t q = 0; q < n_; ++q) {
    const std::string described = calls_[q].call->Describe();
    auto it = std::find_if(groups.begin(), groups.end(), [&](auto& g) { return g.first == described; });
    if (it == groups.end()) {
      groups.push_back({described, {q}});
    } else {
      it->second.push_back(q);
    }
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "replicas disagree on the collective call: ",
      absl::StrJoin(groups, "; ", [](std::string* out, const auto& g) {
        absl::StrAppend(out, g.second.size() == 1 ? "replica " : "replicas ",
                        absl::StrJoin(g.second, ", "), " called ", g.first);
      })));
}

absl::StatusOr<std::shared_ptr<const void>> LocalRendezvous::Merge(int32_t replica,
                                                                   const void* payload,
                                                                   int32_t num_args,
                                                                   ErasedMergeFn leader,
                                                                   const Deadline& deadline) {
  const PublishedCall call{.kind = CallKind::kMerge, .parameter = num_args, .payload = payload};
  RETURN_IF_ERROR(Publish(replica, call, absl::OkStatus(), deadline));
  if (replica == 0) {
    std::vector<const void*> payloads(static_cast<size_t>(n_));
    for (int32_t q = 0; q < n_; ++q) payloads[q] = calls_[q].call->payload;
    absl::StatusOr<std::shared_ptr<const void>> result = leader(payloads);
    merge_status_ = result.status();
    merge_result_ = result.ok() ? *std::move(result) : nullptr;
  }
  RETURN_IF_ERROR(barrier_.Arrive(replica, deadline));
  // Read before the next collective's first barrier, after which replica 0 may overwrite.
  if (!merge_status_.ok()) return merge_status_;
  return merge_result_;
}

}  // namespace distribute
