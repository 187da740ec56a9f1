"""Plots drawn on the server as SVG: items over time, equity curves, version timelines, lineage graphs.

SVG made here needs no script and no network: the page is complete when it
arrives, a test can read it, and it prints. Each function returns markup
(``markupsafe.Markup``) with every text escaped.

    >>> str(bars([(20000, 3), (20001, 5)]))[:4]
    '<svg'
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from markupsafe import Markup, escape

__all__ = ["bars", "lines", "timeline", "lineage", "COLORS"]

#: A color per collection (the lineage graph, the timeline, the legend).
COLORS = {
    "research_findings": "#2b7bb9",
    "hypotheses": "#8e44ad",
    "strategy_library": "#16a085",
    "backtest_results": "#d35400",
    "lessons_learned": "#c0392b",
    "market_regimes": "#7f8c8d",
    "tool_definitions": "#2c3e50",
    "memories": "#5d6d7e",
}
_SERIES = ["#2b7bb9", "#d35400", "#16a085", "#8e44ad", "#c0392b", "#b7950b", "#2c3e50", "#e84393"]


def _fmt(v: float) -> str:
    if abs(v) >= 1000:
        return f"{v:,.0f}"
    if abs(v) >= 10:
        return f"{v:.0f}"
    return f"{v:.2f}".rstrip("0").rstrip(".") if v else "0"


def _ticks(lo: float, hi: float, n: int = 4) -> list[float]:
    if hi <= lo:
        return [lo]
    step = 10 ** math.floor(math.log10((hi - lo) / n))
    for m in (1, 2, 5, 10):
        if (hi - lo) / (step * m) <= n:
            step *= m
            break
    start = math.ceil(lo / step) * step
    return [start + i * step for i in range(int((hi - start) / step) + 1)]


def _day(d: int) -> str:
    return datetime.fromtimestamp(d * 86400, tz=UTC).strftime("%Y-%m-%d")


def bars(
    per_day: Sequence[tuple[int, int]],
    *,
    width: int = 720,
    height: int = 180,
    title: str = "items added per day",
    empty: str = "no items yet",
) -> Markup:
    """Items added per day (``(day, count)``, day = epoch days), as bars on a continuous day axis."""
    pad_l, pad_b, pad_t = 48, 28, 10
    w, h = width - pad_l - 10, height - pad_b - pad_t
    out = [
        f'<svg class="plot" role="img" aria-label="{escape(title)}" viewBox="0 0 {width} {height}" '
        f'width="{width}" height="{height}" xmlns="http://www.w3.org/2000/svg"><title>{escape(title)}</title>'
    ]
    if not per_day:
        out.append(
            f'<text x="{width / 2}" y="{height / 2}" text-anchor="middle" class="muted">{escape(empty)}</text></svg>'
        )
        return Markup("".join(out))
    first, last = per_day[0][0], per_day[-1][0]
    span = max(1, last - first + 1)
    top = max(n for _, n in per_day)
    bw = min(24.0, max(1.0, w / span * 0.9))
    for t in _ticks(0, top):
        y = pad_t + h - h * t / top
        out.append(
            f'<line x1="{pad_l}" x2="{pad_l + w}" y1="{y:.1f}" y2="{y:.1f}" class="grid"/>'
            f'<text x="{pad_l - 6}" y="{y + 4:.1f}" text-anchor="end" class="tick">{_fmt(t)}</text>'
        )
    for d, n in per_day:
        x = pad_l + w * (d - first) / span
        bh = h * n / top
        out.append(
            f'<rect class="bar" x="{x:.1f}" y="{pad_t + h - bh:.1f}" width="{bw:.1f}" height="{bh:.1f}">'
            f"<title>{_day(d)}: {n}</title></rect>"
        )
    out.append(f'<text x="{pad_l}" y="{height - 8}" class="tick">{_day(first)}</text>')
    if last != first:
        out.append(f'<text x="{pad_l + w}" y="{height - 8}" text-anchor="end" class="tick">{_day(last)}</text>')
    out.append("</svg>")
    return Markup("".join(out))


def lines(
    series: Sequence[tuple[str, Sequence[float]]], *, width: int = 720, height: int = 260, title: str = "equity curves"
) -> Markup:
    """Several curves on one set of axes (x: the point's position, scaled to each curve's length)."""
    pad_l, pad_b, pad_t, pad_r = 52, 24, 10, 150
    w, h = width - pad_l - pad_r, height - pad_b - pad_t
    out = [
        f'<svg class="plot" role="img" aria-label="{escape(title)}" viewBox="0 0 {width} {height}" '
        f'width="{width}" height="{height}" xmlns="http://www.w3.org/2000/svg"><title>{escape(title)}</title>'
    ]
    values = [v for _, pts in series for v in pts if isinstance(v, (int, float)) and math.isfinite(v)]
    if not values:
        out.append(
            f'<text x="{width / 2}" y="{height / 2}" text-anchor="middle" class="muted">no curve recorded</text></svg>'
        )
        return Markup("".join(out))
    lo, hi = min(values), max(values)
    if hi == lo:
        lo, hi = lo - 1, hi + 1
    for t in _ticks(lo, hi):
        y = pad_t + h - h * (t - lo) / (hi - lo)
        out.append(
            f'<line x1="{pad_l}" x2="{pad_l + w}" y1="{y:.1f}" y2="{y:.1f}" class="grid"/>'
            f'<text x="{pad_l - 6}" y="{y + 4:.1f}" text-anchor="end" class="tick">{_fmt(t)}</text>'
        )
    for i, (name, pts) in enumerate(series):
        pts = [v for v in pts if isinstance(v, (int, float)) and math.isfinite(v)]
        if not pts:
            continue
        color = _SERIES[i % len(_SERIES)]
        n = max(1, len(pts) - 1)
        path = " ".join(
            f"{'M' if j == 0 else 'L'}{pad_l + w * j / n:.1f},{pad_t + h - h * (v - lo) / (hi - lo):.1f}"
            for j, v in enumerate(pts)
        )
        out.append(f'<path class="curve" d="{path}" stroke="{color}"><title>{escape(name)}</title></path>')
        ly = pad_t + 14 + 16 * i
        out.append(
            f'<rect x="{pad_l + w + 12}" y="{ly - 9}" width="10" height="10" fill="{color}"/>'
            f'<text x="{pad_l + w + 26}" y="{ly}" class="legend">{escape(name[:20])}</text>'
        )
    out.append("</svg>")
    return Markup("".join(out))


def timeline(points: Sequence[dict[str, Any]], *, width: int = 720, title: str = "versions") -> Markup:
    """Versions on a time axis: each point ``{"at": datetime, "label", "status", "href"}``, linked."""
    height, pad = 90, 40
    out = [
        f'<svg class="plot timeline" role="img" aria-label="{escape(title)}" viewBox="0 0 {width} {height}" '
        f'width="{width}" height="{height}" xmlns="http://www.w3.org/2000/svg"><title>{escape(title)}</title>'
    ]
    if not points:
        out.append("</svg>")
        return Markup("".join(out))
    t0 = min(p["at"].timestamp() for p in points)
    t1 = max(p["at"].timestamp() for p in points)
    span = (t1 - t0) or 1.0
    y = 40
    out.append(f'<line x1="{pad}" x2="{width - pad}" y1="{y}" y2="{y}" class="axis"/>')
    # Versions made seconds apart would overlap on a time axis: keep at least 28 px between them, in order.
    xs: list[float] = []
    for p in sorted(points, key=lambda p: p["at"]):
        x = pad + (width - 2 * pad) * (p["at"].timestamp() - t0) / span
        if xs and x < xs[-1] + 28:
            x = xs[-1] + 28
        xs.append(x)
    scale = min(1.0, (width - 2 * pad) / max(1.0, xs[-1] - pad)) if xs else 1.0
    for p, x in zip(sorted(points, key=lambda p: p["at"]), xs, strict=True):
        x = pad + (x - pad) * scale
        status = str(p.get("status") or "")
        out.append(
            f'<a href="{escape(p["href"])}"><circle cx="{x:.1f}" cy="{y}" r="8" class="st-{escape(status)}">'
            f"<title>{escape(p['label'])} {escape(status)} {p['at']:%Y-%m-%d %H:%M}</title></circle>"
            f'<text x="{x:.1f}" y="{y - 14}" text-anchor="middle" class="tick">{escape(p["label"])}</text></a>'
        )
    out.append(f'<text x="{pad}" y="{height - 12}" class="tick">{points[0]["at"]:%Y-%m-%d %H:%M}</text>')
    out.append("</svg>")
    return Markup("".join(out))


def lineage(graph: Any, href: Any, *, col_width: int = 260, row_height: int = 30) -> Markup:
    """A lineage graph, left (oldest ancestors) to right (descendants); each node links to ``href(node)``.

    Nodes sit in columns by their longest path from a root, each level with
    its parents where the row is free, so chains run straight and a node's
    children stack beside it; a column of 100 nodes stays readable by
    growing the picture, not by shrinking text.
    """
    nodes = graph.nodes
    parents: dict[str, list[str]] = {n: [] for n in nodes}
    children: dict[str, list[str]] = {n: [] for n in nodes}
    for p, c, _rel in graph.edges:
        if p in nodes and c in nodes and p != c:
            parents[c].append(p)
            children[p].append(c)
    # Longest-path layering (Kahn's order); a node on a cycle (never in lineage) falls back to its depth.
    layer: dict[str, int] = {}
    indeg = {n: len(set(ps)) for n, ps in parents.items()}
    queue = sorted(n for n, d in indeg.items() if d == 0)
    while queue:
        n = queue.pop(0)
        layer.setdefault(n, 0)
        for c in dict.fromkeys(children[n]):
            layer[c] = max(layer.get(c, 0), layer[n] + 1)
            indeg[c] -= 1
            if indeg[c] == 0:
                queue.append(c)
    base = min((nd.depth for nd in nodes.values()), default=0)
    for n, nd in nodes.items():
        layer.setdefault(n, nd.depth - base)
    # Depth-first order from the roots (children in the order they were linked), so a node's
    # descendants stay next to it.
    order: dict[str, int] = {}
    roots = [n for n in nodes if not parents[n]] or sorted(nodes)
    for r in sorted(roots, key=lambda n: (layer[n], nodes[n].collection or "", n)):
        stack = [r]
        while stack:
            n = stack.pop()
            if n in order:
                continue
            order[n] = len(order)
            stack.extend(reversed(children[n]))
    for n in nodes:
        order.setdefault(n, len(order))
    columns: dict[int, list[str]] = {}
    for n in sorted(nodes, key=lambda n: order[n]):
        columns.setdefault(layer[n], []).append(n)
    # Each node goes level with its parents (their mean row) or, when that row is taken, just below:
    # chains run straight, and a parent's children stack beside it.
    pos: dict[str, tuple[int, int]] = {}
    for col in sorted(columns):
        ids = columns[col]
        want = {
            n: (
                sum(pos[p][1] for p in parents[n] if p in pos) / max(1, sum(p in pos for p in parents[n]))
                if any(p in pos for p in parents[n])
                else -1.0
            )
            for n in ids
        }
        if col > 0:
            ids.sort(key=lambda n: (want[n], order[n]))
        row = -1
        for n in ids:
            row = max(row + 1, int(round(want[n]))) if want[n] >= 0 else row + 1
            pos[n] = (col, row)
    n_cols = max(columns) + 1 if columns else 1
    n_rows = max((r for _c, r in pos.values()), default=0) + 1
    box_w, box_h = col_width - 50, row_height - 8
    width, height = n_cols * col_width + 20, n_rows * row_height + 20

    def xy(n: str) -> tuple[float, float]:
        c, r = pos[n]
        return 10 + c * col_width, 10 + r * row_height

    out = [
        f'<svg class="plot lineage" role="img" aria-label="lineage graph" viewBox="0 0 {width} {height}" '
        f'width="{width}" height="{height}" xmlns="http://www.w3.org/2000/svg"><title>lineage</title>'
    ]
    for p, c, rel in graph.edges:
        if p not in pos or c not in pos:
            continue
        x1, y1 = xy(p)
        x2, y2 = xy(c)
        x1 += box_w
        y1 += box_h / 2
        y2 += box_h / 2
        mid = (x1 + x2) / 2
        out.append(
            f'<path class="edge edge-{escape(rel)}" d="M{x1:.1f},{y1:.1f} C{mid:.1f},{y1:.1f} {mid:.1f},{y2:.1f} '
            f'{x2:.1f},{y2:.1f}"><title>{escape(rel)}</title></path>'
        )
    for n, nd in nodes.items():
        x, y = xy(n)
        color = COLORS.get(nd.collection or "", "#5d6d7e")
        cls = "node root" if n == graph.root else "node"
        if nd.lifecycle != "active":
            cls += f" {nd.lifecycle}"
        text = nd.label if len(nd.label) <= 34 else nd.label[:33] + "…"
        out.append(
            f'<a href="{escape(href(nd))}" class="{cls}" data-id="{escape(n)}">'
            f'<rect x="{x:.1f}" y="{y:.1f}" width="{box_w}" height="{box_h}" rx="4" stroke="{color}"/>'
            f'<rect x="{x:.1f}" y="{y:.1f}" width="5" height="{box_h}" fill="{color}"/>'
            f'<text x="{x + 10:.1f}" y="{y + box_h / 2 + 4:.1f}">{escape(text)}</text>'
            f"<title>{escape(nd.collection or '?')} [{escape(nd.lifecycle)}, {escape(nd.storage)}]: {escape(nd.label)}</title></a>"
        )
    out.append("</svg>")
    return Markup("".join(out))
