from __future__ import annotations

import json
from pathlib import Path

import pytest

SHARED = Path(__file__).resolve().parents[2] / "shared" / "datasets"


def shared_dataset(name: str) -> Path:
    path = SHARED / name
    if not path.exists():
        pytest.skip(f"shared dataset {name} not available at {path}")
    return path


def write_files(root: Path, files: dict[str, str | bytes]) -> Path:
    for rel, content in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            p.write_bytes(content)
        else:
            p.write_text(content, encoding="utf-8", newline="")
    return root


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


GUIDE = """---
title: Billing guide
owner: payments
---
Intro text before any heading.

# Billing

Overview of billing.

## Refunds {#refunds}

Refunds are issued within 14 days of a cancelled order.

### Partial refunds

A partial refund returns part of the order amount.

## Invoices

Invoices are sent monthly by email.

```python
# Not a heading
print("hi")
```

## Invoices

A second section with the same title.
"""

FAQ = """Frequently asked
================

How do I reset my password?

Accounts
--------

Account deletion is permanent after thirty days.
"""


@pytest.fixture
def md_corpus(tmp_path: Path) -> Path:
    return write_files(tmp_path / "corpus", {"guide/billing.md": GUIDE, "faq.md": FAQ, "notes.txt": "plain text notes about shipping"})


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory, monkeypatch):
    """Tests never write the embedding cache into the working tree."""
    monkeypatch.setenv("RAGTUNE_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
