#!/usr/bin/env bash
# The Java suite: builds the binding (bindings/java/build.sh), compiles tests/java with
# JUnit 5 from Debian (junit5) and runs them with the JUnit console launcher, then the Java
# example and the README's example. Usage: tests/java/run.sh OUT_DIR
# PKG_CONFIG_PATH must find distribute(.pc or -uninstalled.pc). A missing JDK or JUnit fails.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
out="$(mkdir -p "$1" && cd "$1" && pwd)"
J=/usr/share/java
for jar in junit-platform-console-standalone.jar junit-jupiter-api.jar opentest4j.jar apiguardian-api.jar; do
  [[ -f "$J/$jar" ]] || { echo "test-java: $J/$jar missing (scripts/install-deps.sh installs junit5)" >&2; exit 1; }
done
"$root/bindings/java/build.sh" "$out" >/dev/null
# The fake GPU plugin (tests/gpu_fake) beside libdistribute: TypedReadTest runs a child JVM
# on it to check that reads of device memory are refused. A CMake build tree that lacks it
# builds it here (one small target); without it the suite fails.
libdir="$(cd "$(pkg-config --variable=libdir distribute)" && pwd)"
fake="$libdir/libdist_fake_gpu.so"
if [[ ! -f "$fake" && -f "$libdir/../CMakeCache.txt" ]]; then
  cmake --build "$libdir/.." --target dist_fake_gpu >/dev/null
fi
[[ -f "$fake" ]] || { echo "test-java: $fake missing (cmake --build <build dir> --target dist_fake_gpu)" >&2; exit 1; }
rm -rf "$out/test-classes" && mkdir -p "$out/test-classes"
javac -Xlint:all -Xlint:-try -Werror -d "$out/test-classes" \
  -cp "$out/distribute.jar:$J/junit-jupiter-api.jar:$J/opentest4j.jar:$J/apiguardian-api.jar" \
  "$root"/tests/java/org/distribute/tests/*.java
export DIST_JAVA_ROOT="$root" DIST_JAVA_OUT="$out" DIST_JAVA_FAKE_GPU="$fake"
java -Xcheck:jni -Xss4m -Djava.library.path="$out" -jar "$J/junit-platform-console-standalone.jar" \
  -cp "$out/distribute.jar:$out/test-classes" --scan-classpath "$out/test-classes" \
  --fail-if-no-tests --disable-banner --disable-ansi-colors --details=tree ${DIST_JAVA_TEST_ARGS:-} \
  > "$out/junit.log" 2>&1 || { cat "$out/junit.log"; echo "test-java: FAILED" >&2; exit 1; }
# -Xcheck:jni: the JVM checks every JNI call of the glue; any warning fails the suite.
if grep -q "WARNING in native method\|FATAL ERROR in native method" "$out/junit.log"; then
  grep -B2 -A8 "in native method" "$out/junit.log" | head -40; echo "test-java: JNI check warnings" >&2; exit 1
fi
grep -E "tests (successful|failed|found)" "$out/junit.log" | sed 's/^ *\[ */  /; s/ *\]$//'
found=$(sed -n 's/.*\[ *\([0-9]*\) tests found.*/\1/p' "$out/junit.log")
ok=$(sed -n 's/.*\[ *\([0-9]*\) tests successful.*/\1/p' "$out/junit.log")
echo "test-java: $ok/$found JUnit tests passed"
[[ -n "$ok" && "$ok" == "$found" ]] || { echo "test-java: FAILED" >&2; exit 1; }

# The README's Java example, extracted from README.md, compiled and run.
mkdir -p "$out/readme"
awk '/^### Java$/{f=1} f&&/^```java$/{c=1;next} c&&/^```$/{exit} c' "$root/README.md" > "$out/readme/QuickStart.java"
[[ -s "$out/readme/QuickStart.java" ]] || { echo "test-java: no java block under '### Java' in README.md" >&2; exit 1; }
javac -Xlint:all -Werror -cp "$out/distribute.jar" -d "$out/readme" "$out/readme/QuickStart.java"
readme_out=$(java -Djava.library.path="$out" -cp "$out/distribute.jar:$out/readme" QuickStart)
[[ "$readme_out" == *"MEAN: 6.0" ]] || { echo "test-java: README example printed: $readme_out" >&2; exit 1; }
echo "test-java: README example: $readme_out"

# The Java training example, short version (train_mlp --quick's sizes), with an accuracy check.
mkdir -p "$out/examples"
javac -Xlint:all -Xlint:-try -Werror -cp "$out/distribute.jar" -d "$out/examples" "$root/examples/java/TrainMlp.java"
java -Djava.library.path="$out" -cp "$out/distribute.jar:$out/examples" TrainMlp --check-accuracy 0.5 > "$out/train_mlp.log" 2>&1 \
  || { cat "$out/train_mlp.log"; echo "test-java: examples/java/TrainMlp failed" >&2; exit 1; }
single=$(tail -1 "$out/train_mlp.log")
echo "test-java: examples/java/TrainMlp: $single"

# The same training under MultiWorkerMirrored, 2 processes x 2 replicas started by distrun:
# every worker must report the single-process held-out accuracy.
distrun="${DISTRUN:-$root/build/bin/distrun}"
[[ -x "$distrun" ]] || { echo "test-java: distrun not found at $distrun (set DISTRUN)" >&2; exit 1; }
"$distrun" -n 2 --replicas-per-worker 2 --timeout 300 java -Djava.library.path="$out" \
  -cp "$out/distribute.jar:$out/examples" TrainMlp --multi-worker --check-accuracy 0.5 > "$out/train_mlp_mw.log" 2>&1 \
  || { cat "$out/train_mlp_mw.log"; echo "test-java: TrainMlp --multi-worker failed" >&2; exit 1; }
acc="${single#*held-out accuracy }"
for rank in 0 1; do
  grep -q "^\[$rank\] MultiWorkerMirrored (4 replicas): held-out accuracy $acc" "$out/train_mlp_mw.log" \
    || { cat "$out/train_mlp_mw.log"; echo "test-java: worker $rank differs from one process ($acc)" >&2; exit 1; }
done
echo "test-java: examples/java/TrainMlp --multi-worker under distrun (2 x 2): both workers $acc"
echo "test-java: passed ($ok JUnit tests, the README example, the training example in one and two processes)"
