"""The documentation site builds with warnings as errors, offline, and documents only public names."""

from __future__ import annotations

import importlib
import os
import re
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"

pytestmark = pytest.mark.sqlite_only("builds and checks the documentation site; no catalog involved")

# Loaded by the build's interpreter before mkdocs: any attempt to open a network connection fails the build,
# so a plugin that fetches (Material's social cards, privacy plugin, remote inventories) cannot slip in.
_NO_NETWORK = """
import socket

def _refuse(*args, **kwargs):
    raise OSError("the docs build must not use the network")

socket.socket.connect = _refuse
socket.socket.connect_ex = _refuse
socket.create_connection = _refuse
socket.getaddrinfo = _refuse
"""


def test_mkdocs_build_strict_offline(tmp_path: Path) -> None:
    guard = tmp_path / "guard"
    guard.mkdir()
    (guard / "sitecustomize.py").write_text(_NO_NETWORK)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(guard), str(ROOT), env.get("PYTHONPATH", "")])
    env["NO_MKDOCS_2_WARNING"] = "1"
    site = tmp_path / "site"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "mkdocs",
            "build",
            "--strict",
            "--quiet",
            "-f",
            str(ROOT / "mkdocs.yml"),
            "-d",
            str(site),
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr + done.stdout
    assert (site / "index.html").is_file()
    reference = (site / "reference" / "memory" / "index.html").read_text()
    assert 'id="langgraph_memory.Memory"' in reference
    # Docstrings of objects the reference does not render are not checked by the build: check their links here.
    documented = _inventory(site / "objects.inv")
    links = {
        ref
        for path in (ROOT / "langgraph_memory").rglob("*.py")
        for ref in re.findall(r"\]\[(langgraph_memory[\w.]*)\]", path.read_text())
    }
    assert links, "the docstrings link into the reference"
    assert not sorted(links - documented), "docstring links to names the reference does not document"


def _inventory(path: Path) -> set[str]:
    """The identifiers in a Sphinx-format objects.inv (four header lines, then zlib)."""
    header_end = 0
    data = path.read_bytes()
    for _ in range(4):
        header_end = data.index(b"\n", header_end) + 1
    return {line.split(" ", 1)[0] for line in zlib.decompress(data[header_end:]).decode().splitlines()}


def test_network_guard_refuses_a_connection(tmp_path: Path) -> None:
    """The guard the build runs under does refuse connections (else the build test proves nothing)."""
    guard = tmp_path / "guard"
    guard.mkdir()
    (guard / "sitecustomize.py").write_text(_NO_NETWORK)
    env = dict(os.environ, PYTHONPATH=str(guard))
    done = subprocess.run(
        [sys.executable, "-c", "import socket; socket.create_connection(('127.0.0.1', 9))"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0
    assert "must not use the network" in done.stderr


def _nav_pages(text: str) -> list[str]:
    return re.findall(r"([\w/-]+\.md)\s*$", text, flags=re.M)


def test_every_nav_page_exists_and_every_page_is_in_the_nav() -> None:
    nav = set(_nav_pages((ROOT / "mkdocs.yml").read_text()))
    pages = {p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md")}
    assert nav == pages


def test_no_plugin_that_fetches() -> None:
    config = (ROOT / "mkdocs.yml").read_text()
    for plugin in ("social", "privacy", "inventories", "import:"):
        assert plugin not in config


def _reference_targets() -> list[str]:
    return sorted(
        {m for page in (DOCS / "reference").glob("*.md") for m in re.findall(r"^::: ([\w.]+)", page.read_text(), re.M)}
    )


@pytest.mark.parametrize("target", _reference_targets())
def test_reference_names_only_public_paths(target: str) -> None:
    """The reference names what users import (the package root or a public subpackage), never a module that may move."""
    parts = target.split(".")
    assert not any(p.startswith("_") for p in parts), target
    if len(parts) == 2 and parts[1] == "errors":
        importlib.import_module(target)
        return
    module, name = ".".join(parts[:-1]), parts[-1]
    mod = importlib.import_module(module)
    assert name in getattr(mod, "__all__", ()), f"{name} is not in {module}.__all__"
    assert module == "langgraph_memory" or mod.__file__.endswith("__init__.py"), f"{module} is a module, not a package"


def test_the_root_surface_is_documented() -> None:
    import langgraph_memory

    documented = {t.rsplit(".", 1)[-1] for t in _reference_targets()}
    documented |= set(
        importlib.import_module("langgraph_memory.errors").__all__
    )  # the errors page documents the module
    missing = [n for n in langgraph_memory.__all__ if n not in documented]
    assert not missing, f"public names without a reference entry: {missing}"


def test_readme_is_short_and_links_into_the_docs() -> None:
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) < 200
    for title in ("## In a LangGraph app (`langgraph.json`)", "## Checkpoints on PostgreSQL", "## A memory browser"):
        assert title in readme
    links = re.findall(r"\]\((docs/[^)#]+)", readme)
    assert len(links) >= 15
    missing = [link for link in links if not (ROOT / link).is_file()]
    assert not missing, missing


def test_comments_give_reasons_not_planning_documents() -> None:
    """Code, tests, benchmarks and docs cite the reason for a choice, not a design note that is not in the repository."""
    cite = re.compile("se" + r"ed ?0\d|iss" + r"ue \d", re.I)  # split so this file does not match itself
    paths = [ROOT / "README.md", *(ROOT / "docs").rglob("*.md")]
    for folder in ("langgraph_memory", "tests", "examples", "bench"):
        paths += [p for p in (ROOT / folder).rglob("*") if p.suffix in (".py", ".md")]
    hits = [
        f"{p.relative_to(ROOT)}:{n}"
        for p in paths
        for n, line in enumerate(p.read_text(errors="replace").splitlines(), 1)
        if cite.search(line)
    ]
    assert not hits, hits
