"""Importing chosen modules of a published sglang wheel, for real, on CPU, without SGLang's dependencies.

    wheel = fetch_wheel("0.5.21")                 # pip download sglang==0.5.21 --no-deps (cached)
    with RealSGLang(wheel, ["sglang.srt.mem_cache.allocator.paged"]) as sg:
        paged = sg.module("sglang.srt.mem_cache.allocator.paged")
        a = paged.PagedTokenToKVPoolAllocator(size=..., page_size=64, dtype=torch.bfloat16, device="cpu",
                                              kvcache=None, need_sort=True)

How, and why it is faithful:

* The modules under test (`real`) are executed from the wheel's own source, read out of the .whl (a zip)
  at import time. Their third-party imports are real: torch, numpy and msgspec (the only ones they
  import at top level; msgspec is in kvir's test extra).
* Every other `sglang.*` module they import is a permissive stub (`_Stub`): any attribute is another
  stub, calling one returns a stub, a capitalised name is a class (so it can be subclassed, used in
  annotations or as a decorator). Package `__init__` files are never executed. This is "a stub for a
  heavy import that is never used": SGLang's import chain pulls transformers, pydantic, openai, the
  HTTP stack and the kernels; the functions tested here use none of them.
* "Never used" is checked, not assumed: stubs record every call made while a check runs
  (`sg.calls()`); each test asserts the calls it allows (for example the TP-rank query that
  `set_finish_with_abort` makes to decide whether to log) and that nothing else was called.
* One wheel per process (the module names are global): tests run each build in a subprocess.

Wheels are cached in $KVIR_WHEEL_CACHE (default ~/.cache/kvir-wheels); `fetch_wheel` downloads with
pip from PyPI when a wheel is not there, and raises WheelUnavailable (the tests skip, saying so) only
when PyPI cannot be reached.
"""
from __future__ import annotations

import importlib.abc
import importlib.machinery
import linecache
import os
import subprocess
import sys
import types
import zipfile
from pathlib import Path
from typing import Any, Iterable

CACHE = Path(os.environ.get("KVIR_WHEEL_CACHE", Path.home() / ".cache" / "kvir-wheels"))


class WheelUnavailable(RuntimeError):
    pass


def fetch_wheel(version: str, cache: Path = CACHE) -> Path:
    """The sglang==version wheel in the cache, downloaded from PyPI if needed."""
    cache.mkdir(parents=True, exist_ok=True)
    found = sorted(cache.glob(f"sglang-{version}-*.whl"))
    if found:
        return found[0]
    cmd = [sys.executable, "-m", "pip", "download", f"sglang=={version}", "--no-deps", "--only-binary", ":all:",
           "--python-version", "3.11", "--platform", "manylinux_2_34_x86_64", "-d", str(cache), "-q"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    found = sorted(cache.glob(f"sglang-{version}-*.whl"))
    if r.returncode != 0 or not found:
        raise WheelUnavailable(f"pip download sglang=={version} failed (PyPI unreachable?): "
                               f"{(r.stderr or r.stdout).strip().splitlines()[-1:]}")
    return found[0]


class _Stub(types.ModuleType):
    """Stand-in for an sglang module (or attribute of one) the code under test does not use."""

    _log: list[str] | None = None          # set while a check runs: every call is recorded

    def __init__(self, name: str):
        super().__init__(name)
        self.__path__ = []
        self.__file__ = None

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__") and attr.endswith("__"):
            raise AttributeError(attr)
        full = f"{self.__name__}.{attr}"
        if full in sys.modules:
            return sys.modules[full]
        if attr[:1].isupper():
            value: Any = _stub_class(full)
        else:
            value = _Stub(full)
        setattr(self, attr, value)
        return value

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if len(args) == 1 and callable(args[0]) and not kwargs and not isinstance(args[0], _Stub):
            return args[0]                 # used as a decorator
        if _Stub._log is not None:
            _Stub._log.append(self.__name__)
        return _Stub(f"{self.__name__}()")

    def __iter__(self):
        return iter(())

    def __bool__(self) -> bool:
        return False

    def __mro_entries__(self, bases):       # `class X(stub_module.thing)` where thing is lower-case
        return (_stub_class(self.__name__),)


class _StubMeta(type):
    """Class-level attributes of a stub class (`Mode.NULL` as a default value) are stubs too."""

    def __getattr__(cls, n: str) -> Any:
        if n.startswith("__"):
            raise AttributeError(n)
        return _Stub(f"{cls.__module__}.{cls.__name__}.{n}")


def _stub_class(name: str) -> type:
    def init(self, *a: Any, **k: Any) -> None:
        if _Stub._log is not None:
            _Stub._log.append(name)

    def getattr_(self, n: str) -> Any:
        if n.startswith("__"):
            raise AttributeError(n)
        return _Stub(f"{name}.{n}")

    return _StubMeta(name.rsplit(".", 1)[-1], (), {"__module__": name.rsplit(".", 1)[0], "__init__": init,
                                                   "__getattr__": getattr_, "__kvir_stub__": True})


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def __init__(self, wheel: Path, real: Iterable[str]):
        self.zip = zipfile.ZipFile(wheel)
        self.names = set(self.zip.namelist())
        self.real = set(real)
        self.stubbed: set[str] = set()

    def source_path(self, fullname: str) -> str | None:
        base = fullname.replace(".", "/")
        for cand in (f"{base}.py", f"{base}/__init__.py"):
            if cand in self.names:
                return cand
        return None

    def find_spec(self, fullname: str, path=None, target=None):
        if fullname != "sglang" and not fullname.startswith("sglang."):
            return None
        if fullname in self.real:
            src = self.source_path(fullname)
            if src is None:
                raise ModuleNotFoundError(f"{fullname} is not in the wheel {self.zip.filename}")
            spec = importlib.machinery.ModuleSpec(fullname, self, origin=f"{self.zip.filename}!/{src}",
                                                  is_package=src.endswith("__init__.py"))
            spec.has_location = False
            return spec
        return importlib.machinery.ModuleSpec(fullname, self, is_package=True)

    def create_module(self, spec):
        if spec.name in self.real:
            return None
        self.stubbed.add(spec.name)
        return _Stub(spec.name)

    def exec_module(self, module):
        name = module.__name__
        if name not in self.real:
            return
        src = self.source_path(name)
        module.__file__ = f"{self.zip.filename}!/{src}"
        if src.endswith("__init__.py"):
            module.__path__ = []
        text = self.zip.read(src).decode("utf-8")
        linecache.cache[module.__file__] = (len(text), None, text.splitlines(True), module.__file__)  # inspect
        exec(compile(text, module.__file__, "exec"), module.__dict__)


class RealSGLang:
    """Context manager: `sglang.*` imports resolve to the wheel (`real` modules) or to stubs."""

    def __init__(self, wheel: Path, real: Iterable[str]):
        self.finder = _Finder(wheel, real)

    def __enter__(self) -> "RealSGLang":
        if any(m == "sglang" or m.startswith("sglang.") for m in sys.modules):
            raise RuntimeError("sglang is already imported in this process (one wheel per process)")
        sys.meta_path.insert(0, self.finder)
        return self

    def __exit__(self, *exc) -> None:
        sys.meta_path.remove(self.finder)

    def module(self, name: str) -> types.ModuleType:
        import importlib

        return importlib.import_module(name)

    def has(self, name: str) -> bool:
        return self.finder.source_path(name) is not None

    def watch(self) -> list[str]:
        """Start recording stub calls; returns the list they are appended to."""
        _Stub._log = []
        return _Stub._log

    def unwatch(self) -> None:
        _Stub._log = None

    @property
    def stubbed(self) -> list[str]:
        return sorted(self.finder.stubbed)
