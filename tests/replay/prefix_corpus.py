"""The requests the prefix-cache differential tests hash with both kvir and vLLM: prefixes shared to a
block boundary, to the middle of a block, not at all; prompts shorter than a block, exactly one block,
one token over; the same tokens under no salt, an empty salt, salt a, salt b, salt a again, a salt that
is a prefix of another ("a" / "ab"); a token list that is another's with its first block's tokens moved
into the salt's place (no collision across the salt boundary)."""
from __future__ import annotations

import random

BLOCK_SIZES = (16, 128)


def corpus(block: int) -> list[dict]:
    rng = random.Random(22 + block)
    base = [rng.randrange(4, 30000) for _ in range(4 * block + 7)]
    other = [rng.randrange(4, 30000) for _ in range(3 * block)]
    salts = [None, "", "a", "b", "a", "ab", "tenant-a-5f2c9e"]
    shapes = [
        base,                                             # 4 full blocks + 7 tokens (a partial block)
        base[: 2 * block],                                # exactly 2 blocks of it
        base[: 2 * block] + other[: block + 3],           # shares 2 blocks, then diverges at a boundary
        base[: block + block // 2] + other[: 2 * block],  # shares 1.5 blocks: diverges mid-block
        base[: block - 1],                                # shorter than one block: no key at all
        base[:block],                                     # exactly one block
        base[: block + 1],                                # one token over a block
        other,                                            # nothing in common with base
        [base[0] + 1] + base[1:],                         # differs in the first token only
    ]
    reqs = [{"tokens": s, "cache_salt": salt} for salt in salts for s in shapes]
    reqs.append({"tokens": other[:block] + base[: 2 * block], "cache_salt": None})
    return reqs
