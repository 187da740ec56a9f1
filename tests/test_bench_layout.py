"""bench/ stays a set of scripts over shared modules: no import cycle, no import from tests/, no borrowed privates.

Read with ``ast``, nothing imported (under a second for all of bench/). A *shared*
module is one in ``bench/common/`` or whose file name starts with ``_``; every
other file is a *script*, run from the command line and imported by nobody.
Bench modules name each other in full (``bench.store._stores``): a bare
``import store_bench`` works only from the script's own folder, and loads a
second copy of a module that is also imported by its full name.
"""

from __future__ import annotations

import ast
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1] / "bench"


def _module_name(bench: Path, path: Path) -> str:
    parts = path.relative_to(bench.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_shared(module: str) -> bool:
    return module == "bench" or module.startswith("bench.common") or module.rsplit(".", 1)[-1].startswith("_")


def _imports(tree: ast.Module) -> list[tuple[str, list[str], int]]:
    """(module, names taken from it, line) for every absolute import, at any depth."""
    out: list[tuple[str, list[str], int]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.extend((a.name, [], node.lineno) for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.append((node.module, [a.name for a in node.names], node.lineno))
    return out


def layout_problems(bench: Path) -> list[str]:
    """Every way the bench folder ``bench`` breaks the rules in this module's docstring, one line each."""
    trees = {_module_name(bench, p): (p, ast.parse(p.read_text(), str(p))) for p in sorted(bench.rglob("*.py"))}
    problems: list[str] = []
    graph: dict[str, set[str]] = {m: set() for m in trees}
    for module, (path, tree) in trees.items():
        siblings = {p.stem for p in path.parent.glob("*.py")} - {path.stem}
        for target, names, line in _imports(tree):
            where = f"{module}:{line}"
            if target.split(".")[0] == "tests":
                problems.append(f"{where} imports {target}")
            if target.split(".")[0] in siblings:
                problems.append(f"{where} imports {target} by a bare name, not as bench.<area>.<module>")
                target = f"{module.rsplit('.', 1)[0]}.{target}"  # what it loads: still an edge of the graph
            folder = bench.parent.joinpath(*target.split("."))
            if target.split(".")[0] == "bench" and target not in trees and not folder.is_dir():
                problems.append(f"{where} imports {target}, which is not in bench/")
            # ``from bench.common import report`` takes the module bench.common.report
            modules = [f"{target}.{n}" for n in names if f"{target}.{n}" in trees]
            if target in trees:
                modules.append(target)
                problems += [f"{where} takes the private {target}.{n}" for n in names if n.startswith("_")]
            for imported in modules:
                if imported != module:
                    graph[module].add(imported)
                    if not _is_shared(imported):
                        problems.append(f"{where} imports the script {imported}")
        # A path built into tests/ (spec_from_file_location, a subprocess) is an import by another name.
        problems += [
            f"{module}:{node.lineno} names the tests folder"
            for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.strip("/") == "tests"
        ]
    done: set[str] = set()

    def visit(node: str, path: list[str]) -> None:
        for nxt in sorted(graph[node]):
            if nxt in path:
                problems.append("import cycle: " + " -> ".join([*path[path.index(nxt) :], nxt]))
            elif nxt not in done:
                visit(nxt, [*path, nxt])
        done.add(node)

    for start in sorted(graph):
        if start not in done:
            visit(start, [start])
    return problems


def test_bench_has_no_import_cycle_no_import_from_tests_and_no_script_used_as_a_library() -> None:
    problems = layout_problems(BENCH)
    assert problems == [], "\n".join(problems)


def test_the_layout_check_finds_each_kind_of_problem(tmp_path: Path) -> None:
    bench = tmp_path / "bench"
    for folder, files in {
        "common": {"report.py": "import json\n"},
        "store": {
            "a_bench.py": "from bench.store._shared import _private\nfrom bench.common import report\n",
            "_shared.py": "def f():\n    from bench.store import _other\n",
            "_other.py": "import bench.store._shared\n",
            "b_bench.py": "import a_bench\nfrom tests.helpers.postgres import pg_url\n",
            "c_bench.py": "from bench.store.a_bench import main\nhelper = ROOT / 'tests' / 'helpers' / 'x.py'\n",
            "d_bench.py": "from bench._common import machine\n",
        },
    }.items():
        (bench / folder).mkdir(parents=True)
        for name, text in files.items():
            (bench / folder / name).write_text(text)
    assert sorted(layout_problems(bench)) == [
        "bench.store.a_bench:1 takes the private bench.store._shared._private",
        "bench.store.b_bench:1 imports a_bench by a bare name, not as bench.<area>.<module>",
        "bench.store.b_bench:1 imports the script bench.store.a_bench",
        "bench.store.b_bench:2 imports tests.helpers.postgres",
        "bench.store.c_bench:1 imports the script bench.store.a_bench",
        "bench.store.c_bench:2 names the tests folder",
        "bench.store.d_bench:1 imports bench._common, which is not in bench/",
        "import cycle: bench.store._other -> bench.store._shared -> bench.store._other",
    ]
