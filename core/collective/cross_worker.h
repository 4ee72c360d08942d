// The cross-worker step of MultiWorkerMirroredStrategy's collectives: what each worker's
// leader thread does after its replicas have combined their values locally (DESIGN.md,
// "Collectives": local reduce, cross-worker all-reduce, local broadcast). It is the
// Workers of a multi-worker job, over any Transport.
//
// Large all-reduces are a reduce-scatter (each worker reduces its chunk of the pack from
// every worker's, in worker order) and an all-gather of the reduced chunks, over
// point-to-point transfers: the traffic of a ring all-reduce, with a fixed order. Between
// two workers on a transport that relays (shared memory), each piece is reduced straight
// out of the transport's buffer as it arrives (Transport::Relay): one copy fewer per piece.
// On a transport whose workers map each other's memory (shared memory, with the tensors in
// the shared host arena), a large all-reduce moves no bytes through the transport at all:
// each worker reduces its chunk straight out of the others' packs and copies the other
// chunks out of their results (InPlaceAllReduce); broadcasts and all-gathers of such
// blocks are copied straight out of their owners' memory, with one signal after.
//
// Every call first exchanges a fixed-size header (an all-gather of 256 bytes per worker)
// that says which collective each worker is making, on what dtypes and shapes, and in
// which position of its sequence of calls. Workers that disagree all fail the call with a
// message naming the tasks and what each of them asked for, before anything is reduced
// (only an all-reduce's first frame or whole pack travels with its header), so a mismatch
// can never produce wrong data or leave a worker waiting. Payloads up to 128 bytes travel
// inside the header, so a small all-reduce is one exchange; packs up to the transport's
// gathered_bytes (Transport::Pipelining: 16 KiB over shared memory, 256 KiB over TCP,
// between two workers) travel whole right behind it and every worker reduces them all,
// one message each way; a large one is one exchange too, with every receive posted at its
// start. Broadcasts and all-gather blocks up to gathered_bytes travel right behind their
// headers as well (every worker sends every peer that second message, empty when it has
// nothing to send, so that a disagreement leaves nothing in flight).
//
// Reductions are deterministic: partial results are combined in worker order with the
// reduce kernels' tree (reduce_kernels.h), in accumulator precision, and every worker
// computes the same bits.
//
// Thread-safety: one thread at a time (each worker's replica 0, or the cross-replica
// caller).
#ifndef DISTRIBUTE_CORE_COLLECTIVE_CROSS_WORKER_H_
#define DISTRIBUTE_CORE_COLLECTIVE_CROSS_WORKER_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/kernels/reduce_op.h"
#include "core/collective/transport.h"
#include "core/collective/workers.h"
#include "core/tensor/buffer.h"
#include "core/tensor/dtype.h"
#include "core/tensor/tensor.h"
#include "core/util/deadline.h"

namespace distribute {

class CrossWorker final : public Workers {
 public:
  explicit CrossWorker(std::unique_ptr<Transport> transport);

  int32_t num_workers() const override { return transport_->size(); }
  int32_t worker() const override { return transport_->rank(); }
  const std::string& task_name(int32_t worker) const { return transport_->task_name(worker); }
  absl::Status health() const { return transport_->health(); }

  // Reduces this worker's `pack` of partial results with every other worker's. MEAN
  // divides by `mean_divisor` (the replica count of the whole job). `signature` describes
  // the call for the agreement check ("all_reduce SUM float32[4]").
  absl::Status AllReduce(ReduceOp op, const void* pack, size_t pack_bytes,
                         std::span<const Segment> segments, int64_t mean_divisor,
                         const std::string& signature, const Deadline& deadline) override;

  // One tensor's reduction across every worker: this worker's `num_local` arrays of
  // `count` `dtype` elements are combined here in accumulator precision, then with the
  // other workers' in worker order (one process with all the replicas combines the same
  // way when the worker count is a power of 2 or num_local is 1), and stored in `output`
  // (which may alias inputs[0]).
  absl::Status AllReduceLocal(ReduceOp op, DType dtype, const void* const* inputs, int32_t num_local,
                              size_t count, void* output, int64_t mean_divisor,
                              const std::string& signature, const Deadline& deadline) override;

  // Every worker's bytes, in worker order, back to back in `storage` (a buffer on the
  // device asked for, from the host pool: no page to fault in when its size recurs);
  // blocks[w] points into it.
  struct Gathered {
    std::shared_ptr<Buffer> storage;
    std::vector<std::span<const char>> blocks;
  };
  // `signature` must be equal on every worker (leave the gathered axis out of it).
  // `device`: a host device for `storage` (CPU:0 by default).
  absl::StatusOr<Gathered> AllGather(const void* data, size_t bytes, const std::string& signature,
                                     const Deadline& deadline, const DeviceSpec& device = DeviceSpec{}.WithDefaults());

  // Every worker's `local` (a host tensor, rank >= 1) concatenated along `axis` in worker
  // order, as a new host tensor (on `device`, a host device, in the overload that takes
  // one). Dimensions other than `axis` must agree. Along the first axis that is (whose
  // leading dimensions are 1) the gathered blocks are the result, copied once.
  absl::StatusOr<Tensor> AllGatherAlongAxis(const Tensor& local, int32_t axis,
                                            const std::string& signature,
                                            const Deadline& deadline) override {
    return AllGatherAlongAxis(local, axis, signature, deadline, DeviceSpec{}.WithDefaults());
  }
  absl::StatusOr<Tensor> AllGatherAlongAxis(const Tensor& local, int32_t axis, const std::string& signature,
                                            const Deadline& deadline, const DeviceSpec& device);

  // `data` takes worker `root`'s bytes; `bytes` and `signature` must agree everywhere.
  absl::Status Broadcast(void* data, size_t bytes, int32_t root, const std::string& signature,
                         const Deadline& deadline) override {
    return Broadcast(data, bytes, root, signature, deadline, nullptr);
  }
  // The same; the root also copies its bytes to `root_copy` (when not null) while its peers
  // read them, where a copy after the call would wait for them first.
  absl::Status Broadcast(void* data, size_t bytes, int32_t root, const std::string& signature,
                         const Deadline& deadline, void* root_copy);

  // Returns when every worker has called Barrier with the same `name`.
  absl::Status Barrier(const std::string& name, const Deadline& deadline);

  // Whether this worker's peers read a block of `bytes` at `data` in place (a large block
  // in the shared host arena, on a transport whose workers map it), and whether they would
  // read one the library allocated: a broadcast's root stages a block of the caller's own
  // memory there (one copy) rather than send it through the transport (two, with flow
  // control; a 1-16 MiB broadcast took half the time so).
  bool ReadInPlace(const void* data, size_t bytes) const;
  bool WouldReadInPlace(size_t bytes) const;

  // How many calls read the peers' memory in place (all-reduces, all-gathers and
  // broadcasts; for tests and diagnostics).
  uint64_t in_place_calls() const { return in_place_calls_; }
  // How many all-reduces sent whole packs with their headers (GatheredAllReduce).
  uint64_t gathered_calls() const { return gathered_calls_; }

 private:
  enum class Kind : uint32_t;
  struct Header;
  struct SharedPlaces;

  // This worker's header block for its next call (with the payload inline when asked).
  void WriteHeader(Kind kind, const std::string& signature, const void* payload,
                   size_t payload_bytes, bool inline_payload, char* block);
  // Whether every worker's block in headers_ describes the same call as this worker's.
  absl::Status CheckHeaders() const;
  // Exchanges headers (with the payload inline when asked) and checks that every worker
  // made the same call; afterwards headers_ holds every worker's block.
  absl::Status ExchangeHeaders(Kind kind, const std::string& signature, const void* payload,
                               size_t payload_bytes, bool inline_payload, const Deadline& deadline);
  const char* BlockOf(int32_t worker) const;
  Header HeaderOf(int32_t worker) const;
  static const char* KindName(uint32_t kind);
  // The all-reduce of packs too large for the headers but at most GatheredMaxBytes()
  // (Transport::Pipelining): every worker's whole pack travels with its header, and each
  // worker reduces them all.
  absl::Status GatheredAllReduce(ReduceOp op, const char* pack, size_t pack_bytes,
                                 std::span<const Segment> segments, int64_t mean_divisor,
                                 const std::string& signature, const Deadline& deadline);
  size_t GatheredMaxBytes() const;
  // Reduces every worker's whole pack (packs[w], in worker order) into the segments' outputs.
  static void ReduceWholePacks(ReduceOp op, std::span<const Segment> segments, int64_t mean_divisor,
                               std::span<const char* const> packs);
  // The all-reduce of packs too large for the headers (reduce_scatter + all_gather).
  absl::Status ReduceScatterAllGather(ReduceOp op, const char* pack, size_t pack_bytes,
                                      std::span<const Segment> segments, int64_t mean_divisor,
                                      const std::string& signature, const Deadline& deadline);

  // The all-reduce of a large pack on a transport whose workers map each other's memory:
  // each worker reduces its chunk straight out of every worker's pack. False (on every
  // worker alike) when some worker's pack or result is not in that memory: the caller
  // copies instead.
  absl::StatusOr<bool> InPlaceAllReduce(ReduceOp op, const char* pack, size_t pack_bytes,
                                        std::span<const Segment> segments, int64_t mean_divisor,
                                        const std::string& signature, const Deadline& deadline);
  // Writes this worker's header block (in headers_) with `places` in its payload room.
  char* WritePlacedHeader(Kind kind, const std::string& signature, size_t payload_bytes,
                          const SharedPlaces& places);
  // This worker's block in headers_.
  char* OwnBlock();
  // Exchanges this worker's header (written in OwnBlock()) and, right behind it on channel
  // 1, its whole payload (none: an empty message) with every peer, and checks that every
  // worker made the same call; afterwards WholeOf(w) holds worker w's payload (for w other
  // than this worker). Payloads are at most WholeCapacity() bytes.
  absl::Status ExchangeWhole(const void* payload, size_t payload_bytes, const Deadline& deadline);
  const char* WholeOf(int32_t w) const;
  size_t WholeCapacity() const;
  // The places worker w's block in headers_ gives.
  SharedPlaces PlacesOf(int32_t w) const;
  // Exchanges headers whose payload room carries `places` (where this worker's bytes lie in
  // the memory its peers map) and checks that every worker made the same call.
  absl::Status ExchangePlaces(Kind kind, const std::string& signature, size_t payload_bytes,
                              const SharedPlaces& places, const Deadline& deadline);
  // Worker w's bytes at the place its header gave (this worker's own: `own`), or nullptr
  // when they are not in the memory its peers map.
  const char* PlacedBytes(int32_t w, size_t bytes, const void* own) const;
  // Sends `flag` to every peer on `channel` and waits for theirs: the lowest worker whose
  // flag is not 1, or -1.
  absl::StatusOr<int32_t> Signal(int32_t channel, char flag, const Deadline& deadline);

  // Reduces bytes [from, to) of the pack, every worker's copy in worker order, in
  // accumulator precision, into result + from; inputs[w] is worker w's copy of byte `from`.
  static void ReduceSpan(ReduceOp op, std::span<const Segment> segments, int64_t mean_divisor,
                         std::span<const char* const> inputs, size_t from, size_t to, char* result);

  // Whether every worker's header in headers_ is a copying all-reduce's (the gathered or
  // the reduce-scatter protocol), whose peers can drain each other after a disagreement.
  bool AllInCopyingAllReduces() const;
  // Whether `header` is a copying all-reduce's: its worker sends a first frame or its
  // whole pack right behind it.
  bool InCopyingAllReduce(const Header& header) const;
  // Appends the empty messages that answer every receive peer w posted past its header and
  // first message (w in the reduce-scatter: its cut follows from its pack size).
  void AppendDrainSends(int32_t w, std::vector<Transport::Transfer>* sends) const;
  // Once every header of a large all-reduce has arrived: the sends of the later pieces of
  // the others' chunks of `pack` when all agree; when all are large all-reduces that
  // disagree, an empty message for every receive each peer posted, with *disagreement set;
  // otherwise the disagreement as an error, which ends the exchange.
  absl::StatusOr<std::vector<Transport::Transfer>> AfterHeaders(const char* pack, absl::Status* disagreement);

  std::unique_ptr<Transport> transport_;
  const Transport::Pipelining pipelining_;  // the transport's, fixed for its life
  uint64_t sequence_ = 0;
  std::vector<char> headers_;   // num_workers blocks of kBlockBytes
  // The last signature WriteHeader hashed, and its hash: a training loop makes the same
  // calls step after step, and hashing the text was a few percent of a small call.
  bool hashed_ = false;
  std::string hashed_signature_;
  uint64_t signature_hash_ = 0;
  std::vector<char> received_;  // this worker's chunk of every worker's pack
  std::unique_ptr<char[]> whole_;  // every worker's whole payload (ExchangeWhole), by worker
  std::vector<char> result_;    // the reduced pack (accumulator layout)
  std::shared_ptr<Buffer> shared_result_;  // the same, where peers can read it in place
  uint64_t in_place_calls_ = 0;
  uint64_t gathered_calls_ = 0;
};

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_COLLECTIVE_CROSS_WORKER_H_
