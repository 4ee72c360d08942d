// The cross-worker transport: byte-level exchanges between the workers (processes) of a
// multi-worker job, under CrossWorker. An implementation provides point-to-point Exchange
// and nothing else: the Gloo TCP transport (core/gloo/gloo_transport.h) is the first; a
// shared-memory transport for workers on one host and NCCL are its peers. The byte
// collectives below are built on Exchange as direct exchanges with every peer (one step,
// whatever the number of workers), so a new transport brings no collective algorithm.
//
// Every worker must make the same calls in the same order with matching sizes; CrossWorker
// guarantees that by exchanging a fixed-size header first. A call that fails (a peer lost,
// a deadline passed) leaves the communicator failed: every later call fails at once with
// the original cause (DESIGN.md, "Reliability contract").
//
// Thread-safety: one thread at a time.
#ifndef DISTRIBUTE_CORE_COLLECTIVE_TRANSPORT_H_
#define DISTRIBUTE_CORE_COLLECTIVE_TRANSPORT_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/util/deadline.h"

namespace distribute {

class Transport {
 public:
  virtual ~Transport() = default;

  virtual int32_t rank() const = 0;
  virtual int32_t size() const = 0;
  // The task at `rank`, as messages name it ("worker:1").
  virtual const std::string& task_name(int32_t rank) const = 0;

  // `bytes` from every worker into `out`, in rank order (this worker's block included).
  absl::Status AllGather(const void* in, size_t bytes, void* out, const Deadline& deadline);
  // Like AllGather with `bytes[r]` from rank r, packed one after another in `out`.
  absl::Status AllGatherV(const void* in, std::span<const size_t> bytes, void* out,
                          const Deadline& deadline);
  // `data` (`bytes` long on every worker) takes the value it has on `root`.
  absl::Status Broadcast(void* data, size_t bytes, int32_t root, const Deadline& deadline);

  struct Relay;
  // Point to point: one message to or from a peer (never this worker itself).
  struct Transfer {
    int32_t peer;
    int32_t channel;  // transfers between two workers in one call differ in channel
    void* data;
    size_t bytes;     // for a receive: its capacity, at least what the peer sends
    // For a receive, on a transport that relays(): its bytes go to relay->consume as they
    // arrive, instead of into `data`, and come out as a message of their own.
    const Relay* relay = nullptr;
  };
  // A receive whose message is transformed on arrival and passed on to another worker as
  // a message of the same length: a reduce-scatter step that reduces a piece straight out
  // of the transport's buffer and sends the result on, instead of copying the piece into
  // a receive first. consume(offset, in, n) is called for consecutive runs of the message,
  // in order, on the thread in Exchange (it must not call the transport), possibly before
  // on_received has run for earlier receives; it writes its result for those n bytes at
  // data + offset (bytes it leaves alone go out as they are). The transport then sends
  // [offset, offset + n) of data to `peer` on `channel`, as a send of this call would (no
  // other send of the call may use that peer and channel). A run that does not end the
  // message is a multiple of 64 bytes long, so runs never split an element. `data` has
  // room for the receive's capacity; the Relay lives until Exchange returns. An empty
  // message is passed on as nothing: no consume, no message. Only receives take a relay,
  // and only on a transport that relays(): one that does not refuses them.
  struct Relay {
    int32_t peer;
    int32_t channel;
    void* data;
    std::function<void(size_t offset, const char* in, size_t n)> consume;
  };

  // Posts every receive and every send, then waits for all of them. A send is matched
  // with the peer's receive of the same channel, which must be at least as long.
  //
  // `on_received(i)`, when given, runs as soon as receives[i] has arrived (receives are
  // awaited in order) and may return more sends to post at once: a pipeline can reduce
  // and pass on one piece while the next is still on its way. An error it returns ends
  // the exchange at once with that error, leaving the remaining transfers in flight: the
  // communicator is failed from then on (they would match later calls' transfers).
  using OnReceived = std::function<absl::StatusOr<std::vector<Transfer>>(size_t index)>;
  virtual absl::Status Exchange(std::span<const Transfer> sends, std::span<const Transfer> receives,
                                const Deadline& deadline, const OnReceived& on_received = nullptr) = 0;

  // Whether Exchange takes receives with a Relay (a transport that does not refuses them).
  virtual bool relays() const { return false; }

  // Memory the peers read in place, on a transport between processes that can map each
  // other's tensors (shared memory on one host). Every worker of a communicator answers
  // shares_memory() alike (the transport agrees on it when it connects). SharedPlace says
  // where [data, data + bytes) lies in memory this worker's peers can map, or nullopt;
  // PeerBytes is peer `peer`'s bytes at the place its SharedPlace answered, readable here
  // for the life of the transport, or nullptr when they are not all in its shared memory.
  virtual bool shares_memory() const { return false; }
  virtual std::optional<uint64_t> SharedPlace(const void* data, size_t bytes) const {
    (void)data;
    (void)bytes;
    return std::nullopt;
  }
  virtual const char* PeerBytes(int32_t peer, uint64_t place, size_t bytes) const {
    (void)peer;
    (void)place;
    (void)bytes;
    return nullptr;
  }

  // OK, or the failure that ended the communicator.
  virtual absl::Status health() const = 0;

  // How a large all-reduce is cut into messages on this transport (CrossWorker): the first
  // message, which travels right after the header, and the pieces after it, each reduced
  // and passed on while the next is on its way. Pieces are a quarter of what follows the
  // first message in a worker's chunk, within [piece_bytes, max_piece_bytes]: at least
  // four stages deep where the chunk is small, few messages where it is large. Every
  // worker of a communicator runs the same transport and the same chunk size, so every
  // worker cuts the same way. The default suits a socket, where each message costs a round
  // of the transport's own handshakes: on a 16-core host, 16 MiB between 2 or 4 workers took
  // 0.8x the time with pieces of up to 1 MiB (Gloo's own segment size) and the first piece
  // reduced while the later ones arrive (CrossWorker) as with 256 KiB pieces and the first
  // reduced before posting them; the larger pieces alone gained little.
  //
  // All-reduces of at most gathered_bytes (between two workers; 2 / W of it between W)
  // are not cut at all: every worker sends its whole pack with its header and reduces
  // every pack itself, one message each way where the reduce-scatter and all-gather send
  // two in turn; between two workers that is as many bytes, and beyond it more. Over TCP
  // on the 2-core machine that took 0.6-0.7x the time from 1 KiB to 256 KiB, and more
  // than the pipelined cut at 1 MiB.
  struct Pipelining {
    size_t first_bytes = size_t{1} << 20;
    size_t piece_bytes = size_t{256} << 10;
    size_t max_piece_bytes = size_t{1} << 20;
    size_t gathered_bytes = size_t{256} << 10;
  };
  virtual Pipelining pipelining() const { return Pipelining{}; }
};

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_COLLECTIVE_TRANSPORT_H_
