"""`kvir preflight`: check a deployment before it serves, against every registered mechanism's rules.

    import kvir.preflight
    r = kvir.preflight.preflight(["deploy/sglang-pd.yaml", "requirements.txt"])
    r.findings                 # pandas: rule_id, severity, status (fail | unknown), node, evidence_file:line, fix
    r.exit_code("high")        # 1 when a failed finding is high or critical
    r.to_sarif(); r.to_junit("high")

Inputs (kvir.preflight.sources, .manifests): a command line (a file holding it, or `argv`), Kubernetes manifests,
Helm values and docker compose files (a container's or service's command/args/env/image), a requirements or pip
freeze file (the releases the image installs), start-up logs and SGLang /get_server_info snapshots (read by the
audit as they are), vLLM /v1/models and /version answers saved as JSON. Everything is normalised into the per-start
settings the audit reads, and the rules are the mechanisms' audit parts' plus the shared preflight rule table
(kvir.preflight.transfer_rules).
"""
from __future__ import annotations

from kvir.preflight.result import PreflightResult
from kvir.preflight.run import preflight

__all__ = ["preflight", "PreflightResult"]
