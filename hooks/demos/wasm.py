"""The device demo's WebAssembly kernels: hooks/demos/device_kernels.wat, compiled at build time.

The text is the source; the binaries are generated files (never written into docs/). One macro is
expanded first: `(MADD a b c)` (a × b + c on f32x4) becomes relaxed SIMD's fused multiply-add in the
"relaxed" variant and a multiply then an add in the "simd" variant, for browsers without relaxed SIMD; `(IDOT a b c)`
(c plus the products of a's signed bytes and b's bytes 0-127, summed four to an i32 lane) becomes relaxed SIMD's
integer dot product, or widening multiplies and pairwise sums.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import wasmtime
from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File

from hooks.demos.assets import language_prefix

SOURCE = Path(__file__).with_name("device_kernels.wat")
VARIANTS = ("relaxed", "simd")
ASSET_DIR = "assets/pd/device"


def _operands(text: str, start: int, count: int) -> tuple[list[str], int]:
    """`count` balanced S-expressions from `start`; returns them and the index after the last."""
    found, i = [], start
    while len(found) < count:
        while text[i].isspace():
            i += 1
        if text[i] != "(":
            raise ValueError(f"{SOURCE.name}: MADD takes parenthesised operands, found {text[i:i + 20]!r}")
        depth, begin = 0, i
        while True:
            depth += {"(": 1, ")": -1}.get(text[i], 0)
            i += 1
            if depth == 0:
                break
        found.append(text[begin:i])
    return found, i


def _written_out(name: str, a: str, b: str, c: str, variant: str) -> str:
    if name == "MADD":
        return f"(f32x4.relaxed_madd {a} {b} {c})" if variant == "relaxed" else f"(f32x4.add (f32x4.mul {a} {b}) {c})"
    if variant == "relaxed":  # IDOT: b's lanes must be 0-127 (i7), where every implementation agrees
        return f"(i32x4.relaxed_dot_i8x16_i7x16_add_s {a} {b} {c})"
    # The same sum in other lanes (products paired differently): only the sum over the lanes is used.
    return (f"(i32x4.add {c} (i32x4.add (i32x4.extadd_pairwise_i16x8_s (i16x8.extmul_low_i8x16_s {a} {b})) "
            f"(i32x4.extadd_pairwise_i16x8_s (i16x8.extmul_high_i8x16_s {a} {b}))))")


def expand(text: str, variant: str) -> str:
    """The text with every `(MADD a b c)` and `(IDOT a b c)` written out for `variant` ("relaxed" or "simd")."""
    if variant not in VARIANTS:
        raise ValueError(f"unknown kernel variant {variant!r}; allowed: {', '.join(VARIANTS)}")
    while (found := [(at, name) for name in ("MADD", "IDOT") if (at := text.find(f"({name} ")) >= 0]):
        at, name = min(found)
        (a, b, c), end = _operands(text, at + len(name) + 1, 3)
        close = text.index(")", end)
        if text[end:close].strip():
            raise ValueError(f"{SOURCE.name}: {name} takes exactly three operands, near {text[at:at + 60]!r}")
        a, b, c = (expand(part, variant) for part in (a, b, c))
        text = text[:at] + _written_out(name, a, b, c, variant) + text[close + 1:]
    return text


@cache
def kernels(variant: str) -> bytes:
    """The binary of one variant, compiled by wasmtime's wat2wasm."""
    return bytes(wasmtime.wat2wasm(expand(SOURCE.read_text(encoding="utf-8"), variant)))


def kernel_files(config: MkDocsConfig) -> list[File]:
    """The two binaries as generated files beside the worker (assets/pd/device/kernels-<variant>.wasm).
    Every language's pages load the device scripts from the site's root, so only the default
    language's build adds them."""
    if language_prefix(config):
        return []
    return [File.generated(config, f"{ASSET_DIR}/kernels-{variant}.wasm", content=kernels(variant))
            for variant in VARIANTS]
