"""Finding claims in text: `{% claim COND %}…{% elif COND %}…{% endclaim %}`, outside code.

A claim lives inside one paragraph, table cell or list item: it may span lines, never a blank line.
Claims do not nest. What is inside inline code or fenced code is left as it is, like `{{ … }}`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from hooks.demos.figure_refs import line_of, prose_matches

_TAG = re.compile(r"(?P<code>(?P<ticks>`+).+?(?P=ticks))"
                  r"|\{%\s*(?P<tag>claim|elif|else|endclaim)\b(?P<condition>.*?)%\}", re.S)
_BLANK_LINE = re.compile(r"\n[ \t]*\n")

SYNTAX = ("{% claim CONDITION %}text{% endclaim %}, or with more phrasings: "
          "{% claim CONDITION %}text{% elif CONDITION %}other text{% endclaim %}")


@dataclass(frozen=True)
class Alternative:
    """One phrasing of a claim and the condition under which it is true."""

    condition: str
    text: str
    line: int  # of its {% claim %} or {% elif %} tag, 1-based, in the text searched


@dataclass
class Claim:
    """A claim's place in the text (offsets of the whole `{% claim %}…{% endclaim %}`) and its phrasings;
    `problem` says what is wrong with its markup, if anything (then it has no usable alternatives)."""

    start: int
    end: int
    line: int
    alternatives: list[Alternative] = field(default_factory=list)
    problem: str | None = None

    @property
    def excerpt(self) -> str:
        """The claim's first phrasing, whitespace folded, cut at about 60 characters."""
        text = " ".join((self.alternatives[0].text if self.alternatives else "").split())
        return text if len(text) <= 60 else text[:59].rstrip() + "…"


def find_claims(text: str) -> list[Claim]:
    """Every claim outside code, in order; malformed markup becomes a Claim with a `problem`."""
    claims: list[Claim] = []
    open_claim: Claim | None = None
    tags: list[re.Match[str]] = []  # the open claim's tags so far

    def close(end_match: re.Match[str]) -> None:
        assert open_claim is not None
        for tag, following in zip(tags, [*tags[1:], end_match], strict=True):
            open_claim.alternatives.append(Alternative(tag.group("condition").strip(),
                                                       text[tag.end():following.start()], line_of(text, tag.start())))
        open_claim.end = end_match.end()
        claims.append(open_claim)

    for match in prose_matches(_TAG, text):
        tag = match.group("tag")
        if tag is None:
            continue
        line = line_of(text, match.start())
        if open_claim is not None and _BLANK_LINE.search(text, open_claim.start, match.start()):
            claims.append(Claim(open_claim.start, open_claim.start, open_claim.line,
                                problem="this claim is not closed before its paragraph ends (a claim may span "
                                        "lines of one paragraph, table cell or list item, not a blank line)"))
            open_claim, tags = None, []
        if tag == "claim":
            if open_claim is not None:
                claims.append(Claim(match.start(), match.end(), line,
                                    problem=f"a claim inside the claim opened at line {open_claim.line}: claims "
                                            "do not nest (close the first with {% endclaim %})"))
                continue
            open_claim, tags = Claim(match.start(), match.end(), line), [match]
        elif open_claim is None:
            claims.append(Claim(match.start(), match.end(), line,
                                problem=f"{{% {tag} %}} without an open {{% claim %}}"))
        elif tag == "else":
            claims.append(Claim(match.start(), match.end(), line,
                                problem="a claim has no unconditional {% else %}: every phrasing states when it "
                                        "is true, write {% elif CONDITION %}"))
        elif tag == "elif":
            tags.append(match)
        else:
            if match.group("condition").strip():
                claims.append(Claim(match.start(), match.end(), line,
                                    problem="{% endclaim %} takes no condition"))
            close(match)
            open_claim, tags = None, []
    if open_claim is not None:
        claims.append(Claim(open_claim.start, open_claim.start, open_claim.line,
                            problem="this claim is never closed with {% endclaim %}"))
    for claim in claims:
        for alternative in claim.alternatives:
            if not alternative.condition:
                claim.problem = (f"a phrasing at line {alternative.line} has no condition: every phrasing states "
                                 "when it is true (there is no unconditional else)")
    return sorted(claims, key=lambda c: c.start)
