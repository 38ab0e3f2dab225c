"""What the fleet writes besides its logs: ground_truth/ (from its own plan, never from kvir), inventory.toml
and incident.toml (the spec, with [[sources]] entries saying what each log cannot say)."""
from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq

from kvir.sim import spec
from kvir.sim.world import (CONTEXT, DECLARED, ENGINE_LIMIT, ENGINE_MODEL, GW_MODEL, HOST_TZ, POOL_BUG, PROVIDER_QA,
                            REPORT_RECEIVED, RESEARCHER, WINDOW_END, WINDOW_START, Sim)

def write_ground_truth(sim: Sim, truth: dict) -> None:
    gt = sim.out / "ground_truth"
    gt.mkdir(parents=True, exist_ok=True)
    exposed = truth["affected"].to_pandas()
    over_pool = exposed["prompt_tokens"] > POOL_BUG
    # affected.parquet: what the public rule must find; engine_only.parquet: what only the engine rule adds
    pq.write_table(truth["affected"].filter(pa.array(over_pool.to_numpy())), gt / "affected.parquet")
    pq.write_table(truth["affected"].filter(pa.array((~over_pool).to_numpy())), gt / "engine_only.parquet")
    aff = exposed[over_pool]
    per_account = aff.groupby("account_id").size().sort_values(ascending=False)
    per_account.rename("affected").to_csv(gt / "accounts.csv")
    per_account_engine = exposed.groupby("account_id").size().sort_values(ascending=False)
    summary = {
        "requests": int(truth["total"]),
        "affected": int(len(aff)),
        "affected_engine_rule": int(len(exposed)),
        "engine_only": int((~over_pool).sum()),
        "affected_accounts": int(aff["account_id"].nunique()),
        "per_account": {k: int(v) for k, v in per_account.items()},
        "per_account_engine_rule": {k: int(v) for k, v in per_account_engine.items()},
        "researcher_account": RESEARCHER, "researcher_affected": int((aff["account_id"] == RESEARCHER).sum()),
        "provider_account": PROVIDER_QA, "provider_affected": int((aff["account_id"] == PROVIDER_QA).sum()),
        "rejected_context": int(truth["kinds"].get("reject-context", 0)),
        # what triage must count: a 504 without usage was not served (failed, its length unknown); no response
        # of the fleet has an unknown outcome, so none is undecidable
        "failed": int(truth["kinds"].get("timeout-no-usage", 0)),
        "undecidable": 0,
        "after_window_long": int(truth["kinds"].get("after-window-long", 0)),
        "control_long": int(truth["kinds"].get("control-long", 0)),
        "first_affected": aff["ts"].min().isoformat(), "last_affected": aff["ts"].max().isoformat(),
        "first_exposed": exposed["ts"].min().isoformat(), "last_exposed": exposed["ts"].max().isoformat(),
        "prefill_fixed_at": {n.name: n.starts[-1][0].isoformat() for n in sim.nodes if n.role == "prefill"},
        "engine_limit": ENGINE_LIMIT, "format": sim.fmt, "seed": sim.seed,
        "note": "Written by kvir simulate from its own plan; kvir never reads this folder except in tests.",
    }
    (gt / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")


def write_inventory(sim: Sim) -> None:
    lines = ["# inventory.toml: which node each log file belongs to, and what the logs cannot say.", ""]
    for n in sim.nodes:
        logs = [f"engine/{n.name}/server.log"] + ([f"engine/{n.name}/requests.jsonl"] if n.request_log == "json" else [])
        lines += ["[[node]]", f'name = "{n.name}"', f'role = "{n.role}"', f'deployment = "{n.deployment}"',
                  'engine = "sglang"', f'version = "{n.version}"', f'source_tz = "{HOST_TZ}"',
                  "logs = [" + ", ".join(f'"{x}"' for x in logs) + "]", ""]
    (sim.out / "inventory.toml").write_text("\n".join(lines))


def write_incident(sim: Sim) -> None:
    if sim.fmt == "parquet":
        sources = '''[[sources]]
path = "requests"
format = "generic-parquet"
'''
    else:
        sources = f'''[[sources]]
path = "gateway/*.json"
format = "cloudflare-gateway"

[[sources]]                       # JSON request logs hold no server_args= line: say what they serve
path = "engine/glm53-*/requests.jsonl"
format = "sglang-json"
source_tz = "{HOST_TZ}"
served_model = "{ENGINE_MODEL}"

[[sources]]
path = "engine/*/server.log"
format = "sglang-text"
source_tz = "{HOST_TZ}"
'''
    text = ("# incident.toml for the simulated reference fleet (kvir simulate; see kvir's README, \"The reference "
            "incident\").\n" + spec.header(engine="sglang" if sim.fmt == "parquet" else None) + "\n" + spec.DEFECT + "\n" + f'''[disclosure]
provider = "Example Inference Co. (simulated)"
provider_namespace = "https://inference.example.com"
contact = "security@inference.example.com"
dpo_contact = "dpo@inference.example.com"
reporter = "A. Researcher (simulated)"
reporter_channel = "a bug-bounty platform"
reported_at = {REPORT_RECEIVED.strftime("%Y-%m-%dT%H:%M:%SZ")}
lead_supervisory_authority = "the lead supervisory authority (simulated)"
cna_org_id = "00000000-0000-4000-8000-000000000000"
csaf_base_url = "https://inference.example.com/.well-known/csaf/amber/"
cvss_v3 = "CVSS:3.1/AV:N/AC:H/PR:L/UI:N/S:C/C:H/I:N/A:N"

[[accounts]]
id = "{RESEARCHER}"
label = "reporting researcher"
reason = "bug-bounty reproduction reported 2026-09-08"

[[accounts]]
id = "{PROVIDER_QA}"
label = "provider tests"
reason = "the provider's own reproduction and verification traffic"

[[events]]
ts = {REPORT_RECEIVED.strftime("%Y-%m-%dT%H:%M:%SZ")}
title = "Report received from a security researcher via the bug-bounty platform"
actor = "researcher"
category = "detection"

[[events]]
ts = 2026-09-09T13:22:00Z
title = "Incident declared"
actor = "provider"
category = "escalation"

[[events]]
ts = 2026-09-09T14:00:00Z
title = "Model made private"
actor = "provider"
category = "mitigation"

[[events]]
ts = 2026-09-09T14:35:00Z
title = "Root cause found"
actor = "provider"
category = "confirmation"

[[events]]
ts = 2026-09-09T14:52:00Z
title = "All prefill nodes on the fixed configuration"
actor = "provider"
category = "mitigation"

[[events]]
ts = 2026-09-09T19:40:00Z
title = "Model public again"
actor = "provider"
category = "mitigation"

{sources}''')
    (sim.out / "incident.toml").write_text(text)
