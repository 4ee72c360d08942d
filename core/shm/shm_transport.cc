#include "core/shm/shm_transport.h"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "core/collective/communication_options.h"
#include "core/server/transport_failure.h"
#include "core/server/watched_get.h"
#include "core/shm/doorbell.h"
#include "core/tensor/shared_host_arena.h"
#include "core/util/spin.h"
#include "core/util/status_macros.h"

namespace distribute::shm {
namespace {

// The most workers one host's communicator takes: every worker maps every other's
// segment, so memory grows with the square of the count.
constexpr int32_t kMaxWorkers = 64;
// A record's payload: large enough that per-record costs vanish, small enough that the
// receiver starts copying out while the sender still copies in.
constexpr size_t kMaxRecordPayload = size_t{128} << 10;
// The smallest piece a send is cut into when the ring has little room left: smaller
// records would cost more in headers and wake-ups than they gain in overlap.
constexpr size_t kMinRecordPayload = size_t{4} << 10;
// How long one sleep on the doorbell lasts before the waiter looks at the deadline and at
// its peers again (a peer that died rings nobody).
constexpr int64_t kSleepSliceNs = 10'000'000;

std::string Key(const std::string& prefix, const char* what, int32_t rank) {
  return absl::StrCat(prefix, "shm/", what, "/", rank);
}

// The ring `sender` writes to in `owner`'s segment.
RingControl* RingAt(char* segment, int32_t owner, int32_t sender, uint64_t ring_bytes) {
  return reinterpret_cast<RingControl*>(segment + RingOffset(owner, sender, ring_bytes));
}

char* RingData(RingControl* ring) { return reinterpret_cast<char*>(ring) + sizeof(RingControl); }

// Why `segment` (of the worker at `rank`) is not what this communicator expects, or OK.
absl::Status CheckHeader(const SharedSegment& segment, int32_t rank, int32_t workers, uint64_t ring_bytes) {
  SegmentHeader header;
  std::memcpy(static_cast<void*>(&header), segment.data(), offsetof(SegmentHeader, doorbell));
  if (header.magic != kSegmentMagic || header.workers != workers || header.rank != rank ||
      header.ring_bytes != ring_bytes) {
    return absl::FailedPreconditionError(absl::StrCat(
        "shared memory of worker ", rank, " has an unexpected header (", header.workers, " workers, rank ",
        header.rank, ", rings of ", header.ring_bytes, " bytes)"));
  }
  return absl::OkStatus();
}

// Every worker's shared host arena mapped here (index: rank; null for this worker), when
// every worker could map every other's; empty otherwise (all decide alike from the same
// verdicts, as for the segments; a worker that does not `share_tensors` says so in its
// verdict). Errors only when a worker does not come by `deadline`.
absl::StatusOr<std::vector<std::unique_ptr<PeerArena>>> MapPeerArenas(
    CoordinationClient& coordination, const std::string& key_prefix, int32_t rank,
    const std::vector<std::string>& task_names, const Deadline& deadline, bool share_tensors) {
  const int32_t workers = static_cast<int32_t>(task_names.size());
  std::string verdict = "ok";
  std::string description = "none";
  if (!share_tensors) {
    verdict = absl::StrCat("task ", task_names[rank], " keeps its tensors private (", kSharedTensorsEnv, "=off)");
  } else if (absl::StatusOr<SharedHostArenaInfo> arena = EnableSharedHostArena(); !arena.ok()) {
    verdict = std::string(arena.status().message());
  } else if (absl::StatusOr<std::string> described = PeerArena::Describe(); !described.ok()) {
    verdict = std::string(described.status().message());
  } else {
    description = *described;
  }
  RETURN_IF_ERROR(coordination.Set(Key(key_prefix, "arena", rank), description));
  std::vector<std::unique_ptr<PeerArena>> arenas(static_cast<size_t>(workers));
  for (int32_t w = 0; w < workers; ++w) {
    if (w == rank) continue;
    ASSIGN_OR_RETURN(const std::string theirs, WatchedGet(coordination, Key(key_prefix, "arena", w), deadline));
    if (verdict != "ok") continue;
    absl::StatusOr<std::unique_ptr<PeerArena>> mapped = PeerArena::Map(theirs);
    if (!mapped.ok()) {
      verdict = absl::StrCat("task ", task_names[w], "'s arena: ", mapped.status().message());
      continue;
    }
    arenas[w] = *std::move(mapped);
  }
  RETURN_IF_ERROR(coordination.Set(Key(key_prefix, "arena-mapped", rank), verdict));
  bool all = true;
  for (int32_t w = 0; w < workers; ++w) {
    absl::StatusOr<std::string> theirs = WatchedGet(coordination, Key(key_prefix, "arena-mapped", w), deadline);
    if (!theirs.ok()) return theirs.status();
    all = all && *theirs == "ok";
  }
  if (!all) arenas.clear();
  return arenas;
}

}  // namespace

bool AllOnOneHost(std::span<const std::string> hosts) {
  if (hosts.empty() || hosts.size() > static_cast<size_t>(kMaxWorkers)) return false;
  return std::all_of(hosts.begin(), hosts.end(), [&](const std::string& host) { return host == hosts[0]; });
}

uint64_t ShmTransport::RingBytes(int32_t workers) {
  const uint64_t peers = static_cast<uint64_t>(std::max(workers - 1, 1));
  const uint64_t ring = std::clamp<uint64_t>((uint64_t{4} << 20) / peers, uint64_t{256} << 10, uint64_t{1} << 20);
  return ring / 4096 * 4096;
}

absl::StatusOr<std::unique_ptr<ShmTransport>> ShmTransport::Connect(CoordinationClient& coordination,
                                                                     const std::string& key_prefix,
                                                                     int32_t rank,
                                                                     std::vector<std::string> task_names,
                                                                     const Deadline& deadline,
                                                                     std::optional<bool> crowded,
                                                                     bool share_tensors) {
  const int32_t workers = static_cast<int32_t>(task_names.size());
  if (rank < 0 || rank >= workers) {
    return absl::InvalidArgumentError(absl::StrCat("rank ", rank, " is not in 0..", workers - 1));
  }
  if (workers > kMaxWorkers) {
    return absl::FailedPreconditionError(absl::StrCat(
        "shared memory connects at most ", kMaxWorkers, " workers on a host; this job has ", workers));
  }
  const uint64_t ring_bytes = RingBytes(workers);
  const size_t segment_bytes = SegmentBytes(workers, ring_bytes);

  // Every name this worker heard of is unlinked before Connect returns, on every path: the
  // segments stay mapped, and nothing is left behind for a crash to leak.
  std::vector<std::string> names(static_cast<size_t>(workers));
  struct UnlinkAll {
    std::vector<std::string>& names;
    ~UnlinkAll() {
      for (const std::string& name : names) {
        if (!name.empty()) UnlinkSegment(name);
      }
    }
  } unlink_all{names};

  // The name is published before the segment exists, so a worker that dies between the
  // two leaves a name its peers know and remove.
  names[rank] = NewSegmentName(rank);
  RETURN_IF_ERROR(coordination.Set(Key(key_prefix, "name", rank), names[rank]));
  std::vector<Peer> peers(static_cast<size_t>(workers));
  std::string verdict = "ok";
  absl::StatusOr<std::unique_ptr<SharedSegment>> own = SharedSegment::Create(names[rank], segment_bytes);
  if (own.ok()) {
    auto* header = new ((*own)->data()) SegmentHeader();
    header->magic = kSegmentMagic;
    header->workers = workers;
    header->rank = rank;
    header->ring_bytes = ring_bytes;
    peers[rank].segment = *std::move(own);
    RETURN_IF_ERROR(coordination.Set(Key(key_prefix, "ready", rank), names[rank]));
  } else {
    verdict = std::string(own.status().message());
    RETURN_IF_ERROR(coordination.Set(Key(key_prefix, "ready", rank), absl::StrCat("!", verdict)));
  }

  for (int32_t w = 0; w < workers; ++w) {
    if (w == rank) continue;
    absl::StatusOr<std::string> ready = WatchedGet(coordination, Key(key_prefix, "ready", w), deadline);
    if (!ready.ok()) {
      // Whatever name it published is removed on the way out.
      if (absl::StatusOr<std::string> name = coordination.Get(Key(key_prefix, "name", w), Deadline::AfterMs(1));
          name.ok() && IsSegmentName(*name)) {
        names[w] = *name;
      }
      return absl::Status(ready.status().code(),
                          absl::StrCat("task ", task_names[w], " did not set up its shared memory: ",
                                       ready.status().message()));
    }
    if (!IsSegmentName(*ready)) {
      if (verdict == "ok") verdict = absl::StrCat("task ", task_names[w], " has no shared memory");
      continue;
    }
    names[w] = *ready;
    if (verdict != "ok") continue;
    absl::StatusOr<std::unique_ptr<SharedSegment>> theirs = SharedSegment::Open(*ready, segment_bytes);
    absl::Status usable = theirs.ok() ? CheckHeader(**theirs, w, workers, ring_bytes) : theirs.status();
    if (!usable.ok()) {
      verdict = std::string(usable.message());
      continue;
    }
    peers[w].segment = *std::move(theirs);
  }

  // Everyone says whether it mapped every segment; all decide alike from the same verdicts.
  RETURN_IF_ERROR(coordination.Set(Key(key_prefix, "opened", rank), verdict));
  std::vector<std::string> refusals;
  for (int32_t w = 0; w < workers; ++w) {
    ASSIGN_OR_RETURN(const std::string theirs, WatchedGet(coordination, Key(key_prefix, "opened", w), deadline));
    if (theirs != "ok") refusals.push_back(absl::StrCat("task ", task_names[w], ": ", theirs));
  }
  if (!refusals.empty()) {
    return absl::FailedPreconditionError(absl::StrCat("the workers cannot share memory (",
                                                      absl::StrJoin(refusals, "; "), ")"));
  }

  for (int32_t w = 0; w < workers; ++w) {
    Peer& peer = peers[w];
    peer.header = reinterpret_cast<SegmentHeader*>(peer.segment->data());
    if (w == rank) continue;
    peer.out = RingAt(peer.segment->data(), w, rank, ring_bytes);
    peer.out_data = RingData(peer.out);
    peer.in = RingAt(peers[rank].segment->data(), rank, w, ring_bytes);
    peer.in_data = RingData(peer.in);
  }
  ASSIGN_OR_RETURN(std::vector<std::unique_ptr<PeerArena>> arenas,
                   MapPeerArenas(coordination, key_prefix, rank, task_names, deadline, share_tensors));
  return std::unique_ptr<ShmTransport>(
      new ShmTransport(coordination, rank, std::move(task_names), std::move(peers), std::move(arenas),
                       crowded.value_or(Oversubscribed(workers))));
}

ShmTransport::ShmTransport(CoordinationClient& coordination, int32_t rank,
                           std::vector<std::string> task_names, std::vector<Peer> peers,
                           std::vector<std::unique_ptr<PeerArena>> arenas, bool crowded)
    : coordination_(coordination),
      rank_(rank),
      task_names_(std::move(task_names)),
      peers_(std::move(peers)),
      arenas_(std::move(arenas)),
      self_(peers_[rank].header),
      ring_bytes_(RingBytes(static_cast<int32_t>(task_names_.size()))),
      // A spinning waiter steals the core from the worker it waits for when they share it.
      spin_ns_(crowded ? kYieldBudgetNs : SpinBudgetNs(1)),
      yield_(crowded),
      watcher_(coordination, [this](const absl::Status& death) { OnPeerDeath(death); }) {}

ShmTransport::~ShmTransport() {
  watcher_.Stop();
  Close();
}

std::optional<uint64_t> ShmTransport::SharedPlace(const void* data, size_t bytes) const {
  if (!shares_memory()) return std::nullopt;
  return SharedHostArenaOffset(data, bytes);
}

const char* ShmTransport::PeerBytes(int32_t peer, uint64_t place, size_t bytes) const {
  if (!shares_memory() || peer < 0 || peer >= size() || peer == rank_) return nullptr;
  return arenas_[peer]->At(place, bytes);
}

void ShmTransport::Close() {
  self_->closed.store(1, std::memory_order_seq_cst);
  for (int32_t w = 0; w < size(); ++w) {
    if (w != rank_) Ring(*peers_[w].header);
  }
}

void ShmTransport::OnPeerDeath(const absl::Status& death) {
  {
    MutexLock lock(&died_mu_);
    died_ = death;
  }
  peer_died_ = true;
  Ring(*self_);  // wakes this worker's waiting call
}

absl::Status ShmTransport::Fail(const std::string& error, bool timed_out, const Deadline& deadline) {
  failure_ = ExplainTransportFailure(coordination_, "exchange", error, timed_out, deadline, [&] { Close(); });
  return failure_;
}

absl::StatusOr<bool> ShmTransport::PushSends(int32_t w) {
  Peer& peer = peers_[w];
  if (peer.sends.empty()) return false;
  const uint64_t tail = peer.out->tail.load(std::memory_order_acquire);
  if (tail > peer.out_head || peer.out_head - tail > ring_bytes_) {
    return absl::DataLossError(absl::StrCat("task ", task_names_[w], " corrupted the ring this worker writes to"));
  }
  bool moved = false;
  while (!peer.sends.empty()) {
    Peer::Send& send = peer.sends.front();
    const uint64_t free = ring_bytes_ - (peer.out_head - tail);
    const uint64_t position = peer.out_head % ring_bytes_;
    const uint64_t contiguous = ring_bytes_ - position;
    const size_t remaining = send.end - send.sent;
    const uint64_t wanted = kRecordHeaderBytes + std::min(remaining, kMinRecordPayload);
    const uint64_t room = std::min(free, contiguous);
    char* at = peer.out_data + position;
    if (room < wanted) {
      if (contiguous >= free || contiguous >= wanted) break;  // full until the receiver drains it
      const RecordHeader padding{static_cast<uint32_t>(RecordKind::kPadding), tag_, 0, 0, 0, 0};
      std::memcpy(at, &padding, sizeof padding);
      peer.out_head += contiguous;
      moved = true;
      continue;
    }
    const size_t bytes = std::min({remaining, kMaxRecordPayload, static_cast<size_t>(room - kRecordHeaderBytes)});
    const RecordHeader record{static_cast<uint32_t>(RecordKind::kData), tag_, send.transfer.channel,
                              static_cast<uint32_t>(bytes), send.transfer.bytes, send.sent};
    std::memcpy(at, &record, sizeof record);
    if (bytes > 0) std::memcpy(at + kRecordHeaderBytes, static_cast<const char*>(send.transfer.data) + send.sent, bytes);
    peer.out_head += RoundUpToLine(kRecordHeaderBytes + bytes);
    send.sent += bytes;
    moved = true;
    if (send.sent == send.end) peer.sends.pop_front();
  }
  if (moved) {
    peer.out->head.store(peer.out_head, std::memory_order_release);
    Ring(*peer.header);
  }
  return moved;
}

void ShmTransport::RelayRun(ReceiveProgress& progress, const RecordHeader& record, const char* payload) {
  const Relay& relay = *receives_[progress.index].transfer.relay;
  relay.consume(record.offset, payload, record.bytes);
  // The result goes out after whatever is queued: writing it straight into the ring to
  // the relay's peer when there was room (seldom, at sizes where the rings stay full)
  // measured no faster than this.
  const Transfer message{relay.peer, relay.channel, relay.data, progress.message_bytes};
  peers_[relay.peer].sends.push_back({message, record.offset, record.offset + record.bytes});
}

absl::StatusOr<ReceiveProgress*> ShmTransport::MatchReceive(int32_t w, const RecordHeader& record) {
  // A call's transfers between two workers differ in channel: the first match is the one.
  size_t& hint = peers_[w].receive_hint;
  for (size_t k = 0; k < receives_.size(); ++k) {
    const size_t index = (hint + k) % receives_.size();
    Receive& receive = receives_[index];
    if (receive.progress.done || receive.transfer.peer != w || receive.transfer.channel != record.channel) continue;
    hint = index;
    absl::Status continues = Continues(receive.progress, record);
    if (!continues.ok()) {
      return absl::Status(continues.code(), absl::StrCat("task ", task_names_[w], " ", continues.message()));
    }
    return &receive.progress;
  }
  return nullptr;
}

absl::StatusOr<bool> ShmTransport::Drain(int32_t w) {
  Peer& peer = peers_[w];
  const uint64_t head = peer.in->head.load(std::memory_order_acquire);
  absl::StatusOr<bool> moved = DrainRing(
      peer.in_data, ring_bytes_, head, &peer.in_tail, tag_,
      [&](const RecordHeader& record) { return MatchReceive(w, record); },
      [&](ReceiveProgress& receive, const RecordHeader& record, const char* payload) {
        RelayRun(receive, record, payload);
      });
  if (!moved.ok()) {
    // MatchReceive's errors name the task already; the ring's own do not.
    if (absl::StartsWith(moved.status().message(), "task ")) return moved.status();
    return absl::Status(moved.status().code(),
                        absl::StrCat("task ", task_names_[w], " ", moved.status().message()));
  }
  if (*moved) {
    peer.in->tail.store(peer.in_tail, std::memory_order_release);
    Ring(*peer.header);  // the peer may be waiting for room
  }
  return *moved;
}

absl::StatusOr<bool> ShmTransport::Progress() {
  bool moved = false;
  for (int32_t w = 0; w < size(); ++w) {
    if (w == rank_) continue;
    ASSIGN_OR_RETURN(const bool pushed, PushSends(w));
    ASSIGN_OR_RETURN(const bool drained, Drain(w));
    moved = moved || pushed || drained;
  }
  return moved;
}

bool ShmTransport::Awaits(int32_t w) const {
  if (!peers_[w].sends.empty()) return true;
  return std::any_of(receives_.begin(), receives_.end(),
                     [&](const Receive& r) { return !r.progress.done && r.transfer.peer == w; });
}

absl::Status ShmTransport::Wait(uint32_t seen, const Deadline& deadline) {
  auto rung = [&] { return self_->doorbell.load(std::memory_order_acquire) != seen; };
  if (SpinUntil(spin_ns_, rung, yield_)) return absl::OkStatus();
  if (peer_died_) {
    MutexLock lock(&died_mu_);
    return Fail(std::string(died_.message()), false, deadline);
  }
  for (int32_t w = 0; w < size(); ++w) {
    if (w == rank_ || !Awaits(w) || peers_[w].header->closed.load(std::memory_order_seq_cst) == 0) continue;
    // Whatever it sent before closing rang the doorbell first: take that before failing.
    if (self_->doorbell.load(std::memory_order_seq_cst) != seen) return absl::OkStatus();
    return Fail(absl::StrCat("task ", task_names_[w], " closed its end of the communicator"), false, deadline);
  }
  if (deadline.Expired()) return Fail("a peer sent nothing before the deadline", true, deadline);
  const int64_t left_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(deadline.when - Clock::now()).count();
  SleepUnlessRung(*self_, seen, std::clamp<int64_t>(left_ns, 1, kSleepSliceNs));
  return absl::OkStatus();
}

absl::Status ShmTransport::Exchange(std::span<const Transfer> sends, std::span<const Transfer> receives,
                                    const Deadline& deadline, const OnReceived& on_received) {
  if (!failure_.ok()) {
    return absl::Status(failure_.code(),
                        absl::StrCat("the workers' communicator failed earlier: ", failure_.message()));
  }
  auto valid = [&](int32_t peer) { return peer >= 0 && peer < size() && peer != rank_; };
  for (const Transfer& t : sends) {
    if (!valid(t.peer)) return absl::InvalidArgumentError(absl::StrCat("no peer ", t.peer, " to send to"));
    if (t.relay != nullptr) return absl::InvalidArgumentError("a send cannot have a relay (only a receive can)");
  }
  for (const Transfer& t : receives) {
    if (!valid(t.peer)) return absl::InvalidArgumentError(absl::StrCat("no peer ", t.peer, " to receive from"));
    if (t.relay == nullptr) continue;
    // A large all-reduce posts a relayed receive per piece: the text is built only for an error.
    auto refuse = [&](const std::string& why) {
      return absl::InvalidArgumentError(absl::StrCat("the relay of the receive from task ", task_names_[t.peer],
                                                     " on channel ", t.channel, " ", why));
    };
    if (!valid(t.relay->peer)) return refuse(absl::StrCat("names no peer to relay to (", t.relay->peer, ")"));
    if (!t.relay->consume || (t.relay->data == nullptr && t.bytes > 0)) return refuse("has no consumer or no data");
  }
  ++tag_;
  receives_.clear();
  for (Peer& peer : peers_) peer.receive_hint = 0;
  for (const Transfer& t : receives) {
    receives_.push_back(Receive{t, ReceiveProgress{static_cast<char*>(t.data), t.bytes}});
    receives_.back().progress.relayed = t.relay != nullptr;
    receives_.back().progress.index = receives_.size() - 1;
  }
  for (const Transfer& t : sends) peers_[t.peer].sends.push_back({t, 0, t.bytes});

  size_t next = 0;  // the first receive whose on_received has not run
  while (true) {
    const uint32_t seen = self_->doorbell.load(std::memory_order_acquire);
    absl::StatusOr<bool> moved = Progress();
    if (!moved.ok()) return Fail(std::string(moved.status().message()), false, deadline);
    for (; next < receives_.size() && receives_[next].progress.done; ++next) {
      *moved = true;
      if (!on_received) continue;
      absl::StatusOr<std::vector<Transfer>> more = on_received(next);
      if (!more.ok()) {
        // Transfers are left in flight: this communicator cannot be used again.
        Close();
        failure_ = more.status();
        return failure_;
      }
      for (const Transfer& t : *more) {
        if (!valid(t.peer)) return Fail(absl::StrCat("no peer ", t.peer, " to send to"), false, deadline);
        peers_[t.peer].sends.push_back({t, 0, t.bytes});
      }
    }
    if (next == receives_.size() &&
        std::all_of(peers_.begin(), peers_.end(), [](const Peer& p) { return p.sends.empty(); })) {
      return absl::OkStatus();
    }
    if (*moved) continue;
    RETURN_IF_ERROR(Wait(seen, deadline));
  }
}

}  // namespace distribute::shm
