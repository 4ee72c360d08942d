#include "core/device/gpu_runtime.h"

#include <dlfcn.h>

#include <cstdlib>
#include <string>

#include "absl/strings/str_cat.h"

namespace distribute {
namespace {

constexpr char kPluginFile[] = "libdistribute_cuda.so.0";
constexpr size_t kErrLen = 512;

// The directory holding libdistribute itself, found through one of its own symbols, so
// that an installed or build-tree plugin beside it is found without any search path.
std::string OwnDirectory() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&OwnDirectory), &info) == 0 || info.dli_fname == nullptr) {
    return "";
  }
  const std::string path = info.dli_fname;
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "" : path.substr(0, slash);
}

// dlopen with RTLD_LOCAL: the plugin's CUDA symbols never leak into the host process.
void* OpenPlugin(std::string& tried) {
  if (const char* env = std::getenv("DIST_CUDA_PLUGIN"); env != nullptr && *env != '\0') {
    tried = env;
    return dlopen(env, RTLD_NOW | RTLD_LOCAL);
  }
  const std::string dir = OwnDirectory();
  if (!dir.empty()) {
    const std::string beside = dir + "/" + kPluginFile;
    if (void* handle = dlopen(beside.c_str(), RTLD_NOW | RTLD_LOCAL)) return handle;
  }
  tried = kPluginFile;
  return dlopen(kPluginFile, RTLD_NOW | RTLD_LOCAL);
}

}  // namespace

const GpuRuntime& GpuRuntime::Get() {
  static const GpuRuntime* runtime = new GpuRuntime();  // never destroyed: used at exit too
  return *runtime;
}

GpuRuntime::GpuRuntime() {
  std::string tried;
  void* handle = OpenPlugin(tried);
  if (handle == nullptr) {
    const char* why = dlerror();
    unavailable_reason_ = absl::StrCat("the CUDA plugin ", tried, " could not be loaded (",
                                       why ? why : "unknown reason", ")");
    return;
  }
  auto get = reinterpret_cast<dist_gpu_plugin_get_fn>(dlsym(handle, DIST_GPU_PLUGIN_ENTRY));
  const dist_gpu_plugin_v1* plugin = get ? get() : nullptr;
  if (plugin == nullptr || plugin->abi_version != DIST_GPU_PLUGIN_ABI_VERSION ||
      plugin->struct_size < DIST_GPU_PLUGIN_V1_BASE_SIZE) {
    unavailable_reason_ = absl::StrCat("the CUDA plugin ", tried,
                                       " does not provide ABI version ",
                                       DIST_GPU_PLUGIN_ABI_VERSION);
    return;  // the handle stays open: harmless, and dlclose of CUDA code is fragile
  }
  char err[kErrLen] = "";
  int32_t count = 0;
  if (plugin->device_count(&count, err, sizeof err) != 0 || count <= 0) {
    unavailable_reason_ = absl::StrCat("the CUDA plugin found no GPU: ",
                                       err[0] ? err : "no device");
    return;
  }
  plugin_ = plugin;
  device_count_ = count;
  // A plugin built before the GPU-replica entries still serves memory and copies; one built
  // before the update entries still serves replicas (variables then update on the host).
  has_replica_entries_ = plugin->struct_size >= DIST_GPU_PLUGIN_V1_REPLICA_SIZE;
  has_update_entries_ = plugin->struct_size >= sizeof(dist_gpu_plugin_v1);
}

absl::Status GpuRuntime::CheckDevice(int32_t index) const {
  if (device_count_ == 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("GPU:", index, " is not available: ", unavailable_reason_));
  }
  if (index < 0 || index >= device_count_) {
    return absl::NotFoundError(absl::StrCat("GPU:", index, " does not exist: this machine has ",
                                            device_count_, " GPU(s)"));
  }
  return absl::OkStatus();
}

absl::StatusOr<void*> GpuRuntime::Allocate(int32_t device, size_t bytes) const {
  if (absl::Status s = CheckDevice(device); !s.ok()) return s;
  char err[kErrLen] = "";
  void* ptr = nullptr;
  if (plugin_->allocate(device, bytes, &ptr, err, sizeof err) != 0) {
    return absl::ResourceExhaustedError(
        absl::StrCat("allocating ", bytes, " bytes on GPU:", device, " failed: ", err));
  }
  return ptr;
}

void GpuRuntime::Release(int32_t device, void* ptr) const {
  if (plugin_ != nullptr && ptr != nullptr) plugin_->release(device, ptr);
}

absl::Status GpuRuntime::Copy(int32_t dst_device, void* dst, int32_t src_device, const void* src,
                              size_t bytes) const {
  if (plugin_ == nullptr) return CheckDevice(0);
  char err[kErrLen] = "";
  if (plugin_->copy(dst_device, dst, src_device, src, bytes, err, sizeof err) != 0) {
    return absl::InternalError(absl::StrCat("GPU copy of ", bytes, " bytes failed: ", err));
  }
  return absl::OkStatus();
}

absl::Status GpuRuntime::Zero(int32_t device, void* ptr, size_t bytes) const {
  if (plugin_ == nullptr) return CheckDevice(device);
  char err[kErrLen] = "";
  if (plugin_->zero(device, ptr, bytes, err, sizeof err) != 0) {
    return absl::InternalError(absl::StrCat("zeroing GPU:", device, " memory failed: ", err));
  }
  return absl::OkStatus();
}

}  // namespace distribute
