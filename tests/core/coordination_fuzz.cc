// Fuzz target for the coordination service's request handlers (CoordinationService: what
// the gRPC layer calls with each request's fields). The input is a program: each step
// takes an opcode byte and the bytes of its arguments (task, incarnation, key, value,
// barrier name), and the steps run in order on one service of three tasks, every wait
// with a deadline already due so that nothing blocks.
// Checked: nothing crashes or fails with INTERNAL/UNKNOWN; a key whose Set succeeded reads
// back its last value; after Shutdown every call fails. Built with -fsanitize=fuzzer under
// clang, and with tests/core/fuzz_replay_main.cc as a corpus-replay test under any compiler.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/server/coordination_service.h"
#include "core/util/deadline.h"

namespace {

using distribute::CoordinationService;
using distribute::Deadline;

[[noreturn]] void Fail(const char* what, const absl::Status& status) {
  std::fprintf(stderr, "coordination_fuzz: %s: %s\n", what, status.ToString().c_str());
  std::abort();
}

// Reads the program's bytes; past the end every read gives zeros.
class Program {
 public:
  Program(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  bool done() const { return at_ >= size_; }
  uint8_t Byte() { return at_ < size_ ? data_[at_++] : 0; }
  // A string of up to 255 bytes, its length first.
  std::string String() {
    const size_t length = Byte();
    std::string out;
    while (out.size() < length && !done()) out.push_back(static_cast<char>(Byte()));
    return out;
  }
  // Mostly one of the cluster's tasks, sometimes any name at all.
  std::string Task() {
    const uint8_t pick = Byte();
    if (pick < 240) return "worker:" + std::to_string(pick % 3);
    return String();
  }
  uint64_t Incarnation() { return Byte() % 4; }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t at_ = 0;
};

void CheckCode(const absl::Status& status, const char* step) {
  if (status.code() == absl::StatusCode::kInternal || status.code() == absl::StatusCode::kUnknown) {
    Fail(step, status);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  CoordinationService::Options options;
  options.tasks = {"worker:0", "worker:1", "worker:2"};
  options.barrier_tasks = options.tasks;
  options.heartbeat_timeout_ms = 600000;  // no task is lost by time during one input
  options.max_value_bytes = 64;           // small, so that the bound is reached
  CoordinationService service(options);
  std::map<std::string, std::string> set_values;  // what a Get must give
  bool shut_down = false;
  Program program(data, size);
  for (int steps = 0; !program.done() && steps < 256; ++steps) {
    absl::Status status;
    switch (program.Byte() % 9) {
      case 0: {
        const std::string task = program.Task();
        const uint64_t incarnation = program.Incarnation();
        status = service.Register(task, incarnation, program.Byte() % 2 == 0);
        break;
      }
      case 1: {
        const std::string task = program.Task();
        status = service.Disconnect(task, program.Incarnation());
        break;
      }
      case 2: {
        const std::string task = program.Task();
        status = service.Heartbeat(task, program.Incarnation());
        break;
      }
      case 3: {
        const std::string task = program.Task();
        service.ReportConnectionClosed(task, program.Incarnation());
        continue;  // no status
      }
      case 4: {
        const std::string key = program.String();
        const std::string value = program.String();
        status = service.Set(key, value);
        if (status.ok()) set_values[key] = value;
        break;
      }
      case 5: {
        const std::string key = program.String();
        absl::StatusOr<std::string> got = service.Get(key, Deadline::AfterMs(0));
        status = got.status();
        auto expected = set_values.find(key);
        if (!shut_down && expected != set_values.end() && (!got.ok() || *got != expected->second)) {
          Fail("a key that was set does not read back its value", got.status());
        }
        break;
      }
      case 6: {
        const std::string name = program.String();
        const std::string task = program.Task();
        status = service.Barrier(name, task, Deadline::AfterMs(0));
        break;
      }
      case 7:
        status = service.PeerHealth();
        break;
      case 8:
        if (program.Byte() < 16) {  // rarely: most programs should exercise a live service
          service.Shutdown();
          shut_down = true;
        }
        continue;  // no status
    }
    CheckCode(status, "a request failed with an unexpected code");
    if (shut_down && status.ok()) {
      Fail("a request succeeded after Shutdown", status);
    }
  }
  return 0;
}
