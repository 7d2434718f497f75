"""Shared test helpers and fixture data, importable as ``tests.helpers`` under plain ``pytest``
(pyproject's ``[tool.pytest.ini_options] pythonpath = ["."]`` puts the repository root on ``sys.path``).

Fixtures live in ``tests/conftest.py``; this module holds plain functions and constants, so test files
import them explicitly instead of importing ``conftest`` or each other.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

SHARED = Path(__file__).resolve().parents[2] / "shared" / "datasets"


def shared_dataset(name: str) -> Path:
    """The folder of a shared dataset, or skip the calling test when it is absent."""
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


def golden_rows(questions) -> list[dict]:
    """Golden-set rows from ``(id, question, relevant anchors)`` triples."""
    return [{"id": i, "q": q, "relevant": r} for i, q, r in questions]


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

# A small help centre: the store and server tests build indexes over it.
DOCS = {
    "billing/refunds.md": "# Refunds\n\nRefunds are paid within fourteen days of a cancelled order.\n\n## Partial refunds\n\nPart of the order amount is returned when only some items come back.\n",
    "billing/invoices.md": "# Invoices\n\nInvoices are emailed monthly. Download older invoices from the account page.\n",
    "account/password.md": "# Passwords\n\nReset a forgotten password with the link on the sign-in page.\n\n## Two-factor\n\nTwo-factor codes come from an authenticator app.\n",
    "account/delete.md": "# Deleting an account\n\nAccount deletion is permanent after thirty days.\n",
    "shipping.md": "# Shipping\n\nParcels ship within two days. Express shipping arrives the next day.\n",
}
QUESTIONS = [
    ("q1", "how long do refunds take", ["billing/refunds.md#refunds"]),
    ("q2", "return part of an order", ["billing/refunds.md#partial-refunds"]),
    ("q3", "where are old invoices", ["billing/invoices.md"]),
    ("q4", "forgot my password", ["account/password.md#passwords"]),
    ("q5", "authenticator codes", ["account/password.md#two-factor"]),
    ("q6", "is deleting my account permanent", ["account/delete.md"]),
    ("q7", "next day delivery", ["shipping.md"]),
    ("q8", "do you sell gift cards", []),
]
