"""Shared test helpers and fixture data, importable as ``tests.helpers`` under plain ``pytest``
(pyproject's ``[tool.pytest.ini_options] pythonpath = ["."]`` puts the repository root on ``sys.path``).

Fixtures live in ``tests/conftest.py``; this module holds plain functions and constants, so test files
import them explicitly instead of importing ``conftest`` or each other.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

SHARED = Path(__file__).resolve().parents[2] / "shared" / "datasets"


# Debian's chromium for the browser tests (the ``browser`` fixture in conftest.py drives it through Playwright)
CHROMIUM = os.environ.get("RAGTUNE_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]


def shared_dataset(name: str) -> Path:
    """The folder of a shared dataset, or skip the calling test when it is absent."""
    path = SHARED / name
    if not path.exists():
        pytest.skip(f"shared dataset {name} not available at {path}")
    return path


def free_port() -> int:
    """A TCP port nobody listens on now (on 127.0.0.1)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def milvus_lite_server(data_dir: Path) -> Iterator[str]:
    """A real ``milvus-lite server`` on a free loopback port, its URI yielded; skips the test when the milvus
    extra is not installed, fails it when the server does not start within 30 s."""
    pytest.importorskip("pymilvus")
    pytest.importorskip("milvus_lite")
    exe = shutil.which("milvus-lite", path=os.path.dirname(sys.executable))
    if exe is None:
        pytest.skip("the milvus-lite command is not installed")
    port = free_port()
    proc = subprocess.Popen([exe, "server", "--data-dir", str(data_dir), "--host", "127.0.0.1", "--port", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    pytest.fail("milvus-lite server did not start within 30 s")
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


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


def write_beir(root: Path, docs: list[dict], queries: list[dict], qrels: list[tuple[str, str, int]],
               split: str = "test") -> Path:
    """A BEIR-format folder: corpus.jsonl, queries.jsonl and qrels/SPLIT.tsv from (query, doc, grade) triples."""
    write_jsonl(root / "corpus.jsonl", docs)
    write_jsonl(root / "queries.jsonl", queries)
    lines = "".join(f"{q}\t{d}\t{g}\n" for q, d, g in qrels)
    return write_files(root, {f"qrels/{split}.tsv": "query-id\tcorpus-id\tscore\n" + lines})


def random_beir(root: Path, *, seed: int, docs: int, queries: int, vocab: int, doc_words: int,
                max_relevant: int = 5, grades: tuple[int, ...] = (1, 2, 3)) -> Path:
    """A random BEIR folder: documents of ``doc_words`` words from a vocabulary of ``vocab`` words, queries of
    4 words, each with 1..``max_relevant`` relevant documents graded from ``grades``. Deterministic in ``seed``."""
    import random

    rng = random.Random(seed)
    words = [f"w{i}" for i in range(vocab)]
    doc_rows = [{"_id": f"d{i}", "title": "", "text": " ".join(rng.choices(words, k=doc_words))} for i in range(docs)]
    query_rows, qrels = [], []
    for q in range(queries):
        query_rows.append({"_id": f"q{q}", "text": " ".join(rng.choices(words, k=4))})
        qrels += [(f"q{q}", f"d{d}", rng.choice(grades)) for d in rng.sample(range(docs), rng.randint(1, max_relevant))]
    return write_beir(root, doc_rows, query_rows, qrels)


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


# The sweep fixture: a help centre built so that configurations really differ (BM25 only).
#
# - p1..p5 name an appliance that appears only in a document's front-matter title, never in its text: only the
#   heading prefix ("Dishwasher > Loading") puts that word into the index. The other query word appears in a short
#   distractor with a higher term frequency, which wins rank 1 whenever the title word is missing.
# - s1, s2 are answered by one sentence of the long orders.md. Small chunks (8 tokens) isolate that sentence; a long
#   chunk dilutes it (BM25 length normalisation) below a short distractor that repeats one query word (gifts.md,
#   delivery.md). The 40-token window holding both sentences still wins s2 (three matched words) but loses s1; the
#   whole section (56 tokens) loses both.
# - e1..e3 are answered at rank 1 by every configuration; u1 is unanswerable.
#
# recall@1 per configuration (1 = first hit at rank 1), the baseline being fixed size=8 without prefix:
#
#                  p1..p5  s1  s2  e1..e3   wins/ties/losses vs baseline
#   fixed 8         0       1   1   1        (baseline)
#   fixed 8 prefix  1       1   1   1        5/5/0   fixed p1..p5
#   fixed 40 prefix 1       0   1   1        5/4/1   fixed p1..p5, broken s1
#   section prefix  1       0   0   1        5/3/2   fixed p1..p5, broken s1 s2
#   fixed 40        0       0   1   1        0/9/1   broken s1
#   section         0       0   0   1        0/8/2   broken s1 s2
SWEEP_DOCS = {
    "dishwasher.md": "---\ntitle: Dishwasher\n---\n# Loading\n\nPlates face the centre and glasses go on the top rack.\n\n## Detergent\n\nUse one tablet per wash; tablets dissolve in the first rinse.\n",
    "washing-machine.md": "# Washing machine\n\nUse liquid detergent. Tablets and tablets again: never put tablets in the drum, tablets block the filter.\n",
    "fridge.md": "---\ntitle: Fridge\n---\n# Settings\n\nKeep the dial at four degrees.\n\n## Cleaning\n\nWipe the shelves with warm soapy water every month.\n",
    "oven.md": "# Oven\n\nPreheat for ten minutes. The dial sets the temperature; dial, dial and dial again for grill mode.\n",
    "microwave.md": "---\ntitle: Microwave\n---\n# Snacks\n\nLay popcorn bags flat on the turntable.\n",
    "cinema.md": "# Cinema\n\nPopcorn, salted popcorn or sweet popcorn: our popcorn stall opens at six.\n",
    "toaster.md": "---\ntitle: Toaster\n---\n# Care\n\nEmpty the crumb tray every week.\n",
    "vacuum.md": "# Vacuum\n\nThe vacuum lifts crumbs from carpets; crumbs, crumbs and more crumbs.\n",
    "blender.md": "---\ntitle: Blender\n---\n# Safety\n\nHold the jug, not the blades, when you rinse it.\n",
    "knives.md": "# Knives\n\nBlades dull over time: hone blades weekly and keep blades in a block.\n",
    "orders.md": "# Orders\n\nOrders placed before noon leave the warehouse the same afternoon. You can change the delivery address until the parcel is packed. Every order can include gift wrapping for a small fee, chosen at checkout. Invoices are emailed once the parcel ships, and tracking links follow by text message.\n",
    "gifts.md": "# Gift cards\n\nGift cards never expire. A gift card can pay for part of an order.\n",
    "delivery.md": "# Delivery\n\nDelivery is free over fifty pounds. Delivery, delivery: always tracked.\n",
    "kettle.md": "# Kettle\n\nDescale the kettle every month with citric acid.\n",
    "returns.md": "# Returns\n\nReturn unused items within thirty days for a full refund.\n",
}
SWEEP_QUESTIONS = [
    ("p1", "dishwasher tablets", ["dishwasher.md"]),
    ("p2", "fridge dial", ["fridge.md"]),
    ("p3", "microwave popcorn", ["microwave.md"]),
    ("p4", "toaster crumbs", ["toaster.md"]),
    ("p5", "blender blades", ["blender.md"]),
    ("s1", "gift wrapping", ["orders.md"]),
    ("s2", "change the delivery address", ["orders.md"]),
    ("e1", "descale kettle", ["kettle.md"]),
    ("e2", "return unused items for a refund", ["returns.md"]),
    ("e3", "preheat the oven", ["oven.md"]),
    ("u1", "do you sell televisions", []),
]
PREFIX_ONLY = ("p1", "p2", "p3", "p4", "p5")
SWEEP_GRID = {"metric": "recall@1", "k": [1, 5], "samples": 500,
              "baseline": {"chunker": "fixed", "size": 8, "overlap": 0, "prefix": False, "retriever": "bm25"},
              "grid": {"chunker": ["fixed", "section"], "size": [8, 40], "overlap": [0], "prefix": [False, True],
                       "retriever": ["bm25"]}}


class ConstantEmbedder:
    """For the semantic chunker: every sentence the same vector, so it cuts by size alone (no model, no network)."""

    model_id = "constant"
    dim = 2
    max_tokens = 256
    cache_key = "constant:1"

    def embed(self, texts):
        import numpy as np

        return np.tile(np.asarray([[1.0, 0.0]], dtype=np.float32), (len(texts), 1))

    embed_queries = embed
