#!/usr/bin/env bash
# Builds the Java binding: the JNI library (libdistributejni.so) and distribute.jar.
#   bindings/java/build.sh OUT_DIR
# Finds libdistribute through pkg-config (PKG_CONFIG_PATH: the build tree's
# distribute-uninstalled.pc, or an installed distribute.pc). Fails when the JDK is missing.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="$(mkdir -p "$1" && cd "$1" && pwd)"
command -v javac >/dev/null || { echo "build.sh: javac not found (scripts/install-deps.sh installs openjdk-17-jdk-headless)" >&2; exit 1; }
java_home="${JAVA_HOME:-$(dirname "$(dirname "$(readlink -f "$(command -v javac)")")")}"
cflags="$(pkg-config --cflags distribute)"
libdir="$(pkg-config --variable=libdir distribute)"
libdir="$(cd "$libdir" && pwd)"
# The header and the committed generated glue must agree.
incdir="$(pkg-config --variable=includedir distribute)"
python3 "$here/gen_jni.py" "$here/../../include_c" --check >/dev/null
mkdir -p "$out/classes"
${CC:-cc} -std=c11 -O2 -Wall -Wextra -Werror -Wno-unused-parameter -fPIC -shared -fvisibility=hidden \
  -I"$java_home/include" -I"$java_home/include/linux" $cflags \
  "$here/native/distribute_jni.c" "$here/native/generated_jni.c" \
  -o "$out/libdistributejni.so" -L"$libdir" -ldistribute -lpthread -Wl,-rpath,"$libdir" -Wl,--no-undefined
rm -rf "$out/classes" && mkdir -p "$out/classes"
javac -Xlint:all -Werror -d "$out/classes" "$here"/src/org/distribute/*.java
jar cf "$out/distribute.jar" -C "$out/classes" .
echo "build.sh: $out/distribute.jar, $out/libdistributejni.so (libdistribute from $libdir, headers $incdir)"
