"""What every golden set in the repository scores, computed the same way by any version of ragtune since the
golden sets had anchors: the before/after test of issue 41 (tests/test_golden_sets_unchanged.py) compares the
figures the current code computes with those recorded by the code before issue 41 (tests/data/
golden_scores_before_41.json), written by the code of commit 1254905 (the one before issue 41's first)::

    OLD=$(mktemp -d) && git archive 1254905 src | tar -x -C "$OLD"
    PYTHONPATH="$OLD/src" python tests/golden_scores.py tests/data/golden_scores_before_41.json

The code before issue 41 reads neither evidence groups nor conversations: it is given :func:`plain_lines`, each
file with evidence left out (``relevant`` already holds its anchors) and each conversation flattened into one
plain question per turn with the turn's id. The rankings are made up here, the same for every version: per
question, seeded by its id, unrelated chunks and, placed in the top 10, a chunk inside the span of most relevant
anchors and anchors judged not relevant; anchors resolve to made-up spans (:class:`SpanCorpus`), so the figures depend on
the golden set and the scoring code alone, not on a corpus that changes.
"""

from __future__ import annotations

import hashlib
import json
import random
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
GOLDEN_SETS = ("docs/golden.jsonl", *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "bench" / "golden").glob("*.jsonl")))
KS = (1, 3, 5, 10)


def plain_lines(path: Path) -> list[dict[str, Any]]:
    """The file's items as a golden set without evidence groups or conversations (plain JSON, no ragtune)."""
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        obj = json.loads(line)
        turns = obj["turns"] if "turns" in obj else None
        rows = [{"id": t.get("id", f"{obj['id']}#{n}"), **t} for n, t in enumerate(turns, start=1)] if turns \
            else [obj]
        for row in rows:
            evidence = row.pop("evidence", None)
            if evidence is not None and "relevant" not in row:
                row["relevant"] = list(dict.fromkeys(a for group in evidence for a in group))
            out.append(row)
    return out


def _seed(text: str) -> int:
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")


class SpanCorpus:
    """Resolves any anchor to a made-up span: ``doc#frag`` a 100-character section at a place fixed by its name,
    ``doc`` the whole document."""

    def resolve(self, anchor: str) -> Any:
        from ragtune.corpus.corpus import AnchorSpan
        from ragtune.types import Section

        doc, _, frag = anchor.partition("#")
        if not frag:
            return AnchorSpan(anchor, doc, 0, 10**6)
        start = (_seed(anchor) % 500) * 100
        return AnchorSpan(anchor, doc, start, start + 100,
                          Section(doc, frag, frag, 2, (frag,), None, start, start + 100, start + 100))


def rankings(items: list[Any]) -> dict[str, Any]:
    """Made-up rankings of 20 hits per question, the same for every version (seeded by the question's id)."""
    from ragtune.types import Chunk, Hit, Ranking

    corpus = SpanCorpus()
    out = {}
    for item in items:
        rng = random.Random(_seed(item.id))
        spans = [corpus.resolve(a) for a in (*item.relevant, *(a for a, g in item.judged.items() if g == 0))]
        picked = [s for s in spans if rng.random() < 0.6]
        chunks = [(f"other{rng.randrange(40)}.md", rng.randrange(0, 50000)) for _ in range(20 - len(picked))]
        for s in picked:  # found somewhere in the top 10
            chunks.insert(rng.randrange(10), (s.doc_id, s.start + 10 if not s.is_document else rng.randrange(5000)))
        hits = []
        for n, (doc, start) in enumerate(chunks[:20]):
            text = " ".join(f"w{rng.randrange(1000)}" for _ in range(rng.randrange(20, 200)))
            hits.append(Hit(Chunk(f"{doc}@{start}", doc, text, start, start + 50, text), 1.0 - n / 20))
        out[item.id] = Ranking(item.q, tuple(hits))
    return out


def _questions(result: Any, keys: list[str], fields: list[str]) -> list[dict[str, Any]]:
    """Each question's figures: its scores of ``keys`` and what else it reports of ``fields``."""
    rows = []
    for q in result.questions:
        d = q.to_dict()
        d["scores"] = {k: d["scores"][k] for k in keys if k in d["scores"]}
        rows.append({k: d.get(k) for k in fields})
    return rows


def file_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def figures(golden: Any, keys: list[str] | None = None, fields: list[str] | None = None) -> dict[str, Any]:
    """The means and a digest of every question's figures: ``keys`` the score names, ``fields`` the other things a
    question's result reports, timings left out (by default all there are: a newer version compares what an older
    one had)."""
    from ragtune.evaluate.evaluate import evaluate_rankings

    result = evaluate_rankings(rankings(list(golden)), golden, SpanCorpus(), ks=KS)
    keys = keys if keys is not None else sorted({k for q in result.questions for k in q.scores})
    fields = fields if fields is not None else sorted(
        {k for q in result.questions for k in q.to_dict() if "latency" not in k and "time" not in k})
    rows = _questions(result, keys, fields)
    digest = hashlib.sha256(json.dumps(rows, sort_keys=True).encode()).hexdigest()
    return {"metrics": {k: result.metrics[k] for k in sorted(result.metrics) if k in keys},
            "keys": keys, "fields": fields, "questions": len(rows), "sha256": digest}


def record(out: Path) -> None:
    """Write the figures of every golden set, each read as :func:`plain_lines`, with the ragtune on the path, and
    the digest of the file they were computed from."""
    import tempfile

    import ragtune as rt

    data = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name in GOLDEN_SETS:
            path = Path(tmp) / Path(name).name
            path.write_text("".join(json.dumps(r) + "\n" for r in plain_lines(ROOT / name)), encoding="utf-8")
            data[name] = {"file_sha256": file_digest(ROOT / name), **figures(rt.load_golden(path))}
    out.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")


if __name__ == "__main__":
    record(Path(sys.argv[1]))
