"""Content confirmation (`kvir confirm`): whose text is in an affected response, by salted fingerprints
(kvir.confirm.run), and what a case's documents may say from it (kvir.confirm.read).

`kvir.confirm(case, sources, options)` runs kvir.confirm.run.confirm: the package is callable, as
kvir.triage is.
"""
from __future__ import annotations

import sys
import types


class _CallablePackage(types.ModuleType):
    def __call__(self, *args, **kwargs):
        from kvir.confirm.run import confirm

        return confirm(*args, **kwargs)


sys.modules[__name__].__class__ = _CallablePackage
