#!/usr/bin/env bash
# Installs graft into a temporary prefix, then, with the build tree out of
# sight: the installed graft tool writes a model and runs it (finding its JIT
# plugin and backends beside the installed library), and a consumer program is
# built against the install twice, with CMake's find_package and with
# pkg-config, and runs the model, and so is the same program in C through the
# C API; every consumer must print the same output.
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

# The same program in C through the C API (graft/capi/c_api.h), compiled as
# C11: a C-only CMake project, and cc with pkg-config.
mkdir "$work/c" "$work/c-cmake-consumer"
cp "$source/tests/install/c/CMakeLists.txt" "$work/c/"
cp "$source/tests/install/c_consumer.c" "$work/"
cmake -S "$work/c" -B "$work/c-cmake-consumer" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" \
  > "$work/c-cmake-consumer.log"
cmake --build "$work/c-cmake-consumer" >> "$work/c-cmake-consumer.log"
c_with_cmake=$("$work/c-cmake-consumer/c_consumer" "$work/mlp.onnx")
cc -std=c11 -O1 "$work/c_consumer.c" -o "$work/c-pkg-consumer" $flags
c_with_pkg_config=$("$work/c-pkg-consumer" "$work/mlp.onnx")

echo "cmake consumer: $with_cmake"
echo "pkg-config consumer: $with_pkg_config"
echo "C cmake consumer: $c_with_cmake"
echo "C pkg-config consumer: $c_with_pkg_config"
[ "$with_cmake" = "$with_pkg_config" ] || { echo "the two consumers disagree"; exit 1; }
[ "$c_with_cmake" = "$with_cmake" ] && [ "$c_with_pkg_config" = "$with_cmake" ] ||
  { echo "the C consumers disagree with the C++ ones"; exit 1; }
case "$with_cmake" in output*) ;; *) echo "unexpected consumer output"; exit 1 ;; esac
echo "install test passed"
