"""The replay stage's hookspec: what it needs of an exposure mechanism (kvir.spec.mechanism).

The stage (kvir.replay.run.replay_case) opens the case, reads its mechanism and typed params
(kvir.case.spec_tables.case_mechanism) and asks that mechanism's replay part to re-run the affected responses;
it then writes what the part returns (replay_results, replay_exposure: kvir.replay.results), exports it,
adds the counts every replay shares (queries/replay/summary*.sql) and records the run in the manifest.

    out = replay_part(name).replay(case, params, options)     # -> ReplayOutput
    out.results, out.exposure                                  # rows of results.SCHEMA, EXPOSURE_SCHEMA
    out.summary                                                # the part's own keys of manifest["replay"]

A part (kvir.mechanisms.<m>.replay.PART) has every member of ReplayPart; registration checks it. `kvir
triage` registers every mechanism, so a part imports the replay engine (torch) inside its functions only.
The stage reaches a mechanism only through `replay_part(name)`, never by its name.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from kvir.spec.mechanism import mechanism

if TYPE_CHECKING:
    import pyarrow as pa

    from kvir.case.store import Case


@dataclass(frozen=True)
class ReplayOptions:
    """What `kvir replay` was asked, checked by the stage. Each part uses the options its replay has (a part
    without a paged-KV pair has no device, scale or builds) and says what it ran in its summary."""

    limit: int | None                   # at most this many affected responses (oldest first); None: all
    scale: float                        # the numeric part's, in (0, 1] (never whose data: kvir.replay.sample)
    device: str                         # auto | cpu | cuda
    threads: int | None                 # torch intra-op threads while the replay runs (None: torch's setting)
    canary: bool
    checksum: bool
    builds: tuple[str, ...] | None      # the builds compared (--builds); None: the part's default
    max_decode_steps: int               # decode steps per response through the kernel
    causal_top: int                     # foreign owners (by attention mass) given a causal check
    show_text: bool                     # keep the replayed response token ids
    progress: bool                      # a progress bar on stderr


@dataclass
class ReplayOutput:
    """One part's replay of a case: replay_results and replay_exposure rows, with the shared schemas."""

    results: "pa.Table"                 # kvir.replay.results.SCHEMA: one row per response and build
    exposure: "pa.Table"                # kvir.replay.results.EXPOSURE_SCHEMA: whose data reached whom
    summary: dict[str, Any] = field(default_factory=dict)   # its keys of manifest["replay"] and --json


class ReplayPart(Protocol):
    """What the replay stage calls on the case's mechanism."""

    # What `(ran)` and `(assumed)` mean after the build of a response's incident row (build_basis): the
    # title of the CLI's table of responses says it.
    basis_legend: str

    def replay(self, case: "Case", params: Any, options: ReplayOptions) -> ReplayOutput:
        """The case's affected responses (table affected) re-run: one replay_results row per response and
        build (exactly one with build_role 'incident' per response; a response that cannot be replayed is
        'inconclusive' with its reason, never left out), and replay_exposure under the incident build.
        `params` is the mechanism's typed spec section as the case records it."""


def replay_part(name: str | None) -> ReplayPart:
    """The replay part of the mechanism `name` (None: the default mechanism)."""
    return mechanism(name).part("replay")
