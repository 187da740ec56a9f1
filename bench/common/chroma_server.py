"""A real `chroma run` server for tests and benches, which they may SIGKILL and restart.

``ChromaServer(folder).start()`` runs the server of this environment (the
``chroma`` executable beside the interpreter, as ``scripts/chroma_server.sh``
does) on a free loopback port and waits until its heartbeat answers.
``kill()`` sends SIGKILL; ``start()`` again reuses the port, so clients built
before (``chromadb.HttpClient``) reach the new server; ``start(empty=True)``
restarts it on a new, empty directory (its data lost).

The tests' fixture ``chroma_server`` (``tests/helpers/chroma_server.py``) gives a server per test.
"""

from __future__ import annotations

import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

__all__ = ["ChromaServer", "free_port"]


def free_port() -> int:
    """A loopback port nobody listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ChromaServer:
    """One ``chroma run`` process on 127.0.0.1 serving a folder under ``root``."""

    def __init__(self, root: Path, port: int | None = None) -> None:
        self.root = Path(root)
        self.port = port or free_port()
        self.host = "127.0.0.1"
        self.proc: subprocess.Popen[bytes] | None = None
        self.generation = 0  # how many times the directory was replaced by an empty one
        self.kills = 0

    @property
    def path(self) -> Path:
        return self.root / f"chroma-{self.generation}"

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def answers(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.url}/api/v2/heartbeat", timeout=2) as resp:
                resp.read()
            return True
        except OSError:
            return False

    def start(self, *, empty: bool = False, timeout: float = 120.0) -> None:
        """Start (or restart on the same port), on a new empty directory with ``empty``; wait until it answers."""
        if self.proc is not None and self.proc.poll() is None:
            raise RuntimeError("the Chroma server is running already")
        if empty:
            self.generation += 1
        self.path.mkdir(parents=True, exist_ok=True)
        chroma = Path(sys.executable).parent / "chroma"
        exe = str(chroma) if chroma.exists() else (shutil.which("chroma") or "chroma")
        log = open(self.root / "server.log", "ab")  # noqa: SIM115 - the child keeps it
        deadline = time.monotonic() + timeout
        while True:
            self.proc = subprocess.Popen(
                [exe, "run", "--path", str(self.path), "--host", self.host, "--port", str(self.port)],
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
            while self.proc.poll() is None and time.monotonic() < deadline:
                if self.answers():
                    log.close()
                    return
                time.sleep(0.1)
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
            if time.monotonic() >= deadline:
                log.close()
                raise RuntimeError(f"chroma run did not answer on port {self.port}; see {self.root / 'server.log'}")
            time.sleep(0.5)  # the port may still be held by the killed server: try again

    def kill(self) -> None:
        """SIGKILL the server (a crash: nothing is flushed) and reap it."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()
            self.kills += 1

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def client(self) -> object:
        import chromadb
        from chromadb.config import Settings

        return chromadb.HttpClient(host=self.host, port=self.port, settings=Settings(anonymized_telemetry=False))
