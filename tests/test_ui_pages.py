"""The memory browser without a browser: score parts, the lineage drawing, every page over the ASGI app."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding

from langgraph_memory.memory import Memory
from langgraph_memory.ui import svg
from langgraph_memory.ui.data import Browser, GraphNode, LineageGraph

SVG_NS = "{http://www.w3.org/2000/svg}"


@pytest.fixture
def mem(data_dir: Path):
    with Memory.open(data_dir, embeddings=DeterministicFakeEmbedding(size=16)) as m:
        yield m


def _research(mem: Memory) -> dict[str, str]:
    f = mem.store_research_finding("Momentum decays after earnings", source="technical", confidence=0.8)
    h = mem.store_hypothesis("20-day momentum survives costs", parent_id=f.id)
    s1 = mem.store_strategy("mom", "20-day momentum", parent_id=h.id, hypothesis_id=h.id)
    b1 = mem.store_backtest(s1.id, sharpe=0.4, max_drawdown=0.3, passed=False, equity_curve=[1, 1.1, 0.9, 0.95])
    lesson = mem.store_lesson("lookback too short: whipsaw", strategy_id=s1.id, backtest_id=b1.id)
    mem.update_hypothesis(h.id, status="rejected", add_evidence=[b1.id])
    s2 = mem.store_strategy("mom", "60-day momentum", parent_id=[s1.id, lesson.id], hypothesis_id=h.id)
    mem.store_backtest(s2.id, sharpe=1.3, max_drawdown=0.12, passed=True, equity_curve=[1, 1.05, 1.2, 1.3])
    return {"finding": f.id, "lesson": lesson.id, "s1": s1.id, "s2": s2.id, "hypothesis": h.id}


def test_search_explained_gives_the_parts_of_the_scores_search_ranks_by(mem: Memory) -> None:
    for i in range(30):
        mem.store.put(("memories", "u1"), f"k{i}", {"content": f"note {i} about momentum and whipsaw {i % 3}"})
    explained = mem.store.search_explained(("memories",), query="whipsaw 2 momentum", limit=10)
    plain = mem.store.search(("memories",), query="whipsaw 2 momentum", limit=10)  # before its reads count
    mem.store.flush_access()
    assert explained.ranking == "hybrid" and "exact" in str(explained.plan)
    assert [h.item.key for h in explained.hits] == [p.key for p in plain]
    for h, p in zip(explained.hits, plain, strict=True):
        parts = h.parts
        assert parts is not None and parts.final == pytest.approx(p.score, abs=1e-6)
        assert 0.0 <= parts.keyword <= 1.0 and parts.retention is not None
        weight = mem.store.ranking.keyword_weight
        assert parts.relevance == pytest.approx(1 - (1 - max(0.0, parts.cosine)) * (1 - weight * parts.keyword))
    assert max(h.parts.keyword for h in explained.hits) > 0.0  # the keyword side took part
    # looking is not using: search_explained records no access
    before = {it.key: it.access_count for it in mem.store.items.iter_items("memories")}
    mem.store.search_explained(("memories",), query="whipsaw", limit=5)
    mem.store.flush_access()
    assert before == {it.key: it.access_count for it in mem.store.items.iter_items("memories")}


def _boxes(tree: ET.Element) -> dict[str, tuple[float, float, float, float]]:
    """Each node's box (x, y, width, height), by item id."""
    out = {}
    for a in tree.findall(f"{SVG_NS}a"):
        rect = a.find(f"{SVG_NS}rect")
        out[a.get("data-id")] = tuple(float(rect.get(k)) for k in ("x", "y", "width", "height"))
    return out


def test_lineage_drawing_stays_readable_and_page_wide_at_200_nodes() -> None:
    nodes = {"root": GraphNode("root", "research_findings", ("research",), "the hub finding", "live", "active", 0)}
    edges = []
    for i in range(150):
        nodes[f"h{i}"] = GraphNode(f"h{i}", "hypotheses", ("hypotheses",), f"hypothesis {i} " * 5, "live", "active", 1)
        edges.append(("root", f"h{i}", "derived_from"))
    for i in range(49):  # a second level under some of them
        nodes[f"s{i}"] = GraphNode(
            f"s{i}", "strategy_library", ("strategies",), f"strategy {i}", "live", "retired" if i == 0 else "active", 2
        )
        edges.append((f"h{i}", f"s{i}", "derived_from"))
    graph = LineageGraph("root", nodes, edges)
    out = str(svg.lineage(graph, lambda n: f"/item/{n.id}"))
    tree = ET.fromstring(out)
    links = tree.findall(f"{SVG_NS}a")
    assert len(links) == 200 and {a.get("href") for a in links} == {f"/item/{n}" for n in nodes}
    boxes = list(_boxes(tree).values())
    for _x, _y, w, h in boxes:
        assert w >= 150 and h >= 40  # boxes keep their size; the picture grows down instead
    for i, (x1, y1, w1, h1) in enumerate(boxes):
        for x2, y2, _w2, _h2 in boxes[i + 1 :]:
            assert not (abs(x1 - x2) < w1 and abs(y1 - y2) < h1), "two nodes overlap"
    # wide layers wrap onto more rows: the picture stays about a page wide and grows down
    assert float(tree.get("width")) <= 1280 and float(tree.get("height")) >= 30 * 60
    assert len(tree.findall(f"{SVG_NS}path[@class]")) == len(edges)


def test_lineage_is_layered_by_kind_with_versions_relation_names_and_full_labels(mem: Memory) -> None:
    from starlette.testclient import TestClient

    from langgraph_memory.ui import build_app

    ids = _research(mem)
    s3 = mem.store_strategy("mom", "120-day momentum", parent_id=ids["s2"], hypothesis_id=ids["hypothesis"])
    client = TestClient(build_app(mem), base_url="http://127.0.0.1")
    page = client.get(f"/item/{ids['s1']}").text
    tree = ET.fromstring(re.search(r"<svg class=\"plot lineage\".*?</svg>", page, re.S).group(0))
    boxes = _boxes(tree)
    heads = {a.get("data-id"): a.find(f"{SVG_NS}text[@class='head']").text for a in tree.findall(f"{SVG_NS}a")}
    # strategy versions say which version they are
    assert heads[ids["s1"]] == "strategy v1" and heads[ids["s2"]] == "strategy v2" and heads[s3.id] == "strategy v3"
    # layers run down: finding, hypothesis, strategy versions, backtests, lesson
    y = {n: boxes[n][1] for n in boxes}
    backtests = [n for n, h in heads.items() if h == "backtest"]
    assert y[ids["finding"]] < y[ids["hypothesis"]] < y[ids["s1"]] == y[ids["s2"]] == y[s3.id]
    assert all(y[ids["s1"]] < y[b] < y[ids["lesson"]] for b in backtests) and len(backtests) == 2
    # versions in their order, left to right
    assert boxes[ids["s1"]][0] < boxes[ids["s2"]][0] < boxes[s3.id][0]
    # relation names are drawn on the edges, not only in tooltips
    drawn = {t.text for t in tree.findall(f"{SVG_NS}text[@class='rel']")}
    assert {"derived_from", "tests", "backtest_of", "learned_from"} <= {r for t in drawn for r in t.split(", ")}
    # the whole label on hover, however long
    long = mem.store_lesson("a lesson long enough to be cut in its box: " + "whipsaw " * 20, strategy_id=s3.id)
    page = client.get(f"/item/{long.id}").text
    label = Browser(mem).lineage_graph(long.id).nodes[long.id].label
    node = ET.fromstring(re.search(rf'<a href="[^"]+" class="node root" data-id="{long.id}">.*?</a>', page).group(0))
    shown = " ".join(t.text for t in node.findall("text")[1:])  # parsed alone: no SVG namespace
    assert len(shown) < len(label) and node.find("title").text.endswith(f": {label}")
    # and the drawing scales to the page instead of scrolling sideways
    assert 'viewBox="0 0 ' in page and "overflow: auto" not in client.get("/static/style.css").text.split(".graph")[1]


def test_equity_curves_have_a_date_axis_and_a_labelled_equity_axis(mem: Memory) -> None:
    from starlette.testclient import TestClient

    from langgraph_memory.ui import build_app

    s = mem.store_strategy("dated", "momentum with a known period")
    mem.store_backtest(
        s.id, sharpe=1.0, period_start="2021-03-01", period_end="2023-06-30", equity_curve=[1, 1.1, 1.05, 1.3]
    )
    page = TestClient(build_app(mem), base_url="http://127.0.0.1").get("/strategies/dated").text
    plot = ET.fromstring(re.search(r'<figure id="equity">(.*?)</figure>', page, re.S).group(1))
    dates = [t.text for t in plot.iter(f"{SVG_NS}text") if "date" in (t.get("class") or "")]
    assert len(dates) >= 3 and all(re.fullmatch(r"20\d\d(-\d\d)?", d) for d in dates), dates
    assert "2021" <= min(dates) and max(dates) <= "2023-06"
    labels = [t.text for t in plot.iter(f"{SVG_NS}text") if t.get("class") == "axis-label"]
    assert "equity (start = 1.0)" in labels and any("2021-03-01 to 2023-06-30" in t for t in labels)
    # the curve spans its period: from the axis' left end to its right end
    xs = [float(p.split(",")[0][1:]) for p in plot.find(f"{SVG_NS}path").get("d").split()]
    assert xs[0] == pytest.approx(62) and xs[-1] == pytest.approx(720 - 150)


def test_search_page_says_which_collection_a_namespace_typo_meant(mem: Memory) -> None:
    from starlette.testclient import TestClient

    from langgraph_memory.ui import build_app

    _research(mem)
    client = TestClient(build_app(mem), base_url="http://127.0.0.1")
    page = client.get("/search?q=whipsaw&ns=lesson").text
    hint = re.search(r'<p class="hint" id="near-namespace">(.*?)</p>', page, re.S)
    assert hint is not None and "did you mean" in hint.group(1)
    link = re.search(r'href="(/search\?[^"]+)"', hint.group(1)).group(1).replace("&amp;", "&")
    assert "ns=lessons" in link and "q=whipsaw" in link
    followed = client.get(link).text
    assert 'id="near-namespace"' not in followed and 'class="hit"' in followed
    assert 'id="near-namespace"' not in client.get("/search?q=whipsaw&ns=lessons").text


def test_the_browser_does_not_import_the_cli() -> None:
    import ast

    for path in (Path(svg.__file__).parent).glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                assert not (node.module or "").startswith("langgraph_memory.cli"), (path.name, node.module)


def test_plots_are_svg_with_marks() -> None:
    bars = ET.fromstring(str(svg.bars([(20000, 3), (20003, 5)])))
    assert len(bars.findall(f".//{SVG_NS}rect")) == 2
    lines = ET.fromstring(str(svg.lines([("v1", [1.0, 1.2, 0.9]), ("v2", [1.0, 1.1, 1.3])])))
    assert len(lines.findall(f".//{SVG_NS}path")) == 2
    assert "no curve" in str(svg.lines([]))
    text = str(svg.lines([("<script>", [1.0, 2.0])]))
    assert "<script>" not in text and "&lt;script&gt;" in text


def test_every_page_answers_in_process(mem: Memory) -> None:
    from starlette.testclient import TestClient

    from langgraph_memory.ui import build_app

    ids = _research(mem)
    client = TestClient(build_app(mem), base_url="http://127.0.0.1")
    for path in [
        "/",
        "/search",
        "/search?q=whipsaw&collection=lessons_learned",
        "/strategies",
        "/strategies/mom",
        "/lessons",
        "/sessions",
        "/threads",
        "/archive",
        f"/item/{ids['s2']}",
        f"/item/{ids['lesson']}?ns=lessons",
        "/static/style.css",
    ]:
        resp = client.get(path)
        assert resp.status_code == 200, (path, resp.text[:500])
    page = client.get("/strategies/mom").text
    assert page.count('class="curve"') == 2 and "rejected" in page
    item = client.get(f"/item/{ids['s2']}").text
    assert (
        len(re.findall(r'<a href="/item/[^"]+" class="node', item)) == 7
    )  # finding, hypothesis, s1, b1, lesson, s2, b2
    assert client.get("/item/nope").status_code == 404
    assert client.get("/search?q=x&filter=notjson").status_code == 400
    assert client.get("/lessons?page=-1").status_code == 400
    assert client.get("/strategies/unknown").status_code == 404
    # read-only: the pages offer no action, and a POST is refused
    assert "/action/" not in item
    assert (
        client.post("/action/retire", data={"key": ids["s2"]}, headers={"origin": "http://127.0.0.1"}).status_code
        == 403
    )


def test_actions_with_writes_allowed(mem: Memory) -> None:
    from starlette.testclient import TestClient

    from langgraph_memory.ui import build_app

    ids = _research(mem)
    client = TestClient(build_app(mem, allow_writes=True), base_url="http://127.0.0.1")
    page = client.get(f"/item/{ids['finding']}").text
    csrf = re.search(r'name="csrf" value="([0-9a-f]+)"', page).group(1)
    own = {"origin": "http://127.0.0.1"}

    def post(action: str, **form: str):
        return client.post(f"/action/{action}", data={"csrf": csrf, **form}, headers=own, follow_redirects=False)

    assert post("supersede", key=ids["s1"], by=ids["s2"], reason="longer lookback").status_code == 303
    assert mem.lifecycle.status(ids["s1"]).superseded_by == ids["s2"]
    assert "superseded" in client.get("/strategies/mom").text
    assert post("reinstate", key=ids["s1"]).status_code == 303
    assert mem.lifecycle.status(ids["s1"]) is None
    assert post("supersede", key=ids["s1"], by="").status_code == 400
    # retired, archived, then restored from the Archive page
    assert post("retire", key=ids["finding"], ns="research", reason="bad vendor data").status_code == 303
    assert mem.archiver.run().total_archived == 1
    archive = client.get("/archive").text
    name = re.search(r'href="/archive/([^"]+)"', archive).group(1)
    assert ids["finding"] in client.get(f"/archive/{name}").text
    resp = post("restore", key=ids["finding"])
    assert resp.status_code == 303 and "restored+1" in resp.headers["location"]
    assert mem.get(ids["finding"]) is not None


def test_item_page_shows_versions_and_the_browser_reads_as_of_a_date(mem: Memory) -> None:
    from datetime import UTC, datetime

    from starlette.testclient import TestClient

    from langgraph_memory.ui import build_app

    lesson = mem.store_lesson("tight stops get hit by noise")
    mem.store.put(("memories", "u1"), "pref", {"text": "prefers TypeScript"})
    before = datetime.now(UTC).isoformat()
    mem.store.put(("lessons",), lesson.id, {**lesson.model_dump(mode="json"), "lesson": "wide stops cost less"})
    mem.retire(lesson.id, "wrong sample")
    mem.store.delete(("memories", "u1"), "pref")
    client = TestClient(build_app(mem), base_url="http://127.0.0.1")

    page = client.get(f"/item/{lesson.id}").text
    rows = re.findall(r'<tr class="version[^"]*">(.*?)</tr>', page, re.S)
    assert len(rows) == 3  # newest first: retired, reworded, created
    assert "lifecycle" in rows[0] and "<del>active</del>" in rows[0] and "<ins>retired</ins>" in rows[0]
    assert "<del>tight stops get hit by noise</del>" in rows[1] and "<ins>wide stops cost less</ins>" in rows[1]
    assert "created" in rows[2]

    then = client.get(f"/item/{lesson.id}", params={"as_of": before})
    assert then.status_code == 200
    assert 'id="as-of-banner"' in then.text and before in then.text
    value_then = re.search(r'<pre class="value" id="value-then">(.*?)</pre>', then.text, re.S)
    assert value_then is not None and "tight stops get hit by noise" in value_then.group(1)
    assert 'class="version then"' in then.text  # the version current then is marked

    found = client.get("/search", params={"q": "tight stops get hit by noise", "collection": "lessons_learned"})
    assert lesson.id not in found.text  # retired now
    found_then = client.get(
        "/search", params={"q": "tight stops get hit by noise", "collection": "lessons_learned", "as_of": before}
    )
    assert lesson.id in found_then.text and "tight stops get hit by noise" in found_then.text
    # Links from a page read as of a moment keep reading as of it.
    assert f"/item/{lesson.id}?ns=lessons&amp;as_of=" in found_then.text
    assert client.get("/search", params={"q": "x", "as_of": "someday"}).status_code == 400
    nothing = client.get(f"/item/{lesson.id}", params={"as_of": "2000-01-01"}).text
    assert "Not in memory then" in nothing
    # An item deleted since: its page as of then shows its value then and its versions; without a moment, 404.
    gone = client.get("/item/pref", params={"ns": "memories/u1", "as_of": before})
    assert gone.status_code == 200 and 'id="not-live"' in gone.text
    assert "prefers TypeScript" in re.search(r'id="value-then">(.*?)</pre>', gone.text, re.S).group(1)
    assert "(delete)" in gone.text and 'class="version then"' in gone.text
    assert client.get("/item/pref", params={"ns": "memories/u1"}).status_code == 404
    assert client.get("/item/never", params={"ns": "memories/u1", "as_of": before}).status_code == 404
    lessons_then = client.get("/lessons", params={"as_of": before}).text
    assert "tight stops get hit by noise" in lessons_then and "wide stops cost less" not in lessons_then
    assert "wide stops cost less" in client.get("/lessons").text
    assert "No lessons yet" in client.get("/lessons", params={"as_of": "2000-01-01"}).text
