#!/usr/bin/env bash
# Installs, with apt, the Debian 12 packages the build and the test suites need, and only
# those that are missing. Prints nothing when everything is already installed.
set -euo pipefail

packages=(
  # toolchain
  g++ cmake make pkg-config
  # the core
  libabsl-dev libdlpack-dev nlohmann-json3-dev libgloo-dev
  # the server and coordination service (protobuf-compiler-grpc is needed even to link:
  # gRPC's CMake config checks that its plugins exist; libssl-dev: the server checks TLS
  # files with OpenSSL, gRPC's own TLS library, and the transport handshake's HMAC)
  libgrpc++-dev libgrpc-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc libssl-dev
  # tests and benchmarks (openssl: the TLS tests make their certificates at run time)
  libcmocka-dev libgtest-dev libgmock-dev libbenchmark-dev openssl
  # header checks for the bindings: swig and bindgen (which loads libclang at run time)
  swig bindgen libclang1-14 libclang-common-14-dev
  # the libFuzzer targets (make test-fuzz): clang and its runtimes (libclang-rt-14-dev
  # holds libclang_rt.fuzzer; --no-install-recommends would leave it out)
  clang-14 libclang-rt-14-dev
  # compressed (ZLIB, GZIP) TFRecord files
  zlib1g-dev
  # the multi-host tests (tests/multihost): network namespaces, veth, bridges, tc and ss
  iproute2
  # the deployment examples' check (deploy/): the Kubernetes manifests parsed as YAML
  python3-yaml
  # tools/plot_bench.py: the charts of dist-bench's tables and train_mlp --csv (docs/img)
  python3-matplotlib
  # the C API reference (make docs, ctest -L docs): Doxygen over the public headers
  doxygen
  # Java binding (bindings/java, make test-java): JDK 17, JUnit 5's console launcher, and
  # python3 for the check that the generated JNI glue matches the header
  openjdk-17-jdk-headless default-jdk-headless junit5 python3
  # the Rust binding (bindings/rust, make test-rust): Debian's rustc 1.63 and cargo 1.65
  # and rustfmt (bindgen above regenerates its sys crate and formats it with Debian's rustfmt;
  # cc and ar from g++ build its benchmark helper)
  rustc cargo rustfmt
  # Go binding (bindings/go, make test-go): the Go toolchain (1.19)
  golang-go
)

# The CUDA toolkit and NCCL (core/cuda/*.cu, the CUDA plugin, dist-bench-gpu) are no Debian
# packages: they come from NVIDIA's installer, at /usr/local/cuda on this project's machines
# (CUDA 13 with NCCL). They are optional: without nvcc and nccl.h, configuring with
# DIST_CUDA=AUTO (the default) leaves the plugin and dist-bench-gpu out, and every GPU test
# runs on the fake GPU plugin (tests/gpu_fake) or reports SKIPPED. Say so once, then go on.
if [[ ! -x /usr/local/cuda/bin/nvcc ]] && ! command -v nvcc >/dev/null 2>&1; then
  echo "install-deps: no CUDA toolkit (/usr/local/cuda, from NVIDIA, not apt): the CUDA plugin will not be built"
fi

missing=()
for package in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$package" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$package")
done
[[ ${#missing[@]} -eq 0 ]] && exit 0

echo "install-deps: installing ${missing[*]}"
sudo_cmd=()
if [[ $(id -u) -ne 0 ]]; then
  command -v sudo >/dev/null || { echo "install-deps: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  sudo_cmd=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: done"
