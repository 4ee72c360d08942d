#include "core/device/interned_device_name.h"

#include <memory>
#include <unordered_map>

#include "core/util/mutex.h"

namespace distribute {
namespace {

struct Table {
  Mutex mu;
  std::unordered_map<std::string, std::unique_ptr<const std::string>> names ABSL_GUARDED_BY(mu);
};

Table& TheTable() {
  static Table* table = new Table();  // never destroyed: tensors may outlive static destructors
  return *table;
}

// The names this thread looked up last (a replica thread uses one or two devices).
struct ThreadCache {
  static constexpr int kEntries = 4;
  struct Entry {
    DeviceSpec spec;
    const std::string* name = nullptr;
  };
  Entry entries[kEntries];
  int next = 0;
};

}  // namespace

const std::string* InternedDeviceName(const DeviceSpec& spec) {
  thread_local ThreadCache cache;
  for (const ThreadCache::Entry& entry : cache.entries) {
    if (entry.name != nullptr && entry.spec == spec) return entry.name;
  }
  std::string formatted = spec.ToString();
  const std::string* name = nullptr;
  {
    Table& table = TheTable();
    MutexLock lock(&table.mu);
    auto it = table.names.find(formatted);
    if (it == table.names.end()) {
      if (table.names.size() >= kMaxInternedDeviceNames) return nullptr;
      auto interned = std::make_unique<const std::string>(formatted);
      it = table.names.emplace(std::move(formatted), std::move(interned)).first;
    }
    name = it->second.get();
  }
  cache.entries[cache.next] = ThreadCache::Entry{spec, name};
  cache.next = (cache.next + 1) % ThreadCache::kEntries;
  return name;
}

}  // namespace distribute
