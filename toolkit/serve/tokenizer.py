"""kvir serve's text <-> token mapping: deterministic and byte-level, so /tokenize is exact.

    id 0      the placeholder (SGLang's 1-token stub [0]); decodes to nothing
    id 1      <s>, prepended to every text prompt (add_special_tokens, as Llama tokenizers do)
    id 2, 3   </s>, <pad> (never produced from text)
    id 4+b    the UTF-8 byte b

One byte is one token, so a prompt of N tokens is N - 1 bytes of text after <s>. Token-id prompts are
taken as they are (no <s> added), like vLLM and SGLang do. The chat template is the tiny test Llama's:
<s><|role|>\\ncontent\\n ... <|assistant|>\\n.
"""
from __future__ import annotations

import codecs
from typing import Iterable

PLACEHOLDER, BOS, EOS, PAD = 0, 1, 2, 3
OFFSET = 4
VOCAB = OFFSET + 256


def encode(text: str, add_special_tokens: bool = True) -> list[int]:
    ids = [b + OFFSET for b in text.encode("utf-8")]
    return [BOS, *ids] if add_special_tokens else ids


def chat_text(messages: list[dict]) -> str:
    """The chat template (without <s>: encode adds it)."""
    parts = []
    for m in messages:
        content = m.get("content")
        if isinstance(content, list):          # OpenAI content parts: keep the text ones
            content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
        parts.append(f"<|{m.get('role', 'user')}|>\n{content or ''}\n")
    return "".join(parts) + "<|assistant|>\n"


def encode_chat(messages: list[dict]) -> list[int]:
    return encode(chat_text(messages))


def valid_ids(ids: Iterable[int], vocab: int) -> bool:
    return all(isinstance(i, int) and not isinstance(i, bool) and 0 <= i < vocab for i in ids)


class Detokenizer:
    """Incremental: bytes split across tokens (multi-byte UTF-8) come out once complete."""

    def __init__(self) -> None:
        self._dec = codecs.getincrementaldecoder("utf-8")(errors="replace")

    def push(self, token: int) -> str:
        if OFFSET <= token < VOCAB:
            return self._dec.decode(bytes([token - OFFSET]))
        return ""

    def flush(self) -> str:
        return self._dec.decode(b"", final=True)


def decode(ids: Iterable[int]) -> str:
    d = Detokenizer()
    return "".join(d.push(int(t)) for t in ids) + d.flush()
