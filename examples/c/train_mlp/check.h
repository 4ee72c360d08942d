/* train_mlp's error handling outside replica functions, shared by its files. */
#ifndef TRAIN_MLP_CHECK_H_
#define TRAIN_MLP_CHECK_H_

#include <stdio.h>
#include <stdlib.h>

#include "distribute/distribute.h"

/* A failed library call outside replica functions ends the program with its message. */
#define CHECK(call)                                                                       \
  do {                                                                                    \
    dist_status_t status_ = (call);                                                       \
    if (status_ != DIST_OK) {                                                             \
      fprintf(stderr, "train_mlp: %s failed: %s: %s\n", #call, dist_status_name(status_), \
              dist_last_error_message());                                                 \
      exit(1);                                                                            \
    }                                                                                     \
  } while (0)

#endif /* TRAIN_MLP_CHECK_H_ */
