"""What every demo builder shares: the JSON's common fields, the fallback's context, and the turn.

A "turn" is a prompt and its recorded answer (the conversation, prefill and decode demos). The build
works out everything the browser would otherwise derive: the steps that show a token (the end-of-turn
token is not shown), the text each one adds to the answer, and the readouts; the fallback is rendered
from the same pieces.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hooks.demos import formatting as fmt
from hooks.demos.blocks import DemoBlock
from hooks.demos.readouts import trace_readouts
from hooks.demos.strings import Strings

SCHEMA = "prefill-decode-demo/2"  # hooks/demos/demo.schema.json
CLOCK_DECIMALS = 3  # recorded times keep their order exactly (4 significant digits could tie two tokens)


@dataclass
class Demo:
    """What a kind builder returns: the JSON for the browser, the context of the static fallback, and the
    readouts the chapter's prose may cite ({{ conversation.ttft_ms }}), which the browser does not need."""

    data: dict[str, Any]
    context: dict[str, Any] = field(default_factory=dict)
    readouts: dict[str, Any] = field(default_factory=dict)


def base(block: DemoBlock, strings: Strings) -> dict[str, Any]:
    """The fields every demo's JSON starts with."""
    return {"schema": SCHEMA, "kind": block.kind, "lang": strings.lang, "strings": strings.section("common", block.kind)}


def measured_source(machine: dict[str, Any], model_name: str, strings: Strings) -> str:
    return strings.format("common.measured_on", cpu=machine.get("cpu", "?"), vector=machine.get("vector", "?"),
                          cores=cores_text(machine, strings), date=machine.get("date", "?"), model=model_name,
                          kernels=machine.get("kernels", "numpy"))


def cores_text(machine: dict[str, Any], strings: Strings) -> str:
    """"2 virtual cores" on a hypervisor's virtual CPUs, "2 cores" otherwise (labels from the strings file)."""
    key = "common.cores_virtual" if machine.get("virtual") else "common.cores_physical"
    return strings.format(key, n=machine.get("cores", "?"))


def cited(sources: list[dict[str, Any]], strings: Strings, line_key: str) -> dict[str, Any] | None:
    """Sources (each {id, title, url}) as a demo shows them, once each: a line of their short titles in the
    page's language (`citations.titles.<id>`, filling `line_key`'s {sources}) and their full citations with
    links, in a list the reader opens (overrides/pd/demo.html). None when there are none."""
    unique = list({source["id"]: source for source in sources}.values())
    if not unique:
        return None
    short = [strings[f"citations.titles.{source['id'].replace('.', '_')}"] for source in unique]
    return {"line": strings.format(line_key, sources=strings["citations.separator"].join(short)),
            "sources": [{"title": source["title"], "url": source.get("url")} for source in unique]}


def projected_source(rows: list[dict[str, Any]], strings: Strings) -> dict[str, Any] | None:
    """The spec sources of projected rows (see `cited`)."""
    return cited([source for row in rows for source in row["sources"]], strings, "common.projected_from")


def fallback(block: DemoBlock, strings: Strings, *, measured: str, projected: dict[str, Any] | None = None,
             rows: list[tuple[str, str]] | None = None, table: dict[str, Any] | None = None,
             title: str | None = None, **extra: Any) -> dict[str, Any]:
    """The context of the kind's template in overrides/pd/: caption, note, readouts, table, sources."""
    return {"title": title or strings[f"{block.kind}.title"], "note": block.note, "rows": rows or [], "table": table,
            "source_measured": measured, "source_projected": projected, **extra}


# -- a prompt and its answer -------------------------------------------------------------------------

def prompt_summary(trace: dict[str, Any], strings: Strings) -> str | None:
    """One sentence saying how many of the prompt's tokens the chat template and system prompt add
    (None when the model read the prompt alone)."""
    r, lang = trace_readouts(trace), strings.lang
    if r["template_tokens"] + r["system_tokens"] == 0:
        return None
    counts = {"total": fmt.count(r["prompt_tokens"], lang), "template": fmt.count(r["template_tokens"], lang),
              "user": fmt.count(r["user_tokens"], lang)}
    if not r["system_tokens"]:
        return strings.format("common.roles_summary_no_system", **counts)
    default = trace["settings"].get("system_prompt_is_default")
    return strings.format("common.roles_summary", **counts, system=fmt.count(r["system_tokens"], lang),
                          system_name=strings["common.system_name_default" if default else "common.system_name"])


def answer_notes(trace: dict[str, Any], strings: Strings, *, caveat: bool = True) -> dict[str, str | None]:
    """What the reader is told under the answer: why it stops (a cut-off answer is not finished), and
    that a small model's answer may be wrong."""
    stopped = None
    if trace["stop_reason"] == "max_new_tokens":
        limit = trace["settings"]["max_new_tokens"]
        stopped = (strings["common.first_token_only"] if limit == 1
                   else strings.format("common.stopped_at_limit", n=fmt.count(limit, strings.lang)))
    return {"stopped": stopped,
            "caveat": strings.format("common.small_model", model=trace["model"]["name"]) if caveat else None}


def shown_steps(trace: dict[str, Any]) -> list[dict[str, Any]]:
    """The steps that show a token: every one that produced a token, but the end-of-turn token."""
    steps = [step for step in trace["steps"] if step.get("token")]
    return steps[:-1] if steps and trace["stop_reason"] == "eos" else steps


def answer_pieces(steps: list[dict[str, Any]], answer: str) -> tuple[list[dict[str, str]], bool]:
    """What each shown token adds to the answer — {"text"}, or {"bytes"} for a token that makes no whole
    character — and whether the pieces spell the recorded answer. A token carrying part of a multi-byte
    character decodes to that whole character (`partial`), so a run of them would repeat it: the overlap
    is dropped."""
    pieces: list[dict[str, str]] = []
    previous: dict[str, Any] | None = None
    for step in steps:
        token = step["token"]
        if token.get("bytes") and "\ufffd" in token.get("text", ""):  # bytes that never make a whole character
            pieces.append({"bytes": token["bytes"]})
            previous = None
            continue
        piece = token.get("text", "")
        if previous and previous.get("partial") and token.get("partial"):
            before = previous.get("text", "")
            overlap = min(len(before), len(piece))
            while overlap and not before.endswith(piece[:overlap]):
                overlap -= 1
            piece = piece[overlap:]
        pieces.append({"text": piece})
        previous = token
    spelled = "".join(piece.get("text", "") for piece in pieces)
    return pieces, spelled.strip() == answer.replace("\ufffd", "").strip()


def answer_parts(pieces: list[dict[str, str]], exact: bool, answer: str) -> list[dict[str, str]]:
    """The whole answer as the fallback shows it: the pieces, each run of text joined, and each run of
    tokens that make no whole character as one box of their bytes; the recorded answer itself if the
    pieces do not spell it."""
    if not exact:
        return [{"text": answer}]
    parts: list[dict[str, str]] = []
    for piece in pieces:
        kind, value = next(iter(piece.items()))
        if parts and kind in parts[-1]:
            parts[-1] = {kind: parts[-1][kind] + value if kind == "text" else f"{parts[-1][kind]} {value}"}
        elif value:
            parts.append({kind: value})
    return parts


def turn(trace: dict[str, Any], strings: Strings, *, caveat: bool = True,
         cache_bytes: bool = True) -> tuple[dict[str, Any], dict[str, Any]]:
    """The prompt, the answer and the shown steps as the JSON carries them (the kind adds its own step
    fields; `cache_bytes`: each step's KV-cache size, for a demo with a cache meter), and the fallback's
    context made from the same data."""
    steps = shown_steps(trace)
    pieces, exact = answer_pieces(steps, trace["answer"])
    prompt = {"text": trace["prompt"]["text"], "summary": prompt_summary(trace, strings),
              "system_is_default": bool(trace["settings"].get("system_prompt_is_default")),
              "tokens": [{key: token[key] for key in ("text", "partial", "bytes", "role") if key in token}
                         for token in trace["prompt"]["tokens"]]}
    notes = answer_notes(trace, strings, caveat=caveat)
    shown = [{"end_ms": round(step["end_ms"], CLOCK_DECIMALS), "kv_tokens": step["kv_tokens"], "piece": piece,
              **({"kv_bytes": step["kv_bytes"]} if cache_bytes else {})}
             for step, piece in zip(steps, pieces, strict=True)]
    data = {"prompt": prompt, "answer": {"text": trace["answer"], "exact": exact, "notes": notes}, "steps": shown}
    context = {"prompt": prompt["text"], "prompt_summary": prompt["summary"], "notes": notes,
               "answer_parts": answer_parts(pieces, exact, trace["answer"])}
    return data, context


def trace_rows(r: dict[str, Any], strings: Strings) -> list[tuple[str, str]]:
    """The fallback's readouts of a recorded turn."""
    lang = strings.lang
    return [(strings["common.prompt_tokens"], fmt.count(r["prompt_tokens"], lang)),
            (strings["common.ttft"], fmt.ms(r["ttft_ms"], lang)),
            (strings["common.answer_tokens"], fmt.count(r["answer_tokens"], lang)),
            (strings["common.ms_per_token"], fmt.ms(r["decode_ms_per_token"], lang)),
            (strings["common.tps"], fmt.tps(r["tps"], lang)),
            (strings["common.kv_cache"], fmt.nbytes(r["kv_bytes_final"], lang))]

