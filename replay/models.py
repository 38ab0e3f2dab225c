"""Models the replay runs: a small random-weight transformer and the hand-built *recall* model.

Both expose the same three calls the workers use:

    prefill(tokens)                 -> K/V of every position (all layers) and the first output token
    decode_step(token, pos, step, attend) -> the next token; `attend(layer, q, k, v, pos_query)` writes
                                       k/v at `pos` into the paged pool and runs paged decode attention
    forward_dense(tokens)           -> logits of every position (a plain causal forward, the oracle for
                                       "incremental decode equals a full forward")

The recall model makes a leak readable. One layer, one head, head_dim 16, vocab 2**16. A slot's K and
V hold the ±1 bits of the token it was written for. Its query carries no content (q = 0); its
read-time positional term points decode step t at logical slot t of the request's own page table
(kernels.py posenc, sharp: a wrong slot loses by 2 * BETA per differing bit). So output token t is
the token held in the request's logical KV slot t: a normal request echoes its prompt, and a request
decoding over stale pages returns, in order, the tokens of whoever wrote them last.
"""
from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Callable

import torch

from kvir.replay.config import ModelDims
from kvir.replay.kernels import POS_BITS, pos_scores, posenc

Attend = Callable[[int, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor | None], torch.Tensor]


@dataclass
class PrefillOut:
    k: torch.Tensor          # [layers, n, Hkv, D]
    v: torch.Tensor
    first_token: int
    logits: torch.Tensor     # [vocab] at the last position


@dataclass
class DecodeOut:
    token: int
    logits: torch.Tensor     # [vocab]


class ReplayModel(ABC):
    name: str
    dims: ModelDims
    vocab: int
    sm_scale: float

    @abstractmethod
    def prefill(self, tokens: torch.Tensor) -> PrefillOut: ...

    @abstractmethod
    def decode_step(self, token: int, pos: int, step: int, attend: Attend) -> DecodeOut: ...

    @abstractmethod
    def forward_dense(self, tokens: torch.Tensor) -> torch.Tensor: ...

    def extend_kv(self, tokens: torch.Tensor, start: int) -> tuple[torch.Tensor, torch.Tensor]:
        """K/V of positions [start, len(tokens)) given the whole sequence (teacher-forced writes)."""
        out = self.prefill(tokens)
        return out.k[:, start:], out.v[:, start:]

    def sentinel(self, owner_uid: int) -> tuple[torch.Tensor, torch.Tensor]:
        """A finite, owner-encoding K/V row [layers, 1, Hkv, D] for canary fills and causal checks."""
        g = torch.Generator().manual_seed(0x5E17 + owner_uid)
        shape = (self.dims.n_layers, 1, self.dims.n_kv_heads, self.dims.head_dim)
        return (torch.rand(shape, generator=g) * 2 - 1).to(self.dims.dtype), \
               (torch.rand(shape, generator=g) * 2 - 1).to(self.dims.dtype)


# ----------------------------------------------------------------------------------------------- transformer

@dataclass(frozen=True)
class TransformerConfig:
    vocab: int = 512
    d_model: int = 64
    n_layers: int = 2
    n_q_heads: int = 4
    n_kv_heads: int = 2
    head_dim: int = 16
    d_mlp: int = 128
    rope_base: float = 10000.0
    dtype: torch.dtype = torch.float32
    seed: int = 0


class TinyTransformer(ReplayModel):
    """Pre-norm decoder with RoPE, GQA and a SiLU MLP; random weights from a seed."""

    name = "transformer"

    def __init__(self, cfg: TransformerConfig = TransformerConfig()):
        self.cfg = cfg
        self.dims = ModelDims(cfg.n_layers, cfg.n_q_heads, cfg.n_kv_heads, cfg.head_dim, cfg.dtype)
        self.vocab = cfg.vocab
        self.sm_scale = 1.0 / math.sqrt(cfg.head_dim)
        g = torch.Generator().manual_seed(cfg.seed)

        def w(*shape: int) -> torch.Tensor:
            return (torch.randn(*shape, generator=g) / math.sqrt(shape[0])).to(cfg.dtype)

        d, hq, hk, hd = cfg.d_model, cfg.n_q_heads, cfg.n_kv_heads, cfg.head_dim
        self.embed = torch.randn(cfg.vocab, d, generator=g).to(cfg.dtype)
        self.layers = [dict(wq=w(d, hq * hd), wk=w(d, hk * hd), wv=w(d, hk * hd), wo=w(hq * hd, d),
                            w1=w(d, cfg.d_mlp), w2=w(cfg.d_mlp, d)) for _ in range(cfg.n_layers)]
        self.lm_head = w(d, cfg.vocab)
        inv = 1.0 / cfg.rope_base ** (torch.arange(0, hd, 2, dtype=torch.float64) / hd)
        self._inv_freq = inv

    def to(self, device: torch.device | str) -> "TinyTransformer":
        self.embed = self.embed.to(device)
        self.layers = [{k: v.to(device) for k, v in lay.items()} for lay in self.layers]
        self.lm_head = self.lm_head.to(device)
        return self

    @staticmethod
    def _norm(x: torch.Tensor) -> torch.Tensor:
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)

    def _rope(self, x: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
        """x [n, H, D] rotated by positions pos [n] (angles in float64, then the model dtype)."""
        ang = pos.to(torch.float64)[:, None] * self._inv_freq.to(pos.device)[None, :]
        cos, sin = torch.cos(ang).to(x.dtype)[:, None, :], torch.sin(ang).to(x.dtype)[:, None, :]
        x1, x2 = x[..., 0::2], x[..., 1::2]
        out = torch.empty_like(x)
        out[..., 0::2] = x1 * cos - x2 * sin
        out[..., 1::2] = x1 * sin + x2 * cos
        return out

    def _qkv(self, lay: dict, h: torch.Tensor, pos: torch.Tensor):
        c = self.cfg
        n = h.shape[0]
        q = self._rope((h @ lay["wq"]).view(n, c.n_q_heads, c.head_dim), pos)
        k = self._rope((h @ lay["wk"]).view(n, c.n_kv_heads, c.head_dim), pos)
        v = (h @ lay["wv"]).view(n, c.n_kv_heads, c.head_dim)
        return q, k, v

    def _dense(self, tokens: torch.Tensor):
        c = self.cfg
        n = tokens.numel()
        pos = torch.arange(n, device=tokens.device)
        x = self.embed[tokens]
        ks, vs = [], []
        causal = torch.ones(n, n, dtype=torch.bool, device=tokens.device).tril()
        for lay in self.layers:
            q, k, v = self._qkv(lay, self._norm(x), pos)
            ks.append(k)
            vs.append(v)
            g = c.n_q_heads // c.n_kv_heads
            kk, vv = k.repeat_interleave(g, 1), v.repeat_interleave(g, 1)
            s = torch.einsum("ihd,jhd->hij", q, kk) * self.sm_scale
            p = torch.softmax(s.masked_fill(~causal, -math.inf), -1)
            o = torch.einsum("hij,jhd->ihd", p, vv).reshape(n, -1)
            x = x + o @ lay["wo"]
            h = self._norm(x)
            x = x + torch.nn.functional.silu(h @ lay["w1"]) @ lay["w2"]
        logits = self._norm(x) @ self.lm_head
        return logits, torch.stack(ks), torch.stack(vs)

    def forward_dense(self, tokens: torch.Tensor) -> torch.Tensor:
        return self._dense(tokens)[0]

    def prefill(self, tokens: torch.Tensor) -> PrefillOut:
        logits, k, v = self._dense(tokens)
        return PrefillOut(k, v, int(torch.argmax(logits[-1])), logits[-1])

    def decode_step(self, token: int, pos: int, step: int, attend: Attend) -> DecodeOut:
        x = self.embed[token].view(1, -1)
        p = torch.tensor([pos], device=x.device)
        for i, lay in enumerate(self.layers):
            q, k, v = self._qkv(lay, self._norm(x), p)
            o = attend(i, q[0], k[0], v[0], None)
            x = x + o.reshape(1, -1).to(x.dtype) @ lay["wo"]
            h = self._norm(x)
            x = x + torch.nn.functional.silu(h @ lay["w1"]) @ lay["w2"]
        logits = (self._norm(x) @ self.lm_head)[0]
        return DecodeOut(int(torch.argmax(logits)), logits)


# ----------------------------------------------------------------------------------------------- recall

class RecallModel(ReplayModel):
    """Output token t = the token held in the request's logical KV slot t (module docstring)."""

    name = "recall"
    BITS = 16          # token ids 0 .. 2**16 - 1; 0 is the placeholder
    BETA = 12.0        # positional sharpness: a slot one bit off scores 2 * BETA lower (e^-24)

    def __init__(self, dtype: torch.dtype = torch.float32):
        self.dims = ModelDims(1, 1, 1, self.BITS, dtype)
        self.vocab = 1 << self.BITS
        self.sm_scale = 1.0
        self._shifts = torch.arange(self.BITS, dtype=torch.int64)
        self._unembed: torch.Tensor | None = None

    def bits(self, tokens: torch.Tensor) -> torch.Tensor:
        """±1 bit rows [n, 1, 16] of token ids."""
        t = tokens.to(torch.int64).reshape(-1, 1)
        return ((((t >> self._shifts.to(t.device)) & 1) * 2 - 1).to(self.dims.dtype)).view(-1, 1, self.BITS)

    def unembed(self, o: torch.Tensor) -> torch.Tensor:
        """Logits over the whole vocabulary: row v of the unembedding is the ±1 bit pattern of v."""
        if self._unembed is None or self._unembed.device != o.device:
            self._unembed = self.bits(torch.arange(self.vocab, device=o.device)).view(self.vocab, self.BITS).float()
        return self._unembed @ o.reshape(-1).float()

    def pos_query(self, step: int, device: torch.device | str = "cpu") -> torch.Tensor:
        """[Hq=1, POS_BITS]: BETA times the bit pattern of the slot that step `step` reads."""
        return self.BETA * posenc(torch.tensor([step], device=device), POS_BITS)

    def kv(self, tokens: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        b = self.bits(tokens).unsqueeze(0)            # [1, n, 1, 16]
        return b, b.clone()

    def extend_kv(self, tokens: torch.Tensor, start: int) -> tuple[torch.Tensor, torch.Tensor]:
        return self.kv(tokens[start:])

    def prefill(self, tokens: torch.Tensor) -> PrefillOut:
        k, v = self.kv(tokens)
        # the first output token: step 0's query over the prompt, densely (positions 0..n-1)
        s = pos_scores(self.pos_query(0, tokens.device).double(), 0, tokens.numel())[0]
        o = torch.softmax(s, -1) @ v[0, :, 0].double()
        logits = self.unembed(o)
        return PrefillOut(k, v, int(torch.argmax(logits)), logits)

    def decode_step(self, token: int, pos: int, step: int, attend: Attend) -> DecodeOut:
        k, v = self.kv(torch.tensor([token]))
        q = torch.zeros(1, self.BITS, dtype=self.dims.dtype)
        o = attend(0, q, k[0, 0], v[0, 0], self.pos_query(step))
        logits = self.unembed(o)
        return DecodeOut(int(torch.argmax(logits)), logits)

    def forward_dense(self, tokens: torch.Tensor) -> torch.Tensor:
        """Logits of every position i as decode step i - (n_prompt - 1) would see them is not defined for
        a position-less model; the recall model's oracle is its definition: output t = token t."""
        raise NotImplementedError("the recall model is checked against its definition, not a dense forward")
