"""The my_ext wheel: my_ext/ plus libkiln_my_ext.so (and libkiln_runtime_my_ext.so when the
extension builds one) next to its __init__.py.

The libraries come from an install of the extension, never its build tree: installed copies
carry the relocatable run path ($ORIGIN/../kiln/lib finds the kiln wheel's libraries in the same
site-packages), build-tree copies point at absolute folders. MY_EXT_PREFIX names that install:

    cmake --install <extension build> --prefix <staging prefix>
    MY_EXT_PREFIX=<staging prefix> pip wheel --no-index --no-build-isolation -w dist .
"""

import os

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

PLUGIN_FILE = "libkiln_my_ext.so"
LIBRARY_FILES = (PLUGIN_FILE, "libkiln_runtime_my_ext.so")


def installed_libraries():
    """The paths of LIBRARY_FILES under MY_EXT_PREFIX (the plugin is required)."""
    prefix = os.environ.get("MY_EXT_PREFIX")
    if not prefix or not os.path.isdir(prefix):
        raise SystemExit(
            f"my_ext wheel: MY_EXT_PREFIX={prefix!r} is not a folder; set it to the prefix that "
            "`cmake --install <extension build> --prefix <prefix>` wrote"
        )
    found = {}
    for root, _, files in os.walk(prefix):
        for name in sorted(set(files) & set(LIBRARY_FILES)):
            found.setdefault(name, os.path.join(root, name))
    if PLUGIN_FILE not in found:
        raise SystemExit(f"my_ext wheel: no {PLUGIN_FILE} under MY_EXT_PREFIX={prefix}")
    return sorted(found.values())


class BuildPyWithLibraries(build_py):
    """build_py, then the plugin's libraries into the package folder."""

    def run(self):
        super().run()
        for library in installed_libraries():
            target = os.path.join(self.build_lib, "my_ext", os.path.basename(library))
            self.copy_file(library, target)


class BinaryDistribution(Distribution):
    """Shared libraries inside: the wheel is tagged for this Python and platform."""

    def has_ext_modules(self):
        return True


setup(
    name="my_ext",
    version="0.1.0",
    description="An out-of-tree Kiln extension: the example plugin and its Python package",
    packages=["my_ext"],
    python_requires=">=3.9",
    install_requires=["kiln"],
    cmdclass={"build_py": BuildPyWithLibraries},
    distclass=BinaryDistribution,
    zip_safe=False,
)
