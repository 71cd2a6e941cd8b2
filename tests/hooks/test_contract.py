"""Every build checks each demo's JSON against hooks/demos/demo.schema.json: a violation stops it, naming
the demo, its page and the field (the built files are checked again in tests/site/test_demo_contract.py)."""

from __future__ import annotations

import pytest

from hooks.authoring import AuthoringMistake
from hooks.demos import contract
from hooks.demos.blocks import DemoBlock

BLOCK = DemoBlock(kind="recap", options={}, src_path="zh/summary.md", line=12, index=0)
VALID = {"schema": "prefill-decode-demo/2", "kind": "recap", "lang": "zh", "strings": {},
         "figures": {"recap": {"data": [], "layout": {}}}}


def test_a_demo_that_follows_its_schema_passes():
    contract.check(BLOCK, VALID)
    contract.check(BLOCK, {**VALID, "lang": "fr"})  # the schema lists no languages


@pytest.mark.parametrize(("data", "field"), [
    ({**VALID, "lang": "French"}, "lang"),  # a language is a folder name like "fr", whichever mkdocs.yml lists
    ({**VALID, "figures": {"recap": {"data": "x", "layout": {}}}}, "figures/recap/data"),
    ({**VALID, "readouts": {}}, "(the whole object)"),  # a field the browser does not read
])
def test_a_violation_stops_the_build_naming_the_demo_its_page_and_the_field(data, field):
    with pytest.raises(AuthoringMistake) as raised:
        contract.check(BLOCK, data)
    message = str(raised.value)
    assert message.startswith("zh/summary.md:12: the recap demo's JSON breaks hooks/demos/demo.schema.json at "
                              f"{field}: "), message
