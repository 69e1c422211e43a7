"""A registry that answers slowly (a byte now and then, in the headers or the body):
the look-up still ends at its timeout, as a recorded failure."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from gitvault.knowledge.model import Context, LookupFailed
from gitvault.knowledge.sources import Source
from tests.knowledge.servers import clear_proxies

HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n"


@pytest.fixture
def trickle(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, dict[str, bytes]]]:
    """A server on 127.0.0.1 that sends ``plan["prefix"]`` and then one byte of
    ``plan["drip"]`` every 0.2 s, for ever (until the test ends)."""
    clear_proxies(monkeypatch)
    plan = {"prefix": b"", "drip": b" "}
    stop = threading.Event()
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    server.settimeout(0.2)

    def serve(conn: socket.socket) -> None:
        with conn:
            try:
                conn.recv(65536)
                conn.sendall(plan["prefix"])
                while not stop.is_set():
                    conn.sendall(plan["drip"])
                    time.sleep(0.2)
            except OSError:
                pass

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            threading.Thread(target=serve, args=(conn,), daemon=True).start()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.getsockname()[1]}", plan
    finally:
        stop.set()
        thread.join(5)
        server.close()


@pytest.mark.parametrize("where", ["headers", "body"])
def test_a_registry_that_trickles_is_cut_at_the_timeout(
        trickle: tuple[str, dict[str, bytes]], tmp_path: Path, where: str) -> None:
    url, plan = trickle
    if where == "headers":
        plan.update(prefix=b"HTTP/1.1 200 OK\r\nX-Slow: ", drip=b"a")
    else:
        plan.update(prefix=HEAD, drip=b" ")
    source = Source.from_config({"id": "s", "type": "pypi", "package": "x", "index": url})
    started = time.monotonic()
    with pytest.raises(LookupFailed) as caught:
        source.check(Context(tmp_path, 1.0))
    assert time.monotonic() - started < 4
    assert "no answer within 1 s" in str(caught.value)


def test_a_remote_advertising_more_refs_than_kept_is_a_failure(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The cap on what ls-remote may print (a hostile server can advertise millions of
    refs), shown with a small cap over a real bare repository."""
    from gitvault.core import git
    from tests.conftest import isolated_env
    from tests.knowledge.servers import BareRepo

    upstream = BareRepo(tmp_path, isolated_env(tmp_path))
    for n in range(5):
        upstream.release(f"v1.{n}.0")
    monkeypatch.setattr(git, "MAX_LS_REMOTE_BYTES", 200)
    monkeypatch.setenv("GITVAULT_ALLOW_LOCAL_REMOTES", "1")
    source = Source.from_config({"id": "s", "type": "git-ref", "remote": str(upstream.path),
                                 "ref": "refs/tags/*"})
    with pytest.raises(LookupFailed, match=r"advertised more than"):
        source.check(Context(tmp_path, 10.0))
