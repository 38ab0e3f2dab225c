"""CVSS v3.x base scores from a vector string (FIRST CVSS v3.1 specification §7.1 and Appendix A), so the
documents carry the score a validator recomputes (CSAF mandatory tests 6.1.9 and 6.1.10): the vector is
the analyst's ([disclosure] cvss_v3), the numbers are derived from it, never chosen.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from decimal import ROUND_CEILING, Decimal

# metric -> value -> (weight, the name the FIRST JSON schema uses)
_AV = {"N": (0.85, "NETWORK"), "A": (0.62, "ADJACENT_NETWORK"), "L": (0.55, "LOCAL"), "P": (0.2, "PHYSICAL")}
_AC = {"L": (0.77, "LOW"), "H": (0.44, "HIGH")}
_PR_U = {"N": (0.85, "NONE"), "L": (0.62, "LOW"), "H": (0.27, "HIGH")}
_PR_C = {"N": (0.85, "NONE"), "L": (0.68, "LOW"), "H": (0.5, "HIGH")}
_UI = {"N": (0.85, "NONE"), "R": (0.62, "REQUIRED")}
_S = {"U": (0, "UNCHANGED"), "C": (1, "CHANGED")}
_CIA = {"H": (0.56, "HIGH"), "L": (0.22, "LOW"), "N": (0.0, "NONE")}
_VECTOR = re.compile(r"CVSS:(3\.[01])/AV:([NALP])/AC:([LH])/PR:([NLH])/UI:([NR])/S:([UC])/C:([HLN])/I:([HLN])/A:([HLN])")


@dataclass(frozen=True)
class CvssV3:
    vector: str
    version: str
    base_score: float
    severity: str            # NONE, LOW, MEDIUM, HIGH, CRITICAL
    metrics: dict[str, str]  # attackVector ... availabilityImpact, as in the FIRST JSON schema

    def as_json(self) -> dict[str, object]:
        """The FIRST cvss-v3.x JSON object (CSAF scores[].cvss_v3, CVE metrics[].cvssV3_1)."""
        return {"version": self.version, "vectorString": self.vector, "baseScore": self.base_score,
                "baseSeverity": self.severity, **self.metrics}


def _roundup(x: float, version: str) -> float:
    if version == "3.0":
        return float(Decimal(str(x)).quantize(Decimal("0.1"), rounding=ROUND_CEILING))
    i = round(x * 100_000)                        # v3.1 Appendix A: avoids floating-point artefacts
    return i / 100_000.0 if i % 10_000 == 0 else (math.floor(i / 10_000) + 1) / 10.0


def severity(score: float) -> str:
    if score == 0:
        return "NONE"
    return "LOW" if score < 4 else "MEDIUM" if score < 7 else "HIGH" if score < 9 else "CRITICAL"


def parse_vector(vector: str) -> CvssV3:
    """A CVSS:3.0 or CVSS:3.1 base vector (metrics in the specification's order) as its score; ValueError if
    it is not one."""
    m = _VECTOR.fullmatch(vector.strip())
    if not m:
        raise ValueError("expected a CVSS v3.x base vector like CVSS:3.1/AV:N/AC:H/PR:L/UI:N/S:C/C:H/I:N/A:N")
    version, av, ac, pr, ui, s, c, i, a = m.groups()
    changed = s == "C"
    iss = 1 - (1 - _CIA[c][0]) * (1 - _CIA[i][0]) * (1 - _CIA[a][0])
    impact = 7.52 * (iss - 0.029) - 3.25 * (iss - 0.02) ** 15 if changed else 6.42 * iss
    pr_w = (_PR_C if changed else _PR_U)[pr]
    exploitability = 8.22 * _AV[av][0] * _AC[ac][0] * pr_w[0] * _UI[ui][0]
    if impact <= 0:
        score = 0.0
    elif changed:
        score = _roundup(min(1.08 * (impact + exploitability), 10), version)
    else:
        score = _roundup(min(impact + exploitability, 10), version)
    metrics = {"attackVector": _AV[av][1], "attackComplexity": _AC[ac][1], "privilegesRequired": pr_w[1],
               "userInteraction": _UI[ui][1], "scope": _S[s][1], "confidentialityImpact": _CIA[c][1],
               "integrityImpact": _CIA[i][1], "availabilityImpact": _CIA[a][1]}
    return CvssV3(vector.strip(), version, score, severity(score), metrics)
