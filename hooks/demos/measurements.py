"""Every simulation the demos use, through the cache: traces per prompt, and the one ledger of timings
(`simulations.ledger`) that the sweep, the roofline, the batching chapter and the weight formats are views of,
measured once per build.

The plan follows env PD_SWEEP: `site` (default, what the published site shows) or `quick` (fewer steps and
rounds, for tests and drafts; a disturbance is recorded instead of stopping the build). Both measure the same
quantities, so every inline figure name stays valid.
"""

from __future__ import annotations

import hashlib
import os
import time
from dataclasses import asdict, replace
from typing import Any

from mkdocs.exceptions import PluginError
from mkdocs.plugins import get_plugin_logger

from hooks.demos.cache import ResultCache
from hooks.demos.simulator import NumpySimulator, Progress
from hooks.language.vocabulary import load_vocabulary
from simulations import kernels
from simulations.ledger import DisturbedMeasurement
from simulations.plans import PLANS, Plan, plan_for

log = get_plugin_logger(__name__)


def _unless_disturbed(key: str, measure: Any) -> Any:
    """`measure()`, unless it stopped on a disturbance before under `key` in this process: then that message again
    (a disturbance is never cached, so a server would otherwise measure again on every save)."""
    if key in _disturbed:
        raise MeasurementsDisturbed(_disturbed[key])
    try:
        return measure()
    except DisturbedMeasurement as error:
        _disturbed[key] = f"measurements: {error}"
        raise MeasurementsDisturbed(_disturbed[key]) from None


def recording_key(prompt: str, max_new_tokens: int, chat: bool) -> str:
    """The ledger's name for a recording's timings: `recording/` and a digest of what was recorded."""
    digest = hashlib.sha256(f"{prompt}\n{max_new_tokens}\n{chat}".encode()).hexdigest()[:8]
    return f"recording/{digest}"


class MeasurementsDisturbed(PluginError):
    """The ledger could not be measured cleanly: the build stops with its message (`mkdocs serve` shows it in
    the page, at each demo)."""


# Under `mkdocs serve`, a ledger the machine disturbed is not measured again on every save: the server keeps the
# message until it is restarted (on a quiet machine).
_disturbed: dict[str, str] = {}

# The demos' defaults, in one place (the browser gets them through each demo's JSON).
DEFAULT_PROMPT_LENGTHS: tuple[int, ...] = PLANS["site"].prompt_lengths
DEFAULT_CONTEXTS: tuple[int, ...] = PLANS["site"].contexts
REFERENCE_PROMPT_TOKENS = 512  # the roofline and the device demo measure here; the timeline opens here
DEFAULT_PROJECTION = "llama-3.1-8b/h100-sxm/fp16"


def measurement_plan(model: str | None) -> Plan:
    """The plan named by PD_SWEEP for a PD_MODEL value (None: the default model), with the vocabulary's noise
    margin: the largest spread the site publishes."""
    name = os.environ.get("PD_SWEEP", "site")
    if name not in PLANS:
        raise PluginError(f"environment: PD_SWEEP={name!r} is not a measurement plan — allowed: {', '.join(PLANS)}")
    noise = load_vocabulary().noise
    plan = plan_for(name, tiny=model == "tiny")
    return replace(plan, noise=noise) if noise is not None else plan


def progress_logger(label: str, every_s: float = 2.0) -> Progress:
    """A progress callback that logs at most every `every_s` seconds (info level)."""
    last = [0.0]

    def report(message: str, fraction: float | None = None) -> None:
        now = time.monotonic()
        if now - last[0] < every_s and (fraction is None or fraction < 1):
            return
        last[0] = now
        done = f" ({fraction:.0%})" if fraction is not None else ""
        log.info(f"  {label}: {message}{done}")

    return report


class Measurements:
    """Cached access to every simulation result, keyed by inputs, simulation code and model."""

    def __init__(self, simulator: NumpySimulator, cache: ResultCache, code_hash: str, plan: Plan | None = None) -> None:
        self.simulator = simulator
        self.cache = cache
        self.code_hash = code_hash
        self.plan = plan or measurement_plan(simulator.spec)
        self._views: dict[tuple, dict[str, Any]] = {}  # each view built once from the ledger it reads
        self.printed: dict[tuple[str, str], tuple[str, Any]] = {}  # (language, ledger entry) → (name, figure)
        self.recordings: dict[str, dict[str, Any]] = {}  # recording_key → the prompt and its timing, as recorded

    def _view(self, name: str, **options: Any) -> dict[str, Any]:
        ledger = self.ledger()
        key = (name, id(ledger), *sorted((k, tuple(v) if isinstance(v, list) else v) for k, v in options.items()))
        if key not in self._views:
            self._views[key] = getattr(self.simulator, name)(ledger=ledger, **options)
        return self._views[key]

    def _cached(self, what: str, label: str, compute: Any, *, model: bool = True, **inputs: Any) -> Any:
        """The result of `compute`, keyed by what it is, its inputs, the simulation code and (unless it does
        not depend on it) the model."""
        parts = {"what": what, "inputs": inputs, "simulation_code": self.code_hash, "kernels": kernels.selected_path()}
        if model:
            parts["model"] = self.simulator.fingerprint
        return self.cache.get_or_compute(parts, compute, label=label)

    def trace(self, prompt: str, max_new_tokens: int, chat: bool = True) -> dict[str, Any]:
        """The recording of a prompt, its TTFT and decode pace timed as the plan times the ledger's figures. A
        disturbance the plan could not record away stops the build, as the ledger's does."""
        plan = self.plan
        label = f"recording {prompt[:40]!r} ({max_new_tokens} new tokens max) on {self.simulator.model_name}"
        key = f"{self.simulator.spec}:{self.code_hash}:{plan}:{prompt}:{max_new_tokens}:{chat}"

        def record() -> dict[str, Any]:
            return self.simulator.record(prompt, max_new_tokens=max_new_tokens, chat=chat, plan=plan,
                                         progress=progress_logger("record"))
        trace = self._cached("trace", label, lambda: _unless_disturbed(key, record), prompt=prompt,
                             max_new_tokens=max_new_tokens, chat=chat, plan=asdict(plan))
        self.recordings[recording_key(prompt, max_new_tokens, chat)] = {
            "prompt": prompt, "max_new_tokens": max_new_tokens, "chat": chat, "timing": trace["timing"]}
        return trace

    def published_ledger(self) -> dict[str, Any]:
        """The ledger with the recordings' timings as entries (`recording/ID/ttft`, `recording/ID/decode_step`,
        ID from `recording_key`): every timing the site prints, in the one file a reader can open."""
        ledger = self.ledger()
        entries = dict(ledger.get("entries", {}))
        for key, rec in sorted(self.recordings.items()):
            about = {"weights": "f32", "prompt": rec["prompt"], "max_new_tokens": rec["max_new_tokens"],
                     "chat": rec["chat"], "statistic": "median", "measured": 1}
            for field, name, quantity in (("ttft_ms", "ttft", "recording_ttft"),
                                          ("decode_ms_per_token", "decode_step", "recording_decode_step")):
                if field in rec["timing"]:
                    entries[f"{key}/{name}"] = {"quantity": quantity, "unit": "ms", **about, **rec["timing"][field]}
        return {**ledger, "entries": entries}

    def ledger(self) -> dict[str, Any]:
        """Every timing the site prints, each measured once (schema prefill-decode-ledger/1). A disturbance the
        plan could not measure away stops the build with the ledger's message."""
        plan = self.plan
        label = f"the ledger of measurements ({plan.name}) on {self.simulator.model_name}"

        key = f"{self.simulator.spec}:{self.code_hash}:{plan}"

        def measure() -> dict[str, Any]:
            ledger = _unless_disturbed(key, lambda: self.simulator.ledger(plan=plan, progress=progress_logger("measuring")))
            if ledger.get("disturbed"):
                log.info(f"  a draft: {len(ledger['disturbed'])} measurements disturbed, recorded in the ledger "
                         f"(plan {plan.name} on {self.simulator.model_name} records them instead of stopping)")
            return ledger
        return self._cached("ledger", label, measure, plan=asdict(plan))

    def check_printed(self, lang: str, name: str, figure: Any) -> None:
        """One quantity, one value: a figure that is a ledger entry must print the entry's value, and print it as
        every other figure of that entry did in this language. A LookupError names both when not."""
        entries = self.published_ledger().get("entries", {})
        if figure.entry not in entries:
            return  # a hand-made ledger (tests) has no entries to hold figures to
        value = entries[figure.entry]["value"]
        if figure.value is None or abs(figure.value - value) > 1e-9 * max(1.0, abs(value)):
            raise LookupError(f"{name} prints {figure.text}, but the ledger's {figure.entry} is {value:.6g}")
        first = self.printed.setdefault((lang, figure.entry), (name, figure))
        if first[1].text != figure.text:
            raise LookupError(f"{name} prints {figure.entry} as {figure.text}, but {first[0]} printed it as "
                              f"{first[1].text}: one quantity, two values")

    def sweep(self, prompt_lengths: tuple[int, ...] | list[int] = DEFAULT_PROMPT_LENGTHS,
              contexts: tuple[int, ...] | list[int] = DEFAULT_CONTEXTS) -> dict[str, Any]:
        """The ledger's prompt-length sweep and KV cache comparison, at these lengths and contexts (each one the
        plan measured: a demo block can show fewer, never others)."""
        for what, asked, measured in (("prompt length", prompt_lengths, self.plan.prompt_lengths),
                                      ("context", contexts, self.plan.contexts)):
            unmeasured = [n for n in asked if n not in measured]
            if unmeasured:
                raise ValueError(f"{what}s {unmeasured} are not measured — allowed: any of "
                                 f"{', '.join(map(str, measured))} (simulations.plans.Plan)")
        return self._view("sweep", prompt_lengths=list(prompt_lengths), contexts=list(contexts))

    def roofline(self) -> dict[str, Any]:
        return self._view("roofline", prompt_tokens=REFERENCE_PROMPT_TOKENS)

    def batch(self) -> dict[str, Any]:
        """Batched decode, its knee, chunked prefill and the two users (schema prefill-decode-batch/2)."""
        return self._view("batch")

    def formats(self) -> dict[str, Any]:
        """The same model in F32, F16, Q8_0 and its 4-bit format (schema prefill-decode-formats/1)."""
        return self._view("formats")

    def projections(self, prompt_lengths: tuple[int, ...] | list[int] = DEFAULT_PROMPT_LENGTHS) -> dict[str, Any]:
        lengths = list(prompt_lengths)
        return self._cached("projections", f"projections at prompt lengths {lengths}",
                            lambda: self.simulator.projections(prompt_lengths=lengths),
                            model=False, prompt_lengths=lengths)

    def projection_ids(self) -> frozenset[str]:
        return frozenset(row["id"] for row in self.projections()["projections"])
