"""`kvir serve`: a thin Typer wrapper over kvir.serve.serve (uvicorn, foreground)."""
from __future__ import annotations

import inspect
import os
from typing import Annotated, Optional

import typer

from kvir.cli.parts import PartsCommand, part_values
from kvir.cli.present import guarded, say
from kvir.core.errors import KvirError

HELP = """Serve the replay engine behind an OpenAI-compatible API: a target on
which `kvir probe` can fail.

    kvir serve --build 0.5.19 --pool 4096 --context 8192 \\
      --tenant a=KEY_A --tenant b=KEY_B

Routes: /v1/completions and /v1/chat/completions (both also streamed),
/tokenize, /get_server_info (/server_info), /v1/models, /version, /health.
One tenant per API key (Authorization: Bearer KEY); --tenant NAME=VAR names
the key held in environment variable VAR.

The model is the replay's recall model: a normal request echoes its own
prompt, and a request served from KV another tenant wrote returns that
tenant's text. Each request's log line says whose KV it read (tenants and
slot counts, never text). Every registered mechanism adds its target mode:

{parts}

One request never holds the server for long: output is capped at
--max-tokens-cap tokens (a larger max_tokens is served up to the cap).
"""


class ServeCommand(PartsCommand):
    @staticmethod
    def part_help() -> str:
        from kvir.serve.plugin import serve_parts

        return "\n\n".join(p.help for p in serve_parts().values())

    @staticmethod
    def part_options() -> list[inspect.Parameter]:
        """Each registered mechanism's serve options as flags (ServeOption: --name, its default and help)."""
        from kvir.serve.plugin import serve_parts

        return [inspect.Parameter(o.name, inspect.Parameter.KEYWORD_ONLY, default=o.default,
                                  annotation=Annotated[Optional[o.type], typer.Option(
                                      o.flag, *([o.short] if o.short else []), help=o.help)])
                for p in serve_parts().values() for o in p.options]


def register(app: typer.Typer) -> None:
    app.command(name="serve", help=HELP, cls=ServeCommand)(serve_command)


@guarded(interrupt=False)       # uvicorn shuts down gracefully on SIGINT / SIGTERM itself
def serve_command(
    ctx: typer.Context,
    pool: Annotated[int, typer.Option("--pool", help="Prefill KV pool in tokens (SGLang's max_total_num_tokens).")] = 4096,
    context: Annotated[int, typer.Option("--context", help="Context length in tokens.")] = 8192,
    decode_pool: Annotated[Optional[int], typer.Option("--decode-pool", help="Decode KV pool in tokens (default: the context).")] = None,
    page_size: Annotated[int, typer.Option("--page-size", help="Tokens per KV page.")] = 16,
    free_list: Annotated[str, typer.Option("--free-list", help="Which freed pages are reused first: sglang (latest freed first), sglang-pd (merged and sorted), fifo.")] = "sglang",
    model: Annotated[str, typer.Option("--model", help="The served model name.")] = "kvir-replay",
    host: Annotated[str, typer.Option("--host", help="Address to bind (loopback by default).")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="Port to bind.")] = 8000,
    tenant: Annotated[Optional[list[str]], typer.Option("--tenant", help="NAME=VAR: the API key in environment variable VAR is tenant NAME (repeatable; without it every key is its own tenant).")] = None,
    max_tokens_cap: Annotated[int, typer.Option("--max-tokens-cap", help="Output tokens per request at most.")] = 512,
    usage_from: Annotated[str, typer.Option("--usage-from", help="usage.prompt_tokens as decode counts it (the prompt) or prefill (1 for the stub).")] = "decode",
    log_level: Annotated[str, typer.Option("--log-level", help="uvicorn log level.")] = "info",
    threads: Annotated[int, typer.Option("--threads", help="torch threads (small requests spend their time in per-operation overhead: one is fastest).")] = 1,
) -> None:
    from kvir.serve.config import ServeConfig

    keys = {}
    for t in tenant or ():
        name, sep, var = t.partition("=")
        if not sep or not name.strip() or not var.strip():
            raise KvirError(f"--tenant must look like NAME=VAR, not {t[:60]!r}")
        key = os.environ.get(var.strip())
        if not key:
            raise KvirError(f"environment variable {var.strip()} is not set (or empty)", key="--tenant")
        keys[key] = name.strip()
    cfg = ServeConfig(pool=pool, context=context, decode_pool=decode_pool, page_size=page_size, free_list=free_list,
                      model=model, usage_from=usage_from, tenants=keys, max_tokens_cap=max_tokens_cap,
                      **part_values(ctx))
    cfg.check()
    if host not in ("127.0.0.1", "localhost", "::1"):
        say(f"warning: binding {host}: kvir serve is a test target that returns other tenants' text by design; "
            "keep it off shared networks", style="yellow")

    def announce(engine) -> None:
        say(f"kvir serve: {'; '.join(engine.targets.banners())}; pool {pool:,}, context {context:,}, decode pool "
            f"{cfg.decode_tokens:,}, page {page_size}, free list {free_list}; model {model}; "
            f"tenants: {', '.join(sorted(keys.values())) or 'one per API key'}; http://{host}:{port}")

    from kvir.serve.run import serve

    serve(cfg, host=host, port=port, log_level=log_level, threads=threads, announce=announce)
