"""oversized-prompt: a prompt longer than the engine's KV pool holds is served instead of refused; on a
prefill/decode build that hands decode the request, decode reads KV pages nobody wrote for it (the
reference incident's mechanism)."""
from kvir.spec.mechanism import Mechanism

MECHANISM = Mechanism(
    name="oversized-prompt",
    summary="a prompt beyond the KV pool served instead of refused: decode reads pages nobody wrote for it",
    package=__name__,
)
