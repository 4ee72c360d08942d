// The user_data of a C callback the library keeps: shared by every std::function that
// calls the callback, released with its free function when the last of them dies.
#ifndef DISTRIBUTE_CORE_C_API_USER_DATA_H_
#define DISTRIBUTE_CORE_C_API_USER_DATA_H_

#include <memory>

#include "absl/status/status.h"
#include "core/c_api/api_guard.h"
#include "distribute/dataset.h"

namespace distribute::c_api {

class UserData {
 public:
  UserData(void* data, dist_free_fn free_fn) : data_(data), free_fn_(free_fn) {}
  UserData(const UserData&) = delete;
  UserData& operator=(const UserData&) = delete;
  ~UserData() {
    if (free_fn_ != nullptr) free_fn_(data_);
  }

  void* get() const { return data_; }
  // The call that registered the callback failed: the caller keeps user_data.
  void Disarm() { free_fn_ = nullptr; }

 private:
  void* const data_;
  dist_free_fn free_fn_;
};

}  // namespace distribute::c_api

#endif  // DISTRIBUTE_CORE_C_API_USER_DATA_H_
