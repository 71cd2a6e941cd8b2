"""What the site measures, and how hard: one plan per build (`site`, what is published; `quick`, for tests and
drafts), read by the ledger (`ledger.measure`), the standalone experiments' defaults and the benchmarks. Every
length, context, batch size and chunk the pages print is set here and nowhere else.
"""

from __future__ import annotations

from dataclasses import dataclass, replace


@dataclass(frozen=True)
class Plan:
    """What the site measures, and how hard. `site` is what a published build uses; `quick` keeps every
    quantity (so every figure name resolves) with fewer steps and rounds, for tests and drafts."""

    name: str = "site"
    prompt_lengths: tuple[int, ...] = (128, 512, 2048, 4096)  # TTFT and decode, the sweep's
    contexts: tuple[int, ...] = (64, 128, 256, 512, 1024)  # the KV cache against recomputing
    decode_steps: int = 8  # timed steps a round (their median is the round's figure), after as many untimed
    rounds: int = 3
    fast_rounds: int = 5
    formats: tuple[str, ...] | None = None  # None: formats.default_formats
    format_prompt_lengths: tuple[int, ...] = (128, 512)
    format_context: int = 512
    accuracy_steps: int = 64
    batch_sizes: tuple[int, ...] = (1, 2, 4, 8, 16, 32, 64)
    batch_context: int = 512
    chunk_sizes: tuple[int, ...] = (0, 64, 128, 256, 512)
    two_users_prompt_tokens: int = 2048
    two_users_chunk_tokens: int = 256
    two_users_plays: int = 3
    peak_repeats: int = 5
    stream_buffers: int = 3  # fresh buffers for the read stream: where a buffer lands in memory moves its rate
    noise: float = 0.10  # the vocabulary's noise margin: the largest spread published
    noise_floor_ms: float = 0.25  # timer and scheduler granularity, added to every tolerance
    remeasures: int = 2
    probe_steps: int = 12  # consecutive decode steps timed before the rounds: a busy machine spreads them
    stop_when_disturbed: bool = True  # False: record the disturbance in the ledger and go on (drafts, tests)

    @property
    def f32_lengths(self) -> tuple[int, ...]:
        """Every prompt length whose F32 prefill and decode step some page needs."""
        chunks = [c for c in self.chunk_sizes if c > 0]
        return tuple(sorted({*self.prompt_lengths, *self.contexts, *self.format_prompt_lengths,
                             self.format_context, self.batch_context, *chunks}))


# The tiny test model: short contexts so tests stay fast; its figures are a few milliseconds, far below what a
# shared machine's load moves, and never published, so a disturbance is recorded rather than stopping a build
# (and not measured again: a draft's figures only have to exist).
TINY_SIZES = {"batch_context": 64, "chunk_sizes": (0, 16, 32, 64), "two_users_prompt_tokens": 256,
              "two_users_chunk_tokens": 32, "noise_floor_ms": 1.0, "remeasures": 0,
              "stop_when_disturbed": False}
PLANS = {
    "site": Plan(),
    "quick": Plan(name="quick", decode_steps=4, rounds=2, fast_rounds=2, peak_repeats=3, stream_buffers=2,
                  two_users_plays=1, accuracy_steps=16, remeasures=0, stop_when_disturbed=False),
}


def plan_for(name: str, tiny: bool = False) -> Plan:
    """The plan called `name` ("site" or "quick"); the tiny test model's sizes when `tiny`."""
    plan = PLANS[name]
    return replace(plan, **TINY_SIZES) if tiny else plan
