"""What a text is made of, counted without keeping it: the corruption detectors' counts (vectorised over a
batch with pyarrow's string kernels, RE2 script classes) and the needle scan.

Detectors (thresholds in kvir.confirm.run.Thresholds, measured in benchmarks/confirm_bench.py):
    replacement   U+FFFD: bytes that were no valid UTF-8 where the engine decoded them
    noise         control characters; symbols (neither letter, digit nor space) where text has words
    repetition    winnowed windows that repeat (kvir.confirm.fingerprint: kept against distinct)
    script shift  the script most letters are in, and its share, against the response's own prompt's

Needles: the probe's way (kvir.probe's canary index) without its Python loop: every window of `window` bytes
of the needle followed by a space, repeated (so a fragment is found wherever it starts), as it is and with
whitespace removed and case folded; each response's windows are hashed and looked up at once (NumPy), and
the longest run of consecutive matching windows is the fragment reported (its length and offset).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kvir.confirm.fingerprint import _Powers, text_buffer, window_hashes

# The scripts a letter is counted in (RE2 script classes); letters of any other script count for `letters`
# only. Japanese mixes Han and Kana, so they are one script here.
SCRIPTS = {
    "latin": r"\p{Latin}", "greek": r"\p{Greek}", "cyrillic": r"\p{Cyrillic}", "armenian": r"\p{Armenian}",
    "hebrew": r"\p{Hebrew}", "arabic": r"\p{Arabic}", "georgian": r"\p{Georgian}", "thai": r"\p{Thai}",
    "indic": r"[\p{Devanagari}\p{Bengali}\p{Gurmukhi}\p{Gujarati}\p{Oriya}\p{Tamil}\p{Telugu}\p{Kannada}"
             r"\p{Malayalam}\p{Sinhala}]",
    "hangul": r"\p{Hangul}", "cjk": r"[\p{Han}\p{Hiragana}\p{Katakana}]",
}
_CONTROL = r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]"
NEEDLE_WINDOW = 12        # the probe's fragment length (kvir.probe.canary.CanaryIndex's default k)


def counts(raw: pa.Array) -> dict[str, pa.Array]:
    """Per text: characters, U+FFFD, controls, symbols, letters, and the dominant script with its share."""
    raw = pc.fill_null(raw.cast(pa.large_string()), "")
    out = {"chars": pc.utf8_length(raw).cast(pa.int64()),
           "replacement_chars": pc.count_substring(raw, "\ufffd").cast(pa.int64()),
           "control_chars": pc.count_substring_regex(raw, _CONTROL).cast(pa.int64()),
           "symbol_chars": pc.count_substring_regex(raw, r"[^\pL\pN\s]").cast(pa.int64()),
           "letters": pc.count_substring_regex(raw, r"\pL").cast(pa.int64())}
    names = list(SCRIPTS)
    per = np.stack([np.asarray(pc.count_substring_regex(raw, SCRIPTS[s]), np.int64) for s in names], axis=1) \
        if len(raw) else np.zeros((0, len(names)), np.int64)
    top = per.argmax(axis=1) if len(raw) else np.zeros(0, np.int64)
    best = per[np.arange(len(raw)), top] if len(raw) else np.zeros(0, np.int64)
    letters = np.asarray(out["letters"], np.int64)
    out["script"] = pa.array(np.where(best > 0, np.array(names, object)[top], None), pa.string())
    out["script_share"] = pa.array(np.where(letters > 0, best / np.maximum(letters, 1), np.nan), pa.float64(),
                                   mask=letters == 0)
    return out


@dataclass(frozen=True)
class Needle:
    needle_id: int
    text: str                # held in memory for the scan only: never written anywhere

    @property
    def window(self) -> int:
        """Bytes per window looked for (the needle itself when shorter than NEEDLE_WINDOW)."""
        return min(NEEDLE_WINDOW, len(self.text.encode()))


@dataclass
class NeedleHits:
    needle_id: np.ndarray    # int32, one per (text, needle) found
    text_index: np.ndarray   # int64, into the batch
    chars: np.ndarray        # int32: the longest fragment's length in bytes
    offset: np.ndarray       # int32: where it starts (in the text, or its stripped form when normalised)
    normalised: np.ndarray   # bool: found only with whitespace removed and case folded


def _strip(texts: pa.Array) -> pa.Array:
    return pc.utf8_lower(pc.replace_substring_regex(pc.fill_null(texts.cast(pa.large_string()), ""), r"\s+", ""))


def _stripped_str(text: str) -> str:
    return "".join(text.split()).lower()


def _form(text: str) -> tuple[str, int]:
    """A needle's string whose windows are looked for, and the window: a needle of NEEDLE_WINDOW bytes or
    more repeats cyclically with a space after it (a fragment is found wherever it starts); a shorter one is
    itself, whole."""
    n = len(text.encode())
    if n < NEEDLE_WINDOW:
        return text, n
    raw = text + " "
    return raw * (NEEDLE_WINDOW // len(raw.encode()) + 2), NEEDLE_WINDOW


class NeedleIndex:
    """The window hashes of every needle per window size and form (see the module docstring)."""

    def __init__(self, needles: list[Needle], base: int):
        self.powers = _Powers(base)
        entries = []               # a few needles, not log rows
        for n in needles:
            if n.text:
                entries.append((n.needle_id, *_form(n.text), False))
            s = _stripped_str(n.text)
            if s:
                form, w = _form(s)
                entries.append((n.needle_id, form.replace(" ", ""), w, True) if w == NEEDLE_WINDOW
                               else (n.needle_id, form, w, True))
        self.groups = []
        for key in sorted({(w, norm) for _, _, w, norm in entries}):
            group = [(i, f) for i, f, w, norm in entries if (w, norm) == key]
            data, offsets = text_buffer(pa.array([f for _, f in group], pa.large_string()))
            doc, _, h = window_hashes(data, offsets, key[0], self.powers)
            ids = np.array([i for i, _ in group], np.int32)[doc]
            order = np.argsort(h, kind="stable")
            self.groups.append((key[0], key[1], h[order], ids[order]))

    def scan(self, texts: pa.Array) -> NeedleHits:
        """The longest fragment of each needle in each text; one found as written is not reported again
        from the stripped form."""
        stripped = _strip(texts)
        found = [self._runs(stripped if norm else texts, w, h, ids, norm) for w, norm, h, ids in self.groups]
        cols = [np.concatenate([f[i] for f in found]) if found else np.zeros(0) for i in range(5)]
        nid, doc, chars, off, norm = (cols[0].astype(np.int32), cols[1].astype(np.int64), cols[2].astype(np.int32),
                                      cols[3].astype(np.int32), cols[4].astype(bool))
        # per (text, needle): the written form first, then the longest
        order = np.lexsort((-chars, norm, nid, doc))
        nid, doc, chars, off, norm = nid[order], doc[order], chars[order], off[order], norm[order]
        first = np.ones(len(nid), bool)
        first[1:] = (doc[1:] != doc[:-1]) | (nid[1:] != nid[:-1])
        return NeedleHits(nid[first], doc[first], chars[first], off[first], norm[first])

    def _runs(self, texts: pa.Array, w: int, hashes: np.ndarray, ids: np.ndarray, normalised: bool):
        data, offsets = text_buffer(texts.cast(pa.large_string()))
        doc, rel, h = window_hashes(data, offsets, w, self.powers)
        at = np.searchsorted(hashes, h)
        at = np.minimum(at, len(hashes) - 1)
        hit = hashes[at] == h if len(hashes) else np.zeros(len(h), bool)
        doc, rel, nid = doc[hit], rel[hit], ids[at[hit]]
        if not len(doc):
            return (np.zeros(0, np.int32), np.zeros(0, np.int64), np.zeros(0, np.int32), np.zeros(0, np.int32),
                    np.zeros(0, bool))
        # runs of consecutive windows of one needle in one text: a new run where that breaks
        new = np.ones(len(doc), bool)
        new[1:] = (doc[1:] != doc[:-1]) | (nid[1:] != nid[:-1]) | (rel[1:] != rel[:-1] + 1)
        run = np.cumsum(new) - 1
        length = np.bincount(run).astype(np.int64) + w - 1
        start = rel[new]
        r_doc, r_nid = doc[new], nid[new]
        # the longest run per (text, needle)
        order = np.lexsort((-length, r_nid, r_doc))
        r_doc, r_nid, length, start = r_doc[order], r_nid[order], length[order], start[order]
        first = np.ones(len(r_doc), bool)
        first[1:] = (r_doc[1:] != r_doc[:-1]) | (r_nid[1:] != r_nid[:-1])
        return (r_nid[first], r_doc[first].astype(np.int64), length[first].astype(np.int32),
                start[first].astype(np.int32), np.full(int(first.sum()), normalised))
