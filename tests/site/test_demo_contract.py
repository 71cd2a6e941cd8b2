"""The data contract between the build and the browser: every demo JSON the site ships, in both languages,
follows hooks/demos/demo.schema.json (strict: a field the browser does not read cannot creep in)."""

from __future__ import annotations

from tests.languages import LANGUAGES
import json
from pathlib import Path

import jsonschema
import pytest

from hooks.demos.blocks import KINDS

SCHEMA_PATH = Path(__file__).resolve().parents[2] / "hooks" / "demos" / "demo.schema.json"


@pytest.fixture(scope="module")
def schema() -> dict:
    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    return schema


def demo_files(site: Path) -> dict[tuple[str, str], list[Path]]:
    """The built demo JSON files by (kind, language)."""
    found: dict[tuple[str, str], list[Path]] = {}
    for path in sorted(site.rglob("assets/traces/*.json")):
        kind, lang, _digest = path.stem.split("-")
        found.setdefault((kind, lang), []).append(path)
    return found


def test_the_schema_has_one_definition_per_demo_kind(schema):
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["$id"] == "prefill-decode-demo/2"
    assert {entry["$ref"].rsplit("/", 1)[1] for entry in schema["oneOf"]} == set(KINDS)
    for kind in KINDS:
        assert schema["$defs"][kind]["additionalProperties"] is False
        assert schema["$defs"][kind]["properties"]["kind"] == {"const": kind}


def test_every_built_demo_of_every_kind_in_both_languages_follows_its_schema(built_site, schema):
    files = demo_files(built_site)
    assert set(files) == {(kind, lang) for kind in KINDS for lang in LANGUAGES}
    for (kind, lang), paths in files.items():
        for path in paths:
            data = json.loads(path.read_text(encoding="utf-8"))
            assert (data["kind"], data["lang"], data["schema"]) == (kind, lang, "prefill-decode-demo/2")
            errors = [f"{'/'.join(map(str, error.absolute_path))}: {error.message}" for error in
                      jsonschema.Draft202012Validator({"$ref": f"#/$defs/{kind}", "$defs": schema["$defs"]})
                      .iter_errors(data)]
            assert not errors, f"{path.name}: {errors[:5]}"
            jsonschema.validate(data, schema)  # and the whole schema picks the same kind


def test_a_field_the_browser_does_not_read_is_refused(schema):
    valid = {"schema": "prefill-decode-demo/2", "kind": "recap", "lang": "en", "strings": {},
             "figures": {"recap": {"data": [], "layout": {}}}}
    jsonschema.validate(valid, schema)
    for extra in ({"readouts": {}}, {"source": {"measured": "x"}}, {"note": None}):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate({**valid, **extra}, schema)
