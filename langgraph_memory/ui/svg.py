"""Plots drawn on the server as SVG: items over time, equity curves, version timelines, lineage graphs.

SVG made here needs no script and no network: the page is complete when it
arrives, a test can read it, and it prints. Each function returns markup
(``markupsafe.Markup``) with every text escaped.

    >>> str(bars([(20000, 3), (20001, 5)]))[:4]
    '<svg'
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Sequence
from datetime import UTC, date, datetime, timedelta
from typing import Any, NamedTuple

import networkx as nx
from markupsafe import Markup, escape

__all__ = ["bars", "lines", "Curve", "timeline", "lineage", "COLORS"]

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


def _open(width: float, height: float, title: str, cls: str = "plot") -> list[str]:
    """The opening of an SVG plot, titled for screen readers and on hover."""
    return [
        f'<svg class="{cls}" role="img" aria-label="{escape(title)}" viewBox="0 0 {width} {height}" '
        f'width="{width}" height="{height}" xmlns="http://www.w3.org/2000/svg"><title>{escape(title)}</title>'
    ]


def _empty(out: list[str], width: float, height: float, text: str) -> Markup:
    out.append(f'<text x="{width / 2}" y="{height / 2}" text-anchor="middle" class="muted">{escape(text)}</text></svg>')
    return Markup("".join(out))


def _y_grid(out: list[str], lo: float, hi: float, left: float, w: float, top: float, h: float) -> None:
    """Horizontal grid lines, each labelled with its value on the left."""
    for t in _ticks(lo, hi):
        y = top + h - h * (t - lo) / (hi - lo)
        out.append(
            f'<line x1="{left}" x2="{left + w}" y1="{y:.1f}" y2="{y:.1f}" class="grid"/>'
            f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end" class="tick">{_fmt(t)}</text>'
        )


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
    out = _open(width, height, title)
    if not per_day:
        return _empty(out, width, height, empty)
    first, last = per_day[0][0], per_day[-1][0]
    span = max(1, last - first + 1)
    top = max(n for _, n in per_day)
    bw = min(24.0, max(1.0, w / span * 0.9))
    _y_grid(out, 0, top, pad_l, w, pad_t, h)
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


class Curve(NamedTuple):
    """One equity curve: its name, its points (evenly spaced in time) and, when known, the period they span."""

    name: str
    points: Sequence[float]
    start: date | None = None
    end: date | None = None


def _date_ticks(first: date, last: date, n: int = 6) -> list[date]:
    """Dates for a time axis: month starts every 1, 2, 3, 6, 12... months, or days for a short span."""
    days = (last - first).days
    if days < 62:
        return [first + timedelta(days=round(days * i / (n - 1))) for i in range(n)] if days else [first]
    months = (last.year - first.year) * 12 + last.month - first.month
    step = next(m for m in (1, 2, 3, 6, 12, 24, 60, 120, 1200) if months / m <= n)
    # Month starts on a multiple of the step (quarters in Jan, Apr, Jul, Oct; years in January).
    k = first.year * 12 + first.month - 1 + (first.day > 1)
    k += -k % step
    out = []
    while (d := date(k // 12, k % 12 + 1, 1)) <= last:
        out.append(d)
        k += step
    return out or [first, last]


def lines(
    series: Sequence[Curve | tuple[Any, ...]], *, width: int = 720, height: int = 280, title: str = "equity curves"
) -> Markup:
    """Equity curves on one set of axes: y the equity (start = 1.0), x the date.

    Each curve's points are spread evenly over its ``start``..``end``; the
    axis runs from the first start to the last end. When a curve has no
    period, every curve is drawn over the share of its own period instead
    (start to end), and the axis says so.
    """
    curves = [Curve(*s) for s in series]
    pad_l, pad_b, pad_t, pad_r = 62, 42, 10, 150
    w, h = width - pad_l - pad_r, height - pad_b - pad_t
    out = _open(width, height, title)
    values = [v for c in curves for v in c.points if isinstance(v, (int, float)) and math.isfinite(v)]
    if not values:
        return _empty(out, width, height, "no curve recorded")
    lo, hi = min(values), max(values)
    if hi == lo:
        lo, hi = lo - 1, hi + 1
    _y_grid(out, lo, hi, pad_l, w, pad_t, h)
    out.append(
        f'<text class="axis-label" transform="translate(14 {pad_t + h / 2:.1f}) rotate(-90)" '
        'text-anchor="middle">equity (start = 1.0)</text>'
    )
    dated = all(c.start is not None and c.end is not None and c.end > c.start for c in curves)
    base = height - pad_b
    if dated:
        first = min(c.start for c in curves if c.start is not None)
        last = max(c.end for c in curves if c.end is not None)
        span = max(1, (last - first).days)

        def at(d: date) -> float:
            return pad_l + w * (d - first).days / span

        ticks = _date_ticks(first, last)
        fmt = "%Y" if len(ticks) > 1 and (ticks[1] - ticks[0]).days > 300 else "%Y-%m" if span > 62 else "%Y-%m-%d"
        for d in ticks:
            out.append(
                f'<line x1="{at(d):.1f}" x2="{at(d):.1f}" y1="{pad_t}" y2="{base}" class="grid"/>'
                f'<text x="{at(d):.1f}" y="{base + 16}" text-anchor="middle" class="tick date">{d:{fmt}}</text>'
            )
        axis = f"date ({first:%Y-%m-%d} to {last:%Y-%m-%d})"
    else:
        for share in (0, 0.25, 0.5, 0.75, 1):
            x = pad_l + w * share
            out.append(
                f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{pad_t}" y2="{base}" class="grid"/>'
                f'<text x="{x:.1f}" y="{base + 16}" text-anchor="middle" class="tick">{share:.0%}</text>'
            )
        axis = "share of each backtest's period (no dates recorded)"
    out.append(
        f'<line x1="{pad_l}" x2="{pad_l + w}" y1="{base}" y2="{base}" class="axis"/>'
        f'<text class="axis-label" x="{pad_l + w / 2:.1f}" y="{height - 6}" text-anchor="middle">{escape(axis)}</text>'
    )
    for i, c in enumerate(curves):
        pts = [v for v in c.points if isinstance(v, (int, float)) and math.isfinite(v)]
        if not pts:
            continue
        color = _SERIES[i % len(_SERIES)]
        n = max(1, len(pts) - 1)
        if dated and c.start is not None and c.end is not None:
            x0, x1 = at(c.start), at(c.end)
        else:
            x0, x1 = pad_l, pad_l + w
        path = " ".join(
            f"{'M' if j == 0 else 'L'}{x0 + (x1 - x0) * j / n:.1f},{pad_t + h - h * (v - lo) / (hi - lo):.1f}"
            for j, v in enumerate(pts)
        )
        period = f" ({c.start} to {c.end})" if c.start is not None else ""
        out.append(f'<path class="curve" d="{path}" stroke="{color}"><title>{escape(c.name + period)}</title></path>')
        ly = pad_t + 14 + 16 * i
        out.append(
            f'<rect x="{pad_l + w + 12}" y="{ly - 9}" width="10" height="10" fill="{color}"/>'
            f'<text x="{pad_l + w + 26}" y="{ly}" class="legend">{escape(c.name[:20])}</text>'
        )
    out.append("</svg>")
    return Markup("".join(out))


def timeline(points: Sequence[dict[str, Any]], *, width: int = 720, title: str = "versions") -> Markup:
    """Versions on a time axis: each point ``{"at": datetime, "label", "status", "href"}``, linked."""
    height, pad = 90, 40
    out = _open(width, height, title, "plot timeline")
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


#: The research kinds, in the order their layers run down the lineage graph.
KIND_LAYERS = {
    "research_findings": 0,
    "market_regimes": 0,
    "hypotheses": 1,
    "strategy_library": 2,
    "backtest_results": 3,
    "lessons_learned": 4,
}
_KIND_NAMES = {
    "research_findings": "finding",
    "market_regimes": "regime",
    "hypotheses": "hypothesis",
    "strategy_library": "strategy",
    "backtest_results": "backtest",
    "lessons_learned": "lesson",
    "tool_definitions": "tool",
    "memories": "memory",
}


def _layers(graph: Any) -> dict[str, int]:
    """Each node's layer: the Sugiyama layering (topological generations) of the lineage.

    The research loop closes on itself in kind (a lesson feeds the next
    hypothesis and version), so, as Sugiyama's cycle-removal step does,
    edges that run against the kind order (findings, hypotheses, strategy
    versions, backtests, lessons) or within one kind (v1 to v2) are left
    out of the layering and drawn as back or side edges. Items of other
    kinds keep every edge.
    """
    dag = nx.DiGraph()
    dag.add_nodes_from(graph.nodes)
    for p, c, _rel in graph.edges:
        if p == c or p not in graph.nodes or c not in graph.nodes:
            continue
        kp = KIND_LAYERS.get(graph.nodes[p].collection or "")
        kc = KIND_LAYERS.get(graph.nodes[c].collection or "")
        if kp is not None and kc is not None and kp >= kc:
            continue
        dag.add_edge(p, c)
    # A subgraph of the lineage, which refuses cycles: topological generations always exist.
    return {n: i for i, gen in enumerate(nx.topological_generations(dag)) for n in gen}


def _order(graph: Any, layer: dict[str, int], edges: list[tuple[str, str]]) -> list[list[str]]:
    """The nodes of each layer, left to right: a few barycenter sweeps down and up (Sugiyama's crossing step).

    Strategy versions keep their version order; other nodes move under the
    mean place of their neighbours in the layer above (down) or below (up).
    """
    layers: list[list[str]] = [[] for _ in range(max(layer.values(), default=-1) + 1)]
    for n in sorted(graph.nodes, key=lambda n: (graph.nodes[n].version or 0, graph.nodes[n].label, n)):
        layers[layer[n]].append(n)
    up: dict[str, list[str]] = {n: [] for n in graph.nodes}
    down: dict[str, list[str]] = {n: [] for n in graph.nodes}
    for p, c in edges:
        if layer[p] != layer[c]:
            hi, lo = (p, c) if layer[p] < layer[c] else (c, p)
            down[hi].append(lo)
            up[lo].append(hi)
    for _sweep in range(4):
        for rows, near in ((range(1, len(layers)), up), (range(len(layers) - 2, -1, -1), down)):
            for lvl in rows:
                # Places relative to each row's centre, as rows are drawn centred.
                place = {n: i - (len(ids) - 1) / 2 for ids in layers for i, n in enumerate(ids)}

                def key(n: str, near: dict[str, list[str]] = near, place: dict[str, float] = place) -> tuple[Any, ...]:
                    xs = [place[m] for m in near[n]]
                    v = graph.nodes[n].version
                    return (v is not None, v or 0, sum(xs) / len(xs) if xs else place[n])

                layers[lvl].sort(key=key)
    return layers


def lineage(
    graph: Any, href: Any, *, per_row: int = 5, box_width: int = 210, box_height: int = 58, gap: int = 34
) -> Markup:
    """A lineage graph in layers, top to bottom: findings, hypotheses, strategy versions, backtests, lessons.

    Layers come from `networkx.topological_generations` (see `_layers`), the
    order within a layer from barycenter sweeps (`_order`), as in a Sugiyama
    layout. A layer of more than ``per_row`` nodes wraps onto more rows, so
    the picture keeps its width (it scales to the page) and grows down. Each
    node links to ``href(node)`` and shows its kind, its version (strategy
    versions) and the start of its label; hovering shows the whole label.
    Each edge names its relation; edges that go back up (a lesson that led
    to a later hypothesis or version) are dashed, and versions of one
    strategy are joined by arcs above them.
    """
    nodes = graph.nodes
    layer = _layers(graph)
    rels: dict[tuple[str, str], list[str]] = {}
    for p, c, rel in graph.edges:
        if p in nodes and c in nodes and p != c and rel not in rels.setdefault((p, c), []):
            rels[(p, c)].append(rel)
    step_x, step_y = box_width + gap, box_height + 62
    pos: dict[str, tuple[float, float]] = {}
    row = 0
    for ids in _order(graph, layer, list(rels)):
        for start in range(0, len(ids), per_row):
            chunk = ids[start : start + per_row]
            left = 10 + (per_row - len(chunk)) * step_x / 2  # a short row is centred
            for i, n in enumerate(chunk):
                pos[n] = (left + i * step_x, 10 + row * step_y)
            row += 1
    width = 20 + per_row * step_x - gap
    height = 20 + max(1, row) * step_y - 62
    out = _open(width, height, "lineage graph", "plot lineage")
    out.append(
        '<defs><marker id="arrow" viewBox="0 0 8 8" refX="7" refY="4" markerWidth="7" markerHeight="7" '
        'orient="auto"><path d="M0,0 L8,4 L0,8 z" class="arrowhead"/></marker></defs>'
    )
    # Edges that go back up leave their source's top and reach their target's bottom at spread points,
    # so that their names, written just under the target, do not overlap.
    back = [(p, c) for p, c in rels if pos[p][1] > pos[c][1]]
    outs = {p: [e for e in back if e[0] == p] for p, _ in back}
    ins = {c: [e for e in back if e[1] == c] for _, c in back}
    labels = []
    for (p, c), names in rels.items():
        (x1, y1), (x2, y2) = pos[p], pos[c]
        rel = ", ".join(names)
        cls = "edge " + " ".join(f"edge-{escape(r)}" for r in names)
        if y1 < y2:  # down to a later layer: bottom of the parent to the top of the child
            ax, ay, bx, by = x1 + box_width / 2, y1 + box_height, x2 + box_width / 2, y2
            bend = (by - ay) / 2
            d = f"M{ax:.1f},{ay:.1f} C{ax:.1f},{ay + bend:.1f} {bx:.1f},{by - bend:.1f} {bx:.1f},{by:.1f}"
            mx, my = (ax + bx) / 2, (ay + by) / 2
        elif y1 > y2:  # back up
            cls += " back"
            i, k = outs[p].index((p, c)), len(outs[p])
            j, m = ins[c].index((p, c)), len(ins[c])
            ax, ay = x1 + box_width * (i + 1) / (k + 1), y1
            bx, by = x2 + box_width * (j + 1) / (m + 1), y2 + box_height
            bend = (ay - by) / 2
            d = f"M{ax:.1f},{ay:.1f} C{ax:.1f},{ay - bend:.1f} {bx:.1f},{by + bend:.1f} {bx:.1f},{by:.1f}"
            mx, my = bx, by + 14
        else:  # the same row (v1 to v2): an arc above the boxes
            right = x2 > x1
            ax = x1 + box_width * (0.8 if right else 0.2)
            bx = x2 + box_width * (0.2 if right else 0.8)
            d = f"M{ax:.1f},{y1:.1f} Q{(ax + bx) / 2:.1f},{y1 - 36:.1f} {bx:.1f},{y1:.1f}"
            mx, my = (ax + bx) / 2, y1 - 20
        out.append(f'<path class="{cls}" d="{d}" marker-end="url(#arrow)"><title>{escape(rel)}</title></path>')
        labels.append(f'<text class="rel" x="{mx:.1f}" y="{my + 3:.1f}" text-anchor="middle">{escape(rel)}</text>')
    chars = max(8, int((box_width - 16) / 6.2))  # 11 px text: about 6 px a character
    for n, nd in nodes.items():
        x, y = pos[n]
        color = COLORS.get(nd.collection or "", "#5d6d7e")
        cls = "node root" if n == graph.root else "node"
        if nd.lifecycle != "active":
            cls += f" {nd.lifecycle}"
        kind = _KIND_NAMES.get(nd.collection or "", nd.collection or "item")
        head = f"{kind} v{nd.version}" if nd.version is not None else kind
        if nd.lifecycle != "active":
            head += f" ({nd.lifecycle})"
        body = "".join(
            f'<text x="{x + 12:.1f}" y="{y + 32 + 14 * i:.1f}">{escape(line)}</text>'
            for i, line in enumerate(textwrap.wrap(nd.label, chars, max_lines=2, placeholder=" …"))
        )
        out.append(
            f'<a href="{escape(href(nd))}" class="{cls}" data-id="{escape(n)}">'
            f'<rect x="{x:.1f}" y="{y:.1f}" width="{box_width}" height="{box_height}" rx="4" stroke="{color}"/>'
            f'<rect x="{x:.1f}" y="{y:.1f}" width="5" height="{box_height}" fill="{color}"/>'
            f'<text class="head" x="{x + 12:.1f}" y="{y + 16:.1f}" fill="{color}">{escape(head)}</text>{body}'
            f"<title>{escape(head)} [{escape(nd.lifecycle)}, {escape(nd.storage)}]: {escape(nd.label)}</title></a>"
        )
    out.extend(labels)  # last, so no box hides a relation's name
    out.append("</svg>")
    return Markup("".join(out))
