"""Prove that every id, level and count stored in Chroma's HNSW files is in range, without loading them.

hnswlib trusts its files: a neighbour id, a link count or a level that bit
rot changed makes a search read outside its arrays, and the process dies
with SIGSEGV. A probe that queries sample vectors finds such damage only when
a sample happens to walk through the damaged node. This module reads the
files with numpy instead (a memory map, never hnswlib) and checks their
structure whole:

``header.bin``
    Chroma's hnswlib fork writes a format version (int32), then hnswlib's
    ``saveIndex`` header: offsetLevel0, max_elements, cur_element_count,
    size_data_per_element, label_offset, offsetData (six uint64), maxlevel
    (int32), enterpoint_node (uint32), maxM, maxM0, M (uint64), mult
    (float64), ef_construction (uint64); 100 bytes.
``data_level0.bin``
    ``cur_element_count`` records of ``size_data_per_element`` bytes: a
    uint32 whose low 16 bits count the level-0 neighbours (byte 2 holds the
    deleted mark, byte 3 is unused), ``maxM0`` uint32 neighbour ids, the
    vector (float32; unit length in a cosine space, which is what the store
    creates) and the label (uint64).
``link_lists.bin``
    per element in order, a uint32 byte size (a multiple of
    ``4 + 4 * maxM``, one block per level above 0), then that many bytes:
    per level, a uint32 count and ``maxM`` uint32 neighbour ids.
``length.bin``
    per element, the float32 norm of the vector as given (cosine spaces).

Checked: the header against the file sizes and itself; every used
neighbour id below the element count; every count at most its level's
maximum; every element's level at most ``maxlevel``; every neighbour of a
level-``l`` link at least at level ``l`` (hnswlib reads that neighbour's
level-``l`` list); the entry point at the top level; the level multiplier
hnswlib's own (`check_parameters` compares ``ef_construction`` and ``M``
with the collections' configuration); labels distinct and within 32 bits;
vectors finite and, in a cosine index, of unit length. Memory stays bounded
(level 0 is read in chunks) and the work is vectorised but for one step over
the elements that have upper levels (about one in ``M``).

This file imports only numpy and the standard library: the probe
subprocess (`langgraph_memory.index._probe`) runs it before it lets Chroma
open anything.
"""

from __future__ import annotations

import math
import struct
from bisect import bisect_left
from dataclasses import dataclass
from pathlib import Path

import numpy as np

__all__ = ["HEADER", "Header", "check_folder", "check_parameters", "check_segment", "read_header", "segments"]

HEADER = "header.bin"
_HEADER = struct.Struct("<i6QiI3QdQ")
# Level-0 records checked per step: bounds the temporaries (a 384-d record is 1.7 kB).
_CHUNK = 32_768
# A cosine index stores unit vectors; a flipped bit of a float32 that matters to a search moves the norm
# by far more than this, while the rounding of a normalised vector stays near 1e-7.
_NORM_TOLERANCE = 1e-3
# hnswlib draws levels as -ln(U) * mult; with M >= 2 a level past this is beyond any real index.
_LEVEL_MAX = 64


@dataclass(frozen=True)
class Header:
    """The fields of ``header.bin``."""

    version: int
    offset_level0: int
    max_elements: int
    count: int
    size_per_element: int
    label_offset: int
    offset_data: int
    max_level: int
    entry_point: int
    max_m: int
    max_m0: int
    m: int
    mult: float
    ef_construction: int


def read_header(path: Path) -> Header:
    """Parse ``header.bin``; ``ValueError`` when its size is not a header's."""
    raw = path.read_bytes()
    if len(raw) != _HEADER.size:
        raise ValueError(f"{path.name} holds {len(raw)} bytes, not {_HEADER.size}")
    return Header(*_HEADER.unpack(raw))


def segments(folder: Path) -> list[Path]:
    """The HNSW segment folders of a Chroma folder (those that have written their files)."""
    return sorted(p.parent for p in folder.glob(f"*/{HEADER}"))


def check_folder(folder: Path) -> dict[str, str]:
    """``{segment folder name: what is wrong}`` for every damaged segment of a Chroma folder; empty when whole."""
    out = {}
    for seg in segments(folder):
        why = check_segment(seg)
        if why:
            out[seg.name] = why
    return out


def check_parameters(folder: Path, allowed: set[tuple[int, int]]) -> dict[str, str]:
    """Segments whose ``(ef_construction, M)`` is none of the collections' configured ``allowed`` pairs.

    hnswlib builds every later insert with these header values: a flipped bit
    that lowers ``ef_construction`` passes every range check yet links new
    elements so poorly that a search can miss them.
    """
    out = {}
    for seg in segments(folder):
        try:
            h = read_header(seg / HEADER)
        except (OSError, ValueError) as exc:
            out[seg.name] = f"cannot read the header: {exc}"
            continue
        if (h.ef_construction, h.m) not in allowed:
            out[seg.name] = (
                f"header: ef_construction {h.ef_construction}, M {h.m}; the collections are built with {sorted(allowed)}"
            )
    return out


def check_segment(seg: Path, *, cosine: bool = True) -> str:
    """Empty when every stored id, count and level of the segment in ``seg`` is in range, else the first problem.

    Example::

        why = check_segment(Path("chroma/index-3/0f3c.../"))
        if why:
            ...  # rebuild the index instead of opening it
    """
    try:
        h = read_header(seg / HEADER)
        why = _check_header(seg, h)
        if why or h.count == 0:
            return why
        levels, why = _upper_levels(seg, h)
        if why:
            return why
        assert levels is not None
        return _check_level0(seg, h, levels, cosine) or _check_upper(seg, h, levels)
    except (OSError, ValueError) as exc:
        return f"cannot read the HNSW files: {type(exc).__name__}: {exc}"


def _check_header(seg: Path, h: Header) -> str:
    if h.version != 1 or h.offset_level0 != 0:
        return f"header: format version {h.version}, level-0 offset {h.offset_level0}"
    if not (2 <= h.m <= 4096 and h.max_m == h.m and h.max_m0 == 2 * h.m):
        return f"header: M {h.m}, maxM {h.max_m}, maxM0 {h.max_m0}"
    if h.count > h.max_elements:
        return f"header: {h.count} elements, more than the capacity {h.max_elements}"
    if h.offset_data != 4 + 4 * h.max_m0:
        return f"header: vector offset {h.offset_data}, links take {4 + 4 * h.max_m0} bytes"
    dim_bytes = h.label_offset - h.offset_data
    if dim_bytes <= 0 or dim_bytes % 4 or h.size_per_element != h.label_offset + 8:
        return f"header: record size {h.size_per_element}, label at {h.label_offset}, vector at {h.offset_data}"
    if h.count == 0:
        return ""
    if abs(h.mult - 1 / math.log(h.m)) > 1e-9:  # hnswlib sets mult to 1/ln(M); new elements draw levels by it
        return f"header: level multiplier {h.mult!r}, not 1/ln({h.m})"
    if not (0 <= h.max_level <= _LEVEL_MAX) or h.entry_point >= h.count:
        return f"header: top level {h.max_level}, entry point {h.entry_point} of {h.count} elements"
    need = h.count * h.size_per_element
    have = (seg / "data_level0.bin").stat().st_size
    if have < need:
        return f"data_level0.bin holds {have} bytes, {h.count} elements need {need}"
    return ""


def _upper_levels(seg: Path, h: Header) -> tuple[np.ndarray | None, str]:
    """Each element's top level and where its link block starts in link_lists.bin (uint32 units), or the problem.

    Returns a ``(count, 2)`` int64 array of ``[level, start]`` (start -1 for level 0).
    """
    path = seg / "link_lists.bin"
    size = path.stat().st_size
    if size % 4:
        return None, f"link_lists.bin holds {size} bytes, not whole uint32s"
    block = 4 + 4 * h.max_m
    # Each element holds a 4-byte size and at most max_level blocks: a longer file (a sparse one of terabytes,
    # after damage) is refused before it is scanned.
    most = h.count * (4 + max(h.max_level, 0) * block)
    if size > most:
        return None, f"link_lists.bin holds {size} bytes, more than the header's {h.count} elements can ({most})"
    words = np.memmap(path, dtype=np.uint32, mode="r") if size else np.zeros(0, dtype=np.uint32)
    out = np.zeros((h.count, 2), dtype=np.int64)
    out[:, 1] = -1
    # Each element's size field follows the previous element's block; an element without upper levels
    # has a size of 0 and no block, so the next non-zero word from a position is the next size field
    # that is not 0 (the elements in between have none).
    nonzero = np.flatnonzero(words)
    # Plain lists and bisect: one step per element with upper levels (about one in M), each a few
    # hundred nanoseconds, where a numpy call per step costs microseconds.
    where, value = nonzero.tolist(), words[nonzero].tolist()
    pos = 0
    element = 0
    found: list[tuple[int, int, int]] = []
    while element < h.count:
        at = bisect_left(where, pos)
        nxt = where[at] if at < len(where) else len(words)
        if element + (nxt - pos) >= h.count:  # the rest have no upper levels
            pos += h.count - element
            break
        element += nxt - pos  # elements whose size field is 0
        nbytes = value[at]
        if nbytes % block or nbytes // block > h.max_level:
            return None, f"link_lists.bin: element {element} has {nbytes} bytes of links (levels of {block} bytes)"
        found.append((element, nbytes // block, nxt + 1))
        pos = nxt + 1 + nbytes // 4
        element += 1
    if found:
        rows = np.asarray(found, dtype=np.int64)
        out[rows[:, 0]] = rows[:, 1:]
    if pos > len(words):
        return None, f"link_lists.bin holds {len(words) * 4} bytes, the header's {h.count} elements need {pos * 4}"
    if int(out[h.entry_point, 0]) != h.max_level:
        return None, f"the entry point {h.entry_point} is at level {int(out[h.entry_point, 0])}, not {h.max_level}"
    return out, ""


def _check_level0(seg: Path, h: Header, levels: np.ndarray, cosine: bool) -> str:
    raw = np.memmap(seg / "data_level0.bin", dtype=np.uint8, mode="r", shape=(h.count, h.size_per_element))
    dims = (h.label_offset - h.offset_data) // 4
    slots = np.arange(h.max_m0, dtype=np.uint32)
    labels = np.empty(h.count, dtype=np.uint64)
    for start in range(0, h.count, _CHUNK):
        rows = np.ascontiguousarray(raw[start : start + _CHUNK])
        head = rows[:, :4]
        counts = head[:, 0].astype(np.uint32) | (head[:, 1].astype(np.uint32) << 8)
        if counts.max() > h.max_m0 or (head[:, 2] > 1).any() or head[:, 3].any():
            bad = start + int(np.flatnonzero((counts > h.max_m0) | (head[:, 2] > 1) | (head[:, 3] > 0))[0])
            return f"data_level0.bin: element {bad} has a level-0 header {bytes(raw[bad, :4]).hex()}"
        ids = rows[:, 4 : h.offset_data].view(np.uint32)
        used = slots[None, :] < counts[:, None]
        if (np.where(used, ids, 0) >= h.count).any():
            bad = start + int(np.flatnonzero((used & (ids >= h.count)).any(axis=1))[0])
            return f"data_level0.bin: element {bad} links to an element past the {h.count} there are"
        vectors = rows[:, h.offset_data : h.label_offset].view(np.float32)
        # A batch of row-by-row dot products: several times faster here than einsum over these strided rows.
        with np.errstate(all="ignore"):
            squares = np.matmul(vectors[:, None, :], vectors[:, :, None]).ravel()
        wrong = ~np.isfinite(squares)
        if cosine:
            wrong |= np.abs(squares - 1.0) > 2 * _NORM_TOLERANCE
        if wrong.any():
            bad = start + int(np.flatnonzero(wrong)[0])
            norm = float(np.sqrt(np.float64(squares[bad - start])))
            return f"data_level0.bin: the vector of element {bad} has norm {norm:.6g} ({dims}-d)"
        labels[start : start + len(rows)] = rows[:, h.label_offset : h.label_offset + 8].view(np.uint64)[:, 0]
    ordered = np.sort(labels)  # a sort: several times faster here than np.unique's hash table
    if (ordered[1:] == ordered[:-1]).any():
        return "data_level0.bin: two elements carry the same label"
    # Chroma's labels are its 32-bit offset ids: a flipped high bit of the 64-bit label leaves that range.
    if int(ordered[-1]) >= 1 << 32:
        return f"data_level0.bin: a label ({int(ordered[-1])}) is past Chroma's 32-bit ids"
    return ""


def _check_upper(seg: Path, h: Header, levels: np.ndarray) -> str:
    has = np.flatnonzero(levels[:, 0] > 0)
    if not len(has):
        return ""
    words = np.memmap(seg / "link_lists.bin", dtype=np.uint32, mode="r")
    per = 1 + h.max_m
    n_levels = levels[has, 0]
    # One row per (element, level >= 1): the start of its list in words.
    owner = np.repeat(has, n_levels)
    first = np.repeat(np.cumsum(n_levels) - n_levels, n_levels)
    level = np.arange(len(owner)) - first + 1
    starts = levels[owner, 1] + (level - 1) * per
    lists = words[starts[:, None] + np.arange(per)[None, :]]
    counts = lists[:, 0]
    if (counts > h.max_m).any():
        bad = int(np.flatnonzero(counts > h.max_m)[0])
        return f"link_lists.bin: element {owner[bad]} has {counts[bad]} links at level {level[bad]}"
    ids = lists[:, 1:]
    used = np.arange(h.max_m)[None, :] < counts[:, None]
    safe = np.where(used, ids, 0).astype(np.int64)
    if (safe >= h.count).any():
        bad = int(np.flatnonzero((safe >= h.count).any(axis=1))[0])
        return f"link_lists.bin: element {owner[bad]} links to an element past the {h.count} there are"
    # hnswlib reads a neighbour's list at the level of the link: the neighbour must reach that level.
    low = used & (levels[safe, 0] < level[:, None])
    if low.any():
        bad = int(np.flatnonzero(low.any(axis=1))[0])
        return f"link_lists.bin: element {owner[bad]} links at level {level[bad]} to an element below it"
    return ""
