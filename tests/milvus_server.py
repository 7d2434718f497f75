"""A real Milvus standalone server for the tests: the ``milvus`` package's server binary (``milvus-server`` extra,
which ``make test`` installs), started once per test run by the session fixture ``milvus_server`` in
``tests/conftest.py`` on a free loopback port, with its data in a temporary folder, and stopped at the end.

The tests that use it live in one file (``tests/store/test_milvus_server.py``): ``make test`` runs with
``--dist loadgroup``, a file's tests together (tests/conftest.py), so one worker, one server. :class:`ServerHandle` can stop and start the same server again
(same port, same data) for the tests of a server that goes away and comes back.
"""

from __future__ import annotations

import socket
import time
from pathlib import Path

import pytest

INSTALL = "pip install -c constraints.txt -e '.[milvus-server]' (make test installs it)"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _bind_reusing(port: int):
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(("127.0.0.1", port))
        sock.listen()
        return sock
    except OSError:
        sock.close()
        return None


class ServerHandle:
    """One running ``milvus`` server: ``uri``, ``version``, and ``stop()`` / ``start()`` on the same port and data."""

    def __init__(self, data_dir: Path):
        from milvus import default_server

        self.server = default_server
        self.server.set_base_dir(str(data_dir))
        self.port = _free_port()
        self.server.config.update(proxy_port=self.port)  # a fixed port: a restart comes back at the same URI
        # the package checks each port by binding it without SO_REUSEADDR, which a port in TIME_WAIT (the old
        # server's connections, after a stop) fails for a minute; the server itself (Go) binds with it
        self.server.config.try_bind_port = _bind_reusing
        self.uri = f"http://127.0.0.1:{self.port}"
        self.data_dir = data_dir
        self.version = ""

    @property
    def running(self) -> bool:
        return self.server.running

    def start(self) -> None:
        t0 = time.monotonic()
        try:
            self.server.start()  # returns once the server's health page says OK (it waits up to 180 s)
        except (TimeoutError, RuntimeError) as e:
            self.stop()
            log = self.data_dir / "logs" / "milvus-stderr.log"
            tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
            pytest.fail(f"the Milvus server did not start ({e}); its stderr ends:\n{tail}")
        self.started_in = time.monotonic() - t0

    def stop(self) -> None:
        """Stop the server the hard way a crash would (SIGTERM, then SIGKILL after a second)."""
        self.server.stop()


def start_server(data_dir: Path) -> ServerHandle:
    """Start the server (skipping when the package is absent) and read its version through pymilvus."""
    pytest.importorskip("pymilvus", reason="the Milvus server tests need pymilvus: pip install 'ragtune[milvus]'")
    pytest.importorskip("milvus", reason=f"the Milvus server package is not installed: {INSTALL}")
    handle = ServerHandle(data_dir)
    handle.start()
    from pymilvus import MilvusClient

    client = MilvusClient(uri=handle.uri)
    handle.version = client.get_server_version()
    client.close()
    return handle
