"""The memory browser's web application (Starlette): pages, actions, and the checks in front of them.

Pages are rendered on the server (Jinja2 templates, SVG plots) and run no
script; the only files the browser loads are the stylesheet and icon shipped
in ``langgraph_memory/ui/static``. Handlers that read memory are plain
functions, which Starlette runs in its thread pool, so a slow read never
blocks the event loop.
"""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Callable
from datetime import UTC, date, datetime
from typing import Any
from urllib.parse import quote, urlencode

from jinja2 import Environment, PackageLoader, select_autoescape
from rich import filesize
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.middleware.base import BaseHTTPMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from langgraph_memory.errors import (
    FilterError,
    InvalidArgumentError,
    LangGraphMemoryError,
    NamespaceError,
    NotFoundError,
    ValidationError,
)
from langgraph_memory.memory import Memory
from langgraph_memory.research.calls import parse_moment
from langgraph_memory.research.collections import (
    COLLECTIONS,
    GENERAL,
    collection_by_name,
    collection_for,
    preview,
)
from langgraph_memory.ui import svg
from langgraph_memory.ui.data import SEARCH_PAGE_SIZE, Browser, page_number
from langgraph_memory.ui.security import CSRF_COOKIE, TOKEN_COOKIE, Guard

__all__ = ["build_app"]

logger = logging.getLogger(__name__)

_SECURITY_HEADERS = {
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",
    "content-security-policy": "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'none'; "
    "frame-ancestors 'none'; form-action 'self'",
}

NAV = [
    ("/", "Overview"),
    ("/search", "Search"),
    ("/strategies", "Strategies"),
    ("/lessons", "Lessons"),
    ("/sessions", "Sessions"),
    ("/threads", "Threads"),
    ("/archive", "Archive"),
]


def _ns(text: str | None) -> tuple[str, ...]:
    return tuple(label for label in (text or "").split("/") if label)


def _when(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, (int, float)):
        value = datetime.fromtimestamp(value, tz=UTC)
    return value.strftime("%Y-%m-%d %H:%M")


def _date(text: Any) -> date | None:
    """A backtest's period bound (``2024-01-31`` or an ISO timestamp), or None when it is missing or not a date."""
    try:
        return date.fromisoformat(str(text)[:10]) if text else None
    except ValueError:
        return None


def item_href(key: str, namespace: tuple[str, ...] | list[str] | None, as_of: str | None = None) -> str:
    """The item page of ``key`` (in ``namespace``; as of the moment ``as_of``, when given)."""
    url = f"/item/{quote(key, safe='')}"
    query = {**({"ns": "/".join(namespace)} if namespace else {}), **({"as_of": as_of} if as_of else {})}
    return url + ("?" + urlencode(query) if query else "")


def _as_of(request: Request) -> tuple[str, datetime] | None:
    """The page's ``as_of`` parameter (an ISO date or date and time) and the moment it names, if it has one."""
    text = (request.query_params.get("as_of") or "").strip()
    return (text, parse_moment(text)) if text else None


def _current_at(versions: list[dict[str, Any]], at: datetime) -> str | None:
    """The ``valid_from`` of the version current at ``at`` (to mark it in the versions table), if one was."""
    return next(
        (
            r["valid_from"]
            for r in versions
            if datetime.fromisoformat(r["valid_from"]) <= at
            and (r["valid_to"] is None or datetime.fromisoformat(r["valid_to"]) > at)
        ),
        None,
    )


def _short(value: Any, n: int = 200) -> str:
    """A changed value, for the versions table: text as is, anything else as JSON; long ones cut."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= n else text[: n - 1] + "…"


def _environment() -> Environment:
    env = Environment(
        loader=PackageLoader("langgraph_memory.ui", "templates"),
        autoescape=select_autoescape(["html"]),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(
        when=_when,
        size=lambda n: "-" if n is None else filesize.decimal(n),
        preview=lambda value, n=140: preview(value, n),
        ns=lambda ns: "/".join(ns or ()),
        short=_short,
        # Versions often change within a minute: to the second.
        iso_when=lambda iso: datetime.fromisoformat(iso).strftime("%Y-%m-%d %H:%M:%S") if iso else "now",
        coll_of=lambda ns: collection_for(tuple(ns or ())).name,
        pretty=lambda v: json.dumps(v, indent=2, ensure_ascii=False, default=str),
        pct=lambda v: f"{v:.0%}" if isinstance(v, (int, float)) else "-",
        f2=lambda v: f"{v:.2f}" if isinstance(v, (int, float)) else "-",
        # Four decimals: scores that differ by their evidence should not look tied.
        num=lambda v: "-" if v is None else f"{v:.4f}",
    )
    env.globals.update(nav=NAV, item_href=item_href, colors=svg.COLORS)
    return env


class UI:
    """The routes of one memory browser."""

    def __init__(self, browser: Browser, guard: Guard) -> None:
        self.b = browser
        self.guard = guard
        self.env = _environment()

    # ------------------------------------------------------------ plumbing

    def render(self, request: Request, template: str, status: int = 200, **ctx: Any) -> HTMLResponse:
        cookie = request.cookies.get(CSRF_COOKIE) or request.state.new_csrf
        # A page read as of a moment links to items as of that moment too (a bad moment: the error page's links).
        as_of = (request.query_params.get("as_of") or "").strip() if template != "error.html" else ""
        html = self.env.get_template(template).render(
            request=request,
            path=request.url.path,
            writes=self.guard.allow_writes,
            csrf=self.guard.csrf_token(cookie),
            as_of=as_of,
            item_href=functools.partial(item_href, as_of=as_of or None),
            kept=[(k, v) for k, v in request.query_params.multi_items() if k not in ("as_of", "page", "done")],
            **ctx,
        )
        return HTMLResponse(html, status_code=status)

    def page(self, fn: Callable[[Request], Response]) -> Callable[[Request], Any]:
        """A read-only page: its handler runs in the thread pool; memory errors become error pages."""

        async def endpoint(request: Request) -> Response:
            try:
                return await run_in_threadpool(fn, request)
            except LangGraphMemoryError as exc:
                return self.error(request, exc)
            except Exception:  # a bug: logged with its traceback, and the user gets a page that says so
                logger.exception("the memory browser failed on %s", request.url.path)
                return self.render(
                    request,
                    "error.html",
                    status=500,
                    title="Internal error",
                    message="the server failed on this page; its log has the details",
                )

        return endpoint

    def error(self, request: Request, exc: LangGraphMemoryError) -> Response:
        status = (
            404
            if isinstance(exc, NotFoundError)
            else 400
            if isinstance(exc, (InvalidArgumentError, FilterError, ValidationError, NamespaceError))
            else 500
        )
        if status == 500:
            logger.warning("the memory browser could not serve %s: %s", request.url.path, exc)
        return self.render(request, "error.html", status=status, title=type(exc).__name__, message=str(exc))

    # --------------------------------------------------------------- pages

    def overview(self, request: Request) -> Response:
        ov = self.b.overview()
        plot = svg.bars(ov.aggregates.per_day) if ov.aggregates is not None else svg.bars([], empty="being computed")
        return self.render(request, "overview.html", title="Overview", ov=ov, plot=plot)

    def search(self, request: Request) -> Response:
        q = request.query_params
        query = q.get("q", "").strip()
        ns_text = q.get("ns", "").strip()
        collection = q.get("collection", "").strip()
        filter_text = q.get("filter", "").strip()
        include_retired = q.get("retired") == "1"
        page = page_number(q.get("page"))
        namespace = _ns(ns_text)
        if collection and not namespace:
            spec = collection_by_name(collection)
            namespace = (spec.label,) if spec.label else ()
        filt = None
        if filter_text:
            try:
                filt = json.loads(filter_text)
            except ValueError as exc:
                raise FilterError(f'the filter must be JSON, like {{"severity": "major"}}: {exc}') from None
            if not isinstance(filt, dict):
                raise FilterError('the filter must be a JSON object, like {"severity": "major"}')
        found = plan = None
        as_of = _as_of(request)
        if query or namespace or filt:
            how: dict[str, Any] = {
                "namespace": namespace,
                "filter": filt,
                "include_retired": include_retired,
                "page": page,
            }
            if as_of is not None:
                found = self.b.search_as_of(as_of[1], query or None, **how)
                plan = found.plan
            else:
                found = self.b.search(query or None, **how)
                plan = self.b.explain(query or None, namespace=namespace, filter=filt)
        args = {
            "q": query,
            "ns": ns_text,
            "collection": collection,
            "filter": filter_text,
            "retired": "1" if include_retired else "",
            **({"as_of": as_of[0]} if as_of else {}),
        }
        near = self.b.near_namespace(_ns(ns_text))
        return self.render(
            request,
            "search.html",
            title="Search",
            near=near,
            near_qs=urlencode({**args, "ns": "/".join(near)}) if near else "",
            found=found,
            plan=plan,
            args=args,
            page=page,
            size=SEARCH_PAGE_SIZE,
            collections=[s.name for s in (*COLLECTIONS.values(), GENERAL)],
            namespaces=self.b.namespaces()[:500],
            qs=lambda p: urlencode({**args, "page": p}),
        )

    def item(self, request: Request) -> Response:
        key = request.path_params["key"]
        ns = _ns(request.query_params.get("ns")) or None
        as_of = _as_of(request)
        try:
            view = self.b.item(key, ns)
        except NotFoundError:
            if as_of is None or ns is None:
                raise
            return self._past_item(request, key, ns, as_of[1])
        link = functools.partial(item_href, as_of=as_of[0] if as_of else None)
        graph = svg.lineage(view.graph, lambda n: link(n.id, n.namespace)) if view.graph else None
        strategy = view.item.value.get("name") if view.collection == "strategy_library" else None
        then = self.b.value_as_of(view.item.namespace, view.item.key, as_of[1]) if as_of else None
        return self.render(
            request,
            "item.html",
            title=f"Item {key}",
            v=view,
            graph=graph,
            strategy=strategy,
            message=request.query_params.get("done"),
            then=then,
            moment=as_of[1] if as_of else None,
            current_then=_current_at(view.versions, as_of[1]) if as_of else None,
        )

    def _past_item(self, request: Request, key: str, ns: tuple[str, ...], at: datetime) -> Response:
        """The page of an item no longer in memory, read as of ``at``: its value then and its versions."""
        versions = self.b.versions(ns, key)
        if not versions:
            raise NotFoundError(f"no item with key {key!r} in {'/'.join(ns)} was ever stored")
        return self.render(
            request,
            "item_past.html",
            title=f"Item {key}",
            key=key,
            namespace=ns,
            then=self.b.value_as_of(ns, key, at),
            moment=at,
            versions=versions,
            current_then=_current_at(versions, at),
        )

    def strategies(self, request: Request) -> Response:
        page = self.b.strategies(page_number(request.query_params.get("page")))
        return self.render(request, "strategies.html", title="Strategies", p=page)

    def strategy(self, request: Request) -> Response:
        view = self.b.strategy(request.path_params["name"])
        points = [
            {"at": v.created_at, "label": f"v{v.version}", "status": v.status or "gone", "href": f"#v{v.version}"}
            for v in view.versions
        ]
        curves = []
        for v in view.versions:
            for bt in v.backtests:
                pts = (bt.value.get("equity_curve") or {}).get("points") or []
                if pts:
                    passed = bt.value.get("passed")
                    name = f"v{v.version}" + ("" if passed is None else " pass" if passed else " fail")
                    curves.append(
                        svg.Curve(name, pts, _date(bt.value.get("period_start")), _date(bt.value.get("period_end")))
                    )
        return self.render(
            request,
            "strategy.html",
            title=f"Strategy {view.name}",
            s=view,
            timeline=svg.timeline(points, title=f"versions of {view.name}"),
            equity=svg.lines(curves[-8:], title=f"equity curves of {view.name}"),
            n_curves=len(curves),
        )

    def lessons(self, request: Request) -> Response:
        number = page_number(request.query_params.get("page"))
        as_of = _as_of(request)
        if as_of is not None:
            then = self.b.lessons_as_of(as_of[1], number)
            base = "/lessons?" + urlencode({"as_of": as_of[0]}) + "&"
            return self.render(request, "lessons.html", title="Lessons", p=then, n_open=None, base=base)
        page, n_open = self.b.lessons(number)
        return self.render(request, "lessons.html", title="Lessons", p=page, n_open=n_open, base="/lessons?")

    def sessions(self, request: Request) -> Response:
        page = self.b.sessions(page_number(request.query_params.get("page")))
        return self.render(request, "sessions.html", title="Sessions", p=page)

    def threads(self, request: Request) -> Response:
        page = self.b.threads(page_number(request.query_params.get("page")))
        return self.render(request, "threads.html", title="Threads", p=page)

    def archive(self, request: Request) -> Response:
        return self.render(
            request,
            "archive.html",
            title="Archive",
            runs=self.b.archive_runs(),
            files=self.b.archive_files(),
            message=request.query_params.get("done"),
        )

    def archive_file(self, request: Request) -> Response:
        name = request.path_params["name"]
        page = self.b.archive_contents(name, page_number(request.query_params.get("page")))
        return self.render(request, "archive_file.html", title=f"Archive {name}", name=name, p=page)

    # ------------------------------------------------------------- actions

    async def action(self, request: Request) -> Response:
        """POST /action/{what}: retire, reinstate, supersede, restore (with --allow-writes, same origin, CSRF)."""
        if not self.guard.allow_writes:
            return PlainTextResponse("this memory browser is read-only: start it with --allow-writes\n", 403)
        if not self.guard.same_origin(request):
            return PlainTextResponse("refused: the request did not come from a page of this server\n", 403)
        form = await request.form()
        if not self.guard.csrf_ok(request, str(form.get("csrf") or "")):
            return PlainTextResponse("refused: missing or wrong CSRF token; reload the page and try again\n", 403)
        what = request.path_params["what"]
        key = str(form.get("key") or "")
        ns = _ns(str(form.get("ns") or "")) or None
        reason = str(form.get("reason") or "").strip()
        try:
            if what == "retire":
                await run_in_threadpool(self.b.retire, key, ns, reason)
                done = "retired"
            elif what == "reinstate":
                await run_in_threadpool(self.b.reinstate, key, ns)
                done = "reinstated"
            elif what == "supersede":
                by = str(form.get("by") or "").strip()
                if not by:
                    raise InvalidArgumentError("supersede needs the id of the item that replaces this one")
                await run_in_threadpool(self.b.supersede, key, by, ns, reason)
                done = f"superseded by {by}"
            elif what == "restore":
                n = await run_in_threadpool(self.b.restore, [key])
                return RedirectResponse("/archive?" + urlencode({"done": f"restored {n} item(s) with key {key}"}), 303)
            else:
                return PlainTextResponse(f"unknown action {what!r}\n", 404)
        except LangGraphMemoryError as exc:
            return self.error(request, exc)
        target = item_href(key, ns)
        return RedirectResponse(target + ("&" if "?" in target else "?") + urlencode({"done": done}), 303)

    # ----------------------------------------------------------- middleware

    async def checked(self, request: Request, call_next: Callable[[Request], Any]) -> Response:
        """Every request: the Host and token checks, a CSRF cookie for a new browser, and the security headers."""
        guard = self.guard
        if not guard.host_ok(request):
            return PlainTextResponse("refused: unexpected Host header\n", 421)
        if guard.query_token_ok(request) and request.method == "GET":
            # The token came in the address: keep it in a cookie and drop it from the address bar.
            resp = RedirectResponse(request.url.path, 303)
            resp.set_cookie(TOKEN_COOKIE, guard.token or "", httponly=True, samesite="strict")
            return resp
        if not guard.token_ok(request):
            return PlainTextResponse(
                "missing or wrong token: open this server's address with ?token=...\n",
                401,
                headers={"www-authenticate": "Bearer"},
            )
        new_cookie = None if request.cookies.get(CSRF_COOKIE) else guard.new_csrf_cookie()
        request.state.new_csrf = new_cookie
        response: Response = await call_next(request)
        response.headers.update(_SECURITY_HEADERS)
        if new_cookie is not None:
            response.set_cookie(CSRF_COOKIE, new_cookie, httponly=True, samesite="strict")
        return response


def build_app(memory: Memory, *, allow_writes: bool = False, token: str | None = None, host: str = "127.0.0.1") -> Any:
    """The ASGI application browsing ``memory`` (serve it with uvicorn, or `langgraph_memory.ui.serve`).

    Example:
        >>> app = build_app(mem, allow_writes=False)
        >>> uvicorn.run(app, host="127.0.0.1", port=8766)  # serves until the process is stopped  # doctest: +SKIP
    """
    browser = Browser(memory)
    browser.refresh()  # the overview's aggregates take seconds on a large memory: start them now
    ui = UI(browser, Guard(token=token, allow_writes=allow_writes, host=host))
    routes = [
        Route("/", ui.page(ui.overview)),
        Route("/search", ui.page(ui.search)),
        Route("/item/{key:path}", ui.page(ui.item)),
        Route("/strategies", ui.page(ui.strategies)),
        Route("/strategies/{name:path}", ui.page(ui.strategy)),
        Route("/lessons", ui.page(ui.lessons)),
        Route("/sessions", ui.page(ui.sessions)),
        Route("/threads", ui.page(ui.threads)),
        Route("/archive", ui.page(ui.archive)),
        Route("/archive/{name:path}", ui.page(ui.archive_file)),
        Route("/action/{what}", ui.action, methods=["POST"]),
        Route("/healthz", lambda request: PlainTextResponse("ok\n")),
        Mount("/static", StaticFiles(packages=[("langgraph_memory.ui", "static")]), name="static"),
    ]
    return Starlette(routes=routes, middleware=[Middleware(BaseHTTPMiddleware, dispatch=ui.checked)])
