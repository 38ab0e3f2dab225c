"""Which SGLang build `kvir serve --build` stands for, and the replay policy that reproduces it: ONE table.

What each build does with a prompt at or over max_req_input_len on a PD prefill node (research/sglang.md,
read from the wheels): every build swaps the prompt for the 1-token stub (set_finish_with_abort); then

    <= 0.5.19   the bootstrap check passes the stub, it is forwarded and transferred; decode decodes over
                the pages it pre-allocated for the whole prompt, which nobody wrote: HTTP 200 (the incident)
    0.5.20      the aborted request is retired after its forward, without a transfer: HTTP 400
    >= 0.5.21   it is rejected at the bootstrap door (is_unadmitted_reject): HTTP 400

The policies are built from kvir.replay.policy.Policy today. When the per-build policies land in
kvir.replay, only the `policy` column below changes. 0.5.20 is approximated until then: the stub is
forwarded and stopped before any decode step (the replay stops it at the decode side's token-count check,
the real build before its transfer); what a client sees, HTTP 400 and nothing read, is the same.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

from kvir.core.errors import KvirError


@dataclass(frozen=True)
class Build:
    name: str                      # the SGLang build it stands for
    last: tuple[int, int, int]     # the newest version this row covers (rows are ordered)
    leaks: bool
    behaviour: str                 # what it does with an over-long prompt in PD mode
    policy: Callable[[], object]   # -> kvir.replay.policy.Policy (imported lazily: torch)


def _policy(name: str, reject_before_bootstrap: bool, bootstrap_checks_input_limit: bool,
            decode_checks_token_count: bool) -> Callable[[], object]:
    def make():
        from kvir.replay.policy import Policy

        return Policy(name, reject_before_bootstrap, bootstrap_checks_input_limit, decode_checks_token_count, False)
    return make


BUILDS: tuple[Build, ...] = (
    Build("0.5.19", (0, 5, 19), True,
          "forwards and transfers the 1-token stub; decode reads pages nobody wrote; HTTP 200",
          _policy("sglang-0.5.19", False, False, False)),
    Build("0.5.20", (0, 5, 20), False,
          "retires the aborted request after its forward, without a transfer; HTTP 400 "
          "(replayed: the stub is stopped before decode)",
          _policy("sglang-0.5.20", False, False, True)),
    Build("0.5.21", (9999, 0, 0), False,
          "rejects the over-long request at the bootstrap door; HTTP 400",
          _policy("sglang-0.5.21", True, True, False)),
)
ALIASES = {"leaking": "0.5.19", "fixed": "0.5.21"}
_VERSION = re.compile(r"^(?:sglang[-=])?v?(\d+)\.(\d+)\.(\d+)(?:\S*)$")


def resolve_build(name: str) -> Build:
    """A build by its row name, an alias (leaking, fixed) or any SGLang version (0.5.12, v0.5.23, sglang-0.5.22)."""
    key = ALIASES.get(name.strip().lower(), name.strip())
    for b in BUILDS:
        if b.name == key:
            return b
    m = _VERSION.match(key)
    if m:
        v = tuple(int(x) for x in m.groups())
        for b in BUILDS:
            if v <= b.last:
                return b
    names = ", ".join([b.name for b in BUILDS] + sorted(ALIASES))
    raise KvirError(f"unknown build {name!r}: one of {names}, or an SGLang version such as 0.5.18")
