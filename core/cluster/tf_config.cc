#include "core/cluster/tf_config.h"

#include <cstdint>
#include <cstdlib>
#include <limits>
#include <string>

#include "absl/strings/str_cat.h"
#include "core/util/quote.h"
#include "nlohmann/json.hpp"

namespace distribute {
namespace {

using Json = nlohmann::json;

constexpr size_t kMaxTokenInMessage = 24;

// "an array", "a string", "null": JSON types as a message names them.
std::string AType(const Json& value) {
  if (value.is_null()) return "null";
  const std::string name = value.type_name();
  return absl::StrCat(name[0] == 'a' || name[0] == 'o' ? "an " : "a ", name);
}

absl::Status Invalid(absl::string_view message) {
  return absl::InvalidArgumentError(absl::StrCat("TF_CONFIG: ", message));
}

// Prefixes a ClusterSpec error with "TF_CONFIG: ", keeping its code.
absl::Status InTfConfig(const absl::Status& status) {
  if (status.ok()) return status;
  return absl::Status(status.code(), absl::StrCat("TF_CONFIG: ", status.message()));
}

// A SAX handler that accepts everything and keeps where parsing failed, so that the error
// message can say it without nlohmann throwing.
struct ErrorLocator {
  size_t position = 0;
  std::string token;
  bool null() { return true; }
  bool boolean(bool) { return true; }
  bool number_integer(Json::number_integer_t) { return true; }
  bool number_unsigned(Json::number_unsigned_t) { return true; }
  bool number_float(Json::number_float_t, const std::string&) { return true; }
  bool string(std::string&) { return true; }
  bool binary(Json::binary_t&) { return true; }
  bool start_object(std::size_t) { return true; }
  bool key(std::string&) { return true; }
  bool end_object() { return true; }
  bool start_array(std::size_t) { return true; }
  bool end_array() { return true; }
  bool parse_error(std::size_t at, const std::string& last_token, const nlohmann::detail::exception&) {
    position = at;
    token = last_token;
    return false;
  }
};

absl::Status NotJson(absl::string_view json) {
  if (json.empty()) return Invalid("the input is empty: expected a JSON object");
  ErrorLocator locator;
  Json::sax_parse(json.begin(), json.end(), &locator);
  return Invalid(absl::StrCat("not valid JSON: error at byte ", locator.position, " near ",
                              Quoted(locator.token, kMaxTokenInMessage)));
}

absl::StatusOr<int64_t> IndexFromKey(const std::string& key, absl::string_view job);

// A non-negative task index within int32 from a JSON number, or from a string holding one
// (TF converts the index with int()).
absl::StatusOr<int64_t> IndexFromJson(const Json& value, absl::string_view entry) {
  if (value.is_string()) {
    absl::StatusOr<int64_t> index = IndexFromKey(value.get_ref<const std::string&>(), "");
    if (index.ok()) return index;
    return Invalid(absl::StrCat(entry, " ", Quoted(value.get_ref<const std::string&>()),
                                " is not a task index: expected a decimal number from 0 to ",
                                std::numeric_limits<int32_t>::max()));
  }
  if (value.is_number_unsigned()) {
    const uint64_t index = value.get<uint64_t>();
    if (index <= static_cast<uint64_t>(std::numeric_limits<int32_t>::max())) return static_cast<int64_t>(index);
    return Invalid(absl::StrCat(entry, " is ", index, ": a task index must be from 0 to ",
                                std::numeric_limits<int32_t>::max()));
  }
  if (value.is_number_integer()) {
    return Invalid(absl::StrCat(entry, " is ", value.get<int64_t>(), ": a task index must be >= 0"));
  }
  return Invalid(absl::StrCat(entry, " must be a non-negative integer (or a string of one), not ",
                              AType(value)));
}

// A task index from a key of the sparse form: a canonical decimal number.
absl::StatusOr<int64_t> IndexFromKey(const std::string& key, absl::string_view job) {
  bool canonical = !key.empty() && key.size() <= 10 && (key.size() == 1 || key[0] != '0');
  int64_t index = 0;
  for (char c : key) {
    if (c < '0' || c > '9') canonical = false;
    if (canonical) index = index * 10 + (c - '0');
  }
  if (!canonical || index > std::numeric_limits<int32_t>::max()) {
    return Invalid(absl::StrCat("cluster.", job, " key ", Quoted(key),
                                " is not a task index: expected a decimal number from 0 to ",
                                std::numeric_limits<int32_t>::max()));
  }
  return index;
}

absl::Status AddJob(ClusterSpec& spec, const std::string& job, const Json& tasks) {
  auto add = [&](int64_t index, const Json& address) -> absl::Status {
    if (!address.is_string()) {
      return Invalid(absl::StrCat("cluster.", job, "[", index, "] must be a \"host:port\" string, not ", AType(address)));
    }
    return InTfConfig(spec.AddTask(job, index, address.get_ref<const std::string&>()));
  };
  if (tasks.is_array()) {
    int64_t index = 0;
    for (const Json& address : tasks) {
      const absl::Status status = add(index++, address);
      if (!status.ok()) return status;
    }
    return absl::OkStatus();
  }
  if (tasks.is_object()) {
    for (const auto& [key, address] : tasks.items()) {
      absl::StatusOr<int64_t> index = IndexFromKey(key, job);
      if (!index.ok()) return index.status();
      const absl::Status status = add(*index, address);
      if (!status.ok()) return status;
    }
    return absl::OkStatus();
  }
  return Invalid(absl::StrCat("cluster.", job,
                              " must be a list of addresses or an object from task index to address, not ", AType(tasks)));
}

absl::Status ParseCluster(ClusterSpec& spec, const Json& cluster) {
  if (!cluster.is_object()) {
    return Invalid(absl::StrCat("\"cluster\" must be an object from job name to tasks, not ", AType(cluster)));
  }
  for (const auto& [job, tasks] : cluster.items()) {
    if (!JobFromName(job).ok()) {
      return Invalid(absl::StrCat("unknown job ", Quoted(job),
                                  " in cluster: expected chief, worker, ps or evaluator"));
    }
    const absl::Status status = AddJob(spec, job, tasks);
    if (!status.ok()) return status;
  }
  if (spec.empty()) return Invalid("the cluster is empty: expected at least one task");
  return absl::OkStatus();
}

absl::Status ParseTask(ClusterSpec& spec, const Json& task) {
  if (!task.is_object()) {
    return Invalid(absl::StrCat("\"task\" must be an object with \"type\" and \"index\", not ", AType(task)));
  }
  for (const auto& [key, unused] : task.items()) {
    if (key != "type" && key != "index") {
      return Invalid(absl::StrCat("unknown key ", Quoted(key), " in task: expected type and index"));
    }
  }
  const auto type = task.find("type");
  if (type == task.end()) return Invalid("task has no \"type\"");
  if (!type->is_string()) return Invalid(absl::StrCat("task.type must be a string, not ", AType(*type)));
  const auto index_json = task.find("index");
  if (index_json == task.end()) return Invalid("task has no \"index\"");
  absl::StatusOr<int64_t> index = IndexFromJson(*index_json, "task.index");
  if (!index.ok()) return index.status();
  return InTfConfig(spec.SetTask(type->get_ref<const std::string&>(), *index));
}

}  // namespace

absl::StatusOr<ClusterSpec> ParseTfConfig(absl::string_view json) {
  const Json config = Json::parse(json.begin(), json.end(), nullptr, /*allow_exceptions=*/false);
  if (config.is_discarded()) return NotJson(json);
  if (!config.is_object()) return Invalid(absl::StrCat("expected a JSON object, not ", AType(config)));
  for (const char* key : {"environment", "rpc_layer"}) {
    const auto value = config.find(key);
    if (value != config.end() && !value->is_string()) {
      return Invalid(absl::StrCat("\"", key, "\" must be a string, not ", AType(*value)));
    }
  }
  const auto cluster = config.find("cluster");
  if (cluster == config.end()) return Invalid("no \"cluster\"");
  const auto task = config.find("task");
  if (task == config.end()) return Invalid("no \"task\"");
  ClusterSpec spec;
  absl::Status status = ParseCluster(spec, *cluster);
  if (!status.ok()) return status;
  status = ParseTask(spec, *task);
  if (!status.ok()) return status;
  if (const auto rpc_layer = config.find("rpc_layer"); rpc_layer != config.end()) {
    spec.set_rpc_layer(rpc_layer->get<std::string>());
  }
  if (const auto environment = config.find("environment"); environment != config.end()) {
    spec.set_environment(environment->get<std::string>());
  }
  return spec;
}

absl::StatusOr<std::optional<ClusterSpec>> ClusterSpecFromEnvironmentIfAny() {
  const char* value = std::getenv("TF_CONFIG");
  if (value == nullptr || value[0] == '\0') return std::optional<ClusterSpec>();
  const absl::string_view json(value);
  const Json config = Json::parse(json.begin(), json.end(), nullptr, /*allow_exceptions=*/false);
  if (config.is_object()) {
    const auto cluster = config.find("cluster");
    if (cluster == config.end() || (cluster->is_object() && cluster->empty())) {
      return std::optional<ClusterSpec>();
    }
  }
  absl::StatusOr<ClusterSpec> spec = ParseTfConfig(json);
  if (!spec.ok()) return spec.status();
  return std::optional<ClusterSpec>(*std::move(spec));
}

absl::StatusOr<ClusterSpec> ClusterSpecFromEnvironment() {
  const char* value = std::getenv("TF_CONFIG");
  if (value == nullptr || value[0] == '\0') {
    return absl::NotFoundError("the TF_CONFIG environment variable is not set or empty");
  }
  return ParseTfConfig(value);
}

}  // namespace distribute
