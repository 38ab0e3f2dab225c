"""The oversized-prompt mechanism's runtime signals (kvir.audit.signals): the SGLang lines that show a prompt the
pool cannot hold reaching decode, or KV that decode caught as not its own. Every keyword is the text of the
statement that prints it in the wheel (kvir.rules.builds [[log_line]] names them with their first build); the
audit counts the same lines as runtime indicators (KVA011).
"""
from __future__ import annotations

from kvir.audit.signals import Correlation, LogSignal, Signals

REJECTED = LogSignal(
    "sglang-scheduler-rejection", "SGLang scheduler rejected a prompt longer than its limit", "sglang", "medium",
    ("Input length (", "exceeds the maximum allowed length ("),
    "sglang/srt/managers/utils.py validate_input_length; schedule_batch.py Req.set_finish_with_abort (every build "
    "from 0.5.11; logged on TP rank 0 with `, self.rid='R'`)",
    "a prompt of max_req_input_len tokens or more: on a PD prefill node of a build up to 0.5.19 it becomes a "
    "1-token stub whose decode reads KV pages nobody wrote; later builds answer HTTP 400",
    exclude=("Finish: obj=", '"event": "request.'),    # a rejected request's finish line quotes the same text
    fields=("rid",))
SERVED = LogSignal(
    "sglang-request-served", "SGLang request log shows a request finished without an abort", "sglang", "informational",
    (), "sglang/srt/managers/request_logger.py RequestLogger (--log-requests; text `Finish: obj=` lines, JSON "
    "`request.finished` events from 0.5.12)",
    "a response was served (its finish reason is not an abort); a building block of the correlation below",
    exclude=("'type': 'abort'", '"type": "abort"'), any_of=("Finish: obj=", '"event": "request.finished"'),
    alert=False, fields=("rid",))
REJECTED_SERVED = Correlation(
    "sglang-rejected-prompt-served", "A prompt the SGLang scheduler rejected was served anyway", "critical",
    (REJECTED.signal_id, SERVED.signal_id), ("rid",), "1h",
    "the scheduler rejected the request's prompt and the request log shows it served (finish reason length or "
    "stop, HTTP 200): the incident's path, decode answered from KV nobody wrote for it (builds up to 0.5.19)")

LINES = (
    REJECTED,
    SERVED,
    LogSignal("sglang-kv-checksum-mismatch", "SGLang decode found a KV checksum mismatch", "sglang", "high",
              ("KV checksum mismatch", "bootstrap_room="),
              "sglang/srt/disaggregation/decode.py SchedulerDisaggregationDecodeMixin._verify_kv_checksums (0.5.21+)",
              "the KV that reached decode is not the KV prefill sent (corrupted, or another request's): decode "
              "aborted the request with HTTP 500"),
    LogSignal("sglang-kv-canary-violation", "SGLang KV canary saw a request read KV it did not write", "sglang",
              "critical", ("kv_canary violation: launch_tag=",),
              "sglang/srt/kv_canary/runner/violation_reporter.py (the structured line, 0.5.13+)",
              "the canary found a KV slot whose token or chain hash is not the reading request's"),
    LogSignal("sglang-context-corruption", "SGLang decode received another request's transfer metadata", "sglang",
              "high", ("Context corruption detected: Request", "received metadata from bootstrap_room="),
              "sglang/srt/disaggregation/decode.py DecodeTransferQueue._commit_transfer_to_req (0.5.11+)",
              "decode got the metadata of another bootstrap_room: a metadata buffer index collision"),
)

SIGNALS = Signals(
    lines=LINES, correlations=(REJECTED_SERVED,),
    notes=("Not emitted: `KV checksum skipped ... admitted unverified` (0.5.23) and `[canary] step=... violations=N`, "
           "which the audit counts, have no fixture written by SGLang's code to test a rule on.",
           "The scheduler rejection alone does not tell a leaking build from a fixed one; the correlation with "
           "a served response does, and needs the request log (--log-requests) and each line's rid as an event "
           "field.",))
