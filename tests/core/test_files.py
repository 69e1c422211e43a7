"""Text files: UTF-8 or a named error, atomic replacement, where a parse failed."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from gitvault.core import config
from gitvault.core.files import decode_text, read_text, write_atomic
from gitvault.errors import ConfigError, InvalidInput
from gitvault.queue.dag import parse_dag
from gitvault.skills.model import parse_skill, parse_skill_bytes


def test_decode_text_names_the_source_and_the_bad_byte() -> None:
    assert decode_text("é".encode(), "x.md") == "é"
    with pytest.raises(InvalidInput, match=r"^x\.md: not UTF-8 text \(bad byte at offset 3\)$"):
        decode_text(b"abc\xff", "x.md")
    with pytest.raises(ConfigError, match=r"^g\.yaml: not UTF-8 text \(bad byte at offset 0\)$"):
        decode_text(b"\xe9", "g.yaml", ConfigError)


def test_every_reader_says_the_same_about_bytes_that_are_not_utf8() -> None:
    expected = "not UTF-8 text (bad byte at offset 5)"
    for parse in (lambda: parse_dag(b"dagId\xff", "d.yaml"),
                  lambda: parse_skill_bytes(b"---\nn\xff", "S.md"),
                  lambda: config.parse_yaml(b"a: 12\xff", "g.yaml")):
        with pytest.raises((InvalidInput, ConfigError)) as caught:
            parse()
        assert str(caught.value).endswith(expected)


def test_read_text_names_what_is_wrong(tmp_path: Path) -> None:
    (tmp_path / "ok.md").write_bytes(b"text\n")
    (tmp_path / "bad.md").write_bytes(b"\x80")
    assert read_text(tmp_path / "ok.md") == "text\n"
    with pytest.raises(InvalidInput, match=r"bad\.md: not UTF-8 text"):
        read_text(tmp_path / "bad.md")
    with pytest.raises(InvalidInput, match=r"missing\.md: no such file"):
        read_text(tmp_path / "missing.md")
    with pytest.raises(InvalidInput, match="is a folder, not a file"):
        read_text(tmp_path)


def test_write_atomic_replaces_the_file_and_leaves_no_temp_file(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "f.txt"
    write_atomic(path, "one\n")
    write_atomic(path, "two\n", mode=0o755)
    assert path.read_text() == "two\n"
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o755
    assert sorted(p.name for p in path.parent.iterdir()) == ["f.txt"]


def test_yaml_errors_name_file_line_and_column() -> None:
    with pytest.raises(ConfigError, match=r"^g\.yaml: invalid YAML at line 2, column 4: mapping values"):
        config.parse_yaml(b"a: 1\nb: : c\n", "g.yaml")
    with pytest.raises(InvalidInput, match=r"^S\.md: invalid YAML front-matter at line 3, "
                                           r"column 6: mapping values are not allowed"):
        parse_skill("---\nname: a\n  bad: : x\ndescription: d\n---\n", "S.md")
