"""Secrets never reach the log files; ordinary prose passes unchanged."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gitvault.core.records import append_record
from gitvault.core.redact import redact, redact_record

TS = "2026-01-01T00:00:00.000Z"
ALNUM36 = "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
PEM_BODY = "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gunVTLw7on"

# (kind, text, secret that must not reach the disk, redact(text) exactly)
SECRETS = [
    ("github classic", f"pushed with ghp_{ALNUM36} ok", f"ghp_{ALNUM36}",
     "pushed with [REDACTED] ok"),
    ("github oauth", f"gho_{ALNUM36}", f"gho_{ALNUM36}", "[REDACTED]"),
    ("github user-to-server", f"(ghu_{ALNUM36})", f"ghu_{ALNUM36}", "([REDACTED])"),
    ("github server", f"GH=ghs_{ALNUM36}", f"ghs_{ALNUM36}", "GH=[REDACTED]"),
    ("github refresh", f"ghr_{ALNUM36}xyz", f"ghr_{ALNUM36}xyz", "[REDACTED]"),
    ("github fine-grained", "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCD",
     "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCD", "[REDACTED]"),
    ("openai", "key sk-Ab12Cd34Ef56Gh78Ij90Kl12Mn34Op56Qr78St90Uv12 set",
     "sk-Ab12Cd34Ef56Gh78Ij90Kl12Mn34Op56Qr78St90Uv12", "key [REDACTED] set"),
    ("openai project", "OPENAI sk-proj-Zx9_Yw8-Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0Fe",
     "sk-proj-Zx9_Yw8-Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0Fe", "OPENAI [REDACTED]"),
    ("anthropic", "using sk-ant-api03-Q1w2E3r4T5y6U7i8O9p0-AsDfGhJkL_zXcVbNm-AA now",
     "sk-ant-api03-Q1w2E3r4T5y6U7i8O9p0-AsDfGhJkL_zXcVbNm-AA", "using [REDACTED] now"),
    ("aws access key id", "id AKIAIOSFODNN7EXAMPLE.", "AKIAIOSFODNN7EXAMPLE", "id [REDACTED]."),
    ("aws session key id", "ASIAY34FZKBOKMUTVV7A", "ASIAY34FZKBOKMUTVV7A", "[REDACTED]"),
    ("aws secret", "aws_secret_access_key=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
     "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "aws_secret_access_key=[REDACTED]"),
    ("aws secret spaced", "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCY",
     "wJalrXUtnFEMI/K7MDENG/bPxRfiCY", "aws_secret_access_key = [REDACTED]"),
    ("slack bot", "xoxb-1234567890-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
     "xoxb-1234567890-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx", "[REDACTED]"),
    ("slack user", "t=xoxp-2222222222-3333333333-abcdefabcdef", "xoxp-2222222222-3333333333",
     "t=[REDACTED]"),
    ("slack webhook",
     "post to https://hooks.slack.com/services/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 now",
     "T0ABCD123/B0EFGH456/Xy7Zq9Lm3Np5Rs8Tv1Wx4Yz6",
     "post to https://hooks.slack.com/services/[REDACTED] now"),
    ("google api key", "maps AIzaSyDdI0hCZtE6vySjMm-WEfRq3CPzqKqqsHI end",
     "AIzaSyDdI0hCZtE6vySjMm-WEfRq3CPzqKqqsHI", "maps [REDACTED] end"),
    ("google oauth", "ya29.a0AfH6SMBx-3kZ9qLrT_7vYwXcVbNmAsDfGh", "a0AfH6SMBx-3kZ9qLrT_7vYwXcVbNmAsDfGh",
     "[REDACTED]"),
    ("bearer", "curl -H 'Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl'",
     "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl",
     "curl -H 'Authorization: Bearer [REDACTED]'"),
    ("bearer alone", "sent bearer 8f14e45fceea167a5a36dedd4bea2543 upstream",
     "8f14e45fceea167a5a36dedd4bea2543", "sent bearer [REDACTED] upstream"),
    ("basic auth header", "Authorization: Basic dXNlcjpwYXNzd29yZA==", "dXNlcjpwYXNzd29yZA==",
     "Authorization: Basic [REDACTED]"),
    ("pem block", f"key:\n-----BEGIN RSA PRIVATE KEY-----\n{PEM_BODY}\n-----END RSA PRIVATE KEY-----\ndone",
     PEM_BODY, "key:\n[REDACTED]\ndone"),
    ("pem unterminated", f"oops -----BEGIN OPENSSH PRIVATE KEY-----\n{PEM_BODY}\nb3BlbnNzaC1rZXk",
     "b3BlbnNzaC1rZXk", "oops [REDACTED]"),
    ("pem encrypted pkcs8",
     f"-----BEGIN ENCRYPTED PRIVATE KEY-----\n{PEM_BODY}\n-----END ENCRYPTED PRIVATE KEY-----",
     PEM_BODY, "[REDACTED]"),
    ("url password", "DATABASE_URL=postgres://app:S3cr3t-P4ss@db.internal:5432/prod",
     "S3cr3t-P4ss", "DATABASE_URL=postgres://app:[REDACTED]@db.internal:5432/prod"),
    ("url password with @", "mongodb+srv://admin:p@ss:w0rd@cluster0.example.net/test",
     "p@ss:w0rd", "mongodb+srv://admin:[REDACTED]@cluster0.example.net/test"),
    ("url password no user", "redis://:hunter2@localhost:6379", "hunter2",
     "redis://:[REDACTED]@localhost:6379"),
    ("password=", "login password=hunter2 then", "hunter2", "login password=[REDACTED] then"),
    ("PASSWORD env", "PASSWORD=Tr0ub4dor3 ./run", "Tr0ub4dor3", "PASSWORD=[REDACTED] ./run"),
    ("passwd colon", "passwd: correcthorse", "correcthorse", "passwd: [REDACTED]"),
    ("pwd", "DB_PWD=x9Yz42", "x9Yz42", "DB_PWD=[REDACTED]"),
    ("secret", "secret=s3cr3t-value", "s3cr3t-value", "secret=[REDACTED]"),
    ("token", "GITHUB_TOKEN=abc123def456", "abc123def456", "GITHUB_TOKEN=[REDACTED]"),
    ("token in query", "GET https://api.example.com/v1?token=q1w2e3r4&page=2", "q1w2e3r4",
     "GET https://api.example.com/v1?token=[REDACTED]&page=2"),
    ("api_key", "api_key=ZXCVBNM123", "ZXCVBNM123", "api_key=[REDACTED]"),
    ("apikey", "apikey: 0f0f0f0f0f", "0f0f0f0f0f", "apikey: [REDACTED]"),
    ("api-key header", "X-Api-Key: 77aa88bb99cc", "77aa88bb99cc", "X-Api-Key: [REDACTED]"),
    ("apiKey camel", '{"apiKey":"camelSecret1"}', "camelSecret1", '{"apiKey":"[REDACTED]"}'),
    ("access_key", "access_key = 'AbCdEf123456'", "AbCdEf123456", "access_key = '[REDACTED]'"),
    ("private_key", 'private_key: "deadbeefcafebabe"', "deadbeefcafebabe",
     'private_key: "[REDACTED]"'),
    ("client_secret json", '{"client_id": "app", "client_secret": "Zm9vYmFy secret words"}',
     "Zm9vYmFy secret words", '{"client_id": "app", "client_secret": "[REDACTED]"}'),
    ("auth", "auth=Zk9sLmxp", "Zk9sLmxp", "auth=[REDACTED]"),
    ("escaped quote in value", r'password: "a\"b-c"', r'a\"b-c', 'password: "[REDACTED]"'),
]  # fmt: skip

PROSE = [
    "token budget of 500",
    "the secret is to retry",
    "Use a token budget of 500; max_tokens=500, prompt_tokens: 20, token_count=7",
    "author: Alice",
    "Bearer tokens are a kind of credential",
    "passed 12 tests, 0 failed",
    "see https://example.com/docs?page=2 and http://localhost:8080/api",
    "clone ssh://git@github.com/org/repo.git, mail bob@example.com",
    "the key insight: cache the index",
    "auth: failed after 3 tries",
    "password_file=/etc/app/pass.txt",
    "risk-free tasks with sk-learn in Asia",
    "secretary=bob, tokenizer=gpt2",
    "GITHUB_TOKEN is not set",
    "2026-01-01T00:00:00.000Z deploy-staging success 0.9",
    "café ☕ naïve — unicode stays",
    "",
]


def read_disk(tmp_path: Path, record: dict[str, object]) -> bytes:
    path = tmp_path / "logs" / "runs" / "n.jsonl"
    append_record(path, record)
    return path.read_bytes()


@pytest.mark.parametrize(("kind", "text", "secret", "expected"), SECRETS, ids=[s[0] for s in SECRETS])
def test_secret_is_redacted_on_disk(tmp_path: Path, kind: str, text: str, secret: str, expected: str) -> None:
    data = read_disk(tmp_path, {"ts": TS, "notes": text})
    assert secret.encode() not in data
    assert json.dumps(secret)[1:-1].encode() not in data  # nor in its JSON spelling
    assert b"[REDACTED]" in data
    assert json.loads(data)["notes"] == expected


@pytest.mark.parametrize(("kind", "text", "secret", "expected"), SECRETS, ids=[s[0] for s in SECRETS])
def test_redact_keeps_everything_but_the_secret(kind: str, text: str, secret: str, expected: str) -> None:
    assert redact(text) == expected
    assert redact(expected) == expected  # redacting twice changes nothing


@pytest.mark.parametrize("text", PROSE)
def test_prose_without_secrets_is_unchanged(tmp_path: Path, text: str) -> None:
    assert redact(text) == text
    data = read_disk(tmp_path, {"ts": TS, "notes": text})
    assert json.loads(data)["notes"] == text
    assert b"[REDACTED]" not in data


def test_several_secrets_in_one_text_are_all_redacted() -> None:
    text = (
        f"step 1: export GITHUB_TOKEN=ghp_{ALNUM36}\n"
        "step 2: psql postgres://ops:pa55word@db/prod\n"
        "step 3: curl -H 'Authorization: Bearer abc.def.1234567890' https://api\n"
        "step 4: done in 3s, token budget of 500 kept"
    )
    assert redact(text) == (
        "step 1: export GITHUB_TOKEN=[REDACTED]\n"
        "step 2: psql postgres://ops:[REDACTED]@db/prod\n"
        "step 3: curl -H 'Authorization: Bearer [REDACTED]' https://api\n"
        "step 4: done in 3s, token budget of 500 kept"
    )


def test_redact_record_walks_nested_values_and_leaves_keys_and_other_types() -> None:
    record = {
        "ts": TS,
        "score": 0.5,
        "ok": True,
        "none": None,
        "notes": f"used ghp_{ALNUM36}",
        "context": {
            "env": ["HOME=/root", "API_KEY=abcdef123456", 42],
            "deep": [{"cmd": "mysql -u root --password=rootpw"}],
        },
        "password": "hunter2",  # a field named like a secret is redacted whole
        "auth": "failed",  # ... unless its value is a plain state word
        "max_tokens": "500",
        "token_count": 12,
        f"ghp_{ALNUM36}": "keys are never touched",
    }
    original = json.loads(json.dumps(record))
    redacted = redact_record(record)
    assert record == original  # the input is not modified
    assert redacted is not record
    assert redacted == {
        "ts": TS,
        "score": 0.5,
        "ok": True,
        "none": None,
        "notes": "used [REDACTED]",
        "context": {
            "env": ["HOME=/root", "API_KEY=[REDACTED]", 42],
            "deep": [{"cmd": "mysql -u root --password=[REDACTED]"}],
        },
        "password": "[REDACTED]",
        "auth": "failed",
        "max_tokens": "500",
        "token_count": 12,
        f"ghp_{ALNUM36}": "keys are never touched",
    }


def test_append_record_returns_what_it_wrote(tmp_path: Path) -> None:
    path = tmp_path / "n.jsonl"
    written = append_record(path, {"ts": TS, "notes": "token=abc123", "n": [1, {"pwd": "x1"}]})
    assert written == {"ts": TS, "notes": "token=[REDACTED]", "n": [1, {"pwd": "[REDACTED]"}]}
    assert json.loads(path.read_bytes()) == written
