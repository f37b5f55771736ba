"""The kiln wheel: the Python package of an installed Kiln prefix, with the prefix's libraries,
plugins, kilnc, headers and CMake package inside it.

In site-packages the wheel's kiln/ folder is itself a Kiln prefix:

    kiln/*.py, kiln/_ffi*.so        the package (run path $ORIGIN/lib finds kiln/lib)
    kiln/lib/libkiln*.so            libraries and runtime backends ($ORIGIN finds each other)
    kiln/lib/kiln/plugins/          compiler plugins, discovered on `import kiln`
    kiln/bin/kilnc                  run path $ORIGIN/../lib; the console script `kilnc` runs it
    kiln/include/, kiln/lib/cmake/  headers (the ccompiler plugin compiles against them) and
                                    find_package(Kiln) with CMAKE_PREFIX_PATH=<site-packages>/kiln

Kiln finds everything from the folder of libkiln_ffi.so, as in an installed prefix, so no path
is rewritten. KILN_PREFIX names the prefix (`cmake --install build --prefix <prefix>`).
"""

import os
import shutil
import subprocess

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

# Folders of the prefix copied into the package, relative to both.
PREFIX_TREES = ("bin", "include", "lib")
# Under lib/: the Python package itself is taken apart from the tree (it is the package root).
PYTHON_PACKAGE = os.path.join("lib", "python3", "dist-packages", "kiln")


def kiln_prefix():
    prefix = os.environ.get("KILN_PREFIX")
    if not prefix or not os.path.isfile(os.path.join(prefix, PYTHON_PACKAGE, "__init__.py")):
        raise SystemExit(
            f"kiln wheel: KILN_PREFIX={prefix!r} is not an installed Kiln with its Python "
            f"package ({PYTHON_PACKAGE}/__init__.py); run `cmake --install build --prefix <prefix>`"
        )
    return os.path.abspath(prefix)


def version():
    config = os.path.join(kiln_prefix(), "lib", "cmake", "Kiln", "KilnConfigVersion.cmake")
    with open(config, encoding="utf-8") as f:
        for line in f:
            if line.startswith('set(PACKAGE_VERSION "'):
                return line.split('"')[1]
    raise SystemExit(f"kiln wheel: no PACKAGE_VERSION in {config}")


def is_elf(path):
    with open(path, "rb") as f:
        return f.read(4) == b"\x7fELF"


def copy_file(path, out):
    """Copies ``path`` (a link as the file it names: a wheel holds no links). ELF files lose
    their debug info, which would triple the wheel (KILN_WHEEL_KEEP_DEBUG=1 keeps it)."""
    os.makedirs(os.path.dirname(out), exist_ok=True)
    strip = shutil.which("strip")
    if strip and is_elf(path) and os.environ.get("KILN_WHEEL_KEEP_DEBUG") != "1":
        subprocess.run([strip, "--strip-debug", "-o", out, path], check=True)
        shutil.copymode(path, out)
    else:
        shutil.copy2(path, out)


def copy_tree(source, target, skip):
    """Files of ``source`` into ``target``, except the folder ``skip``."""
    for root, dirs, files in os.walk(source):
        dirs[:] = [d for d in dirs if os.path.join(root, d) != skip and d != "__pycache__"]
        for name in files:
            path = os.path.join(root, name)
            copy_file(path, os.path.join(target, os.path.relpath(path, source)))


class BuildPyFromPrefix(build_py):
    """The package from the installed prefix, then the prefix's trees into it."""

    def run(self):
        super().run()  # the .py files, through package_dir
        prefix = kiln_prefix()
        package = os.path.join(self.build_lib, "kiln")
        copy_tree(os.path.join(prefix, PYTHON_PACKAGE), package, skip=None)  # and kiln._ffi
        for tree in PREFIX_TREES:
            copy_tree(os.path.join(prefix, tree), os.path.join(package, tree),
                      skip=os.path.join(prefix, "lib", "python3"))


class BinaryDistribution(Distribution):
    """Shared libraries and kilnc inside: the wheel is tagged for this Python and platform."""

    def has_ext_modules(self):
        return True


setup(
    name="kiln",
    version=version(),
    description="A deep-learning compiler and runtime that is extended, never forked",
    packages=["kiln"],
    package_dir={"kiln": os.path.join(kiln_prefix(), PYTHON_PACKAGE)},
    python_requires=">=3.9",
    install_requires=["numpy"],
    entry_points={"console_scripts": ["kilnc = kiln._kilnc:main"]},
    cmdclass={"build_py": BuildPyFromPrefix},
    distclass=BinaryDistribution,
    zip_safe=False,
)
