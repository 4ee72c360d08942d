#!/usr/bin/env bash
# The front door of the Java, Go and Rust bindings: `cmake --install` into a fresh prefix,
# then for each language, in an empty directory outside the source and build trees, the
# README's example program (taken from the INSTALLED README) is built and run with the
# commands of the "From an installed prefix" section of the INSTALLED guide
# (<prefix>/share/doc/distribute/<lang>.md), exactly as written, with PREFIX set.
#   installed_bindings.sh <build dir> <cmake> <java built: ON|OFF> [<config>]
# Nothing points into the build tree while they run (no PKG_CONFIG_PATH, no LD_LIBRARY_PATH:
# a clean environment with PATH and HOME only). A language whose toolchain is absent is
# SKIPPED; all three skipped exits 77. LANG_TIMEOUT bounds each language (seconds).
set -euo pipefail

usage="usage: installed_bindings.sh BUILD_DIR CMAKE JAVA_BUILT [CONFIG]"
build_dir=${1:?$usage}
cmake=${2:?$usage}
java_built=${3:?$usage}
config=${4:-}
lang_timeout=${LANG_TIMEOUT:-240}

# Outside the checkout and the build tree (which may lie inside the checkout).
work=$(mktemp -d "${TMPDIR:-/tmp}/dist-installed-bindings.XXXXXX")
keep=0
cleanup() { if [[ $keep -eq 0 ]]; then rm -rf "$work"; else echo "kept for inspection: $work"; fi; }
trap cleanup EXIT
prefix=$work/prefix

fail_setup() { keep=1; echo "FAIL: $*"; exit 1; }

install_args=(--install "$build_dir" --prefix "$prefix")
[[ -n $config ]] && install_args+=(--config "$config")
if ! "$cmake" "${install_args[@]}" >"$work/install.log" 2>&1; then
  cat "$work/install.log"
  fail_setup "cmake ${install_args[*]} failed"
fi
docs=$prefix/share/doc/distribute
[[ -f $docs/README.md ]] || fail_setup "cmake --install did not install $docs/README.md"
for f in java.md go.md rust.md; do
  [[ -f $docs/$f ]] || fail_setup "cmake --install did not install $docs/$f"
done
# The installed sources must not refer to the build tree.
if grep -rlF "$(realpath "$build_dir")" "$prefix/share/go" "$prefix/share/rust" 2>/dev/null; then
  fail_setup "installed module/crate files name the build tree $(realpath "$build_dir")"
fi

# The first ```<lang> block of the README section "### <Title>".
readme_example() {  # <Title> <fence language>
  awk -v h="### $1" -v f="\`\`\`$2" '$0 == h {s=1} s && $0 == f {c=1; next} c && /^```$/ {exit} c' \
    "$docs/README.md"
}
# The first ```sh block of the section "## From an installed prefix" of a guide.
guide_commands() {  # <guide.md>
  awk '/^## From an installed prefix$/ {s=1; next} s && /^#{1,2} / {exit}
       s && /^```sh$/ {c=1; next} c && /^```$/ {exit} c' "$1"
}

# PATH and HOME only: no PKG_CONFIG_PATH, LD_LIBRARY_PATH, CGO_*, GOFLAGS, CLASSPATH,
# CARGO_TARGET_DIR or RUSTFLAGS from the caller (rustup's proxies need RUSTUP_HOME and
# CARGO_HOME when those are set).
clean_env=(env -i "HOME=$HOME" "PATH=$PATH" "TMPDIR=$work" "PREFIX=$prefix" LC_ALL=C.UTF-8)
for v in RUSTUP_HOME CARGO_HOME; do
  [[ -n ${!v:-} ]] && clean_env+=("$v=${!v}")
done

failed=0 skipped=0 passed=0
skip() { echo "SKIPPED: $1"; skipped=$((skipped + 1)); }
lang_fail() { echo "FAIL: $1"; failed=$((failed + 1)); keep=1; }

# run_lang <name> <guide> <dir> <expected output suffix> [extra env...]: runs the guide's
# commands in <dir> (which holds the example) and checks the program's last line.
run_lang() {
  local name=$1 guide=$2 dir=$3 expected=$4
  shift 4
  local script=$work/$name.commands.sh
  guide_commands "$guide" >"$script"
  [[ -s $script ]] || { lang_fail "$name: no \`\`\`sh block under '## From an installed prefix' in $guide"; return; }
  echo "---- $name: commands from $guide"
  cat "$script"
  local start=$SECONDS status=0
  (cd "$dir" && timeout "$lang_timeout" "${clean_env[@]}" "$@" bash -euo pipefail "$script") \
    >"$work/$name.log" 2>&1 || status=$?
  local last
  last=$(grep -v '^\s*$' "$work/$name.log" | tail -1 || true)
  if [[ $status -ne 0 ]]; then
    tail -40 "$work/$name.log"
    if [[ $status -eq 124 ]]; then
      lang_fail "$name: timed out after ${lang_timeout}s (LANG_TIMEOUT)"
    else
      lang_fail "$name: the guide's commands failed (exit $status)"
    fi
    return 1
  fi
  if [[ $last != *"$expected" ]]; then
    tail -40 "$work/$name.log"
    lang_fail "$name: the program printed '$last', expected a line ending in '$expected'"
    return 1
  fi
  echo "$name: OK in $((SECONDS - start)) s: $last"
  passed=$((passed + 1))
}

# loads_from_prefix <name> <binary or library>: libdistribute must resolve into the prefix.
loads_from_prefix() {
  local loaded
  loaded=$(ldd "$2" | awk '$1 == "libdistribute.so.0" { print $3 }')
  [[ -n $loaded && $(realpath "$loaded") == "$(realpath "$prefix")"/* ]] ||
    { lang_fail "$1: $2 loads libdistribute.so.0 from '$loaded', not from $prefix"; return 1; }
}

# ---- Java
if ! command -v javac >/dev/null || ! command -v java >/dev/null; then
  skip "Java (no javac/java on PATH; scripts/install-deps.sh installs the JDK)"
elif [[ $java_built != ON ]]; then
  skip "Java (this build has no Java binding: DIST_JAVA=OFF, or no JDK when it was configured)"
else
  dir=$work/java-consumer
  mkdir -p "$dir"
  readme_example Java java >"$dir/QuickStart.java"
  if [[ ! -s $dir/QuickStart.java ]]; then
    lang_fail "Java: no \`\`\`java block under '### Java' in $docs/README.md"
  elif run_lang Java "$docs/java.md" "$dir" "MEAN: 6.0"; then
    jni=$(find "$prefix" -name libdistributejni.so | head -1)
    if [[ -z $jni ]]; then
      lang_fail "Java: cmake --install installed no libdistributejni.so"
    else
      loads_from_prefix Java "$jni" || true
    fi
  fi
fi

# ---- Go
if ! command -v go >/dev/null; then
  skip "Go (no go on PATH; scripts/install-deps.sh installs golang-go)"
else
  dir=$work/go-consumer
  mkdir -p "$dir"
  readme_example Go go >"$dir/main.go"
  if [[ ! -s $dir/main.go ]]; then
    lang_fail "Go: no \`\`\`go block under '### Go' in $docs/README.md"
  # A build cache of its own (the guide relies on Go's default under HOME; this one must
  # not be reused from another prefix).
  elif run_lang Go "$docs/go.md" "$dir" "6 <nil>" "GOCACHE=$work/gocache" "GOPATH=$work/gopath"; then
    # The same build as a file, to see which libdistribute it loads.
    if (cd "$dir" && "${clean_env[@]}" "GOCACHE=$work/gocache" "GOPATH=$work/gopath" GOPROXY=off \
          "PKG_CONFIG_PATH=$prefix/lib/pkgconfig" go build -o quickstart .) >>"$work/Go.log" 2>&1; then
      loads_from_prefix Go "$dir/quickstart" || true
    else
      lang_fail "Go: go build -o quickstart failed (see $work/Go.log)"
    fi
  fi
fi

# ---- Rust (Debian's toolchain when present, as tests/rust/run.sh uses)
cargo_path=$PATH
[[ -x /usr/bin/cargo && -x /usr/bin/rustc ]] && cargo_path=/usr/bin:$PATH
if ! PATH=$cargo_path command -v cargo >/dev/null || ! PATH=$cargo_path command -v rustc >/dev/null; then
  skip "Rust (no cargo/rustc; scripts/install-deps.sh installs Debian's)"
else
  dir=$work/rust-consumer
  mkdir -p "$dir/src"
  readme_example Rust rust >"$dir/src/main.rs"
  if [[ ! -s $dir/src/main.rs ]]; then
    lang_fail "Rust: no \`\`\`rust block under '### Rust' in $docs/README.md"
  elif run_lang Rust "$docs/rust.md" "$dir" "sum of replica ids: 6" "PATH=$cargo_path"; then
    loads_from_prefix Rust "$dir/target/debug/quickstart" || true
  fi
fi

echo "installed bindings: $passed passed, $failed failed, $skipped skipped"
[[ $failed -eq 0 ]] || exit 1
[[ $passed -gt 0 ]] || exit 77
echo "OK: the Java, Go and Rust programs built and ran against $prefix from its guides alone"
