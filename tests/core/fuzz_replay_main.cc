// A main() for fuzz targets built without libFuzzer: runs LLVMFuzzerTestOneInput on every
// regular file under each argument (files or directories), so a committed corpus doubles
// as a regression test under any compiler.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <system_error>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

bool RunFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "cannot read %s\n", path.c_str());
    return false;
  }
  const std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR_OR_FILE...\n", argv[0]);
    return 2;
  }
  size_t runs = 0;
  for (int i = 1; i < argc; ++i) {
    const std::filesystem::path root(argv[i]);
    std::error_code error;
    if (std::filesystem::is_regular_file(root, error)) {
      if (!RunFile(root)) return 1;
      ++runs;
      continue;
    }
    if (!std::filesystem::is_directory(root, error)) {
      std::fprintf(stderr, "%s is neither a file nor a directory\n", argv[i]);
      return 1;
    }
    for (const auto& entry : std::filesystem::recursive_directory_iterator(root)) {
      if (!entry.is_regular_file()) continue;
      if (!RunFile(entry.path())) return 1;
      ++runs;
    }
  }
  std::printf("replayed %zu inputs\n", runs);
  // An empty corpus would make the test pass without testing anything.
  return runs > 0 ? 0 : 1;
}
