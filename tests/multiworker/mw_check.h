/* The multi-worker test programs' CHECK: a failing library call prints where it was, the
 * call, its status and the library's message, and ends the worker with status 1 (which
 * distrun reports and the test scripts see). */
#ifndef DISTRIBUTE_TESTS_MULTIWORKER_MW_CHECK_H_
#define DISTRIBUTE_TESTS_MULTIWORKER_MW_CHECK_H_

#include <stdio.h>
#include <stdlib.h>

#include "distribute/distribute.h"

#define CHECK(call)                                                                  \
  do {                                                                               \
    dist_status_t status_ = (call);                                                  \
    if (status_ != DIST_OK) {                                                        \
      fprintf(stderr, "%s:%d: %s failed: %s: %s\n", __FILE__, __LINE__, #call,       \
              dist_status_name(status_), dist_last_error_message());                 \
      exit(1);                                                                       \
    }                                                                                \
  } while (0)

#endif  /* DISTRIBUTE_TESTS_MULTIWORKER_MW_CHECK_H_ */
