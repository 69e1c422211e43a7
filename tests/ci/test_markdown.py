"""Untrusted text in GitHub markdown: code spans that GitHub's renderer leaves inert."""

from __future__ import annotations

import pytest

from gitvault.ci.markdown import cell, code, plain, table
from tests.ci.helpers import TOKEN, render


@pytest.mark.parametrize("text, html", [
    ("deploy", "<code>deploy</code>"),
    ("a `tick` b", "<code>a `tick` b</code>"),
    ("``x``", "<code>``x``</code>"),
    ("<script>alert(1)</script>", "<code>&lt;script&gt;alert(1)&lt;/script&gt;</code>"),
    ("[a](http://evil) www.evil.example @octocat #1", "<code>[a](http://evil) www.evil.example "
                                                      "@octocat #1</code>"),
    ("line one\nline two\r\n\u202eevil", "<code>line one line two evil</code>"),
])
def test_code_spans_render_as_the_text(text: str, html: str) -> None:
    assert render(code(text)) == f"<p>{html}</p>\n"


def test_secrets_are_redacted_and_long_text_is_cut() -> None:
    assert TOKEN not in code(f"push with {TOKEN}") and "[REDACTED]" in code(TOKEN)
    assert plain("x" * 500, 20) == "x" * 19 + "…"
    assert code("   ") == "(empty)"


def test_a_pipe_in_a_cell_keeps_the_columns() -> None:
    md = table(["name", "note"], [[cell("a|b"), cell("c \\| d")]])
    html = render(md)
    assert html.count("<td>") == 2
    assert "<td><code>a|b</code></td>" in html and "<td><code>c \\| d</code></td>" in html
