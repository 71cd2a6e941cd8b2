"""Checked claims: words bound to the numbers they describe.

    {% claim sweep.tps_drop_pct < 10% %}TPS barely moves{% elif sweep.tps_drop_pct < 50% %}TPS falls by
    {{ sweep.tps_drop_pct }}{% endclaim %}

The build prints the first phrasing whose condition holds (then `{{ }}` figures are filled in as usual);
when none holds, the build stops naming the file, the line, each condition and its figures' values.
Modules: `syntax` (finding claims), `conditions` (the safe expression language), `check` (evaluating a
claim), `resolve` (chapters, notes, strings files), `sources` and `__main__` (`python -m hooks.claims`).
"""

from hooks.claims.resolve import resolve_note, resolve_page, resolve_strings

__all__ = ["resolve_note", "resolve_page", "resolve_strings"]
