"""Policies are builds: each reproduces what one range of real SGLang builds does with a prompt at or over
the prefill node's max_req_input_len in PD mode, and nothing more (kvir.rules.builds, read from the wheels).

Every build first swaps the prompt for the one-token stub [0] (Req.set_finish_with_abort, 400 pending in
req.to_finish). Then:

    sglang-0.5.19   0.5.11-0.5.19  the stub passes the bootstrap door (`len(origin_input_ids) > pool` on one
                    token), is forwarded, and its first KV page is sent; decode, which pre-allocated pages for
                    the whole prompt, decodes over them: HTTP 200 (the incident)
    sglang-0.5.20   0.5.20         the stub is bootstrapped and forwarded, then retired after its forward
                    without a transfer: HTTP 400 (decode's pre-allocated pages are released unwritten)
    sglang-0.5.21   0.5.21-        rejected at the bootstrap door before any sender, handshake or forward: 400

The builds' only other safety nets are their own flags, which the pair models separately: the KV canary
(--kv-canary, from 0.5.13) and the KV checksum (--disaggregation-enable-kv-checksum, from 0.5.21).

kvir-proposal is NOT a build: kvir's own hardening ideas, measured on their own. Bootstrap admission compares
the prompt's original length with max_req_input_len, decode refuses a transfer whose token count is not the
prompt length, and the decode kernel masks slots the reading request did not write in its tenancy.

FreedPageFill is a separate mitigation (no build has it), so its effect can be measured alone: zero or
poison pages when they are freed (TensorRT-LLM's fresh-page fill, vLLM's zeroing).
"""
from __future__ import annotations

from dataclasses import dataclass

from kvir.rules.builds import TABLE, normalise

OVER_LONG = ("forwarded-transferred", "retired-after-forward", "rejected-at-door", "rejected-at-bootstrap")


@dataclass(frozen=True)
class Policy:
    name: str                           # sglang-0.5.19 | sglang-0.5.20 | sglang-0.5.21 | kvir-proposal
    builds: str                         # the builds it reproduces ("0.5.11–0.5.19"), or "none" (a proposal)
    over_long: str                      # what an over-long prompt meets first (OVER_LONG)
    http_status: int                    # what the client gets for it
    evidence: str = ""                  # where the behaviour is in the wheels (builds.toml)
    decode_checks_token_count: bool = False   # kvir-proposal only
    kernel_checks_ownership: bool = False     # kvir-proposal only
    has_canary: bool = True             # the builds offer --kv-canary
    has_checksum: bool = False          # the builds offer --disaggregation-enable-kv-checksum

    def __post_init__(self) -> None:
        if self.over_long not in OVER_LONG:
            raise ValueError(f"unknown over-long outcome {self.over_long!r}")

    @property
    def is_build(self) -> bool:
        return not self.name.startswith("kvir-")

    @property
    def leaks(self) -> bool:
        """The over-long stub reaches decode (HTTP 200 over pages nobody wrote)."""
        return self.over_long == "forwarded-transferred"

    # ---- what the pair asks the policy at each stage (replay/pd_pair.py holds no build's branch)
    def after_forward(self, aborted_at_intake: bool, reason: str) -> tuple[int, str, str] | None:
        """(status, stage, reason) when the build ends a forwarded request here (0.5.20 retires the stub
        after its forward, without a transfer); None: it goes on to the transfer."""
        if aborted_at_intake and self.over_long == "retired-after-forward":
            return 400, "prefill-retired-after-forward", reason
        return None

    def on_receive(self, transferred_tokens: int, prompt_len: int) -> tuple[int, str, str] | None:
        """(status, stage, reason) when decode refuses what arrived (kvir's proposal checks the token count)."""
        if self.decode_checks_token_count and transferred_tokens != prompt_len:
            return 400, "decode-token-count", f"transfer carried {transferred_tokens} token(s) for a {prompt_len}-token prompt"
        return None

    def checksum_in_effect(self, requested: str) -> tuple[str, str | None]:
        """The checksum mode this build runs with, and what to report when it lacks the flag."""
        if requested != "off" and not self.has_checksum:
            return "off", "not in this build"
        return requested, None

    def decode_check(self, canary: str) -> tuple[str | None, str | None]:
        """The decode kernel's ownership check (mask | count | raise | None) for the requested canary mode,
        and what to report when the build lacks --kv-canary."""
        note = "not in this build" if canary != "off" and not self.has_canary else None
        if self.kernel_checks_ownership:
            return "mask", note
        if note:
            return None, note
        return {"log": "count", "raise": "raise"}.get(canary), None


def _from_table(name: str) -> Policy:
    row = TABLE.policy_row(name)
    has_checksum = any(row.covers(b) for b in TABLE.read if TABLE.has_field("disaggregation_enable_kv_checksum", b))
    has_canary = any(row.covers(b) for b in TABLE.read if TABLE.has_field("kv_canary", b))
    return Policy(name, row.label, row.outcome, int(row.http_status), row.evidence.text(), has_canary=has_canary,
                  has_checksum=has_checksum)


BUILD_POLICIES: dict[str, Policy] = {r.policy: _from_table(r.policy) for r in TABLE.over_long_rows}
KVIR_PROPOSAL = Policy("kvir-proposal", "none", "rejected-at-bootstrap", 400,
                       "kvir's proposal (no build has it): bootstrap admission against max_req_input_len, a decode "
                       "token-count check, an owner-checking decode kernel",
                       decode_checks_token_count=True, kernel_checks_ownership=True, has_checksum=True)
POLICIES: dict[str, Policy] = {**BUILD_POLICIES, KVIR_PROPOSAL.name: KVIR_PROPOSAL}
ALIASES = {"leaking": TABLE.leaking_policy, "fixed": TABLE.policy_for(TABLE.first_fixed),
           "door": TABLE.policy_for(TABLE.first_door_reject), "proposal": KVIR_PROPOSAL.name}


def policy_for(build: str) -> Policy:
    """The policy of a build name: a policy name (sglang-0.5.20, kvir-proposal), an alias (leaking, fixed,
    door, proposal) or any SGLang version (0.5.12, v0.5.23). A version newer than the builds read behaves
    like the last row (kvir.rules.builds says so); one older than every build read like the first."""
    key = build.strip()
    key = ALIASES.get(key.lower(), key)
    if key in POLICIES:
        return POLICIES[key]
    v = normalise(key.removeprefix("sglang-"))
    if v is not None:
        name = TABLE.policy_for(v) or TABLE.leaking_policy
        return POLICIES[name]
    names = ", ".join(sorted(POLICIES) + sorted(ALIASES))
    raise ValueError(f"unknown build {build!r}: one of {names}, or an SGLang version such as 0.5.18")


FILLS = ("none", "zero", "nan", "sentinel")


@dataclass(frozen=True)
class FreedPageFill:
    """What happens to a page's bytes when it is freed. `nan` is fail-loud poison (non-finite in every
    float format); `sentinel` is a finite pattern encoding the previous owner (so a read of freed memory says whose it was)."""

    mode: str = "none"

    def __post_init__(self) -> None:
        if self.mode not in FILLS:
            raise ValueError(f"unknown freed-page fill {self.mode!r}; one of {', '.join(FILLS)}")


__all__ = ["Policy", "POLICIES", "BUILD_POLICIES", "KVIR_PROPOSAL", "ALIASES", "policy_for", "FreedPageFill", "FILLS"]
