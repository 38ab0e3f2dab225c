"""Triage: which responses were exposed, to whom, on which nodes (kvir.triage.run).

`kvir.triage(...)` is the API's main entry point and `kvir.triage` is also this package, so the package is
callable: calling it runs kvir.triage.run.triage (a module's class may be replaced since Python 3.5).
"""
from __future__ import annotations

import sys
import types


class _CallablePackage(types.ModuleType):
    def __call__(self, *args, **kwargs):
        from kvir.triage.run import triage

        return triage(*args, **kwargs)


sys.modules[__name__].__class__ = _CallablePackage
