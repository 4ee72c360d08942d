# The commands a new user runs: `make demo`, `make test` (the default build, every suite of
# it and the bindings' suites) and `make check` (what CI runs: `make test` plus the
# sanitizer builds and the fuzzers). Each installs what is missing (scripts/install-deps.sh,
# quiet when nothing is), configures and builds first, and every stage prints its wall time
# (scripts/timed.sh).

.PHONY: all deps build demo test check test-default test-asan test-tsan test-java test-go test-rust test-fuzz docs clean

TIMED := scripts/timed.sh

all: build

deps:
	@scripts/install-deps.sh

# The training demo (examples/c/train_mlp): one MLP trained with OneDevice, Mirrored (4
# replicas), MultiWorkerMirrored (2 processes x 2 replicas through distrun),
# ParameterServer (2 workers x 2 replicas and 2 ps tasks through distrun --ps 2) and the
# ClusterCoordinator over it (the chief scheduling steps on 2 workers, distrun -n 3 --ps 2).
# Builds the library, distrun and the example only; the test suites build under `make test`.
demo: deps
	@cmake --preset default >/dev/null
	@$(TIMED) "demo build" cmake --build --preset default --target train_mlp distrun
	@./build/bin/train_mlp --all

# Every suite in the default build, then the Java, Go and Rust bindings' suites.
test: test-default test-java test-go test-rust

# What CI runs: `make test`, then the C, core and C++-wrapper suites under ASan+UBSan and
# under ThreadSanitizer (less the gRPC server tests: Debian's gRPC and Abseil are not
# instrumented, and TSan reports races inside them), and a bounded fuzzing run of every
# libFuzzer target (built with clang).
check: test test-asan test-tsan test-fuzz

build: deps
	@cmake --preset default >/dev/null
	@$(TIMED) "default build" cmake --build --preset default

# The C API reference (docs/api.md): Doxygen over the public headers and the generated
# version.h (hence the configure), HTML in build/docs/html; warnings are printed, and
# `ctest -L docs` fails on them.
docs: deps
	@cmake --preset default >/dev/null
	@rm -rf build/docs && mkdir -p build/docs
	@DIST_DOCS_OUTPUT=$(CURDIR)/build/docs DIST_DOCS_GENERATED_DIR=$(CURDIR)/build/include_c \
	  $(TIMED) "api reference" doxygen docs/Doxyfile
	@if [ -s build/docs/doxygen-warnings.log ]; then cat build/docs/doxygen-warnings.log; fi
	@echo "docs: the C API reference is $(CURDIR)/build/docs/html/index.html"

test-default: build
	@$(TIMED) "default tests" ctest --preset default

# The Java binding's suite (bindings/java, tests/java): JUnit 5 tests, the Java example (in
# one process and under distrun) and the README's Java example, against this build's
# libdistribute (build/distribute-uninstalled.pc). Needs only the library and distrun.
test-java: deps
	@cmake --preset default >/dev/null
	@cmake --build --preset default --target distribute distrun dist_fake_gpu
	@PKG_CONFIG_PATH=$(CURDIR)/build DISTRUN=$(CURDIR)/build/bin/distrun $(TIMED) "java tests" tests/java/run.sh build/java

# ---- Rust binding (bindings/rust): cargo test --offline with Debian's rustc/cargo against
# the default build; its summary line ("rust: ...") is the last thing it prints.
test-rust: build
	@$(TIMED) "rust tests" tests/rust/run.sh build

# ---- end Rust binding

# --- Go binding (bindings/go): gofmt, go vet, go test (also -race with GODEBUG=cgocheck=2),
# the README example and examples/go, offline, against the build tree.
test-go: build
	@$(TIMED) "go tests" tests/go/run.sh
# --- end Go binding

test-asan: deps
	@cmake --preset asan >/dev/null
	@$(TIMED) "asan build" cmake --build --preset asan
	@$(TIMED) "asan tests" ctest --preset asan

test-tsan: deps
	@cmake --preset tsan >/dev/null
	@$(TIMED) "tsan build" cmake --build --preset tsan
	@$(TIMED) "tsan tests" ctest --preset tsan

# The libFuzzer targets (tests/core/*_fuzz.cc), built with clang-14 in build-fuzz and run
# for FUZZ_SECONDS each from the committed corpus (tests/core/fuzz_corpus); a crash fails
# with the reproducer's path. Built here so that they cannot rot unseen under gcc.
FUZZ_SECONDS ?= 20
test-fuzz: deps
	@cmake --preset fuzz >/dev/null
	@$(TIMED) "fuzz build" cmake --build --preset fuzz
	@$(TIMED) "fuzzing" scripts/run-fuzzers.sh build-fuzz $(FUZZ_SECONDS)

clean:
	rm -rf build build-debug build-asan build-tsan build-fuzz
