"""The verification gate (SPEC §5), in order: static scan, the tests in the sandbox,
the example in the sandbox. Pure of vault state: the caller appends the gate record
(:func:`gate_record`) and stores or quarantines the skill.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from gitvault.core.clock import parse_iso
from gitvault.gate import sandbox
from gitvault.gate.scan import EXAMPLE, FILES, SKILL, TESTS, Reason, folder_reasons, scan_files

__all__ = ["FILES", "GateResult", "Reason", "evidence_hash", "find_evidence", "gate_record",
           "trusted_hashes", "verify"]

_FRAME = re.compile(r'File "(?:[^"]*/)?(skill\.py|test_skill\.py|example\.py)", line (\d+)')
_EXC = re.compile(r"^([A-Za-z_][\w.]*)(?::|$)")


@dataclass
class GateResult:
    passed: bool
    reasons: list[Reason]
    sandbox: str  # "bwrap" | "unshare" | "none"
    sha256: str
    seconds: float = 0.0
    steps: list[str] = field(default_factory=list)  # the steps that ran

    def messages(self) -> list[str]:
        return [str(r) for r in self.reasons]


def evidence_hash(files: dict[str, str]) -> str:
    """One sha256 over the three files' names and contents (the gate's evidence). The
    contents are the files' bytes (undecodable ones kept as surrogate escapes)."""
    digest = hashlib.sha256()
    for name in FILES:
        data = (files.get(name) or "").encode("utf-8", "surrogateescape")
        digest.update(name.encode() + b"\0" + str(len(data)).encode() + b"\0" + data)
    return digest.hexdigest()


def _failure(step: str, run: sandbox.Run, limits: sandbox.Limits) -> Reason:
    """A clear reason for a failed run: the rule, the file and line, what happened."""
    rule = "tests" if step == TESTS else "example"
    if run.timed_out:
        return Reason("timeout", step, 0, f"still running after {limits.timeout_s} s "
                      "(verify.timeout_s); its process group was killed")
    frames = _FRAME.findall(run.stderr)
    file, line = (frames[-1][0], int(frames[-1][1])) if frames else (step, 0)
    last = [ln.strip() for ln in run.stderr.splitlines() if ln.strip()]
    if run.returncode in (-9, -24) or (last and last[-1].startswith("MemoryError")):
        if last and last[-1].startswith("MemoryError"):
            return Reason("memory", file, line, f"ran out of memory (limit {limits.memory_mb} MB, "
                          "sandbox.memory_mb)")
        return Reason("cpu", file, line, f"killed by the CPU limit ({limits.timeout_s + 1} s)")
    detail = last[-1][:300] if last else f"exit status {run.returncode}"
    if run.returncode == 126 and not frames:
        return Reason("sandbox", step, 0, f"could not start: {detail}")
    what = "a test failed" if rule == "tests" else "the example failed"
    if detail.startswith("AssertionError") and detail == "AssertionError":
        detail = "AssertionError (an assert is false)"
    return Reason(rule, file, line, f"{what}: {detail}")


def run_script(files: dict[str, str], script: str, limits: sandbox.Limits, method: str
               ) -> Reason | None:
    """Run one of the files in the sandbox; None if it exits cleanly, else why not."""
    folder = sandbox.prepare({name: files.get(name, "") for name in FILES})
    try:
        try:
            run = sandbox.run(folder, script, limits, method)
        except OSError as exc:
            return Reason("sandbox", script, 0, f"could not start the {method} sandbox: {exc}")
        return None if run.ok else _failure(script, run, limits)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def verify(files: dict[str, str], verify_cfg: Any, sandbox_cfg: Any, *,
           unsafe_no_sandbox: bool = False, folder: Any = None) -> GateResult:
    """Run the gate on the three files (SPEC §5 order). Never raises on bad code.
    ``folder`` is the skill folder as it will be shipped (anything else in it is refused)."""
    started = time.monotonic()
    digest = evidence_hash(files)
    method = sandbox.detect()
    label = method or "none"
    reasons = folder_reasons(folder) if folder is not None else []
    reasons += scan_files(files, verify_cfg.banned, verify_cfg.allowed_packages,
                          verify_cfg.max_body_lines)
    steps = ["scan"]
    if not reasons and method is None and not unsafe_no_sandbox:
        reasons = [Reason("sandbox", SKILL, 0,
                          "no usable sandbox here (bubblewrap, or unshare with user "
                          "namespaces); install bubblewrap, or pass --unsafe-no-sandbox to "
                          "run the tests without one (recorded)")]
    if not reasons:
        limits = sandbox.Limits.from_config(verify_cfg, sandbox_cfg)
        for script in (TESTS, EXAMPLE):
            steps.append(script)
            failed = run_script(files, script, limits, method or "none")
            if failed is not None:
                reasons = [failed]
                break
    return GateResult(passed=not reasons, reasons=reasons, sandbox=label, sha256=digest,
                      seconds=time.monotonic() - started, steps=steps)


def gate_record(op: str, result: GateResult, skill: str, version: int, urn: str) -> dict[str, Any]:
    """A ``gate`` record: references only, never code or program output (SPEC §3)."""
    return {"op": op, "skill": skill, "version": version, "urn": urn, "sha256": result.sha256,
            "passed": result.passed, "reasons": [r.ref for r in result.reasons],
            "sandbox": result.sandbox}


def _passing(record: dict[str, Any], node: str) -> bool:
    """A passing gate verdict this node produced itself (records of other nodes arrive
    with every sync and could be forged: they are never evidence)."""
    return (record.get("passed") is True and record.get("op") in ("verify", "store")
            and record.get("node") == node and isinstance(record.get("sha256"), str))


def trusted_hashes(records: Iterable[dict[str, Any]], node: str) -> set[str]:
    """Every file set (evidence sha256) this node's own gate passed (SPEC §1 Trust)."""
    return {record["sha256"] for record in records if _passing(record, node)}


def find_evidence(records: Iterable[dict[str, Any]], sha256: str, moment: datetime,
                  max_age_s: int, *, node: str, allow_unsandboxed: bool = False
                  ) -> dict[str, Any] | None:
    """The newest passing gate record of ``node`` for exactly ``sha256`` no older than
    ``max_age_s``."""
    best: dict[str, Any] | None = None
    for record in records:
        if record.get("sha256") != sha256 or not _passing(record, node):
            continue
        if record.get("sandbox") == "none" and not allow_unsandboxed:
            continue
        try:
            age = (moment - parse_iso(str(record.get("ts")))).total_seconds()
        except (ValueError, TypeError):
            continue
        if -60 <= age <= max_age_s and (best is None or str(record["ts"]) > str(best["ts"])):
            best = record
    return best
