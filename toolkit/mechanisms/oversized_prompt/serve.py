"""The oversized-prompt mechanism's serve part (hookspec: kvir.serve.plugin.ServePart): `kvir serve --build`, the
SGLang build whose over-long-prompt path the replay engine runs (build_policies: the build -> its replay
policy). A leaking build answers a prompt beyond the prefill pool from pages nobody wrote for it (another
tenant's text, through the recall model); a fixed one refuses it with HTTP 400.
"""
from __future__ import annotations

from typing import Any, Mapping

from kvir.mechanisms.oversized_prompt.build_policies import Build, resolve_build
from kvir.serve.config import ServeConfig
from kvir.serve.plugin import ServeOption, Served

HELP = """--build is the SGLang build whose over-long-prompt path is replayed
(kvir.rules.builds, read from the wheels): 0.5.19 (alias leaking: 0.5.11-0.5.19
transfer the stub's page, decode reads pages nobody wrote, HTTP 200), 0.5.20
(alias fixed: retired after its forward, never transferred, HTTP 400), 0.5.21
(alias door: 0.5.21 and later reject it at the bootstrap door, HTTP 400), any
SGLang version, or kvir-proposal (kvir's own hardening, not a build). The KV
pools persist across requests, so a leaking build returns the text of whichever
tenant last wrote the pages it reads."""


class BuildTarget:
    """One server's build: the policy requests are admitted under, and what /get_server_info says of it."""

    logged: tuple[str, ...] = ()

    def __init__(self, build: Build):
        self.build = build
        self._policy = build.policy()

    def policy(self) -> Any:
        return self._policy

    def served(self, req: Served) -> dict[str, Any]:
        return {}

    def usage(self, fields: Mapping[str, Any]) -> dict[str, Any]:
        return {}

    def server_info(self) -> dict[str, Any]:
        return {"version": f"{self.build.name}+kvir.replay"}

    def describe(self) -> dict[str, Any]:
        b = self.build
        return {"build": b.name, "leaks": b.leaks, "behaviour": b.behaviour, "policy": self._policy.name}

    def banner(self) -> str:
        return f"SGLang {self.build.name} ({self.build.behaviour})"


class OversizedPromptServe:
    options = (ServeOption("build", "leaking", "SGLang build: 0.5.19, 0.5.20, 0.5.21, leaking, fixed, door, a "
                           "version, or kvir-proposal.", short="-b"),)
    help = HELP

    def check(self, values: Mapping[str, Any]) -> None:
        resolve_build(values["build"])

    def target(self, values: Mapping[str, Any], cfg: ServeConfig) -> BuildTarget:
        return BuildTarget(resolve_build(values["build"]))


PART = OversizedPromptServe()
