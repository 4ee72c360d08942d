// Uses the installed C++ wrapper through find_package(distribute): distribute::cpp.
#include <cstdio>

#include "distribute/distribute.hpp"

int main() {
  dist::Result<dist::Value> t = dist::tensor<float>({1.0f, 2.0f}, {2});
  if (!t.ok()) {
    std::fprintf(stderr, "%s\n", t.status().to_string().c_str());
    return 1;
  }
  std::printf("cpp consumer OK: distribute %s, %lld elements\n", dist::version(),
              static_cast<long long>(t->num_elements().value_or(-1)));
  return 0;
}
