"""The gate's OS sandbox (SPEC §5 steps 2-3), tested with code that bypasses the static
scan: each payload builds its dangerous names from strings at run time, so only the
sandbox stands between it and the machine. Every escape must fail with a clear reason."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from gitvault.core.config import defaults
from gitvault.gate import sandbox
from gitvault.gate import verify as gate
from gitvault.gate.scan import scan_files

SKILL = "def add(a, b):\n    return a + b\n"
EXAMPLE = "from skill import *\nprint(add(1, 2))\n"
LIMITS = sandbox.Limits(memory_mb=256, file_size_mb=1, open_files=32, timeout_s=2)
# Reaches any module without naming it: what the scan exists to stop.
SNEAK = "m = getattr(__builtins__, '__im' + 'port__') if isinstance(__builtins__, type(vars)) " \
        "else __builtins__['__im' + 'port__']\n"


@pytest.fixture(scope="module")
def method() -> str:
    found = sandbox.detect()
    assert found is not None, "no usable sandbox: install bubblewrap (apt-get install bubblewrap)"
    return found


def run(method: str, test_body: str, limits: sandbox.Limits = LIMITS) -> gate.Reason | None:
    files = {"skill.py": SKILL, "test_skill.py": "from skill import *\n" + test_body,
             "example.py": EXAMPLE}
    return gate.run_script(files, "test_skill.py", limits, method)


def test_a_good_test_passes_and_the_skill_is_not_root(method: str) -> None:
    assert run(method, "import os\nassert os.getuid() != 0 and os.geteuid() != 0\n"
                       "assert os.getgid() != 0\nassert add(1, 2) == 3\n") is None


def test_the_payloads_would_not_pass_the_scan() -> None:
    files = {"skill.py": SKILL, "test_skill.py": SNEAK + "assert True\n", "example.py": EXAMPLE}
    assert scan_files(files, defaults().verify.banned)


def test_cannot_start_a_process(method: str) -> None:
    reason = run(method, SNEAK + "sp = m('sub' + 'process')\nsp.run(['/bin/true'], check=True)\n")
    assert reason is not None and reason.rule == "tests"
    assert reason.file == "test_skill.py" and reason.line == 4
    assert "Resource temporarily unavailable" in reason.message or "Errno" in reason.message


def test_cannot_fork(method: str) -> None:
    reason = run(method, SNEAK + "o = m('o' + 's')\npid = getattr(o, 'fo' + 'rk')()\n")
    assert reason is not None and "Resource temporarily unavailable" in reason.message


def test_cannot_open_a_network_connection(method: str) -> None:
    reason = run(method, SNEAK + "so = m('soc' + 'ket')\n"
                                 "so.create_connection(('1.1.1.1', 53), timeout=1)\n")
    assert reason is not None and reason.rule == "tests"
    assert "Network is unreachable" in reason.message


def test_cannot_write_outside_its_folder(method: str, tmp_path: Path) -> None:
    target = tmp_path / "escaped.txt"
    reason = run(method, f"open({str(target)!r}, 'w').write('x')\n")
    assert reason is not None and reason.line == 2
    assert not target.exists()
    for path in ("/tmp/gitvault-escape", "/usr/gitvault-escape", os.getcwd() + "/escape"):
        assert run(method, f"open({path!r}, 'w').write('x')\n") is not None
        assert not Path(path).exists()


def test_may_write_in_its_own_folder(method: str) -> None:
    assert run(method, "open('scratch.txt', 'w').write('x')\n"
                       "assert open('scratch.txt').read() == 'x'\n") is None


def test_cannot_read_the_users_home(method: str) -> None:
    home = Path.home()
    secret = home / ".gitvault-test-secret"
    secret.write_text("s3cret")
    try:
        reason = run(method, f"print(open({str(secret)!r}).read())\n")
        assert reason is not None and ("No such file" in reason.message
                                       or "Permission denied" in reason.message)
        assert run(method, f"import os\nassert not os.path.exists({str(secret)!r})\n") is None
    finally:
        secret.unlink()


def test_environment_is_scrubbed(method: str) -> None:
    os.environ["GITVAULT_TEST_TOKEN"] = "leak"
    try:
        assert run(method, "import os\nassert 'GITVAULT_TEST_TOKEN' not in os.environ\n"
                           "assert os.environ['HOME'] == os.getcwd()\n") is None
    finally:
        del os.environ["GITVAULT_TEST_TOKEN"]


def test_cannot_outlive_its_timeout(method: str) -> None:
    started = time.monotonic()
    reason = run(method, "import time\nwhile True:\n    time.sleep(0.1)\n")
    assert time.monotonic() - started < LIMITS.timeout_s + 3
    assert reason is not None and reason.rule == "timeout"
    assert "still running after 2 s" in str(reason) and "killed" in str(reason)


def test_busy_loop_is_stopped(method: str) -> None:
    reason = run(method, "while True:\n    pass\n")
    assert reason is not None and reason.rule in ("timeout", "cpu")


def test_cannot_exhaust_memory(method: str) -> None:
    reason = run(method, "block = bytearray(1024 * 1024 * 1024)\n")
    assert reason is not None and reason.rule == "memory" and reason.line == 2
    assert "limit 256 MB" in reason.message


def test_cannot_write_a_huge_file(method: str) -> None:
    reason = run(method, "open('big', 'wb').write(b'x' * (4 * 1024 * 1024))\n")
    assert reason is not None
    assert "File too large" in reason.message or reason.rule == "cpu"


def test_the_example_runs_the_same_way(method: str) -> None:
    files = {"skill.py": SKILL, "test_skill.py": "from skill import *\nassert add(1, 1) == 2\n",
             "example.py": "from skill import *\nraise SystemExit(add(1, 2))\n"}
    assert gate.run_script(files, "example.py", LIMITS, method) == \
        gate.Reason("example", "example.py", 0, "the example failed: exit status 3")


def test_verify_records_sandbox_and_evidence(method: str) -> None:
    cfg = defaults()
    files = {"skill.py": SKILL, "test_skill.py": "from skill import *\nassert add(1, 2) == 3\n",
             "example.py": EXAMPLE}
    result = gate.verify(files, cfg.verify, cfg.sandbox)
    assert result.passed and result.sandbox == method and result.steps == [
        "scan", "test_skill.py", "example.py"]
    assert result.sha256 == gate.evidence_hash(dict(reversed(files.items())))
    assert result.sha256 != gate.evidence_hash({**files, "example.py": EXAMPLE + "\n"})
