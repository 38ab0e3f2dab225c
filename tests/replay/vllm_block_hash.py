"""Run under a vLLM venv's python (VLLM_PYTHON): vLLM's own prefix-cache block hasher, from the installed
wheel, on the requests given as JSON on stdin; their block hashes (hex) as JSON on stdout.

    stdin   {"block_size": B, "requests": [{"tokens": [...], "cache_salt": "..." | null}, ...]}
    stdout  {"vllm": "0.32.0", "hashes": [["hex", ...], ...]}

It calls vllm.v1.core.kv_cache_utils.init_none_hash(sha256) (sha256 is vLLM's default
prefix_caching_hash_algo) and get_request_block_hasher(B, sha256) on an object with the attributes the
hasher reads from a vllm.v1.request.Request (block_hashes, num_tokens, all_token_ids, mm_features,
lora_request, cache_salt, prompt_embeds): the wheel's code decides, nothing of kvir's runs here."""
import json
import sys

from vllm import __version__
from vllm.utils.hashing import sha256
from vllm.v1.core import kv_cache_utils as kcu


class _Request:
    def __init__(self, tokens, salt):
        self.block_hashes = []
        self.all_token_ids = list(tokens)
        self.num_tokens = len(tokens)
        self.mm_features = []
        self.lora_request = None
        self.cache_salt = salt
        self.prompt_embeds = None
        self._prompt_embeds_per_block_hashes = {}


def main() -> None:
    job = json.load(sys.stdin)
    kcu.init_none_hash(sha256)
    hasher = kcu.get_request_block_hasher(job["block_size"], sha256)
    out = []
    for r in job["requests"]:
        req = _Request(r["tokens"], r.get("cache_salt"))
        out.append([bytes(h).hex() for h in hasher(req)])
    json.dump({"vllm": __version__, "hashes": out}, sys.stdout)


if __name__ == "__main__":
    main()
