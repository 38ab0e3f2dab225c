"""The engine defects a VEX document can speak of, and which mechanism each belongs to: the incident's [defect]
(declared by the responders, judged with the incident's mechanism), and every defect a registered mechanism's
defect knowledge (its report part, e.g. the SGLang build table read from the wheels) matches on the node starts.
Nothing else: a deployment whose evidence matches no known defect and whose spec declares none gets no VEX.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kvir.report.defect import Defect, defect_for


@dataclass(frozen=True)
class KnownDefect:
    defect: Defect
    mechanism: str                  # the registered mechanism whose configuration question decides it

    @property
    def label(self) -> str:
        """A stable name of the defect built from its facts: package, affected range, CWE."""
        intro = "" if self.defect.introduced_version in ("", "0") else f" >= {self.defect.introduced_version},"
        return f"{self.defect.package}{intro} < {self.defect.fixed_version} ({self.defect.cwe})"

    @property
    def slug(self) -> str:
        import re

        return re.sub(r"[^a-z0-9]+", "-", f"{self.defect.package}-before-{self.defect.fixed_version}".lower()).strip("-")


def known_defects(configs: list[dict[str, Any]], spec=None) -> list[KnownDefect]:
    from kvir.report.plugin import report_part
    from kvir.spec.mechanism import mechanisms

    out: list[KnownDefect] = []
    engine = next((str(c["engine"]) for c in configs if c.get("engine")), "unknown")
    for m in mechanisms():
        raw = spec.defect if spec is not None and spec.mech.name == m.name else {}
        d, _why = defect_for(raw, configs, engine, report_part(m.name).defect_knowledge)
        if d is not None and all((k.defect.package, k.defect.fixed_version) != (d.package, d.fixed_version) for k in out):
            out.append(KnownDefect(d, m.name))
    return out
