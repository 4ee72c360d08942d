// distribute — the header-only C++17 wrapper of the C API (namespace dist).
//
// RAII handles (move-only; destroyed with the object), Result<T>/Status for errors (see
// cpp/status.hpp for why not exceptions), dist::Span for tensor data (std::span under
// C++20), and lambdas as replica, merge, value and update functions. The wrapper adds no
// allocation to a step. Link with libdistribute as for C (pkg-config distribute).
//
// It wraps tensors, values and variables, strategies (creation, scopes, run, joined
// replicas, the cross-replica reductions, update, saving), replica contexts (the
// collectives and merge_call), clusters, communication options, cross-device ops,
// datasets with distributed input (cpp/input.hpp), servers (cpp/server.hpp),
// ParameterServerStrategy with registered update functions (cpp/parameter_server.hpp) and
// the ClusterCoordinator (cpp/coordinator.hpp), device names (cpp/device.hpp): every C
// function but DLPack's. Every wrapper exposes its handle with get(), and Value::adopt /
// Strategy::adopt take ownership of handles the C API returned.
#ifndef DISTRIBUTE_DISTRIBUTE_HPP_
#define DISTRIBUTE_DISTRIBUTE_HPP_

#include "distribute/cpp/coordinator.hpp"
#include "distribute/cpp/device.hpp"
#include "distribute/cpp/input.hpp"
#include "distribute/cpp/options.hpp"
#include "distribute/cpp/parameter_server.hpp"
#include "distribute/cpp/server.hpp"
#include "distribute/cpp/span.hpp"
#include "distribute/cpp/status.hpp"
#include "distribute/cpp/strategy.hpp"
#include "distribute/cpp/value.hpp"

#endif  // DISTRIBUTE_DISTRIBUTE_HPP_
