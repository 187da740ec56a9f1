"""The memory browser (``langgraph-memory ui``): a real server process, driven by a real Chromium.

The memory is made by the trading-research example (two runs, the real
model), then one market regime is retired and archived so the archive has
something to show. Each server is a ``langgraph-memory ui`` subprocess on a
free port; a test waits for its "listening on" line.

Browser tests need Debian's ``chromium`` and Playwright for Python (no
browser download): they are skipped when either is missing, and fail
instead under ``CI=true``. Screenshots go to ``<pytest tmp>/ui-screenshots``;
``LGM_UI_SCREENSHOTS=docs/img`` writes the ones the docs show (search, strategy,
lineage) there as well, as ``ui-<page>.png``.
"""

from __future__ import annotations

import http.client
import importlib.util
import os
import queue
import re
import shutil
import subprocess
import sys
import threading
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "trading_research.py"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
TOKEN = "a-token-of-more-than-16-characters"
#: The screenshots docs/ui.md and the README show (LGM_UI_SCREENSHOTS=docs/img refreshes them).
DOC_SHOTS = {"search", "strategy", "lineage"}

pytestmark = pytest.mark.slow


# ------------------------------------------------------------------ memory


@pytest.fixture(scope="module")
def research_dir(tmp_path_factory: pytest.TempPathFactory, real_embeddings: Any) -> Path:
    """A memory made by two runs of the trading-research example, with one archived (retired) regime."""
    spec = importlib.util.spec_from_file_location("trading_research_ui", EXAMPLE)
    example = importlib.util.module_from_spec(spec)
    sys.modules["trading_research_ui"] = example
    spec.loader.exec_module(example)
    data_dir = tmp_path_factory.mktemp("ui") / "memory"
    try:
        example.run(data_dir=data_dir, embeddings=real_embeddings)
        example.run(data_dir=data_dir, embeddings=real_embeddings)
    finally:
        sys.modules.pop("trading_research_ui", None)
    from langgraph_memory.memory import Memory

    with Memory.open(data_dir, embeddings=real_embeddings) as mem:
        regime = mem.store.search(("regimes",), limit=1)[0]
        mem.retire(regime.key, "superseded by a longer sample")
        report = mem.archiver.run()
        assert report.ok and report.total_archived >= 1
    return data_dir


class Server:
    """A ``langgraph-memory ui`` subprocess; ``url`` once it listens."""

    def __init__(self, data_dir: Path, *args: str, token_file: Path | None = None) -> None:
        cmd = [
            sys.executable,
            "-c",
            "import sys; from langgraph_memory.cli import main; sys.exit(main())",
            "--data-dir",
            str(data_dir),
            "ui",
            "--port",
            "0",
            *args,
        ]
        if token_file is not None:
            cmd += ["--token-file", str(token_file)]
        env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
        env.pop("LANGGRAPH_MEMORY_UI_TOKEN", None)
        self.proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, env=env)
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.log: list[str] = []
        threading.Thread(target=self._pump, daemon=True).start()
        self.url = self._wait_listening()

    def _pump(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.lines.put(line)
        self.lines.put(None)

    def _wait_listening(self) -> str:
        while True:  # until the server says where it listens, or exits (the pipe closes)
            line = self.lines.get()
            if line is None:
                raise AssertionError(f"the ui server exited ({self.proc.wait()}): {''.join(self.log)}")
            self.log.append(line)
            m = re.search(r"listening on (http://\S+?/)", line)
            if m:
                return m.group(1)

    @property
    def netloc(self) -> str:
        return urllib.parse.urlsplit(self.url).netloc

    def request(
        self, method: str, path: str, *, body: dict[str, str] | None = None, headers: dict[str, str] | None = None
    ) -> tuple[int, str]:
        conn = http.client.HTTPConnection(self.netloc, timeout=120)
        data = urllib.parse.urlencode(body) if body is not None else None
        hdrs = {"content-type": "application/x-www-form-urlencoded"} if body is not None else {}
        conn.request(method, path, body=data, headers={**hdrs, **(headers or {})})
        resp = conn.getresponse()
        text = resp.read().decode("utf-8", "replace")
        conn.close()
        return resp.status, text

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture
def start_server(research_dir: Path) -> Iterator[Any]:
    servers: list[Server] = []

    def start(*args: str, data_dir: Path | None = None, token_file: Path | None = None) -> Server:
        s = Server(data_dir or research_dir, *args, token_file=token_file)
        servers.append(s)
        return s

    yield start
    for s in servers:
        s.stop()


@pytest.fixture(scope="module")
def readonly(research_dir: Path) -> Iterator[Server]:
    s = Server(research_dir)
    yield s
    s.stop()


# ----------------------------------------------------------------- browser


def _browser_missing() -> str | None:
    if not Path(CHROMIUM).exists():
        return f"{CHROMIUM} is missing: apt-get install -y chromium chromium-driver"
    if importlib.util.find_spec("playwright") is None:
        return "Playwright for Python is missing: pip install playwright (never `playwright install`)"
    return None


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    missing = _browser_missing()
    if missing:
        if os.environ.get("CI") == "true":
            pytest.fail(f"browser tests must run in CI: {missing}")
        pytest.skip(missing)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


class Tab:
    """A page that records console errors and failed requests, and takes screenshots."""

    def __init__(self, browser: Any, shots: Path) -> None:
        self.page = browser.new_page(viewport={"width": 1280, "height": 900})
        self.page.set_default_timeout(180_000)  # the first search loads the embedding model
        self.errors: list[str] = []
        self.page.on("console", lambda m: self.errors.append(f"console: {m.text}") if m.type == "error" else None)
        self.page.on("pageerror", lambda e: self.errors.append(f"page error: {e}"))
        self.page.on("requestfailed", self._failed)
        self.page.on("response", lambda r: self.errors.append(f"HTTP {r.status}: {r.url}") if r.status >= 400 else None)
        self.shots = shots

    def _failed(self, request: Any) -> None:
        # A click that navigates cancels the old page's requests still in flight (on a loaded machine, often
        # its favicon): the browser's doing, not a failed response. Error statuses are caught by "response".
        if request.failure != "net::ERR_ABORTED":
            self.errors.append(f"request failed: {request.url} ({request.failure})")

    def open(self, url: str) -> Any:
        resp = self.page.goto(url)
        assert resp is not None and resp.status == 200, f"{url}: {resp.status if resp else 'no response'}"
        return resp

    def shot(self, name: str, selector: str | None = None) -> None:
        """A screenshot of the whole page, or of the element at ``selector``, as ``<name>.png``."""
        self.shots.mkdir(parents=True, exist_ok=True)
        if selector is None:
            self.page.screenshot(path=str(self.shots / f"{name}.png"), full_page=True)
        else:
            self.page.locator(selector).screenshot(path=str(self.shots / f"{name}.png"))
        extra = os.environ.get("LGM_UI_SCREENSHOTS")
        if extra and name in DOC_SHOTS:
            Path(extra).mkdir(parents=True, exist_ok=True)
            shutil.copy(self.shots / f"{name}.png", Path(extra) / f"ui-{name}.png")

    def svg_marks(self, selector: str) -> int:
        """How many drawn marks (rect, path, circle) the SVG under ``selector`` holds."""
        return int(self.page.eval_on_selector(selector, "el => el.querySelectorAll('rect, path, circle').length"))


@pytest.fixture
def tab(browser: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Tab]:
    t = Tab(browser, tmp_path_factory.getbasetemp() / "ui-screenshots")
    yield t
    t.page.close()


def test_every_page_renders_with_plots_and_no_console_error(readonly: Server, tab: Tab) -> None:
    base = readonly.url
    tab.open(base)
    while tab.page.locator("#computing").count():  # the aggregates are computed in the background at start
        tab.page.wait_for_timeout(200)
        tab.open(base)
    assert "strategy_library" in tab.page.inner_text("main")
    assert tab.svg_marks("#per-day svg") > 0
    tab.shot("overview")

    tab.open(base + "search?q=lookback+too+short+whipsaw&collection=lessons_learned")
    hits = tab.page.locator("tr.hit")
    assert hits.count() >= 1
    assert "cosine" in tab.page.inner_text("table.hits") and "hybrid" in tab.page.inner_text("p.plan")
    tab.shot("search")

    # a namespace one typo away from a collection's label: the page says which one was meant, and links to it
    tab.open(base + "search?q=lookback+too+short+whipsaw&ns=lesson")
    assert "did you mean" in tab.page.inner_text("#near-namespace")
    tab.page.locator("#near-namespace a").click()
    tab.page.wait_for_selector("tr.hit")
    assert tab.page.input_value("input[name=ns]") == "lessons" and tab.page.locator("#near-namespace").count() == 0

    tab.open(base + "strategies")
    tab.page.locator("a.strategy-link").first.click()
    tab.page.wait_for_selector("#equity svg")
    assert tab.page.locator("#equity svg path.curve").count() >= 3
    assert tab.page.locator("#timeline svg circle").count() >= 3
    assert "rejected" in tab.page.inner_text("main") and "confirmed" in tab.page.inner_text("main")
    # the equity curves run over the backtests' dates (the example's series starts in 2019)
    dates = tab.page.locator("#equity svg text.date").all_text_contents()
    assert len(dates) >= 3 and dates[0].startswith("20") and "equity (start = 1.0)" in tab.page.text_content("#equity")
    tab.shot("strategy")

    tab.page.locator("table.metrics a", has_text="v1").first.click()
    tab.page.wait_for_selector(".graph svg")
    graph = tab.page.locator(".graph svg")
    assert graph.locator("a.node").count() >= 13
    heads = graph.locator("a.node text.head").all_text_contents()
    assert {"strategy v1", "strategy v2", "strategy v3"} <= {h.split(" (")[0] for h in heads}, heads  # v3 (superseded)
    relations = graph.locator("text.rel")
    assert relations.count() >= 10 and relations.first.is_visible()
    assert "tests" in relations.all_text_contents()
    # the whole lineage is in view at 1280 px: nothing scrolls sideways, neither the graph nor the page
    widths = tab.page.evaluate(
        """() => { const g = document.querySelector('.graph'), d = document.documentElement;
                   return [g.scrollWidth, g.clientWidth, d.scrollWidth, d.clientWidth]; }"""
    )
    assert widths[0] <= widths[1] and widths[2] <= widths[3], widths
    box = graph.bounding_box()
    assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 1280
    tab.shot("item")
    tab.shot("lineage", ".graph")

    for path, name, text in [
        ("strategies", "strategies", "versions"),
        ("lessons", "lessons", "open"),
        ("sessions", "sessions", "Sessions"),
        ("threads", "threads", "trading-research:"),
        ("archive", "archive", "market_regimes"),
    ]:
        tab.open(base + path)
        assert text in tab.page.inner_text("main"), path
        tab.shot(name)
    tab.page.locator("main table a").first.click()
    tab.page.wait_for_selector("h1")
    assert "Archive file" in tab.page.inner_text("h1")
    tab.shot("archive-file")
    assert tab.errors == []


def test_search_hit_to_lineage_to_strategy(readonly: Server, tab: Tab) -> None:
    tab.open(readonly.url + "search?q=lookback+too+short+in+a+volatile+regime&collection=lessons_learned")
    tab.page.locator("a.hit-link").first.click()
    tab.page.wait_for_selector(".graph svg")
    # the lesson's lineage reaches back to the strategy version whose backtest taught it
    node = tab.page.locator(".graph svg a.node", has=tab.page.locator("rect[stroke='#16a085']")).first
    node.click()
    tab.page.wait_for_selector("a.strategy-link")
    assert "strategy_library" in tab.page.inner_text("main")
    tab.page.locator("a.strategy-link").first.click()
    tab.page.wait_for_selector("#equity svg")
    assert tab.page.inner_text("h1").startswith("Strategy ")
    assert tab.errors == []


def test_retire_in_the_browser_hides_the_item_from_search(start_server: Any, tab: Tab) -> None:
    server = start_server("--allow-writes")
    search = server.url + "search?q=lookback+too+short+whipsaw&collection=lessons_learned"
    tab.open(search)
    first = tab.page.locator("a.hit-link").first
    href = first.get_attribute("href")
    key = urllib.parse.unquote(href.split("/item/")[1].split("?")[0])
    first.click()
    tab.page.fill("form.action input[name=reason]", "the browser test retires it")
    tab.page.click("#retire")
    tab.page.wait_for_selector("p.done")
    assert "retired" in tab.page.inner_text("p.done")
    tab.shot("item-retired")
    tab.open(search)
    assert key not in tab.page.content()
    # ...and reinstating brings it back
    tab.open(server.url + href.lstrip("/"))
    tab.page.click("#reinstate")
    tab.page.wait_for_selector("p.done")
    tab.open(search)
    assert key in tab.page.content()
    assert tab.errors == []


def test_an_items_versions_and_the_memory_as_of_a_date(
    start_server: Any, tab: Tab, tmp_path: Path, real_embeddings: Any
) -> None:
    from datetime import UTC, datetime

    from langgraph_memory.memory import Memory

    data_dir = tmp_path / "memory"
    with Memory.open(data_dir, embeddings=real_embeddings) as mem:
        lesson = mem.store_lesson("stops set inside the daily range get hit by noise")
        before = datetime.now(UTC).isoformat()
        reworded = {
            **lesson.model_dump(mode="json"),
            "lesson": "stops outside the daily range cost less than they save",
        }
        mem.store.put(("lessons",), lesson.id, reworded)
    server = start_server(data_dir=data_dir)

    # The item's page: its versions, newest first, with the old and new wording.
    tab.open(server.url + f"item/{lesson.id}")
    rows = tab.page.locator("#versions tr.version")
    assert rows.count() == 2
    assert "stops set inside the daily range get hit by noise" in rows.nth(0).locator("del").inner_text()
    assert "stops outside the daily range" in rows.nth(0).locator("ins").inner_text()
    assert "created" in rows.nth(1).inner_text()
    tab.shot("item-versions", "#versions")

    # The header's date field: the memory as of a day before anything was stored.
    tab.page.fill("#as-of", "2000-01-01")
    tab.page.click("form.as-of button")
    tab.page.wait_for_selector("#as-of-banner")
    assert "as_of=2000-01-01" in tab.page.url
    assert "Not in memory then" in tab.page.inner_text("#value-then")

    # A search as of the moment before the rewording finds the old wording, and its link keeps the moment.
    query = urllib.parse.urlencode({"q": "stops hit by noise", "collection": "lessons_learned", "as_of": before})
    tab.open(server.url + "search?" + query)
    assert "stops set inside the daily range get hit by noise" in tab.page.inner_text("table.hits")
    tab.page.locator("a.hit-link").first.click()
    tab.page.wait_for_selector("#value-then")
    assert "stops set inside the daily range get hit by noise" in tab.page.inner_text("#value-then")
    assert "stops outside the daily range" in tab.page.inner_text("#value-now")
    assert tab.page.locator("#versions tr.version.then").count() == 1
    tab.shot("item-as-of")
    tab.page.click("#as-of-banner a")  # back to now
    tab.page.wait_for_selector("#versions")
    assert tab.page.locator("#as-of-banner").count() == 0
    assert tab.errors == []


# -------------------------------------------------------------- protection


def _csrf_and_cookie(server: Server, path: str = "/lessons") -> tuple[str, str]:
    conn = http.client.HTTPConnection(server.netloc, timeout=120)
    conn.request("GET", path)
    resp = conn.getresponse()
    html = resp.read().decode()
    conn.close()
    cookie = resp.getheader("set-cookie").split(";")[0]
    return cookie, html


def _a_lesson_key(server: Server) -> tuple[str, str]:
    cookie, html = _csrf_and_cookie(server)
    key = urllib.parse.unquote(re.search(r'href="/item/([^"?]+)\?ns=lessons"', html).group(1))
    status, page = server.request("GET", f"/item/{urllib.parse.quote(key)}?ns=lessons", headers={"cookie": cookie})
    token = re.search(r'name="csrf" value="([0-9a-f]+)"', page).group(1)
    return key, f"{cookie}|{token}"


def test_writes_without_protection_are_refused(start_server: Any, readonly: Server) -> None:
    # read-only (the default): refused even from its own page
    status, text = readonly.request(
        "POST", "/action/retire", body={"key": "x", "reason": "r"}, headers={"origin": f"http://{readonly.netloc}"}
    )
    assert status == 403 and "read-only" in text

    server = start_server("--allow-writes")
    key, both = _a_lesson_key(server)
    cookie, token = both.split("|")
    own = f"http://{server.netloc}"
    form = {"key": key, "ns": "lessons", "reason": "forged", "csrf": token}
    # no CSRF token, a wrong one, a token without its cookie
    for body, headers in [
        ({**form, "csrf": ""}, {"cookie": cookie, "origin": own}),
        ({**form, "csrf": "0" * 64}, {"cookie": cookie, "origin": own}),
        (form, {"origin": own}),
    ]:
        status, text = server.request("POST", "/action/retire", body=body, headers=headers)
        assert status == 403 and "CSRF" in text
    # another site's page posting the form (a cross-site request), and a request that names no origin
    for headers in [
        {"cookie": cookie, "origin": "http://evil.example"},
        {"cookie": cookie, "referer": "http://evil.example/page"},
        {"cookie": cookie},
    ]:
        status, text = server.request("POST", "/action/retire", body=form, headers=headers)
        assert status == 403 and "did not come from a page of this server" in text
    # a rebinding attacker's Host name
    status, _ = server.request("GET", "/", headers={"host": "evil.example"})
    assert status == 421
    # nothing above retired it: with everything right it goes through
    status, _ = server.request("POST", "/action/retire", body=form, headers={"cookie": cookie, "origin": own})
    assert status == 303
    status, page = server.request("GET", f"/item/{urllib.parse.quote(key)}?ns=lessons")
    assert "forged" in page
    status, _ = server.request("POST", "/action/reinstate", body={**form}, headers={"cookie": cookie, "origin": own})
    assert status == 303


def test_token_is_required_when_set(start_server: Any, tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    server = start_server("--allow-writes", token_file=token_file)
    assert server.request("GET", "/")[0] == 401
    assert server.request("GET", "/?token=wrong-token-wrong-token")[0] == 401
    status, _ = server.request(
        "POST", "/action/retire", body={"key": "x", "reason": "r"}, headers={"origin": f"http://{server.netloc}"}
    )
    assert status == 401
    assert server.request("GET", "/", headers={"authorization": f"Bearer {TOKEN}"})[0] == 200
    conn = http.client.HTTPConnection(server.netloc, timeout=120)
    conn.request("GET", f"/?token={TOKEN}")
    resp = conn.getresponse()
    resp.read()
    assert resp.status == 303 and resp.getheader("location") == "/"
    cookie = resp.getheader("set-cookie").split(";")[0]
    assert server.request("GET", "/lessons", headers={"cookie": cookie})[0] == 200


def test_beyond_loopback_needs_a_token(research_dir: Path, tmp_path: Path) -> None:
    from langgraph_memory.cli import main

    assert main(["--data-dir", str(research_dir), "ui", "--host", "0.0.0.0", "--port", "0"]) == 2
    short = tmp_path / "short"
    short.write_text("short\n")
    assert main(["--data-dir", str(research_dir), "ui", "--port", "0", "--token-file", str(short)]) == 2
