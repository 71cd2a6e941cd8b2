"""Every timing the site prints, measured once: one ledger that every page, demo, table and claim reads.

A quantity (the TTFT of a 512-token prompt in F32, a decode step at a 64-token context, the step of 16 users,
a mixed step with a 256-token chunk, the machine's read stream) is one *series*: the same work timed in
several rounds. Every round runs every series once, one after another (interleaved), so a burst of load on a
shared machine falls on the things being compared alike; a series under FAST_MS (a second) gets more rounds
than a slow one. A series' figure is the median of its rounds, published with its spread (`timing.summarize`).

Nothing disturbed is published. A machine busy when the rounds would start (a run of consecutive decode steps
spread twice the noise margin) stops at once, before minutes of rounds that could only be refused. A series
whose spread exceeds the noise margin is measured again, a bounded number of times, unless the machine is busy
by then too (measuring again could not help); the physics the article states is checked on the result, each invariant by name (the cached
step no slower than recomputing, decode and TTFT rising with the context, a mixed step no slower than its
two passes, nothing above a ceiling); what still fails raises `DisturbedMeasurement`, naming the series, its
spread and what to do. The views the chapters read (`views.py`) are built from the ledger alone.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from . import cost, kernels
from .errors import SimulationError
from .formats import (
    agreement,
    answer_ids,
    cached_product,
    convert,
    default_formats,
    dequantize_ms,
    step_products,
    teacher_forced_logits,
)
from .loader import LoadedModel, bytes_per_weight, model_summary
from .machine import machine_info
from .model import KVCache, decode_batch, decode_step, forward_without_cache, linear, mixed_step, prefill
from .plans import PLANS, Plan
from .prompts import CHAPTER_PROMPT, prompt_of_length, user_prompt
from .roofline import gemm_gflops, last_level_cache_bytes, read_gbps, stream_bytes
from .serving import DISTINCT_PROMPTS, play_two_users, prefilled_caches, rewind
from .timing import PhaseClock, summarize, time_ms
from .trace import record

SCHEMA = "prefill-decode-ledger/1"
# A series under a second is timed in `fast_rounds` (at least 5: every figure under 50 ms must have 5, and a spread
# over five repeats is robust to one disturbed one), a slower one in `rounds`.
FAST_MS = 1000.0

Progress = Callable[[str, float | None], None] | None


class DisturbedMeasurement(SimulationError):
    """A series stayed noisier than the margin, or broke an invariant, after being measured again."""


# --- series and the rounds that time them ------------------------------------------------------------

@dataclass
class Series:
    """One quantity's repeats: its figure is their median."""

    key: str
    unit: str
    about: dict[str, Any]
    samples: list[float] = field(default_factory=list)
    measured: int = 0  # how many times the series was measured (1, or more after a disturbance)

    def entry(self) -> dict[str, Any]:
        s = summarize(self.samples)
        return {"quantity": self.about.get("quantity", self.key.split("/")[0]), "unit": self.unit,
                **self.about, "value": s.median, "median": s.median, "spread": s.spread, "low": s.low,
                "high": s.high, "repeats": s.repeats, "statistic": "median",
                "samples": self.samples, "measured": self.measured}


@dataclass
class Group:
    """Series timed together by one call (`run` appends one sample to each), with their untimed set-up."""

    name: str
    run: Callable[[], dict[str, float]]
    series: dict[str, Series]
    rounds: int = 0  # decided after the first round: fast or slow


class Ledger:
    """The series being measured, and how each group of them is timed."""

    def __init__(self, plan: Plan, progress: Progress = None) -> None:
        self.plan = plan
        self.groups: dict[str, Group] = {}
        self.series: dict[str, Series] = {}
        self.report = progress or (lambda message, fraction: None)
        self.invariants: list[dict[str, Any]] = []
        self.disturbed: list[str] = []

    def add(self, name: str, run: Callable[[], dict[str, float]], **series: tuple[str, dict[str, Any]]) -> None:
        made = {key: Series(key, unit, about) for key, (unit, about) in series.items()}
        self.series.update(made)
        self.groups[name] = Group(name, run, made)

    def probe_times(self, times: list[float]) -> list[float]:
        """The busy-machine probe's step times (a test's subclass disturbs them here)."""
        return times

    def _run(self, group: Group) -> None:
        for key, value in group.run().items():
            group.series[key].samples.append(value)

    def measure(self, names: Iterable[str] | None = None) -> None:
        """Time the groups `names` (all by default) in interleaved rounds: every group once a round, the slow
        ones for `plan.rounds`, those under FAST_MS for `plan.fast_rounds`. Earlier samples are dropped."""
        groups = [self.groups[n] for n in (names or self.groups)]
        for group in groups:
            for s in group.series.values():
                s.samples, s.measured = [], s.measured + 1
        total = max(self.plan.rounds, self.plan.fast_rounds)
        for round_index in range(total):
            for i, group in enumerate(groups):
                if round_index == 1 and not group.rounds:  # decided on the first round's figures
                    fast = max(s.samples[0] for s in group.series.values()) < FAST_MS
                    group.rounds = self.plan.fast_rounds if fast else self.plan.rounds
                if round_index < (group.rounds or total):
                    self.report(f"round {round_index + 1}/{total}: {group.name}",
                                (round_index + i / len(groups)) / total)
                    self._run(group)

    def noisy(self) -> list[Series]:
        """Series whose spread exceeds the noise margin (the timer's granularity allowed for)."""
        out = []
        for s in self.series.values():
            if len(s.samples) < 2:
                continue
            summary = summarize(s.samples)
            if summary.spread * summary.median > self.plan.noise * summary.median + self.plan.noise_floor_ms:
                out.append(s)
        return out

    def group_of(self, key: str) -> str:
        return next(name for name, g in self.groups.items() if key in g.series)

    def value(self, key: str) -> float:
        return summarize(self.series[key].samples).median

    def settle(self, checks: Callable[[Ledger], list[dict[str, Any]]],
               busy: Callable[[], str | None] = lambda: None) -> None:
        """Measure again what is noisy or breaks an invariant, up to `plan.remeasures` times; then stop with a
        message naming it (or, for a plan that does not stop, record it as disturbed). Before measuring again,
        `busy()` says whether the machine is busy now (`busy_machine`): then measuring again could not help, and
        it stops at once."""
        now_busy = None
        for attempt in range(self.plan.remeasures + 1):
            noisy = self.noisy()
            self.invariants = checks(self)
            broken = [inv for inv in self.invariants if not inv["holds"]]
            if not noisy and not broken:
                return
            if attempt == self.plan.remeasures or (now_busy := busy()):
                break
            again = {self.group_of(s.key) for s in noisy}
            again |= {self.group_of(key) for inv in broken for key in inv["series"] if key in self.series}
            self.report(f"measuring again what was disturbed: {', '.join(sorted(again))}", None)
            self.measure(sorted(again))
        lines = [f"{s.key}: spread {summarize(s.samples).spread:.0%} over {len(s.samples)} repeats "
                 f"(samples {', '.join(f'{v:.1f}' for v in s.samples)} {s.unit}), above the noise margin of "
                 f"{self.plan.noise:.0%}" for s in noisy]
        lines += [f"invariant {inv['name']} does not hold: {inv['detail']}" for inv in broken]
        if now_busy:
            lines.append(f"the machine is busy now, so measuring again could not help: {now_busy}")
        self.disturbed = lines
        if self.plan.stop_when_disturbed:
            tried = "before measuring them again" if now_busy else \
                f"and measuring them again {self.plan.remeasures} times did not help"
            raise DisturbedMeasurement(
                f"the machine disturbed these measurements, {tried}:\n  " + "\n  ".join(lines) +
                "\nNothing was published. The machine was busy (another process on its cores?): build again when "
                "it is quiet, or build a draft with PD_SWEEP=quick, which records the disturbance instead.")


def busy_machine(steps_ms: list[float], plan: Plan, what: str) -> str | None:
    """Why the machine is too busy to measure, from consecutive timings of one piece of work (None: it is not).
    Consecutive steps of a quiet machine are alike; a neighbour on a core makes every parallel region wait for
    the thread it displaced, and the steps spread several-fold. The margin is twice the noise margin, so only a
    machine whose rounds could not pass the noise check is stopped here."""
    s = summarize(steps_ms)
    if s.spread * s.median <= 2 * plan.noise * s.median + plan.noise_floor_ms:
        return None
    return (f"{what}: spread {s.spread:.0%} over {s.repeats} consecutive runs ({s.low:.1f}–{s.high:.1f} ms, "
            f"median {s.median:.1f} ms), above twice the noise margin of {plan.noise:.0%}")


def recording(model: LoadedModel, prompt: str, plan: Plan, progress: Progress = None, **options: Any) -> dict[str, Any]:
    """`trace.record` of `prompt`, timed in `plan.fast_rounds` generations (its steps are under FAST_MS), its TTFT
    and mean decode step settled as a series is: recorded again while wider than the noise margin, up to
    `plan.remeasures` times; then it stops the build with a message naming them (a plan that does not stop
    records the lines in the trace's `disturbed`)."""
    for _ in range(plan.remeasures + 1):
        trace = record(model, prompt, timed_runs=plan.fast_rounds, progress=progress, **options)
        wide = {name: s for name, s in trace["timing"].items()
                if name != "runs" and s["spread"] * s["median"] > plan.noise * s["median"] + plan.noise_floor_ms}
        if not wide:
            return trace
    lines = [f"recording of {prompt[:40]!r}, {name}: spread {s['spread']:.0%} over {s['repeats']} runs (samples "
             f"{', '.join(f'{v:.1f}' for v in s['samples'])} ms), above the noise margin of {plan.noise:.0%}"
             for name, s in wide.items()]
    if plan.stop_when_disturbed:
        raise DisturbedMeasurement(
            f"the machine disturbed a recording, and recording it again {plan.remeasures} times did not help:\n  "
            + "\n  ".join(lines) + "\nNothing was published: build again when the machine is quiet.")
    return {**trace, "disturbed": lines}


# --- the ceilings ------------------------------------------------------------------------------------

def product_gflops(model: LoadedModel, repeats: int) -> float:
    """The model's own prefill product at its best: 512 rows through the first layer's largest matrix."""
    w = model.weights.layers[0].w_gate_up
    if not isinstance(w, np.ndarray):
        return 0.0
    x = np.random.default_rng(0).standard_normal((512, w.shape[1])).astype(np.float32)
    ms = min(time_ms(lambda: linear(x, w)) for _ in range(repeats + 1))
    return 2 * x.shape[0] * w.size / (ms / 1000) / 1e9


def weights_stream_bytes(model: LoadedModel) -> int:
    """The bytes an F32 decode step streams besides its cache: every weight it multiplies by, once."""
    return int(cost.decode_cost(model.config.shape, 0, bytes_per_weight=cost.FLOAT32_BYTES).bytes)


def measure_ceilings(model: LoadedModel, plan: Plan) -> dict[str, list[float]]:
    """The two ceilings' measurements: GEMM (BLAS, and the model's own product) and the read stream, over
    `plan.stream_buffers` fresh buffers far beyond the last-level cache and one the size of the weights a decode
    step streams. Read again every step, weights only a few times the cache's size keep part of themselves in it
    on some CPUs and stream faster than memory alone: the ceiling is the best of both, so a decode step, which
    reads its weights the same way, never beats it (lever `weights-sized-stream`)."""
    gemm = [gemm_gflops(plan.peak_repeats), product_gflops(model, plan.peak_repeats)]
    stream = [read_gbps(plan.peak_repeats) for _ in range(plan.stream_buffers)]
    stream.append(read_gbps(plan.peak_repeats, weights_stream_bytes(model)))
    return {"gemm_gflops": gemm, "read_gbps": stream}


# --- what is timed -----------------------------------------------------------------------------------

def _decode_at(m: LoadedModel, context: int, steps: int,
               prefilled: Callable[[], KVCache | None]) -> Callable[[], dict[str, float]]:
    """A group timing the decode step at exactly `context` tokens: `steps` untimed steps, then `steps` timed,
    each rewound to `context` (the same step again, generation's steady state); its attention apart. Its cache
    is the last one the TTFT group at this length filled (`prefilled`), or one filled here."""
    token = int(prompt_of_length(m, context + 1)[-1])
    held: list[KVCache] = []

    def step(clock: PhaseClock | None = None) -> None:
        if not held:
            cache = prefilled()
            if cache is None:
                cache = KVCache.empty(m.config, context + 1)
                prefill(m.weights, m.config, prompt_of_length(m, context), cache)
            held.append(cache)
        held[0].length = context
        decode_step(m.weights, m.config, token, held[0], **({"observer": clock} if clock else {}))

    def run() -> dict[str, float]:
        for _ in range(steps):
            step()
        times, attention = [], []
        for _ in range(steps):
            clock = PhaseClock()
            step(clock)
            att, total = clock.done()
            times.append(total)
            attention.append(att)
        return {"step": statistics.median(times), "attention": statistics.median(attention)}
    return run


def _prefill_of(m: LoadedModel, length: int, filled: dict[int, KVCache]) -> Callable[[], dict[str, float]]:
    """A group timing the prompt's prefill (TTFT) into a fresh cache, with room for one more token: the decode
    group at this length takes the last one (`filled`), so no prompt is prefilled only to be decoded after."""
    tokens = prompt_of_length(m, length)

    def run() -> dict[str, float]:
        cache = KVCache.empty(m.config, length + 1)
        clock = PhaseClock()
        prefill(m.weights, m.config, tokens, cache, observer=clock)
        attention, total = clock.done()
        filled[length] = cache
        return {"ttft": total, "attention": attention}
    return run


def _add_decode_and_prefill(ledger: Ledger, m: LoadedModel, fmt: str, prefill_lengths: Iterable[int],
                            decode_contexts: Iterable[int]) -> None:
    """TTFT at each of `prefill_lengths` and the decode step at each of `decode_contexts`, in `fmt`, each with
    the time its attention took."""
    filled: dict[int, KVCache] = {}
    for length in prefill_lengths:
        ttft, attention = f"ttft/{fmt}/{length}", f"prefill_attention/{fmt}/{length}"
        ledger.add(ttft, _renamed(_prefill_of(m, length, filled), ttft=ttft, attention=attention),
                   **{ttft: ("ms", {"weights": fmt, "quantity": "ttft", "prompt_tokens": length}),
                      attention: ("ms", {"weights": fmt, "quantity": "prefill_attention", "prompt_tokens": length})})
    for context in decode_contexts:
        step, attention = f"decode/{fmt}/{context}", f"decode_attention/{fmt}/{context}"
        run = _decode_at(m, context, ledger.plan.decode_steps, lambda c=context: filled.get(c))
        ledger.add(step, _renamed(run, step=step, attention=attention),
                   **{step: ("ms", {"weights": fmt, "quantity": "decode_step", "context": context}),
                      attention: ("ms", {"weights": fmt, "quantity": "decode_attention", "context": context})})


def _probe(ledger: Ledger, m: LoadedModel, plan: Plan) -> str | None:
    """`busy_machine` on `plan.probe_steps` consecutive F32 decode steps at the shortest context (no probe: 0)."""
    if plan.probe_steps <= 0:
        return None
    context = min(plan.f32_lengths)
    cache = KVCache.empty(m.config, context + 1)
    prefill(m.weights, m.config, prompt_of_length(m, context), cache)
    token = int(prompt_of_length(m, context + 1)[-1])

    def step() -> None:
        cache.length = context
        decode_step(m.weights, m.config, token, cache)
    step()
    times = ledger.probe_times([time_ms(step) for _ in range(plan.probe_steps)])
    return busy_machine(times, plan, f"{plan.probe_steps} decode steps at {context} tokens, one after another")


def _renamed(run: Callable[[], dict[str, float]], **names: str) -> Callable[[], dict[str, float]]:
    """`run` with its results' keys renamed to series keys."""
    return lambda: {names[k]: v for k, v in run().items()}


def _add_recompute(ledger: Ledger, m: LoadedModel, context: int) -> dict[str, Any]:
    """The step without a KV cache at `context`: every position again. Returns the greedy tokens of the
    cached step and of the recomputed one, which must agree."""
    ids = prompt_of_length(m, context + 1)
    key = f"recompute/f32/{context}"
    ledger.add(key, lambda: {key: time_ms(lambda: forward_without_cache(m.weights, m.config, ids))},
               **{key: ("ms", {"weights": "f32", "quantity": "recompute_step", "context": context})})
    cache = KVCache.empty(m.config, context + 1)
    prefill(m.weights, m.config, ids[:-1], cache)
    cached = int(np.argmax(decode_step(m.weights, m.config, int(ids[-1]), cache)))
    recomputed = int(np.argmax(forward_without_cache(m.weights, m.config, ids)))
    return {"context": context, "cached_token": cached, "recomputed_token": recomputed,
            "identical": cached == recomputed}


def _add_batches(ledger: Ledger, m: LoadedModel, plan: Plan) -> None:
    sizes = [b for b in plan.batch_sizes if b > 1]
    if not sizes:
        return
    caches = prefilled_caches(m, max(sizes), plan.batch_context, 1)
    tokens = [int(user_prompt(m, user, plan.batch_context)[-1]) for user in range(max(sizes))]
    for batch in sizes:
        key = f"batch/f32/{plan.batch_context}/{batch}"

        def run(batch=batch, key=key) -> dict[str, float]:
            def step() -> None:
                rewind(caches[:batch], plan.batch_context)
                decode_batch(m.weights, m.config, tokens[:batch], caches[:batch])
            step()  # untimed: the step before it ran other users' caches
            return {key: statistics.median(time_ms(step) for _ in range(3))}
        ledger.add(f"batch/{batch}", run, **{key: ("ms", {"weights": "f32", "quantity": "batch_step",
                                                            "context": plan.batch_context, "batch": batch})})


def _add_mixed(ledger: Ledger, m: LoadedModel, plan: Plan) -> None:
    chunks = [c for c in plan.chunk_sizes if c > 0]
    if not chunks:
        return
    streaming = prefilled_caches(m, 1, plan.batch_context, 1)
    token = [int(user_prompt(m, 0, plan.batch_context)[-1])]
    arriving = user_prompt(m, DISTINCT_PROMPTS, max(chunks))
    chunk_cache = KVCache.empty(m.config, max(chunks))
    for chunk in chunks:
        key = f"mixed/f32/{plan.batch_context}/{chunk}"

        def run(chunk=chunk, key=key) -> dict[str, float]:
            def together() -> None:
                rewind([chunk_cache], 0)
                rewind(streaming, plan.batch_context)
                mixed_step(m.weights, m.config, token, streaming, arriving[:chunk], chunk_cache)
            return {key: time_ms(together)}
        ledger.add(f"mixed/{chunk}", run, **{key: ("ms", {"weights": "f32", "quantity": "mixed_step",
                                                           "context": plan.batch_context, "chunk_tokens": chunk,
                                                           "decode_rows": 1})})


def _add_products(ledger: Ledger, fmt: str, m: LoadedModel) -> None:
    key = f"products/{fmt}"
    run = step_products(m)
    ledger.add(key, lambda: {key: statistics.median(time_ms(run) for _ in range(3))},
               **{key: ("ms", {"weights": fmt, "quantity": "step_products"})})


def two_users_plays(m: LoadedModel, plan: Plan, report: Callable[[str, float | None], None]) -> dict[str, Any]:
    """The two-users timeline played `plan.two_users_plays` times in each mode, alternating; each event's time is
    its median over the plays (the plays have the same events in the same order)."""
    prompt = user_prompt(m, DISTINCT_PROMPTS + 1, plan.two_users_prompt_tokens)
    plays: dict[str, list[list[dict]]] = {"unchunked": [], "chunked": []}
    for play in range(plan.two_users_plays):
        for mode in plays:
            report(f"two users, {mode}, play {play + 1} of {plan.two_users_plays}", None)
            chunk = plan.two_users_chunk_tokens if mode == "chunked" else None
            plays[mode].append(play_two_users(m, plan.batch_context, prompt, chunk))
    result: dict[str, Any] = {"prompt_tokens": plan.two_users_prompt_tokens,
                              "chunk_tokens": plan.two_users_chunk_tokens, "plays": plan.two_users_plays}
    for mode, runs in plays.items():
        events = [{**event, "t_ms": statistics.median(run[i]["t_ms"] for run in runs)}
                  for i, event in enumerate(runs[0])]

        def stall(events: list[dict]) -> float:
            streamed = [e["t_ms"] for e in events if e["user"] == "streaming"]
            return max(b - a for a, b in zip(streamed, streamed[1:], strict=False))

        def ttft(events: list[dict]) -> float:
            return next(e["t_ms"] for e in events if e["user"] == "arriving" and e["what"] == "token")
        result[mode] = {"stall_ms": stall(events), "ttft_ms": ttft(events), "events": events,
                        "stall_ms_plays": [stall(run) for run in runs], "ttft_ms_plays": [ttft(run) for run in runs]}
    return result


def _wide_plays(two: dict[str, Any], plan: Plan) -> list[str]:
    """The two-users figures whose plays spread wider than the noise margin (the timer's floor allowed for)."""
    wide = []
    for mode in ("unchunked", "chunked"):
        for what in ("stall", "ttft"):
            s = summarize(two[mode][f"{what}_ms_plays"])
            if s.spread * s.median > plan.noise * s.median + plan.noise_floor_ms:
                wide.append(f"two_users/{mode}/{what}_ms")
    return wide


# --- the invariants ---------------------------------------------------------------------------------

def invariants(ledger: Ledger, m: LoadedModel, widths: dict[str, float], ceilings: dict[str, float]
               ) -> list[dict[str, Any]]:
    """The physics the article states, checked on the ledger, each by name, with the plan's tolerance."""
    plan, value, checks = ledger.plan, ledger.value, []
    slack = lambda ms: ms * plan.noise + plan.noise_floor_ms  # noqa: E731

    def check(name: str, holds: bool, detail: str, *series: str) -> None:
        checks.append({"name": name, "holds": bool(holds), "detail": detail, "series": list(series)})

    for c in plan.contexts:
        cached, recompute = value(f"decode/f32/{c}"), value(f"recompute/f32/{c}")
        check(f"cached_no_slower_than_recompute@{c}", cached <= recompute + slack(recompute),
              f"cached step {cached:.1f} ms, recomputed {recompute:.1f} ms", f"decode/f32/{c}", f"recompute/f32/{c}")
    for fmt in widths:
        for quantity in ("decode", "ttft"):
            points = sorted((int(k.rsplit("/", 1)[1]), k) for k in ledger.series
                            if k.startswith(f"{quantity}/{fmt}/"))
            for (a, ka), (b, kb) in zip(points, points[1:], strict=False):
                va, vb = value(ka), value(kb)
                check(f"{quantity}_rises_with_context@{fmt}/{a}-{b}", vb + slack(va) >= va,
                      f"{va:.1f} ms at {a} tokens, {vb:.1f} ms at {b}", ka, kb)
    decode = f"decode/f32/{plan.batch_context}"
    for c in (c for c in plan.chunk_sizes if c > 0):
        mixed, separate = value(f"mixed/f32/{plan.batch_context}/{c}"), value(decode) + value(f"ttft/f32/{c}")
        check(f"mixed_no_slower_than_separate@{c}", mixed <= separate + slack(separate),
              f"mixed step {mixed:.1f} ms, the two passes {separate:.1f} ms",
              f"mixed/f32/{plan.batch_context}/{c}", decode, f"ttft/f32/{c}")
    shape = m.config.shape
    peak_flops, bandwidth = ceilings["gemm_gflops"] * 1e9, ceilings["read_gbps"] * 1e9
    for key, s in ledger.series.items():
        kind = s.about.get("quantity")
        width = {"bytes_per_weight": widths[s.about.get("weights", "f32")]}
        if kind == "ttft":
            passed = cost.prefill_cost(shape, s.about["prompt_tokens"], **width)
        elif kind == "decode_step":
            passed = cost.decode_cost(shape, s.about["context"], **width)
        elif kind == "batch_step":
            passed = cost.decode_batch_cost(shape, s.about["batch"], s.about["context"])
        else:
            continue
        floor_ms = 1000 * cost.roofline_seconds(passed.flops, passed.bytes, peak_flops, bandwidth)
        ms = value(key)
        check(f"within_ceilings@{key}", ms + slack(ms) >= floor_ms,
              f"{ms:.1f} ms against the ceilings' floor of {floor_ms:.1f} ms", key, "ceilings")
    return checks


# --- the whole measurement -----------------------------------------------------------------------------

def measure(model: LoadedModel, plan: Plan = PLANS["site"], progress: Progress = None,
            ledger_class: type[Ledger] = Ledger) -> dict[str, Any]:
    """Every quantity of `plan` measured once, interleaved, settled (module doc); the ledger as a JSON-ready
    dict (schema prefill-decode-ledger/1). `ledger_class`: a subclass whose `_run` a test disturbs."""
    report = progress or (lambda message, fraction: None)
    fmts = list(dict.fromkeys(["f32", *(plan.formats or default_formats(model))]))
    models = {"f32": model}
    for fmt in fmts[1:]:
        report(f"holding the weights in {fmt.upper()}", None)
        models[fmt] = convert(model, fmt, progress)
    widths = {fmt: bytes_per_weight(m) for fmt, m in models.items()}
    report("measuring this machine's ceilings", 0.0)
    ceiling_runs = [measure_ceilings(model, plan)]

    ledger = ledger_class(plan, report)
    report("preparing: caches prefilled, kernels compiled (untimed)", 0.0)
    _add_decode_and_prefill(ledger, model, "f32", plan.f32_lengths, plan.f32_lengths)
    checks_tokens = [_add_recompute(ledger, model, c) for c in plan.contexts]
    for fmt in fmts[1:]:
        _add_decode_and_prefill(ledger, models[fmt], fmt, plan.format_prompt_lengths, [plan.format_context])
    for fmt in fmts:
        _add_products(ledger, fmt, models[fmt])
    _add_batches(ledger, model, plan)
    _add_mixed(ledger, model, plan)
    warm = {name for name in ledger.groups if not name.startswith(("ttft/", "decode/", "recompute/"))}
    for fmt in fmts:  # the shortest prompt and context of each format: every kernel compiled, weights paged in
        warm |= {min((n for n in ledger.groups if n.startswith(f"{kind}/{fmt}/")),
                     key=lambda n: int(n.rsplit("/", 1)[1])) for kind in ("ttft", "decode")}
    for name in sorted(warm):  # untimed
        ledger.groups[name].run()
    probe = _probe(ledger, model, plan)
    if probe and plan.stop_when_disturbed:
        raise DisturbedMeasurement(
            f"the machine is busy: {probe}. Nothing was measured or published. Another process is using the "
            "cores: build again when it is quiet, or build a draft with PD_SWEEP=quick, which records the "
            "disturbance instead.")
    if probe:
        ledger.disturbed.append(probe)
    ledger.measure()
    ceiling_runs.append(measure_ceilings(model, plan))

    def best_ceilings() -> dict[str, float]:
        return {name: max(v for run in ceiling_runs for v in run[name]) for name in ("gemm_gflops", "read_gbps")}

    def checks(led: Ledger) -> list[dict[str, Any]]:
        found = invariants(led, model, widths, best_ceilings())
        if any(not c["holds"] and "ceilings" in c["series"] for c in found):
            report("a phase ran above a ceiling: measuring the ceilings again", None)
            ceiling_runs.append(measure_ceilings(model, plan))
            found = invariants(led, model, widths, best_ceilings())
        return found

    ledger.settle(checks, lambda: _probe(ledger, model, plan))
    report("two users on a clock", None)
    two = two_users_plays(model, plan, report)
    for _ in range(plan.remeasures):  # the timelines are series too: played again while their spread is too wide
        if not (wide := _wide_plays(two, plan)):
            break
        report(f"playing the two users again: {', '.join(wide)}", None)
        two = two_users_plays(model, plan, report)
    for series in _wide_plays(two, plan):
        samples = two[series.split("/")[1]][f"{series.split('/')[2]}_plays"]
        ledger.disturbed.append(f"{series}: spread {summarize(samples).spread:.0%} over {len(samples)} plays "
                                f"(samples {', '.join(f'{v:.1f}' for v in samples)} ms), above the noise margin of "
                                f"{plan.noise:.0%}")
    if ledger.disturbed and plan.stop_when_disturbed:
        raise DisturbedMeasurement("the machine disturbed the two users' timelines, and playing them again "
                                   f"{plan.remeasures} times did not help:\n  " + "\n  ".join(ledger.disturbed) +
                                   "\nNothing was published: build again when the machine is quiet.")
    report("each format's kernel with its bytes in the caches; accuracy", None)
    ceilings = best_ceilings()
    extras = {fmt: {"cached_product": cached_product(m, ceilings["read_gbps"] * 1e9),
                    "dequantize_ms": dequantize_ms(m)} for fmt, m in models.items()}
    ids, answer = answer_ids(model, CHAPTER_PROMPT, plan.accuracy_steps)
    reference = teacher_forced_logits(model, ids, answer)
    accuracy = {fmt: agreement(reference, reference if fmt == "f32" else teacher_forced_logits(m, ids, answer))
                for fmt, m in models.items()}
    entries = {key: s.entry() for key, s in sorted(ledger.series.items())}
    decode = f"decode/f32/{plan.batch_context}"
    entries[f"batch/f32/{plan.batch_context}/1"] = {**entries[decode], "quantity": "batch_step", "batch": 1,
                                                   "same_as": decode}
    ledger.invariants.append({  # by construction: the batching chapter's one user is the decode chapters' step
        "name": f"batch_one_is_the_decode_step@{plan.batch_context}", "series": [decode],
        "holds": entries[f"batch/f32/{plan.batch_context}/1"]["value"] == entries[decode]["value"],
        "detail": f"B = 1 at {plan.batch_context} tokens is the ledger's {decode}"})
    for name, unit in (("gemm_gflops", "GFLOP/s"), ("read_gbps", "GB/s")):
        samples = [v for run in ceiling_runs for v in run[name]]
        s = summarize(samples)
        entries[f"ceiling/{name}"] = {"quantity": name, "unit": unit, "value": ceilings[name], "median": s.median,
                                     "spread": s.spread, "low": s.low, "high": s.high, "repeats": s.repeats,
                                     "statistic": "best", "samples": samples, "measured": len(ceiling_runs)}
    for mode in ("unchunked", "chunked"):
        for what in ("stall_ms", "ttft_ms"):
            samples = two[mode][f"{what}_plays"]
            s = summarize(samples)
            entries[f"two_users/{mode}/{what}"] = {
                "quantity": f"two_users_{what[:-3]}", "unit": "ms", "weights": "f32", "mode": mode,
                "value": two[mode][what], "median": s.median, "spread": s.spread, "low": s.low, "high": s.high,
                "repeats": s.repeats, "statistic": "median of each event over the plays", "samples": samples,
                "measured": 1}
    return {
        "schema": SCHEMA,
        "plan": asdict(plan),
        "machine": machine_info(kernels=kernels.describe()),
        "model": model_summary(model),
        "weights": {fmt: {"format": fmt, "source": m.source, "bytes_per_weight": bytes_per_weight(m)}
                    for fmt, m in models.items()},
        "ceilings": {
            "gemm_gflops": {"value": ceilings["gemm_gflops"], "unit": "GFLOP/s", "statistic": "best",
                            "samples": [v for run in ceiling_runs for v in run["gemm_gflops"]]},
            "read_gbps": {"value": ceilings["read_gbps"], "unit": "GB/s", "statistic": "best",
                          "samples": [v for run in ceiling_runs for v in run["read_gbps"]]},
            "stream_bytes": stream_bytes(), "weights_stream_bytes": weights_stream_bytes(model),
            "last_level_cache_bytes": last_level_cache_bytes(),
        },
        "entries": entries,
        "invariants": [{k: v for k, v in inv.items() if k != "series"} for inv in ledger.invariants],
        "disturbed": ledger.disturbed,
        "recompute_tokens": checks_tokens,
        "two_users": two,
        "formats": {fmt: {**extras[fmt], **accuracy[fmt]} for fmt in fmts},
        "activation_digits": kernels.activation_digits(),
        "accuracy": {"prompt": CHAPTER_PROMPT, "steps": plan.accuracy_steps, "answer_tokens": len(answer)},
    }
