#!/usr/bin/env bash
# Installs graft into a temporary prefix, then, with the build tree out of
# sight: the installed graft tool writes a model and runs it (finding its JIT
# plugin and backends beside the installed library), and a consumer program is
# built against the install twice, with CMake's find_package and with
# pkg-config, and runs the model; both consumers must print the same output.
# Usage: install_test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1
source=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix
cmake --install "$build" --prefix "$prefix" > "$work/install.log"

# The tool, run from the prefix alone.
"$prefix/bin/graft" zoo mlp -o "$work/mlp.onnx" > /dev/null
"$prefix/bin/graft" run "$work/mlp.onnx" --repeat 2 > "$work/run.log"
grep -q "latency" "$work/run.log" || { cat "$work/run.log"; echo "installed graft run printed no latency"; exit 1; }
"$prefix/bin/graft" devices > "$work/devices.log"
grep -q "LLVM JIT:" "$work/devices.log" || { cat "$work/devices.log"; echo "installed graft found no JIT plugin"; exit 1; }

# A CMake consumer.
cp "$source/tests/install/CMakeLists.txt" "$source/tests/install/consumer.cc" "$work/"
mkdir "$work/cmake-consumer"
cmake -S "$work" -B "$work/cmake-consumer" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" \
  > "$work/cmake-consumer.log"
cmake --build "$work/cmake-consumer" >> "$work/cmake-consumer.log"
with_cmake=$("$work/cmake-consumer/consumer" "$work/mlp.onnx")

# A pkg-config consumer.
flags=$(PKG_CONFIG_PATH="$prefix/lib/pkgconfig:$(ls -d "$prefix"/lib/*/pkgconfig 2>/dev/null | tr '\n' ':')" \
        pkg-config --cflags --libs graft)
c++ -std=c++20 -O1 "$work/consumer.cc" -o "$work/pkg-consumer" $flags
with_pkg_config=$("$work/pkg-consumer" "$work/mlp.onnx")

echo "cmake consumer: $with_cmake"
echo "pkg-config consumer: $with_pkg_config"
[ "$with_cmake" = "$with_pkg_config" ] || { echo "the two consumers disagree"; exit 1; }
case "$with_cmake" in output*) ;; *) echo "unexpected consumer output"; exit 1 ;; esac
echo "install test passed"
