"""kvir probe: is a live deployment exposed? (issue #12)

    result = kvir.probe("http://127.0.0.1:8000", "my-model", api_key_env="KEY_A", tenant_b_key_env="KEY_B")
    result.verdict            # "exposed" | "not exposed" | "inconclusive"
    result.as_json(), result.to_sarif()

`kvir.probe` is this package and is callable (like kvir.triage): calling it runs kvir.probe.run.probe.

    config       ProbeOptions, tenants, secrets from environment variables
    http         the client: budget, deadline, timeouts, retries with backoff, 429 Retry-After
    learn        what the server says (SGLang /get_server_info, vLLM /v1/models, /version); the limit rule
                 and the boundary lengths around it
    prompts      prompts of exact token counts via the server's /tokenize (or a local tokenizer.json)
    canary       canaries and the n-gram index that finds their fragments
    context      what the checks share; the request log (ids, lengths, hashes: never text)
    plugin       what a mechanism's probe part gives: its checks (ProbeCheck) and their rules
    rules        verdicts, discovery's rule, the catalogue of every registered check and rule
    plan         the plan and request budget shown before anything is sent
    result, sarif   findings, verdicts, JSON and SARIF 2.1.0
    run          probe(): the whole run; case events

The checks themselves are the mechanisms' (kvir.mechanisms.<m>.probe; `kvir probe --help` lists them).
"""
from __future__ import annotations

import sys
import types


class _CallablePackage(types.ModuleType):
    def __call__(self, *args, **kwargs):
        from kvir.probe.run import probe

        return probe(*args, **kwargs)


sys.modules[__name__].__class__ = _CallablePackage
