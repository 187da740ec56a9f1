"""What an install gives a user: the distribution's extras and the package's type hints (PEP 561)."""

from __future__ import annotations

import importlib.metadata
import importlib.resources
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def test_the_installed_distribution_offers_the_extras_and_needs_no_extra_for_the_mcp_server() -> None:
    meta = importlib.metadata.metadata(PROJECT["name"])  # installed under the name pyproject.toml gives
    assert {"langmem", "langchain", "postgres", "dev"} <= set(meta.get_all("Provides-Extra") or [])
    requires = meta.get_all("Requires-Dist") or []
    assert any(r.startswith("langmem") and 'extra == "langmem"' in r for r in requires)
    assert any(r.startswith("langchain") and 'extra == "langchain"' in r for r in requires)
    assert any(r.startswith("psycopg") and 'extra == "postgres"' in r for r in requires)
    assert any(
        r.startswith("mcp") and "extra ==" not in r for r in requires
    )  # `langgraph-memory mcp` works as installed


def test_the_package_ships_its_type_hints() -> None:
    assert importlib.resources.files("langgraph_memory").joinpath("py.typed").is_file()
    # The wheel carries it: setuptools copies only the package data it is told of.
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert "py.typed" in setuptools["package-data"]["langgraph_memory"]
