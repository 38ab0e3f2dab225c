"""The serve stage's hookspec: what it needs of an exposure mechanism (kvir.spec.mechanism).

A mechanism's serve part (kvir.mechanisms.<m>.serve.PART) has every member below; registration checks
it. The serve stage reaches a mechanism only through `serve_part(name)` / `serve_parts()`, never by its name.

`kvir serve` is one target the probe can fail on: the replay engine (one PD engine, pools kept across
requests) behind an OpenAI-compatible API. Each mechanism contributes its target mode: options (flags of
`kvir serve`, keywords of ServeConfig) and, from their values, a ServeTarget the engine consults. Every
registered mechanism's target is in every server, so one server can be set up to fail any mechanism's checks.
Exactly one target chooses the replay policy the engine admits requests under.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Protocol

from kvir.serve.config import ServeConfig, serve_parts
from kvir.spec.mechanism import mechanism

__all__ = ["ServeOption", "Served", "ServeTarget", "ServePart", "serve_part", "serve_parts"]


@dataclass(frozen=True)
class ServeOption:
    name: str                 # its ServeConfig keyword; the flag is --name, dashes for underscores
    default: Any
    help: str                 # the flag's help
    type: type = str          # str or int (an int option may default to None: not given)
    short: str | None = None  # a one-letter flag, e.g. "-b"

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")


@dataclass
class Served:
    """One request as the engine ran it: what a target may act on once it is answered (never its text)."""

    rid: str
    tenant: str
    tokens: list[int]                  # the prompt's token ids (in memory only)
    salt: str | None                   # the request's cache_salt, if it sent one
    http_status: int
    prefill_tokens: int | None         # what the prefill side computed (1 for a stub)


class ServeTarget(Protocol):
    """A mechanism's target mode in one running server."""

    logged: tuple[str, ...]            # its record fields the request's log line shows

    def policy(self) -> Any | None:
        """The replay policy (kvir.replay.policy.Policy) requests are admitted under; None: not this target's."""

    def served(self, req: Served) -> dict[str, Any]:
        """Act on an answered request; its fields of the request's record (ids, tenants, counts: never text)."""

    def usage(self, fields: Mapping[str, Any]) -> dict[str, Any]:
        """Its entries of the response's `usage`, from its record fields of that request."""

    def server_info(self) -> dict[str, Any]:
        """Its fields of /get_server_info (as the engine it stands for reports them)."""

    def describe(self) -> dict[str, Any]:
        """Its fields of /get_server_info's `kvir_serve` (what kvir serve is)."""

    def banner(self) -> str:
        """What `kvir serve` says of it when it starts."""


class ServePart(Protocol):
    """What the serve stage calls on a mechanism."""

    options: tuple[ServeOption, ...]   # its target mode's options (names unique across mechanisms)
    help: str                          # its paragraph of `kvir serve --help`

    def check(self, values: Mapping[str, Any]) -> None:
        """Refuse option values it cannot serve (a KvirError naming the flag)."""

    def target(self, values: Mapping[str, Any], cfg: ServeConfig) -> ServeTarget:
        """Its target for one server (values: every option of it, defaults filled in)."""


@dataclass
class Targets:
    """Every registered mechanism's target in one server, and what the engine asks of them together."""

    targets: list[ServeTarget] = field(default_factory=list)

    @classmethod
    def of(cls, cfg: ServeConfig) -> "Targets":
        return cls([p.target(cfg.values(p), cfg) for p in serve_parts().values()])

    def policy(self) -> Any:
        from kvir.core.errors import KvirError

        chosen = [p for t in self.targets if (p := t.policy()) is not None]
        if len(chosen) != 1:
            raise KvirError(f"kvir serve needs exactly one mechanism's target to choose the replay policy, "
                            f"{len(chosen)} do")
        return chosen[0]

    def served(self, req: Served) -> dict[str, Any]:
        return {k: v for t in self.targets for k, v in t.served(req).items()}

    def usage(self, fields: Mapping[str, Any]) -> dict[str, Any]:
        return {k: v for t in self.targets for k, v in t.usage(fields).items()}

    def log(self, fields: Mapping[str, Any]) -> str:
        return "".join(f" {k}={_shown(fields.get(k))}" for t in self.targets for k in t.logged)

    def server_info(self) -> dict[str, Any]:
        return {k: v for t in self.targets for k, v in t.server_info().items()}

    def describe(self) -> dict[str, Any]:
        return {k: v for t in self.targets for k, v in t.describe().items()}

    def banners(self) -> list[str]:
        return [t.banner() for t in self.targets]


def _shown(v: Any) -> Any:
    return v if v or (isinstance(v, int) and not isinstance(v, bool)) else "-"


def serve_part(name: str | None) -> ServePart:
    """The serve part of the mechanism `name` (None: the default mechanism)."""
    return mechanism(name).part("serve")
