"""What every benchmark prints and writes the same way: a figure against its target, the table of checks, the
JSON record, the machine it ran on."""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path
from typing import Any


def spread(values: list[float]) -> dict[str, float]:
    """The median of several runs or rounds, and their min and max."""
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def check(name: str, figure: dict[str, float] | float, sense: str, target: float, note: str = "",
          spread: str = "rounds") -> dict[str, Any]:
    """One row of a benchmark's checks: a figure (one number, or the median, min and max of several runs or
    rounds) against its target, judged on its worst run; margin >= 1 means met."""
    value = figure["median"] if isinstance(figure, dict) else figure
    worst = (figure["min"] if sense == ">=" else figure["max"]) if isinstance(figure, dict) else value
    margin = (worst / target) if sense == ">=" else (target / worst if worst else float("inf"))
    spread_note = f"{spread} {figure['min']:.2f}–{figure['max']:.2f}" if isinstance(figure, dict) else ""
    return {"check": name, "measured": value, "target": f"{sense} {target:g}", "margin": margin,
            "met": margin >= 1, "note": "; ".join(part for part in (spread_note, note) if part)}


def table(rows: list[dict[str, Any]]) -> str:
    """Checks as text: measured, target, margin (>= 1 means met), and each row's note if it has one."""
    width = max(len("check"), *(len(r["check"]) for r in rows))
    lines = [f"{'check':{width}} {'measured':>10} {'target':>9} {'margin':>7}  met"]
    for r in rows:
        lines.append(f"{r['check']:{width}} {r['measured']:10.3f} {r['target']:>9} {r['margin']:7.2f}  "
                     f"{'yes' if r['met'] else 'NO ':3}  {r.get('note', '')}".rstrip())
    return "\n".join(lines)


def write_json(record: dict[str, Any], path: str | None) -> bool:
    """`--json PATH`: the full record as JSON into PATH (its folder made), or onto stdout for "-"; True when it went to
    stdout, in place of the tables."""
    if not path:
        return False
    text = json.dumps(record, indent=2, ensure_ascii=False, default=str) + "\n"
    if path == "-":
        sys.stdout.write(text)
        return True
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(text, encoding="utf-8")
    return False


def machine_line(m: dict[str, Any]) -> str:
    """The header every benchmark prints: what it ran on."""
    return f"{m['cpu']} · {m['cores']} cores · numpy {m['numpy']} ({m['blas']}) · {m['date']}"
