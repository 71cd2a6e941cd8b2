"""The data contract between the build and the browser: every demo's JSON follows demo.schema.json.

Checked in every build, as each demo's JSON is placed in its page; a violation stops the build naming the
demo, its page and the field (under `mkdocs serve`, an error box at the demo's place).
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match

from hooks.authoring import AuthoringMistake
from hooks.demos.blocks import DemoBlock

SCHEMA_PATH = Path(__file__).resolve().parent / "demo.schema.json"


@cache
def _validator(kind: str) -> Draft202012Validator:
    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    return Draft202012Validator({"$ref": f"#/$defs/{kind}", "$defs": schema["$defs"]})


def check(block: DemoBlock, data: dict[str, Any]) -> None:
    """Raise an AuthoringMistake at the demo's block if its JSON breaks the schema of its kind."""
    error = best_match(_validator(block.kind).iter_errors(data))
    if error is None:
        return
    field = "/".join(map(str, error.absolute_path)) or "(the whole object)"
    raise AuthoringMistake(block.src_path, block.line,
                           f"the {block.kind} demo's JSON breaks hooks/demos/demo.schema.json at {field}: "
                           f"{error.message[:300]}")
