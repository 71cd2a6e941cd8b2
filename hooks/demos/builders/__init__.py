"""One builder per demo kind, mirroring docs/assets/pd/demos/<kind>.js: `build(block, m, strings) -> Demo`.

Each turns a validated block, the measurements and this language's strings into the demo's JSON (which
follows hooks/demos/demo.schema.json, one `$defs` entry per kind), the context of its no-JavaScript
fallback (overrides/pd/<kind>.html) and the readouts the chapter's prose may cite.
"""

from __future__ import annotations

from collections.abc import Callable

from hooks.demos.blocks import DemoBlock
from hooks.demos.builders import (
                                  batching,
                                  conversation,
                                  decode,
                                  device,
                                  formats,
                                  prefill,
                                  recap,
                                  roofline,
                                  timeline,
)
from hooks.demos.builders.common import Demo
from hooks.demos.measurements import Measurements
from hooks.demos.strings import Strings

Builder = Callable[[DemoBlock, Measurements, Strings], Demo]

BUILDERS: dict[str, Builder] = {module.__name__.rsplit(".", 1)[1]: module.build for module in (
    conversation, prefill, decode, timeline, roofline, recap, batching, device, formats)}
