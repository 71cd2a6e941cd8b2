"""Every simulation the demos use, through the cache: traces per prompt, and the shared global
measurements (prompt-length sweep, cache vs recompute, roofline, projections) computed once per process.

Sweep sizes follow env PD_SWEEP: `full` (default, what the published site shows) or `quick` (fewer
repeats and decode steps, for tests and drafts). The prompt lengths and contexts are the same in both,
so every inline figure name stays valid.
"""

from __future__ import annotations

import os
import time
from dataclasses import asdict, dataclass
from typing import Any

from mkdocs.exceptions import PluginError
from mkdocs.plugins import get_plugin_logger

from hooks.demos.cache import ResultCache
from hooks.demos.simulator import NumpySimulator, Progress
from simulations import kernels

log = get_plugin_logger(__name__)

# The demos' defaults, in one place (the browser gets them through each demo's JSON).
DEFAULT_PROMPT_LENGTHS: tuple[int, ...] = (128, 512, 2048, 4096)
DEFAULT_CONTEXTS: tuple[int, ...] = (64, 128, 256, 512, 1024)
REFERENCE_PROMPT_TOKENS = 512  # the roofline and the device demo measure here; the timeline opens here
DEFAULT_PROJECTION = "llama-3.1-8b/h100-sxm/fp16"


@dataclass(frozen=True)
class SweepSettings:
    name: str
    decode_steps: int
    repeats: int
    peak_repeats: int


SWEEP_SETTINGS = {
    "full": SweepSettings("full", decode_steps=16, repeats=3, peak_repeats=5),
    "quick": SweepSettings("quick", decode_steps=4, repeats=1, peak_repeats=1),
}


@dataclass(frozen=True)
class BatchSizes:
    """What the batching chapter measures: batch sizes, each user's cache length, prompt chunks, the
    arriving user's prompt. The batch sizes are the same for every model (figure names like
    batch.speedup@64 stay valid); the tiny test model gets short contexts so tests stay fast."""

    batch_sizes: tuple[int, ...] = (1, 2, 4, 8, 16, 32, 64)
    context_tokens: int = 512
    chunk_sizes: tuple[int, ...] = (0, 64, 128, 256, 512)
    two_users_prompt_tokens: int = 2048
    two_users_chunk_tokens: int = 256  # one of chunk_sizes: the chapter compares its mixed step with two passes


BATCH_SIZES = {"default": BatchSizes(),
               "tiny": BatchSizes(context_tokens=64, chunk_sizes=(0, 16, 32, 64), two_users_prompt_tokens=256,
                                  two_users_chunk_tokens=32)}


@dataclass(frozen=True)
class FormatSizes:
    """What the bytes-per-weight section measures: each format's prefill at these prompt lengths (TTFT), its
    decode steps after `context_tokens`, and its accuracy over `accuracy_steps` teacher-forced answer tokens.
    The build keeps to two prompt lengths so the four formats add well under a minute to a cold build
    (`python -m simulations formats` measures 2048 tokens too)."""

    prompt_lengths: tuple[int, ...] = (128, 512)
    context_tokens: int = 512
    accuracy_steps: int = 64


FORMAT_SIZES = FormatSizes()


def batch_sizes_for(model: str | None) -> BatchSizes:
    """The batching chapter's sizes for a PD_MODEL value (None: the default model)."""
    return BATCH_SIZES["tiny" if model == "tiny" else "default"]


def sweep_settings() -> SweepSettings:
    name = os.environ.get("PD_SWEEP", "full")
    if name not in SWEEP_SETTINGS:
        raise PluginError(f"environment: PD_SWEEP={name!r} is not a sweep size — allowed: {', '.join(SWEEP_SETTINGS)}")
    return SWEEP_SETTINGS[name]


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

    def __init__(self, simulator: NumpySimulator, cache: ResultCache, code_hash: str,
                 settings: SweepSettings | None = None, batch_sizes: BatchSizes | None = None) -> None:
        self.simulator = simulator
        self.cache = cache
        self.code_hash = code_hash
        self.settings = settings or sweep_settings()
        self.batch_sizes = batch_sizes or BatchSizes()

    def _cached(self, what: str, label: str, compute: Any, *, model: bool = True, **inputs: Any) -> Any:
        """The result of `compute`, keyed by what it is, its inputs, the simulation code and (unless it does
        not depend on it) the model."""
        parts = {"what": what, "inputs": inputs, "simulation_code": self.code_hash, "kernels": kernels.selected_path()}
        if model:
            parts["model"] = self.simulator.fingerprint
        return self.cache.get_or_compute(parts, compute, label=label)

    def trace(self, prompt: str, max_new_tokens: int, chat: bool = True) -> dict[str, Any]:
        label = f"recording {prompt[:40]!r} ({max_new_tokens} new tokens max) on {self.simulator.model_name}"
        return self._cached(
            "trace", label,
            lambda: self.simulator.record(prompt, max_new_tokens=max_new_tokens, chat=chat,
                                          progress=progress_logger("record")),
            prompt=prompt, max_new_tokens=max_new_tokens, chat=chat)

    def sweep(self, prompt_lengths: tuple[int, ...] | list[int] = DEFAULT_PROMPT_LENGTHS,
              contexts: tuple[int, ...] | list[int] = DEFAULT_CONTEXTS) -> dict[str, Any]:
        lengths, ctxs, s = list(prompt_lengths), list(contexts), self.settings
        label = f"sweep over prompt lengths {lengths} and contexts {ctxs} ({s.name}) on {self.simulator.model_name}"
        return self._cached(
            "sweep", label,
            lambda: self.simulator.sweep(prompt_lengths=lengths, contexts=ctxs, decode_steps=s.decode_steps,
                                         repeats=s.repeats, progress=progress_logger("sweep")),
            prompt_lengths=lengths, contexts=ctxs, settings=asdict(s))

    def roofline(self) -> dict[str, Any]:
        s = self.settings
        label = f"roofline of this machine with {self.simulator.model_name} ({s.name})"
        return self._cached(
            "roofline", label,
            lambda: self.simulator.roofline(prompt_tokens=REFERENCE_PROMPT_TOKENS, repeats=s.repeats,
                                            peak_repeats=s.peak_repeats, decode_steps=s.decode_steps,
                                            progress=progress_logger("roofline")),
            prompt_tokens=REFERENCE_PROMPT_TOKENS, settings=asdict(s))

    def batch(self) -> dict[str, Any]:
        """Batched decode, its knee, chunked prefill and the two users (schema prefill-decode-batch/2).
        The machine's peaks are the roofline's, so the batching chapter's ridge point is the bottleneck's."""
        s, sizes = self.settings, self.batch_sizes
        machine = self.roofline()["machine"]
        peaks = {"peak_gflops": machine["peak_gflops"], "peak_gbps": machine["peak_gbps"]}
        # One user at the batch's context is the sweep's point, which the decode chapters quote: one figure.
        one_user_ms = next((p["decode_ms_per_token"] for p in self.sweep()["prompt_lengths"]
                            if p["prompt_tokens"] == sizes.context_tokens), None)
        label = (f"batched decode at B = {list(sizes.batch_sizes)}, chunked prefill ({s.name}) "
                 f"on {self.simulator.model_name}")
        return self._cached(
            "batch", label,
            lambda: self.simulator.batch(**asdict(sizes), repeats=s.repeats, peaks=peaks, one_user_ms=one_user_ms,
                                         progress=progress_logger("batch")),
            **asdict(sizes), repeats=s.repeats, peaks=peaks, one_user_ms=one_user_ms)

    def formats(self) -> dict[str, Any]:
        """The same model in F32, F16, Q8_0 and its 4-bit format: TTFT, decode, accuracy and each format's
        place on the roofline (schema prefill-decode-formats/1), with the roofline's peaks, so the
        section's ridge point is the chapter's."""
        s, sizes = self.settings, FORMAT_SIZES
        machine = self.roofline()["machine"]
        peaks = {"peak_gflops": machine["peak_gflops"], "peak_gbps": machine["peak_gbps"]}
        label = f"weight formats F32, F16, Q8_0 and 4-bit ({s.name}) on {self.simulator.model_name}"
        inputs = {"prompt_lengths": list(sizes.prompt_lengths), "context_tokens": sizes.context_tokens,
                  "accuracy_steps": sizes.accuracy_steps, "decode_steps": s.decode_steps, "repeats": s.repeats}
        return self._cached(
            "formats", label,
            lambda: self.simulator.formats(**inputs, peaks=peaks, progress=progress_logger("formats")),
            **inputs, peaks=peaks)

    def projections(self, prompt_lengths: tuple[int, ...] | list[int] = DEFAULT_PROMPT_LENGTHS) -> dict[str, Any]:
        lengths = list(prompt_lengths)
        return self._cached("projections", f"projections at prompt lengths {lengths}",
                            lambda: self.simulator.projections(prompt_lengths=lengths),
                            model=False, prompt_lengths=lengths)

    def projection_ids(self) -> frozenset[str]:
        return frozenset(row["id"] for row in self.projections()["projections"])
