// The structs behind the public opaque handles. Only core/c_api sees these.
#ifndef DISTRIBUTE_CORE_C_API_HANDLES_H_
#define DISTRIBUTE_CORE_C_API_HANDLES_H_

#include <string>
#include <utility>

#include "core/device/device_spec.h"
#include "core/values/value.h"
#include "distribute/types.h"

struct dist_device {
  explicit dist_device(distribute::DeviceSpec s) : spec(std::move(s)), name(spec.ToString()) {}
  distribute::DeviceSpec spec;
  std::string name;  // canonical, borrowed by dist_device_name
};

struct dist_value {
  explicit dist_value(distribute::Value v) : value(std::move(v)) {}
  distribute::Value value;
};

#endif  // DISTRIBUTE_CORE_C_API_HANDLES_H_
