"""Loads kiln._ffi, the C extension over libkiln_ffi.so's C ABI."""

try:
    from . import _ffi
except ImportError as exc:  # pragma: no cover - depends on how Kiln was built
    raise ImportError(
        "cannot import kiln._ffi, the C extension of the kiln package: "
        f"{exc}. Build Kiln with CMake and put <build>/python on PYTHONPATH, or install it "
        "(the extension lives next to this file and needs libkiln_ffi.so)."
    ) from exc

__all__ = ["_ffi"]
