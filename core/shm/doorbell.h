// Waking a worker process that sleeps until a peer makes progress possible for it: the
// doorbell word in its segment header is a futex shared between processes. A waker bumps
// the word after publishing its progress, so a sleeper that read the word before looking
// for progress either sees the progress or finds the word changed and does not sleep.
#ifndef DISTRIBUTE_CORE_SHM_DOORBELL_H_
#define DISTRIBUTE_CORE_SHM_DOORBELL_H_

#include <cstdint>

#include "core/shm/shm_layout.h"

namespace distribute::shm {

// Bumps `header`'s doorbell and wakes its sleepers, if any.
void Ring(SegmentHeader& header);

// Sleeps while `header`'s doorbell still reads `seen`, at most `timeout_ns`.
void SleepUnlessRung(SegmentHeader& header, uint32_t seen, int64_t timeout_ns);

}  // namespace distribute::shm

#endif  // DISTRIBUTE_CORE_SHM_DOORBELL_H_
