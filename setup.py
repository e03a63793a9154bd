"""Builds the `graft` Python package with CMake (docs/python.md).

    python3 -m venv --system-site-packages .venv      # Debian's numpy, onnx
    .venv/bin/pip install --no-build-isolation .

Offline: nothing is downloaded. The extension is the CMake target graft_python,
built in GRAFT_BUILD_DIR (default: build/, the tree `make build` uses; a fresh
one is configured for this interpreter when it has no build.ninja). The package
is then python/graft's modules, the extension, libgraft (as libgraft.so.0) and
its LLVM JIT plugin, side by side: the extension finds libgraft through its
$ORIGIN runpath.
"""
import glob
import os
import re
import shutil
import subprocess
import sys
import sysconfig

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = os.path.dirname(os.path.abspath(__file__))


def version():
    with open(os.path.join(ROOT, "CMakeLists.txt")) as f:
        return re.search(r"project\(graft VERSION ([0-9.]+)", f.read()).group(1)


class CMakeBuild(build_ext):
    def run(self):
        build_dir = os.path.abspath(os.environ.get("GRAFT_BUILD_DIR", os.path.join(ROOT, "build")))
        if not os.path.exists(os.path.join(build_dir, "build.ninja")):
            subprocess.check_call([
                "cmake", "-S", ROOT, "-B", build_dir, "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release",
                "-DGRAFT_PYTHON_EXECUTABLE=" + sys.executable, "-DGRAFT_BUILD_TESTS=OFF", "-DGRAFT_BUILD_BENCH=OFF"])
        jobs = os.environ.get("GRAFT_JOBS", str(os.cpu_count() or 1))
        subprocess.check_call(["cmake", "--build", build_dir, "-j", jobs, "--target", "graft_python"])
        package = os.path.join(build_dir, "python", "graft")
        suffix = sysconfig.get_config_var("EXT_SUFFIX")
        extension = os.path.join(package, "_graft" + suffix)
        if not os.path.exists(extension):
            built = glob.glob(os.path.join(package, "_graft*.so"))
            raise SystemExit("graft: %s holds %s, not _graft%s for this Python (%s): set GRAFT_BUILD_DIR to a new "
                             "folder to build for it" % (package, built or "no extension", suffix, sys.executable))
        target = os.path.join(os.path.abspath(self.build_lib), "graft")
        os.makedirs(target, exist_ok=True)
        for source in glob.glob(os.path.join(package, "*.py")) + [extension]:
            shutil.copy2(source, target)
        shutil.copy2(os.path.realpath(os.path.join(build_dir, "libgraft.so.0")), os.path.join(target, "libgraft.so.0"))
        plugin = os.path.join(build_dir, "libgraft_llvm_jit.so")
        if os.path.exists(plugin):
            shutil.copy2(plugin, target)


setup(
    name="graft",
    version=version(),
    description="graft: partition, fuse, compile and run ONNX models (ONNX Runtime-shaped Python API)",
    packages=[],
    ext_modules=[Extension("graft._graft", sources=[])],
    cmdclass={"build_ext": CMakeBuild},
    python_requires=">=3.9",
    install_requires=["numpy"],
    zip_safe=False,
)
