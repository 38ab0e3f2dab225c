"""What a prefill/decode pair (pd_pair.py) is asked to run and what it reports back."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from kvir.replay.config import NodeLimits


@dataclass
class ReplayRequest:
    """One request as the logs describe it: lengths and owner, never contents.

    completion_len output tokens are produced: token 0 by the prefill side (PD sends it in the
    metadata), tokens 1.. by decode steps, each of which first writes the KV of the previous output.
    `decode_steps` of them run the model through the paged kernel (None: all); the rest are
    teacher-forced from the request's synthetic response stream (tokens.py): their KV is written as
    production wrote *some* response there, without spending a kernel call per logged token.
    """

    rid: str
    prompt_len: int
    completion_len: int = 1
    account: str | None = None
    decode_steps: int | None = None
    prompt: np.ndarray | None = None        # explicit prompt tokens (tests); default: synthetic from rid
    prefill_limits: NodeLimits | None = None  # the limits of the prefill node that served it (default: the pair's)

    def __post_init__(self) -> None:
        if self.prompt_len < 0 or self.completion_len < 0:
            raise ValueError(f"{self.rid}: lengths must be non-negative")
        if self.prompt is not None and len(self.prompt) != self.prompt_len:
            raise ValueError(f"{self.rid}: prompt holds {len(self.prompt)} tokens, prompt_len is {self.prompt_len}")

    @property
    def kernel_steps(self) -> int:
        """Decode steps run through the kernel (outputs 1 .. kernel_steps)."""
        n = max(0, self.completion_len - 1)
        return n if self.decode_steps is None else min(n, self.decode_steps)


@dataclass
class StepRecord:
    """One decode step of an attributed request (mass averaged over layers and query heads)."""

    step: int
    token: int
    top_index: int          # logical slot with the most attention mass
    top_writer: int         # its writer uid (-1 never written)
    top_token: int          # the token id that slot holds (-1 never written)
    mass: dict[int, float]  # writer uid (-1 never written) -> softmax mass


@dataclass
class OwnerExposure:
    """A writer whose data sits in the slots a request decoded over."""

    uid: int
    tokens: int             # slots of the request's range last written by this writer
    first_token: int        # lowest / highest position, in the writer's own sequence, of those slots
    last_token: int
    attention_mass: float   # mean over decode steps of the softmax mass on them
    epochs: int             # decode page tenancies they came from
    carried: int = 0        # of them, slots the stub's transferred page brought from the prefill node


@dataclass
class Outcome:
    rid: str
    policy: str
    http_status: int | None          # None: not admitted yet (waiting for decode memory)
    stage: str                       # where it ended: served, tokenizer, prefill-validate, bootstrap, ...
    reason: str = ""
    prefill_tokens: int | None = None       # tokens the prefill side computed (1 for the placeholder)
    transferred_tokens: int | None = None   # the prefill's token count in the transfer metadata
    transferred_pages: int | None = None    # whole pages sent (Mooncake moves pages)
    carried_foreign: int = 0                # slots of those pages another request wrote on the prefill node
    decode_seq_len: int | None = None       # the sequence length decode attended over at step 1
    tokens: list[int] = field(default_factory=list)
    steps: list[StepRecord] = field(default_factory=list)
    owners: list[OwnerExposure] = field(default_factory=list)      # foreign writers (attributed runs)
    uninitialised_tokens: int = 0
    uninitialised_mass: float = 0.0
    self_mass: float = 0.0
    checksum: str | None = None      # None: off; "ok"; "mismatch: ..."
    canary: str | None = None        # None: off; "clean"; "violation: ..."
    canary_slots: int = 0
    foreign_reads: int = 0           # slots failing the owner/epoch check that the kernel did read

    @property
    def served(self) -> bool:
        return self.http_status == 200
