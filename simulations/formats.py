"""Fewer bytes per weight, measured: the same model in F32, F16, Q8_0 and the model file's own 4-bit format
(`convert.convert` holds the weights in each).

`measure` times, per format and interleaved (every round runs each format in turn, so a burst of load on this
shared machine falls on all of them): TTFT (the prompt's prefill, to the first token's logits) at several prompt
lengths, and decode steps at a 512-token context (after as many untimed ones: generation's steady state); and
places both on this machine's roofline, with FLOPs and bytes from the cost model at the format's real bytes per
weight (block scales counted). Accuracy: the F32 model's greedy answer to the chapter prompt, then every format
reads the same tokens (teacher forcing), and its next-token distributions are compared with F32's at each of the
answer's positions: how often the most likely token is the same (top-1 agreement), and the mean KL divergence
KL(F32 ‖ format) in nats, the two numbers llama.cpp's `perplexity --kl-divergence` reports. And each format's
kernel with its bytes already in the CPU's caches (`cached_product`): whether its own work, waiting for no
memory, keeps up with memory, which it must for decode to speed up as the bytes shrink; a step's matrix products
alone (`step_products`), to tell their time from the rest of the step's; and the step a prompt's pass takes in a
GGUF format that it does not in float32 (`dequantize_ms`): every layer matrix turned back into float32 once.

F32 here is the GGUF file dequantized: for SmolLM2 (a Q4_1 file) the file's own format loses nothing
against it, and F16 and Q8_0 are re-quantizations of already-4-bit weights. The original weights are not
in the file, so what 4 bits cost against them cannot be measured here; the accuracy figures say what each
format costs against the weights this model actually has.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from . import kernels
from .convert import MATRICES, convert, default_formats
from .cost import decode_cost, prefill_cost
from .errors import PromptError
from .loader import LoadedModel, bytes_per_weight, model_summary, weights_nbytes
from .model import KVCache, Weights, decode_step, linear, prefill
from .plans import PLANS
from .prompts import CHAPTER_PROMPT, prompt_of_length
from .quantized import BYTES_PER_WEIGHT, QuantizedWeight, check_format, output_tiles
from .roofline import best_ceilings, machine_record, measure_peaks, phase_point, ridge_intensity
from .sweep import check_lengths
from .trace import prepare_prompt

SCHEMA = "prefill-decode-formats/1"
CACHED_MATRIX = "w_gate_up"  # `cached_product`'s: a layer's largest, where a call's fixed cost weighs least

Progress = Callable[[str, float | None], None] | None


# --- accuracy against F32 ---------------------------------------------------------------------------

def answer_ids(model: LoadedModel, prompt: str, steps: int) -> tuple[list[int], list[int]]:
    """The chat prompt's token ids and the float32 model's greedy answer of `steps` tokens (EOS not obeyed:
    the comparison needs `steps` positions)."""
    _, ids, _ = prepare_prompt(model, prompt, True, None)
    if len(ids) + steps > model.config.max_context:
        raise PromptError(f"the prompt ({len(ids)} tokens) and {steps} answer tokens exceed the context of "
                          f"{model.config.max_context} tokens")
    cache = KVCache.empty(model.config, len(ids) + steps)
    logits = prefill(model.weights, model.config, np.asarray(ids), cache)[0]
    answer = []
    for _ in range(steps):
        answer.append(int(np.argmax(logits)))
        if len(answer) < steps:
            logits = decode_step(model.weights, model.config, answer[-1], cache)
    return ids, answer


def teacher_forced_logits(model: LoadedModel, ids: Sequence[int], answer: Sequence[int]) -> np.ndarray:
    """(len(answer), vocab) logits: the distribution over each answer token, the model reading the prompt
    and the answer before it (one pass, every position's logits)."""
    tokens = np.asarray([*ids, *answer[:-1]], dtype=np.int64)
    cache = KVCache.empty(model.config, len(tokens))
    return prefill(model.weights, model.config, tokens, cache, all_logits=True)[len(ids) - 1:]


def agreement(reference: np.ndarray, logits: np.ndarray) -> dict[str, float]:
    """Top-1 agreement and KL(reference ‖ logits) in nats (mean and max over positions), in float64."""
    def log_softmax(z):
        z = z.astype(np.float64)
        z = z - z.max(axis=-1, keepdims=True)
        return z - np.log(np.exp(z).sum(axis=-1, keepdims=True))

    p_log, q_log = log_softmax(reference), log_softmax(logits)
    kl = np.maximum((np.exp(p_log) * (p_log - q_log)).sum(axis=-1), 0.0)  # ≥ 0; rounding can give −1e-17
    return {"top1_agreement": float(np.mean(reference.argmax(-1) == logits.argmax(-1))),
            "mean_kl": float(kl.mean()), "max_kl": float(kl.max())}


# --- the measurement ----------------------------------------------------------------------------------

def _time(run: Callable[[], object]) -> float:
    start = time.perf_counter()
    run()
    return (time.perf_counter() - start) * 1000


PRODUCT_RUNS = 8  # runs of a step's matrix products alone, a round


def step_matrices(weights: Weights) -> list:
    """The matrices a decode step multiplies, in its order: each layer's MATRICES, then the LM head."""
    return [getattr(layer, kind) for layer in weights.layers for kind in MATRICES] + [weights.lm_head]


def step_products(m: LoadedModel) -> Callable[[], None]:
    """A decode step's matrix products alone, back to back: one row through each of `step_matrices`, by
    `model.linear` (the kernels a step uses). A step's time less theirs is what its attention, norms and the
    work between the products take, and what the products lose to them. The rows are random: a product's time
    does not depend on the values."""
    matrices = step_matrices(m.weights)
    rng = np.random.default_rng(0)
    rows = {w.shape[1]: rng.standard_normal((1, w.shape[1])).astype(np.float32) for w in matrices}

    def run() -> None:
        for w in matrices:
            linear(rows[w.shape[1]], w)
    return run


def cached_product(m: LoadedModel, bandwidth: float, repeats: int = 40) -> dict[str, Any]:
    """One decode row times the first layer's CACHED_MATRIX, again and again, so that its bytes are already in the
    CPU's caches: how long the format's kernel takes when memory is not what it waits for (the fastest of `repeats`
    calls: a shared machine's load only ever adds), beside how long its bytes take to come from memory at
    `bandwidth` (bytes/s, the measured ceiling). The time includes the call, as every product in a step does. A
    kernel whose own work takes about as long as the reading keeps up with memory only as far as the two overlap."""
    w = getattr(m.weights.layers[0], CACHED_MATRIX)
    x = np.random.default_rng(0).standard_normal((1, w.shape[1])).astype(np.float32)
    for _ in range(3):  # compiled, the weights' kernel copy made, its bytes in the caches
        linear(x, w)
    fastest_ms = min(_time(lambda: linear(x, w)) for _ in range(repeats))
    return {"matrix": CACHED_MATRIX, "bytes": int(w.nbytes), "us": 1000 * fastest_ms,
            "read_us": 1e6 * w.nbytes / bandwidth}


def dequantize_ms(m: LoadedModel, repeats: int = 3) -> float:
    """The step a prompt's pass takes in a GGUF format and not in float32: every layer matrix turned back into float32
    once, a tile of output rows at a time (`quantized.output_tiles`), as `model.quantized_linear` does before its
    products (`kernels.dequantize`, or llama.cpp's reference on the numpy path); the fastest of `repeats`. 0
    for float32 weights, whose kernel copy is made once, at their first product."""
    matrices = [w for layer in m.weights.layers for w in (getattr(layer, name) for name in MATRICES)
                if isinstance(w, QuantizedWeight)]
    if not matrices:
        return 0.0

    def once() -> None:
        for w in matrices:
            for start, stop in output_tiles(w.shape[0]):
                if kernels.enabled():
                    kernels.dequantize(w, start, stop, "product")
                else:
                    w.dequantize(slice(start, stop))

    once()  # compiled; the blocks in memory as a prefill finds them
    return min(_time(once) for _ in range(repeats))


def measure(model: LoadedModel, formats: Sequence[str] | None = None,
            prompt_lengths: Sequence[int] = PLANS["site"].format_prompt_lengths,
            context_tokens: int = PLANS["site"].format_context, decode_steps: int = 16, repeats: int = 3,
            accuracy_steps: int = PLANS["site"].accuracy_steps, prompt: str = CHAPTER_PROMPT,
            peaks: dict[str, Any] | None = None, progress: Progress = None) -> dict[str, Any]:
    """Each format's TTFT, decode ms per token, place on the roofline and accuracy against F32 (module doc). Peaks
    given are used as they are (a build passes the roofline's, so that one page has one set of ceilings);
    otherwise they are measured before the phases and again after them, each ceiling the best of both."""
    report = progress or (lambda message, fraction: None)
    names = list(dict.fromkeys(["f32", *(check_format(f) for f in (formats or default_formats(model)))]))
    lengths = sorted(set(prompt_lengths))
    check_lengths(model, [*lengths, context_tokens], decode_steps, "prompt lengths")
    models = {}
    for name in names:
        report(f"holding the weights in {name.upper()}", None)
        models[name] = convert(model, name, progress)
    given = peaks
    if peaks is None:
        report("measuring this machine's peak FLOP/s and bandwidth", 0.0)
        peaks = measure_peaks()
    shape = model.config.shape
    bpw = {name: bytes_per_weight(m) for name, m in models.items()}
    # Untimed warm-up: compile each format's kernels, page the weights in.
    for m in models.values():
        cache = KVCache.empty(m.config, 40)
        prefill(m.weights, m.config, prompt_of_length(m, 32), cache)
        decode_step(m.weights, m.config, 0, cache)

    ttft: dict[str, dict[int, list[float]]] = {n: {length: [] for length in lengths} for n in names}
    steps: dict[str, list[float]] = {n: [] for n in names}
    products: dict[str, list[float]] = {n: [] for n in names}
    context_prompt = prompt_of_length(model, context_tokens)
    decode_caches = {}
    for name, m in models.items():
        decode_caches[name] = KVCache.empty(m.config, context_tokens + decode_steps)
        prefill(m.weights, m.config, context_prompt, decode_caches[name])
    total = repeats * len(names) * (len(lengths) + 1)
    done = 0
    for round_index in range(repeats):
        for length in lengths:
            tokens = prompt_of_length(model, length)
            for name, m in models.items():  # interleaved: each format in turn, every round
                report(f"round {round_index + 1}/{repeats}: {name.upper()} prefill of {length} tokens", done / total)
                cache = KVCache.empty(m.config, length)
                ttft[name][length].append(_time(lambda m=m, cache=cache, tokens=tokens: prefill(m.weights, m.config, tokens,
                                                                                                   cache)))
                done += 1
        for name, m in models.items():
            report(f"round {round_index + 1}/{repeats}: {name.upper()} {decode_steps} decode steps at "
                   f"{context_tokens} tokens, after as many untimed", done / total)
            cache = decode_caches[name]
            token = int(context_prompt[-1])
            # The first steps after another format's run (or any pause) are slower while the last-level cache
            # takes this format's bytes back, gradually: about ten steps for Q4_1's 121 MB on an Intel Xeon, a
            # plain read of a buffer that size alike (benchmarks/README.md). Generation runs its steps back to
            # back, so as many steps run untimed first, the way llama-bench warms up before it times.
            for timed in (False, True):
                cache.length = context_tokens  # rewind: the steps overwrite the rows of the steps before
                for _ in range(decode_steps):
                    ms = _time(lambda m=m, cache=cache, token=token: decode_step(m.weights, m.config, token, cache))
                    if timed:
                        steps[name].append(ms)
            # right after them, in the same state of the caches: what of a step its matrix products take
            run = step_products(m)
            products[name] += [_time(run) for _ in range(PRODUCT_RUNS)]
            done += 1

    if given is None:  # measured on both sides of the phases, as `roofline` does: the faster of the two
        peaks = best_ceilings([peaks, measure_peaks()])
    report("each format's kernel with its bytes in the caches", None)
    cached = {name: cached_product(m, peaks["peak_gbps"] * 1e9) for name, m in models.items()}
    report("each format's weights turned back into float32, as a prompt's pass does", None)
    dequantizing = {name: dequantize_ms(m) for name, m in models.items()}
    report(f"accuracy: F32's answer to the chapter prompt, {accuracy_steps} tokens, read by every format", None)
    ids, answer = answer_ids(models["f32"], prompt, accuracy_steps)
    reference = teacher_forced_logits(models["f32"], ids, answer)
    report("accuracy done", 1.0)

    rows = []
    f32_decode = statistics.median(steps["f32"])
    f32_prefill = {length: statistics.median(ttft["f32"][length]) for length in lengths}
    for name, m in models.items():
        decode_ms = statistics.median(steps[name])
        costs = [decode_cost(shape, context_tokens + i, bytes_per_weight=bpw[name]) for i in range(decode_steps)]
        decode = phase_point(decode_ms, statistics.fmean(c.flops for c in costs), statistics.fmean(c.bytes for c in costs),
                             peaks)
        prefills = {}
        for length in lengths:
            c = prefill_cost(shape, length, bytes_per_weight=bpw[name])
            prefills[length] = phase_point(statistics.median(ttft[name][length]), c.flops, c.bytes, peaks)
        main = prefills[context_tokens] if context_tokens in prefills else prefills[lengths[-1]]
        accuracy = agreement(reference, reference if name == "f32" else teacher_forced_logits(m, ids, answer))
        rows.append({
            "name": name.upper(),
            "format": name,
            "bits_per_weight": 8 * bpw[name],
            "nominal_bits_per_weight": 8 * BYTES_PER_WEIGHT[name],
            "weight_bytes": weights_nbytes(m.weights),
            "source": m.source,
            "ttft_ms": {str(length): prefills[length]["ms"] for length in lengths},
            "ttft_spread_ms": {str(length): [min(ttft[name][length]), max(ttft[name][length])] for length in lengths},
            "decode_ms_per_token": decode_ms,
            "decode_spread_ms": [min(steps[name]), max(steps[name])],
            "products_ms": statistics.median(products[name]),
            "products_spread_ms": [min(products[name]), max(products[name])],
            "tps": 1000 / decode_ms,
            "bytes_per_step": decode["bytes"],
            "bandwidth_utilization": decode["bandwidth_utilization"],
            "compute_utilization": main["compute_utilization"],
            "decode_speedup": f32_decode / decode_ms,
            "prefill_ratio": {str(length): f32_prefill[length] / prefills[length]["ms"] for length in lengths},
            "rounds": {  # each interleaved round's median step and prefill times: ratios within one round
                "decode_ms": [statistics.median(steps[name][i * decode_steps:(i + 1) * decode_steps])
                              for i in range(repeats)],
                "ttft_ms": {str(length): ttft[name][length] for length in lengths},
            },
            "decode": decode,
            "cached_product": cached[name],
            "dequantize_ms": dequantizing[name],
            "prefill": [{"prompt_tokens": length, **prefills[length]} for length in lengths],
            **accuracy,
        })
    digits = kernels.activation_digits()
    arithmetic = ("multiply the quants by each activation written as three 8-bit digits under a power of two a block, "
                  "with AVX-512 VNNI's integer dot products" if digits else "turn the blocks into float32 in registers")
    return {
        "schema": SCHEMA,
        "model": model_summary(model),
        "machine": machine_record(peaks),
        "peaks_method": peaks.get("method"),
        "ridge_intensity": ridge_intensity(peaks),
        "prompt_lengths": lengths,
        "context_tokens": context_tokens,
        "decode_steps": decode_steps,
        "repeats": repeats,
        "accuracy": {"prompt": prompt, "steps": accuracy_steps, "answer_tokens": len(answer),
                     "reference": ("F32: the GGUF file's tensors dequantized to float32 (the model's own weights; "
                                   "the file holds no others)") if model.path is not None else
                                  "F32: the model's float32 weights"},
        "formats": rows,
        # how the block kernels multiplied (kernels.activation_digits): 0, the weights turned into float32 in
        # registers; 3, the quants times each activation's three 8-bit digits by integer dot products
        "activation_digits": digits,
        "method": (
            f"Each format runs the same model.forward; its matrices are held as GGUF blocks, read in decode by "
            f"compiled kernels that {arithmetic}, and in prefill dequantized a tile at a time into a product. "
            f"Timings interleaved: in each of {repeats} rounds every format in turn runs each prompt's "
            f"prefill (TTFT: median over rounds) and {decode_steps} decode steps after a {context_tokens}-token "
            f"prompt (median step), after {decode_steps} untimed steps: generation's steady state, not the first "
            "steps after another format's run, slower while the caches take the format's bytes back; right after "
            f"them, {PRODUCT_RUNS} runs of a step's matrix products alone, back to back (median). FLOPs and "
            "bytes from the cost model (simulations/cost.py) at each format's real bytes per weight, block scales "
            "and float32 norms counted; utilisation = achieved ÷ measured "
            "peak (bandwidth for decode, GEMM for the prefill at "
            f"{context_tokens if context_tokens in prefills else lengths[-1]} tokens). Accuracy: F32's greedy "
            f"answer of {accuracy_steps} tokens to the chat prompt, read by every format (teacher forcing); "
            "top-1 agreement with F32's next-token choice and KL(F32 ‖ format) in nats at each answer position. "
            f"Cached product: one row times the first layer's {CACHED_MATRIX} in the format, repeated with its "
            "bytes in the CPU's caches, the fastest call; read time: its bytes ÷ the measured bandwidth. Dequantize: "
            "every layer matrix turned back into float32 once, as a prompt's pass does in the format (fastest of 3)."
        ),
    }
