#!/usr/bin/env bash
# README.md's C++ example ("### C++") compiled and run as written: the first ```cpp block
# after that heading becomes the body of main(), built as C++17 against this build.
#   readme_example.sh README CXX INCLUDE_DIRS(:-separated) LIBDIR
set -euo pipefail
readme=${1:?usage: readme_example.sh README CXX INCLUDES LIBDIR}
cxx=${2:?}
includes=${3:?}
libdir=${4:?}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
body=$(awk '/^### C\+\+$/ { in_section = 1 } in_section && /^```cpp$/ { grab = 1; next } grab && /^```$/ { exit } grab { print }' "$readme")
[[ -n $body ]] || { echo "FAIL: no C++ example under '### C++' in $readme"; exit 1; }
{
  echo '#include <cstdio>'
  echo '#include "distribute/distribute.hpp"'
  echo 'int main() {'
  echo "$body"
  echo '  return status.ok() ? 0 : 1;'
  echo '}'
} >"$work/readme.cc"
flags=()
IFS=':' read -ra dirs <<<"$includes"
for d in "${dirs[@]}"; do flags+=("-I$d"); done
"$cxx" -std=c++17 -Wall -Wextra -Werror "${flags[@]}" "$work/readme.cc" -L"$libdir" -ldistribute \
  -Wl,-rpath,"$libdir" -o "$work/readme" || { cat -n "$work/readme.cc"; echo "FAIL: the README's C++ example does not compile"; exit 1; }
"$work/readme" || { echo "FAIL: the README's C++ example failed"; exit 1; }
echo "the README's C++ example compiles (C++17, -Werror) and runs"
