#include "core/util/spin.h"

#include <thread>

namespace distribute {

int32_t SpinBudget(int32_t threads) {
  static const int32_t cores = static_cast<int32_t>(std::thread::hardware_concurrency());
  // A few tens of microseconds of pause instructions when every thread has a core: enough to cover
  // the skew between replicas of a step, far less than a scheduler time slice.
  if (threads <= cores || cores == 0) return 4000;
  return 64;
}

}  // namespace distribute
