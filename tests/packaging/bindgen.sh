#!/usr/bin/env bash
# Generates Rust FFI bindings for the public headers with the bindgen CLI (the recipe of
# notes/bindings.md section 6) and checks the result:
#   bindgen.sh <work dir> <include_c dir> <generated include dir>
# - bindgen succeeds on distribute.h (and on dlpack_interop.h);
# - sys.rs declares the API (pub fn dist_tensor_create, pub const DIST_OK: i32 = 0, size_t
#   as usize, opaque handle structs);
# - when rustc is installed, sys.rs compiles as an edition-2021 library with warnings
#   denied (bindgen's lower-case C names excepted).
set -euo pipefail

usage="usage: bindgen.sh WORK INCLUDE_C GENERATED_INCLUDE"
work_dir=${1:?$usage}
include_dir=${2:?$usage}
generated_dir=${3:?$usage}

# ctest may run without ~/.cargo/bin on PATH (rustup's rustc).
[[ -d ${HOME:-/nonexistent}/.cargo/bin ]] && PATH=$PATH:$HOME/.cargo/bin

bindgen=${BINDGEN_EXECUTABLE:-bindgen}
command -v "$bindgen" >/dev/null || { echo "SKIPPED: bindgen not found"; exit 77; }
"$bindgen" --version

fail() { echo "FAIL: $*"; exit 1; }

rm -rf "$work_dir"
mkdir -p "$work_dir"

bindgen_flags=(--allowlist-function 'dist_.*' --allowlist-type 'dist_.*' --allowlist-var 'DIST_.*'
               --default-macro-constant-type signed --size_t-is-usize --no-layout-tests)
clang_flags=(-I"$include_dir" -I"$generated_dir")

run_bindgen() {  # <header> <output>
  local output
  if ! output=$("$bindgen" "$1" "${bindgen_flags[@]}" -o "$2" -- "${clang_flags[@]}" 2>&1); then
    echo "$output"
    if grep -q 'libclang' <<<"$output"; then
      echo "SKIPPED: bindgen cannot load libclang (install libclang1-14)"
      exit 77
    fi
    fail "bindgen $1 failed"
  fi
  if [[ -n $output ]]; then
    echo "$output"
    fail "bindgen $1 printed diagnostics"
  fi
}

sys=$work_dir/sys.rs
echo "+ $bindgen $include_dir/distribute/distribute.h ${bindgen_flags[*]} -o $sys -- ${clang_flags[*]}"
run_bindgen "$include_dir/distribute/distribute.h" "$sys"

expect() {  # <fixed string> <what>
  grep -qF -- "$1" "$sys" || fail "sys.rs lacks $2: '$1'"
}
expect 'pub fn dist_tensor_create(' 'dist_tensor_create'
expect 'pub fn dist_version() -> *const ::std::os::raw::c_char;' 'dist_version'
expect 'pub fn dist_last_error_message() -> *const ::std::os::raw::c_char;' 'dist_last_error_message'
expect 'pub const DIST_OK: i32 = 0;' 'DIST_OK as a signed constant'
expect 'pub const DIST_INVALID_ARGUMENT: i32 = 3;' 'DIST_INVALID_ARGUMENT'
expect 'pub type dist_status_t = i32;' 'dist_status_t'
expect 'pub struct dist_value {' 'the opaque dist_value struct'
expect 'byte_size: usize,' 'size_t as usize'
# size_t must be usize; c_ulong may only appear behind <stdint.h>'s __uint64_t.
grep 'c_ulong' "$sys" | grep -vq '^pub type __uint64_t = ' && fail "sys.rs uses c_ulong (size_t not mapped to usize?)"
# Nothing outside the allowlists (e.g. from <stdint.h>).
if grep -E '^ *pub (fn|const|type|struct) ' "$sys" | grep -vE 'pub (fn|type|struct) dist_|pub const DIST_' |
     grep -vE 'pub (type|struct) __' ; then
  fail "sys.rs declares items outside dist_* / DIST_*"
fi
echo "sys.rs: $(grep -c 'pub fn dist_' "$sys") functions, $(grep -c 'pub const DIST_' "$sys") constants"

# Every DIST_API function of the umbrella's headers must have a binding.
declared=$(cat "$include_dir"/distribute/*.h "$generated_dir"/distribute/*.h | grep 'DIST_API' |
           grep -oE '\bdist_[a-z0-9_]+[[:space:]]*\(' | sed -E 's/[[:space:]]*\($//' | sort -u)
bound=$(grep -oE 'pub fn dist_[a-z0-9_]+' "$sys" | sed 's/pub fn //' | sort -u)
missing=$(comm -23 <(echo "$declared") <(echo "$bound") | grep -vE '^dist_tensor_(to|from)_dlpack$' || true)
[[ -z $missing ]] || fail "no binding for: $(tr "\n" " " <<<"$missing")(not reachable from distribute.h?)"

# dlpack_interop.h, with the DLPack types it needs.
dlpack_sys=$work_dir/dlpack_sys.rs
run_bindgen "$include_dir/distribute/dlpack_interop.h" "$dlpack_sys"
grep -qF 'pub fn dist_tensor_to_dlpack(' "$dlpack_sys" || fail "dlpack_sys.rs lacks dist_tensor_to_dlpack"
grep -qF 'pub struct DLManagedTensor {' "$dlpack_sys" || fail "dlpack_sys.rs lacks DLManagedTensor"

if command -v rustc >/dev/null; then
  rustc --version
  for file in "$sys" "$dlpack_sys"; do
    name=$(basename "$file" .rs)
    rustc --crate-type lib --edition 2021 --crate-name "distribute_$name" --emit=metadata \
      -D warnings -A non_camel_case_types -A non_upper_case_globals -A non_snake_case \
      -A dead_code --out-dir "$work_dir" "$file" || fail "$(basename "$file") does not compile with rustc"
  done
  echo "rustc: sys.rs and dlpack_sys.rs compile (edition 2021)"
else
  echo "note: rustc not found; sys.rs was generated but not compiled"
fi
echo "OK: bindgen generates valid bindings for the public headers"
