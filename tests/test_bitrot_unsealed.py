"""Bit rot in an index a crash left unsealed: never loaded in-process when damaged, never a crash.

After an unclean shutdown an index of more than ``REBUILD_MAX`` vectors is
probed in a subprocess, and the store opens it in-process when the probe
passes. The probe's sample queries walk only part of the HNSW graph, so a
neighbour id that bit rot sent out of range elsewhere passed, and hnswlib
then followed it in the user's process (SIGSEGV). The probe now checks the
structure of the HNSW files whole first (`langgraph_memory.index._hnsw_check`).

The children run with ``REBUILD_MAX`` 0, so that a 3,000-vector index takes
the path of a 25,000+ one; ``bench/faults/crash_bench.py --bitrot N --bitrot-unsealed``
runs the same above 25,000 vectors.
"""

from __future__ import annotations

import os
import random
import shutil
from pathlib import Path

import pytest

from bench.common.bitrot import build, flip_bits, flip_neighbour_ids, run_child, segment_of
from langgraph_memory.index._hnsw_check import check_folder, check_segment

DIMS = 16
N = 3000
# The children open the data directory by its path, so with its own SQLite catalog (tests/test_bitrot.py
# waits for the same on PostgreSQL); the structure checks themselves read only the Chroma folder, the same
# in both passes.
pytestmark = pytest.mark.sqlite_only("child processes open the data directory's own catalog; checks read only Chroma")


def _build(data_dir: Path) -> list[str]:
    return build(data_dir, N, DIMS)


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    data_dir = tmp_path_factory.mktemp("unsealed") / "memory"
    return data_dir, _build(data_dir)


def _copy(template: tuple[Path, list[str]], tmp_path: Path) -> tuple[Path, list[str]]:
    src, keys = template
    shutil.copytree(src, tmp_path / "memory")
    return tmp_path / "memory", list(keys)


def _crash(data_dir: Path, ledger: list[str], tag: str) -> list[str]:
    """A process opens the store, puts 50 items and dies by SIGKILL: the index is left unsealed."""
    new = [f"{tag}-{i}" for i in range(50)]
    res = run_child(data_dir, ledger, dims=DIMS, new=new, seed=0, checked=50, rebuild_max=0, unclean=True)
    assert res.ok and res.reported, res.summary()
    assert res.acked == new
    return ledger + new


def test_the_check_passes_a_whole_index(template: tuple[Path, list[str]]) -> None:
    data_dir, _keys = template
    seg = segment_of(data_dir)
    assert check_segment(seg) == ""
    assert check_folder(seg.parent) == {}


@pytest.mark.parametrize("upper", [False, True], ids=["level0", "upper-levels"])
def test_the_check_finds_every_neighbour_id_out_of_range(
    template: tuple[Path, list[str]], tmp_path: Path, upper: bool
) -> None:
    rng = random.Random(26)
    seg = segment_of(template[0])
    for n in range(20):
        copy = tmp_path / f"seg{n}"
        shutil.copytree(seg, copy)
        ((element, _old),) = flip_neighbour_ids(copy, rng, 1, upper=upper)
        why = check_segment(copy)
        assert f"element {element} links to an element past" in why, why


def test_the_check_finds_a_broken_header_a_level_and_a_vector(template: tuple[Path, list[str]], tmp_path: Path) -> None:
    import numpy as np

    from langgraph_memory.index._hnsw_check import read_header

    seg = segment_of(template[0])
    h = read_header(seg / "header.bin")

    def damaged(name: str, offset: int, xor: int) -> str:
        copy = tmp_path / f"{name}-{offset}-{xor}"
        shutil.copytree(seg, copy)
        with open(copy / name, "r+b") as f:
            f.seek(offset)
            byte = f.read(1)[0]
            f.seek(offset)
            f.write(bytes([byte ^ xor]))
        return check_segment(copy)

    assert "level multiplier" in damaged("header.bin", 4 + 6 * 8 + 4 + 4 + 3 * 8 + 7, 0x04)  # mult's exponent
    assert "capacity" in damaged("header.bin", 4 + 2 * 8 + 3, 0x01)  # the element count, far past the capacity
    assert "entry point" in damaged("header.bin", 4 + 6 * 8 + 4 + 3, 0x40)  # the entry point out of range
    assert "level-0 header" in damaged("data_level0.bin", 5 * h.size_per_element + 1, 0x10)  # a link count
    # The sign of a float in the middle of a vector: its norm stays 1; the exponent's top bit does not.
    assert "norm" in damaged("data_level0.bin", 7 * h.size_per_element + h.offset_data + 4 * 3 + 3, 0x40)
    # Labels: a high bit of one (past 32-bit ids), and a low bit that makes it another element's.
    assert "32-bit" in damaged("data_level0.bin", 9 * h.size_per_element + h.label_offset + 5, 0x02)
    # (an element whose label with its low bit flipped is another's: labels follow the catalog's ids, which a
    # PostgreSQL sequence may leave gaps in)
    raw = (seg / "data_level0.bin").read_bytes()
    labels = [int.from_bytes(raw[i * h.size_per_element + h.label_offset :][:8], "little") for i in range(h.count)]
    known = set(labels)
    twin = next(i for i, label in enumerate(labels) if label ^ 1 in known)
    assert "same label" in damaged("data_level0.bin", twin * h.size_per_element + h.label_offset, 0x01)
    # An element's upper-level size: no longer a whole number of levels.
    words = np.fromfile(seg / "link_lists.bin", dtype=np.uint32)
    first = int(np.flatnonzero(words)[0])
    assert "bytes of links" in damaged("link_lists.bin", first * 4, 0x01)
    # A file cut short.
    copy = tmp_path / "short"
    shutil.copytree(seg, copy)
    with open(copy / "data_level0.bin", "r+b") as f:
        f.truncate(h.size_per_element * (h.count - 1))
    assert "data_level0.bin holds" in check_segment(copy)


def test_a_lowered_ef_construction_is_found_against_the_configuration(
    template: tuple[Path, list[str]], tmp_path: Path
) -> None:
    from langgraph_memory.index._hnsw_check import check_parameters

    seg = segment_of(template[0])
    assert check_parameters(seg.parent, {(100, 16)}) == {}  # Chroma's defaults, which the store keeps
    copy = tmp_path / "index" / seg.name
    shutil.copytree(seg, copy)
    _flip_ef_construction(copy)
    assert check_segment(copy) == ""  # in range: only the configuration tells
    assert "ef_construction 36" in check_parameters(copy.parent, {(100, 16)})[seg.name]


def _flip_ef_construction(seg: Path) -> None:
    """100 -> 36: a bit of the header's last field, size and mtime kept."""
    path = seg / "header.bin"
    st = path.stat()
    with open(path, "r+b") as f:
        f.seek(92)
        byte = f.read(1)[0]
        f.seek(92)
        f.write(bytes([byte ^ 0x40]))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


@pytest.mark.slow
@pytest.mark.parametrize("damage", ["level0", "upper-levels", "ef_construction"])
def test_flipped_neighbour_ids_after_a_crash_are_rebuilt_not_loaded(
    template: tuple[Path, list[str]], tmp_path: Path, damage: str
) -> None:
    data_dir, ledger = _copy(template, tmp_path)
    ledger = _crash(data_dir, ledger, "crash")
    if damage == "ef_construction":
        _flip_ef_construction(segment_of(data_dir))
    else:
        flip_neighbour_ids(segment_of(data_dir), random.Random(7), 8, upper=damage == "upper-levels")
    new = [f"after-{i}" for i in range(50)]
    res = run_child(data_dir, ledger, dims=DIMS, new=new, seed=1, checked=200, rebuild_max=0)
    assert not res.crashed, res.summary()
    assert res.ok, res.summary()
    assert res.rebuilt and "HNSW segment" in res.rebuild_reason, res.rebuild_reason
    assert res.acked == new


# One HNSW file per round, flipped after a crash left the index unsealed.
PLAN = ["data_level0.bin", "link_lists.bin", "data_level0.bin", "header.bin", "length.bin", "data_level0.bin"]


@pytest.mark.slow
def test_random_flips_after_crashes_never_crash_lose_or_mislead(
    template: tuple[Path, list[str]], tmp_path: Path
) -> None:
    data_dir, ledger = _copy(template, tmp_path)
    rng = random.Random(2026)
    ledger = _crash(data_dir, ledger, "first")
    for r, name in enumerate(PLAN):
        (target,) = [p for p in segment_of(data_dir).iterdir() if p.name == name]
        flip_bits(target, rng, 8)
        new = [f"r{r}-{i}" for i in range(50)]
        res = run_child(data_dir, ledger, dims=DIMS, new=new, seed=r, checked=100, rebuild_max=0, unclean=True)
        assert not res.crashed, f"round {r + 1} ({name}): the process died: {res.summary()}"
        assert res.ok, f"round {r + 1} ({name}): {res.summary()}"
        assert res.acked == new
        ledger += new
