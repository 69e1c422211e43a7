"""Timestamps and rounding of the runs analysis, checked against slower references:
Python's own ISO parser, and JavaScript's toFixed run by node."""

from __future__ import annotations

import json
import random
import shutil
import subprocess

from gitvault.health import fixed3
from gitvault.runlog import _parse_ms, ts_ms


def test_cached_timestamp_path_equals_the_full_parser() -> None:
    rng = random.Random(5)
    for _ in range(20_000):
        ms = rng.randrange(0, 4_102_444_800_000)  # 1970 .. 2100
        from datetime import datetime, timezone

        moment = datetime.fromtimestamp(ms / 1000, timezone.utc)
        text = moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"
        assert ts_ms(text) == _parse_ms(text) == ms, text
    for bad in ("2026-11-30T24:00:00.000Z", "2026-11-30T12:60:00.000Z", "2026-02-29T12:00:00.000Z",
                "2026-11-30T1a:00:00.000Z", "2026-11-30T12:00:6x.000Z", "yesterday", ""):
        assert ts_ms(bad) is None, bad


def test_fixed3_rounds_like_javascript_tofixed() -> None:
    node = shutil.which("node")
    assert node, "node is needed (.ci/run installs it)"
    rng = random.Random(9)
    values = [0.0625, 0.8125, 1.0005, 0.0005, 2.5e-4, 0.1 + 0.2, -0.0004, 0.9995, 1 / 3]
    values += [round(rng.random(), rng.randrange(2, 6)) for _ in range(300)]
    values += [sum(rng.randrange(0, 101) / 100 for _ in range(n)) / n for n in range(1, 200)]
    script = "const v = JSON.parse(require('fs').readFileSync(0, 'utf8'));" \
             "console.log(JSON.stringify(v.map(x => +x.toFixed(3))));"
    out = subprocess.run([node, "-e", script], input=json.dumps(values), capture_output=True,
                         text=True, check=True).stdout
    assert [fixed3(v) for v in values] == json.loads(out)
