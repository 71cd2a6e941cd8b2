"""The one place the build talks to `simulations/`: load the model, record, sweep, measure, project.

Everything else in hooks/demos/ reaches the engine through a `NumpySimulator`; tests pass a subclass that
counts or replaces its calls.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from functools import cached_property
from pathlib import Path
from typing import Any

import simulations
from simulations import cost, kernels, ledger, loader, projections, trace, views

Progress = Callable[[str, "float | None"], None]


def simulations_dir() -> Path:
    return Path(simulations.__file__).resolve().parent


def model_spec() -> str | None:
    """The model the build uses: env PD_MODEL ("tiny", a GGUF path, or a model id); None = default."""
    return os.environ.get("PD_MODEL") or None


class NumpySimulator:
    """What the demos need from the numpy engine in simulations/; the model loads on first use."""

    def __init__(self, spec: str | None) -> None:
        self.spec = spec
        kernels.configure()  # the kernels' runtime set-up, once per build process

    @cached_property
    def model(self) -> Any:
        return loader.load_model(self.spec)

    @property
    def model_name(self) -> str:
        return self.model.name

    @property
    def fingerprint(self) -> str:
        return self.model.fingerprint

    @property
    def max_context(self) -> int:
        return int(self.model.config.max_context)

    def count_prompt_tokens(self, prompt: str) -> int:
        """Tokens the model sees for this prompt with the chat template applied, as record() uses it."""
        tokenizer = self.model.tokenizer
        return len(tokenizer.encode(tokenizer.render_chat(prompt, None).text))

    def model_summary(self) -> dict[str, Any]:
        return loader.model_summary(self.model)

    def pass_cost(self, new_tokens: int, past_tokens: int) -> Any:
        """The cost model's FLOPs and bytes (a simulations.cost.PassCost) of one pass of the loaded model."""
        return cost.pass_cost(self.model.config.shape, new_tokens, past_tokens)

    def record(self, prompt: str, *, max_new_tokens: int, chat: bool = True, plan: Any = None,
               progress: Progress | None = None) -> dict[str, Any]:
        """The recording of `prompt`; with a plan, its timings settled as the ledger's are (`ledger.recording`)."""
        if plan is None:
            return trace.record(self.model, prompt, max_new_tokens=max_new_tokens, chat=chat, progress=progress)
        return ledger.recording(self.model, prompt, plan, progress, max_new_tokens=max_new_tokens, chat=chat)

    def ledger(self, *, plan: Any, progress: Progress | None) -> dict[str, Any]:
        """simulations.ledger.measure on the loaded model: every timing the site prints, measured once."""
        return ledger.measure(self.model, plan, progress)

    def sweep(self, *, ledger: dict[str, Any], prompt_lengths: list[int], contexts: list[int]) -> dict[str, Any]:
        """The ledger's prompt-length sweep and KV cache comparison, at these lengths and contexts."""
        result = views.sweep(ledger)
        return {**result, "prompt_lengths": [p for p in result["prompt_lengths"] if p["prompt_tokens"] in prompt_lengths],
                "cache_vs_recompute": [c for c in result["cache_vs_recompute"] if c["context"] in contexts]}

    def roofline(self, *, ledger: dict[str, Any], prompt_tokens: int) -> dict[str, Any]:
        return views.roofline(ledger, prompt_tokens)

    def projections(self, *, prompt_lengths: list[int]) -> dict[str, Any]:
        return projections.project(prompt_lengths=tuple(prompt_lengths))

    def batch(self, *, ledger: dict[str, Any]) -> dict[str, Any]:
        """Batched decode, its knee, chunked prefill and the two users (schema prefill-decode-batch/2)."""
        return views.batch(ledger)

    def formats(self, *, ledger: dict[str, Any]) -> dict[str, Any]:
        """The same model in F32, F16, Q8_0 and its 4-bit format (schema prefill-decode-formats/1)."""
        return views.formats(ledger)
