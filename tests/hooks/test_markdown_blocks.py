"""One fence parser: demo blocks, translation parity and reading time agree on what is fenced code."""

from __future__ import annotations

from hooks.chapters import readable_text
from hooks.demos.blocks import parse_blocks
from hooks.markdown_blocks import Fence, demo_fences, iter_fences, without_fences
from hooks.parity import page_shape

# A chapter that shows an author how to write a demo block (inside a longer fence), then has two real ones:
# a tilde fence and an indented backtick fence inside a list item.
PAGE = """# Title

Prose before.

````markdown
```demo
kind: conversation
```
# not a heading
````

~~~demo
kind: recap
~~~

- item

    ```demo
    kind: timeline
    prompt_lengths: [16, 32]
    ```

## Closing words
"""


def test_fences_are_found_top_level_with_their_lines_info_and_indentation():
    assert list(iter_fences(PAGE.split("\n"))) == [
        Fence(4, 9, "markdown", ""), Fence(11, 13, "demo", ""), Fence(17, 20, "demo", "    "),
    ]


def test_a_fence_closes_only_on_at_least_as_many_of_its_own_characters():
    lines = ["````", "```", "~~~~", "`````", "after"]
    assert list(iter_fences(lines)) == [Fence(0, 3, "", "")]


def test_an_unclosed_fence_runs_to_the_end_of_the_page():
    assert list(iter_fences(["prose", "```python", "x = 1"])) == [Fence(1, 2, "python", "")]
    assert without_fences("prose\n```python\nx = 1") == "prose"


def test_a_demo_block_is_a_fence_whose_info_starts_with_the_word_demo():
    assert [f.start for f in demo_fences(PAGE)] == [11, 17]
    assert demo_fences("```demo-notes\nkind: recap\n```") == []
    assert [f.info for f in demo_fences('```demo title="x"\nkind: recap\n```')] == ['demo title="x"']


def test_an_indented_block_body_loses_its_fence_indentation():
    lines = PAGE.split("\n")
    assert demo_fences(PAGE)[1].body(lines) == ["kind: timeline", "prompt_lengths: [16, 32]"]


def test_without_fences_keeps_the_prose_and_drops_the_code():
    prose = without_fences(PAGE)
    assert "Prose before." in prose and "## Closing words" in prose and "- item" in prose
    assert "kind:" not in prose and "not a heading" not in prose and "```" not in prose and "~~~" not in prose


def test_demo_blocks_parity_and_reading_time_see_the_same_blocks():
    assert [block.kind for block in parse_blocks(PAGE, "page.md")] == ["recap", "timeline"]
    shape = page_shape(PAGE)
    assert shape.demo_kinds == ("recap", "timeline")
    assert shape.headings == 2  # `# not a heading` is code
    assert "kind" not in readable_text(PAGE) and "not a heading" not in readable_text(PAGE)
