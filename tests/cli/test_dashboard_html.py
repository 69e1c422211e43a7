"""``dashboard --html``: the report opened in real headless Chromium, served from a real
HTTP server on 127.0.0.1 that is also the browser's proxy, so any request the page made
would be seen there. The page must render its cards in attention order, draw a trend
per skill, load nothing, escape what the vault says, and look like a report (the
screenshot is decoded and checked for size and colours)."""

from __future__ import annotations

import base64
import html
import json
import os
import select
import shutil
import struct
import subprocess
import tempfile
import threading
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from html.parser import HTMLParser
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.conftest import Runner

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=timezone.utc)
ENV = {"GITVAULT_NOW": "2026-11-30T12:00:00.000Z"}
EVIL = '<script>alert("name")</script>'
EVIL_NOTE = '"><img src=x onerror=alert(1)><script>alert(2)</script>'
FLAG_RGB = (0xCF, 0x22, 0x2E)  # --flag in the report's CSS
LINE_RGB = (0x25, 0x63, 0xEB)  # --line: the trend
WIDTH, HEIGHT = 1280, 1900


def run_line(n: int, skill: str, day: int, result: str, score: float, notes: str = "",
             task: str = "t") -> str:
    ts = (NOW - timedelta(days=day, hours=2)).strftime("%Y-%m-%dT%H:%M:%S.000Z")
    return json.dumps({"id": f"run-{n:04d}", "ts": ts, "agent": "ci-bot", "skill": skill,
                       "task": task, "result": result, "score": score, "notes": notes,
                       "node": "peer"}) + "\n"


def sample_runs(root: Path) -> None:
    """A month of runs as a clone would bring them (written straight into the log, so
    nothing was redacted on the way in): a broken skill, a drifting one, a hostile
    name with a hostile note, two healthy skills and one idle for two weeks."""
    lines = []

    def add(skill: str, day: int, result: str, score: float, notes: str = "", task: str = "t") -> None:
        lines.append(run_line(len(lines), skill, day, result, score, notes, task))

    for day in range(29, 4, -1):
        add("deploy-service", day, "success", 0.86 + 0.04 * (day % 3))
    add("deploy-service", 3, "fail", 0.2, "timeout waiting for the health check on :8443")
    add("deploy-service", 2, "fail", 0.1, "rollback failed, the log says password=hunter2",
        task="deploy api v2")
    add("deploy-service", 1, "fail", 0.0, "kubectl apply: forbidden")
    add("deploy-service", 0, "fail", 0.0, "kubectl apply: forbidden (again)")
    for day in range(29, 0, -1):  # older 0.70, last week 0.97, this week 0.78
        add("summarize-pr", day, "success",
            0.97 if 7 <= day <= 13 else 0.78 if day < 7 else 0.70)
    for day in (6, 4, 2, 1):
        add(EVIL, day, "fail", 0.3, EVIL_NOTE, task=EVIL)
    for day in range(29, -1, -1):
        add("review-diff", day, "success" if day != 12 else "partial", 0.92 if day != 12 else 0.6)
    for day in range(29, -1, -2):
        add("write-tests", day, "success", min(1.0, 0.74 + 0.01 * (29 - day)))
    for day in range(29, 14, -1):
        add("legacy-migrate", day, "success", 0.9)
    folder = root / "logs" / "runs" / "2026-11"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "peer.jsonl").write_text("".join(lines))


# -- the browser ------------------------------------------------------------------------

def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    if os.environ.get("CI") == "true":
        pytest.fail("chromium is not installed (.ci/run installs the Debian package)")
    pytest.skip("chromium is not installed (apt-get install chromium)")


class Recorder(ThreadingHTTPServer):
    """Serves ``pages`` and, as the browser's proxy, answers everything else with 502;
    every request line it gets is kept in ``seen``."""

    def __init__(self, pages: dict[str, bytes]) -> None:
        self.pages = pages
        self.seen: list[str] = []
        super().__init__(("127.0.0.1", 0), _Handler)


class _Handler(BaseHTTPRequestHandler):
    server: Recorder

    def _answer(self) -> None:
        self.server.seen.append(f"{self.command} {self.path}")
        body = self.server.pages.get(self.path)
        if body is None:
            self.send_error(502 if self.command == "CONNECT" or "://" in self.path else 404)
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = do_HEAD = do_CONNECT = _answer

    def log_message(self, format: str, *args: object) -> None:
        pass


@contextmanager
def serving(pages: dict[str, bytes]) -> Iterator[Recorder]:
    server = Recorder(pages)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--no-default-browser-check", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--disable-default-apps",
         "--disable-extensions", "--disable-dev-shm-usage", "--hide-scrollbars",
         "--force-device-scale-factor=1"]


class Browser:
    """Headless Chromium with a fresh profile, driven over the DevTools protocol on a
    pipe (``--remote-debugging-pipe``: JSON messages ending in NUL on fds 3 and 4).
    Requests not to 127.0.0.1 go to ``proxy``, so nothing leaves the machine even when
    the browser's own services call home; the page's own requests are the Network
    events of its tab."""

    def __init__(self, proxy: Recorder, profile: str) -> None:
        to_browser, self._commands = os.pipe()
        self._replies, from_browser = os.pipe()

        def wire() -> None:  # in the child: its fd 3 reads commands, fd 4 writes replies
            os.dup2(to_browser, 3)
            os.dup2(from_browser, 4)

        self.proc = subprocess.Popen(
            [chromium(), *FLAGS, f"--user-data-dir={profile}", "--remote-debugging-pipe",
             f"--proxy-server=http://127.0.0.1:{proxy.server_address[1]}", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            preexec_fn=wire, close_fds=False, cwd=profile)
        os.close(to_browser)
        os.close(from_browser)
        self._buffer = b""
        self._next = 0
        self.events: list[dict] = []

    def _read(self) -> dict:
        while b"\0" not in self._buffer:
            ready, _, _ = select.select([self._replies], [], [], 60)
            chunk = os.read(self._replies, 1 << 16) if ready else b""
            if not chunk:
                died = self.proc.poll() is not None and self.proc.stderr is not None
                raise AssertionError("chromium went quiet"
                                     + (f": {self.proc.stderr.read(2000)!r}" if died else ""))
            self._buffer += chunk
        message, _, self._buffer = self._buffer.partition(b"\0")
        return json.loads(message)

    def call(self, method: str, params: dict | None = None, session: str | None = None) -> dict:
        self._next += 1
        message: dict = {"id": self._next, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self._commands, json.dumps(message).encode() + b"\0")
        while True:
            reply = self._read()
            if reply.get("id") == self._next:
                assert "error" not in reply, reply
                return reply["result"]
            self.events.append(reply)

    def wait_for(self, method: str, session: str) -> dict:
        for event in self.events:
            if event.get("method") == method and event.get("sessionId") == session:
                return event
        while True:
            event = self._read()
            self.events.append(event)
            if event.get("method") == method and event.get("sessionId") == session:
                return event

    def close(self) -> None:
        try:
            self.call("Browser.close")
        except (AssertionError, OSError):
            pass
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self._commands)
        os.close(self._replies)
        if self.proc.stderr:
            self.proc.stderr.close()


@dataclass
class Visit:
    dom: str  # document.documentElement.outerHTML once loaded
    requests: list[str]  # every URL the page's tab asked for
    trend_lengths: dict[str, float]  # a card's drawn trend line length, by skill
    png: bytes


@contextmanager
def browser(proxy: Recorder) -> Iterator[Browser]:
    with tempfile.TemporaryDirectory(prefix="gv-chromium-") as profile:
        b = Browser(proxy, profile)
        try:
            yield b
        finally:
            b.close()


def visit(b: Browser, url: str, width: int = WIDTH, height: int = HEIGHT) -> Visit:
    """Open ``url`` in a new tab of ``width`` x ``height``; the loaded DOM, the tab's
    requests, the length of each card's trend path as laid out, and a screenshot."""
    target = b.call("Target.createTarget", {"url": "about:blank"})["targetId"]
    session = b.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
    b.call("Network.enable", session=session)
    b.call("Page.enable", session=session)
    b.call("Emulation.setDeviceMetricsOverride", {"width": width, "height": height,
                                                  "deviceScaleFactor": 1, "mobile": False},
           session=session)
    b.call("Page.navigate", {"url": url}, session=session)
    b.wait_for("Page.loadEventFired", session)

    def evaluate(expression: str) -> object:
        return b.call("Runtime.evaluate", {"expression": expression, "returnByValue": True},
                      session=session)["result"]["value"]

    dom = str(evaluate("document.documentElement.outerHTML"))
    lengths = evaluate("Object.fromEntries([...document.querySelectorAll('article')].map(a => "
                       "[a.dataset.skill, a.querySelector('path.trend') ? "
                       "a.querySelector('path.trend').getTotalLength() : 0]))")
    png = base64.b64decode(b.call("Page.captureScreenshot", {"format": "png"}, session=session)["data"])
    requests = [e["params"]["request"]["url"] for e in b.events
                if e.get("method") == "Network.requestWillBeSent" and e.get("sessionId") == session]
    b.call("Target.closeTarget", {"targetId": target})
    assert isinstance(lengths, dict)
    return Visit(dom, requests, {str(k): float(v) for k, v in lengths.items()}, png)


# -- reading what the browser made ------------------------------------------------------

class Dom(HTMLParser):
    """The elements of a dumped DOM: (tag, attributes, the text inside until the next tag)."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.elements: list[tuple[str, dict[str, str]]] = []
        self.texts: list[str] = []
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append((tag, {k: v or "" for k, v in attrs}))

    def handle_data(self, data: str) -> None:
        self.texts.append(data)

    def cards(self) -> list[dict[str, str]]:
        return [attrs for tag, attrs in self.elements if tag == "article"]


def card_paths(dom_text: str) -> dict[str, list[str]]:
    """Each card's ``<path class="trend">`` d attributes, by skill."""
    found: dict[str, list[str]] = {}
    current = None
    for tag, attrs in Dom(dom_text).elements:
        if tag == "article":
            current = attrs["data-skill"]
            found[current] = []
        elif tag == "path" and attrs.get("class") == "trend" and current is not None:
            found[current].append(attrs.get("d", ""))
    return found


def png_pixels(data: bytes) -> tuple[int, int, list[bytes], int]:
    """(width, height, unfiltered rows, bytes per pixel) of an 8-bit RGB/RGBA PNG."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, header = 8, [], b""
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            header = body
        elif kind == b"IDAT":
            idat.append(body)
    width, height, depth, colour, _c, _f, interlace = struct.unpack(">IIBBBBB", header)
    assert depth == 8 and colour in (2, 6) and interlace == 0, (depth, colour, interlace)
    bpp = 3 if colour == 2 else 4
    raw = zlib.decompress(b"".join(idat))
    stride = width * bpp
    rows: list[bytes] = []
    previous = bytearray(stride)
    for y in range(height):
        start = y * (stride + 1)
        kind, line = raw[start], bytearray(raw[start + 1:start + 1 + stride])
        if kind == 1:
            for i in range(bpp, stride):
                line[i] = (line[i] + line[i - bpp]) & 255
        elif kind == 2:
            line = bytearray((a + b) & 255 for a, b in zip(line, previous, strict=True))
        elif kind == 3:
            for i in range(stride):
                left = line[i - bpp] if i >= bpp else 0
                line[i] = (line[i] + ((left + previous[i]) >> 1)) & 255
        elif kind == 4:
            for i in range(stride):
                a = line[i - bpp] if i >= bpp else 0
                b, c = previous[i], previous[i - bpp] if i >= bpp else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        previous = line
    return width, height, rows, bpp


def colour_counts(rows: list[bytes], bpp: int) -> dict[tuple[int, int, int], int]:
    counts: dict[tuple[int, int, int], int] = {}
    for row in rows:
        for i in range(0, len(row), bpp):
            key = (row[i], row[i + 1], row[i + 2])
            counts[key] = counts.get(key, 0) + 1
    return counts


def near(counts: dict[tuple[int, int, int], int], rgb: tuple[int, int, int], tolerance: int = 8) -> int:
    return sum(n for c, n in counts.items()
               if all(abs(a - b) <= tolerance for a, b in zip(c, rgb, strict=True)))


# -- the tests --------------------------------------------------------------------------

@pytest.fixture
def report(gv: Runner, vault: Path, tmp_path: Path) -> Path:
    sample_runs(vault)
    page = tmp_path / "report.html"
    gv.ok("dashboard", "--html", str(page), env=ENV)
    return page


# flagged (and drifting) first, then flagged, then drifting, then by average score
EXPECTED_ORDER = ["deploy-service", EVIL, "summarize-pr", "write-tests", "legacy-migrate",
                  "review-diff"]


def test_the_report_says_what_needs_attention_and_why(report: Path) -> None:
    page = report.read_text("utf-8")
    dom = Dom(page)
    assert [c["data-skill"] for c in dom.cards()] == EXPECTED_ORDER
    assert [c["data-status"] for c in dom.cards()] == ["flagged", "flagged", "drifting", "ok", "ok", "ok"]
    text = " ".join(" ".join(dom.texts).split())
    for count, label in (("6", "skills"), ("2", "flagged"), ("2", "drifting"), ("3", "healthy")):
        assert f"{count} {label}" in text, label
    assert "Needs attention · 3" in text and "Healthy · 3" in text
    assert "broken: the last 4 runs failed" in text
    assert "drifting: 0.78 this week, 0.97 the week before (down 0.19)" in text
    assert "average score 0.30 is below the flag threshold 0.70" in text
    assert "no runs in the last 7 days" in text  # legacy-migrate
    # the latest three failures, newest first, redacted at display time
    again = text.index("kubectl apply: forbidden (again)")
    assert again < text.index("kubectl apply: forbidden", again + 1) < text.index("rollback failed")
    assert "timeout waiting" not in text
    assert "hunter2" not in page and "password=[REDACTED]" in text
    # what the vault says is text, never markup
    assert EVIL in text and EVIL_NOTE in text
    assert not [tag for tag, _ in dom.elements if tag in ("script", "img", "iframe", "link")]
    assert not [a for _, attrs in dom.elements for a in attrs if a.startswith("on")]
    assert html.escape(EVIL_NOTE) in page


def test_chromium_renders_the_report_and_nothing_leaves_the_page(report: Path, tmp_path: Path) -> None:
    with serving({"/report.html": report.read_bytes()}) as server, browser(server) as b:
        url = f"http://127.0.0.1:{server.server_address[1]}/report.html"
        seen = visit(b, url)
    assert seen.requests == [url]  # the page asked for nothing but itself
    assert [r for r in server.seen if r.startswith("GET /")] == ["GET /report.html"]
    (tmp_path / "report.png").write_bytes(seen.png)

    dom = Dom(seen.dom)
    assert [c["data-skill"] for c in dom.cards()] == EXPECTED_ORDER
    paths = card_paths(seen.dom)
    drawn = [*EXPECTED_ORDER[:4], "review-diff"]
    for skill in drawn:
        (d,) = paths[skill]
        assert d.startswith("M") and len(d.split("L")) >= 3, (skill, d)
        assert seen.trend_lengths[skill] > 100, skill  # laid out as a line, in SVG units
    assert paths["legacy-migrate"] == [] and seen.trend_lengths["legacy-migrate"] == 0
    assert not [tag for tag, _ in dom.elements if tag in ("script", "img", "iframe", "link")]
    urls = [v for _, attrs in dom.elements for k, v in attrs.items()
            if k in ("src", "href", "xlink:href", "action", "srcset", "poster", "data")]
    assert urls == []
    csp = [a["content"] for t, a in dom.elements
           if t == "meta" and a.get("http-equiv", "").lower() == "content-security-policy"]
    assert csp and "default-src 'none'" in csp[0] and "img-src 'none'" in csp[0]
    assert "url(" not in seen.dom and "@import" not in seen.dom

    width, height, rows, bpp = png_pixels(seen.png)
    assert (width, height) == (WIDTH, HEIGHT)
    counts = colour_counts(rows, bpp)
    assert len(counts) > 50, "the screenshot is nearly blank"
    assert max(counts.values()) < 0.9 * width * height, "one colour covers nearly the whole page"
    assert near(counts, FLAG_RGB) > 2000, "the flag colour is missing"  # the flagged cards' rule
    assert near(counts, LINE_RGB) > 500, "no trend line was drawn"


def test_the_harness_sees_a_leak_and_the_policy_stops_it() -> None:
    """The harness itself: a page that loads an image and a stylesheet from elsewhere
    is seen doing so, in its tab and at the proxy; under the report's policy the same
    page's loads never reach the network (Chromium refuses them before sending)."""
    from gitvault.runs.dashboard import content_security_policy

    leaky = ('<!doctype html><html><head>{meta}<link rel="stylesheet" '
             'href="http://fonts.example.invalid/x.css"></head><body>'
             '<img src="http://images.example.invalid/pixel.png">hi</body></html>')
    meta = f'<meta http-equiv="Content-Security-Policy" content="{content_security_policy()}">'
    pages = {"/open.html": leaky.format(meta="").encode(), "/locked.html": leaky.format(meta=meta).encode()}
    outside = {"http://fonts.example.invalid/x.css", "http://images.example.invalid/pixel.png"}
    with serving(pages) as server, browser(server) as b:
        base = f"http://127.0.0.1:{server.server_address[1]}"
        opened = visit(b, f"{base}/open.html", 400, 300)
        reached_open = [r for r in server.seen if "example.invalid" in r]
        server.seen.clear()
        visit(b, f"{base}/locked.html", 400, 300)
        reached_locked = [r for r in server.seen if "example.invalid" in r]
    assert opened.requests[0] == f"{base}/open.html" and outside <= set(opened.requests)
    assert sorted(reached_open) == sorted(f"GET {u}" for u in outside)
    assert reached_locked == []
