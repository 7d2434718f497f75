"""The extractive answerer with two sentence segmenters: the old dot-splitting regex and ragtune's scanner.

    python bench/segmenter.py --fastapi ../shared/datasets/fastapi_docs/md/docs/en/docs \
        --squad ../shared/datasets/squad2_dev --squad-sample 300

For each set (the FastAPI docs with bench/golden/fastapi.jsonl, section chunks; SQuAD 2.0 dev, or a seeded
sample of it, with the default chunker): BM25 retrieves the top 5 chunks, and the extractive generator (default
threshold, no gate) answers with each segmenter. Prints answered rate, abstention precision and recall, and
how many answers quote a cut sentence (an odd number of backticks, or a quoted sentence that starts inside
a URL or a dotted name).
"""

from __future__ import annotations

import argparse
import random
import re
import time

import ragtune.answer.extractive as extractive
from ragtune.answer import ExtractiveGenerator
from ragtune.answer.evaluate import evaluate_answers
from ragtune.golden import GoldenSet, load_golden
from ragtune.store import open_pipeline

_OLD_RE = re.compile(r"[^.!?\n]+(?:[.!?]+[\"')\]]*|\n|$)")


def old_split_sentences(text: str) -> list[str]:
    """The segmenter before issue 25: a sentence ends at every ``.``, ``!``, ``?`` or newline."""
    out = []
    for m in _OLD_RE.finditer(text):
        s = " ".join(m.group().split())
        if len(s) > 1 and re.search(r"\w", s):
            out.append(s)
    return out


_CITE = re.compile(r"\s*\[\d+\]")


def cut(answer_text: str) -> bool:
    """An answer quoting a sentence cut inside inline code, a URL or a dotted name."""
    for part in re.split(r"\s*\[\d+\]\s*", answer_text):
        if not part:
            continue
        if part.count("`") % 2:
            return True
        if re.match(r"^(?:[a-z0-9_]+\)?|/\S*|com\b|org\b|io\b|html\b|md\b|py\b)", part) and not part[:1].isupper():
            return True
    return False


def run(name, pipeline, golden, segmenter):
    extractive.split_sentences = segmenter
    t0 = time.perf_counter()
    out = evaluate_answers(pipeline.retriever, golden, pipeline.corpus, ExtractiveGenerator(), gate=None)
    m = out["metrics"]
    answered = [r for r in out["answers"] if r["outcome"] == "answered"]
    n_cut = sum(cut(r["answer"]) for r in answered)
    fmt = lambda v: "n/a" if v is None else f"{v:.3f}"  # noqa: E731
    n_ans = sum(i.answerable for i in golden)
    print(f"| {name} | {len(golden)} ({n_ans} answerable) | {segmenter.__name__} | {m['answered_rate']:.3f} | "
          f"{fmt(m['abstention_precision'])} | {fmt(m['abstention_recall'])} | {n_cut} of {len(answered)} | "
          f"{time.perf_counter() - t0:.0f} s |", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fastapi", help="the FastAPI docs folder (docs/en/docs)")
    ap.add_argument("--squad", help="the SQuAD 2.0 dev folder (BEIR layout)")
    ap.add_argument("--squad-sample", type=int, default=300, help="questions drawn (seed 0); 0 for all")
    args = ap.parse_args()
    new = extractive.split_sentences
    print("| set | questions | segmenter | answered | abstention precision | abstention recall | answers with a cut sentence | time |")
    print("|---|---|---|---|---|---|---|---|")
    flags = {"chunker": "section", "retriever": "bm25"}
    if args.fastapi:
        p = open_pipeline(corpus=args.fastapi, flags=flags)
        golden = load_golden("bench/golden/fastapi.jsonl")
        for seg in (old_split_sentences, new):
            run("FastAPI docs", p, golden, seg)
    if args.squad:
        import ragtune as rt

        corpus = rt.load_corpus(args.squad)
        items = list(rt.load_golden(args.squad, split="dev").items)
        random.Random(0).shuffle(items)
        if args.squad_sample:
            items = items[: args.squad_sample]
        golden = GoldenSet(items, source="SQuAD 2.0 dev sample")
        p = open_pipeline(corpus=corpus, flags={"retriever": "bm25"})
        for seg in (old_split_sentences, new):
            run("SQuAD 2.0 dev", p, golden, seg)


if __name__ == "__main__":
    main()
