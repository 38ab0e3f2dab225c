"""The simulated reference fleet's world (kvir simulate; README "The reference incident"): the incident's dates and numbers, its
nodes (roles, pools, restarts, builds) and models. Every other sim module reads these; none is read here."""
from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from kvir.rules.trigger import max_req_input_len

UTC = dt.timezone.utc
HOST_TZ = "America/Chicago"     # every engine host logs in this zone (naive local time)
CONTEXT = 1_048_576
POOL_BUG = 681_280
POOL_FIXED = 2_042_880          # ~2 x context, a multiple of the 64-token page (GLM-5.2's config)
PAGE = 64
ENGINE_LIMIT = max_req_input_len(CONTEXT, POOL_BUG)       # 681,274
LONG_CAP = max_req_input_len(CONTEXT, POOL_FIXED) - 1      # 1,048,569: longest prompt any fixed node serves
N_AFFECTED = 155                # exposed responses the public rule (> pool) counts
N_ENGINE_GAP = 7                # exposed responses between the engine limit and the pool: the engine rule only
N_RESEARCHER = 6                # of the 155: the reporting researcher's probes on 2026-09-08
N_PROVIDER = 4                  # of the 155: the provider's reproduction on 2026-09-09
GW_MODEL = "@cf/zai-org/glm-5.3"
ENGINE_MODEL = "zai-org/GLM-5.3"
RESEARCHER = "acct-5e1c0b7f"
PROVIDER_QA = "acct-provider-qa"


def t(s: str) -> dt.datetime:
    return dt.datetime.fromisoformat(s).replace(tzinfo=UTC)


SIM_START = t("2026-08-20T00:00:00")
SIM_END = t("2026-09-16T00:00:00")
LAUNCH = t("2026-08-27T00:00:00")          # GLM-5.3 goes live
WINDOW_START = LAUNCH
WINDOW_END = t("2026-09-09T19:40:00")
DECLARED = t("2026-09-09T13:22:00")
PRIVATE_FROM = t("2026-09-09T14:00:00")
PUBLIC_AGAIN = t("2026-09-09T19:40:00")
REPORT_RECEIVED = t("2026-09-08T16:05:00")


@dataclass(frozen=True)
class Node:
    name: str
    role: str                   # prefill | decode | mixed
    deployment: str
    pool: int
    context: int
    served_model: str
    model_path: str
    request_log: str            # json | text
    starts: tuple[tuple[dt.datetime, int], ...]   # (start time UTC, pool) for every (re)start
    version: str = "0.5.19"
    tp: int = 8

    def pool_at(self, ts: dt.datetime) -> int:
        pool = self.starts[0][1]
        for start, p in self.starts:
            if start <= ts:
                pool = p
        return pool


def fleet() -> list[Node]:
    boot = t("2026-08-26T22:10:00")
    fixes = [t("2026-09-09T14:38:00"), t("2026-09-09T14:43:00"), t("2026-09-09T14:47:00"), t("2026-09-09T14:52:00")]
    nodes = []
    for i, fix in enumerate(fixes):
        nodes.append(Node(f"glm53-prefill-{i}", "prefill", "glm53-pd", POOL_BUG, CONTEXT, ENGINE_MODEL,
                          "zai-org/GLM-5.3-FP8", "json" if i < 2 else "text",
                          ((boot + dt.timedelta(minutes=i), POOL_BUG), (fix, POOL_FIXED))))
    decode_pools = [1_310_720, 1_310_720, 2_097_152]   # decode-2 has the larger pool
    for i, pool in enumerate(decode_pools):
        nodes.append(Node(f"glm53-decode-{i}", "decode", "glm53-pd", pool, CONTEXT, ENGINE_MODEL,
                          "zai-org/GLM-5.3-FP8", "json" if i == 0 else "text",
                          ((boot + dt.timedelta(minutes=5 + i), pool),)))
    nodes.append(Node("qwen3-coder-1m-0", "mixed", "qwen-1m", 2_359_296, CONTEXT, "Qwen/Qwen3-Coder-1M",
                      "Qwen/Qwen3-Coder-1M", "text", ((t("2026-08-19T08:00:00"), 2_359_296),), version="0.5.19"))
    return nodes


# Gateway names -> engine deployments. glm-5.3-air is a different model (served by another provider
# backend: gateway logs only).
MODELS = {
    GW_MODEL: ("glm53-pd", CONTEXT),
    "@cf/zai-org/glm-5.3-air": (None, 131_072),
    "@cf/qwen/qwen3-coder-1m": ("qwen-1m", CONTEXT),
}
MODEL_NAMES = np.array(list(MODELS))
KINDS = ["base", "affected", "probe-short", "internal", "reject-context", "timeout-no-usage", "after-window-long",
         "control-long", "engine-gap"]


@dataclass
class Sim:
    out: Path
    requests: int
    seed: int
    fmt: str = "native"
    accounts: int = 0
    nodes: list[Node] = field(default_factory=fleet)
