"""Checked claims: words bound to the numbers they describe.

    {% claim sweep.tps_drop_pct < 10% %}TPS barely moves{% elif sweep.tps_drop_pct < 50% %}TPS falls by
    {{ sweep.tps_drop_pct }}{% endclaim %}

The build prints the first phrasing whose condition holds (then `{{ }}` figures are filled in as usual);
when none holds, the build stops naming the file, the line, each condition and its figures' values.

Qualitative words ("barely changes", "far below", "满负荷") are defined once, in docs/vocabulary.yml: each
word is bound to one predicate with one threshold, and a condition calls the predicate by name, like a
function (`barely_changes(sweep.decode_growth)`, `far_below(a, b)`, `not full_load(x)`). A phrasing that
uses a word must apply the word's predicate (under `not` for a negated use) to a figure of what it shows.

Modules: `syntax` (finding claims), `conditions` (the safe expression language), `vocabulary` (the words
and their predicates), `check` (evaluating a claim and its words), `resolve` (chapters, notes, strings
files), `sources` and `__main__` (`python -m hooks.claims`).
"""

from hooks.claims.resolve import printed_text, resolve_note, resolve_page, resolve_strings

__all__ = ["printed_text", "resolve_note", "resolve_page", "resolve_strings"]
