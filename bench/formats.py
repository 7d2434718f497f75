"""One chapter, three formats: does retrieval score the same on reStructuredText, Sphinx HTML and Chromium PDF?
And how fast does each loader extract?

    python bench/formats.py --data ../shared/datasets/formats --golden bench/golden/python-tutorial.jsonl

Quality: the five tutorial chapters that exist in all three forms (appetite, controlflow, datastructures,
inputoutput, errors) are loaded from each folder, and the golden set (anchors without extension:
``controlflow#if-statements`` names ``controlflow.rst``, ``.html`` or ``.pdf``, whichever the corpus holds) is
scored with the default pipeline and with BM25. Each question's anchors must exist in every form; the ones that
do not are listed (that is a loader difference, reported rather than hidden).

Speed: every real file of each format under ``--data`` is extracted with a cold cache (a fresh cache folder), in
worker processes as ``load_corpus`` does, then again from the cache; MB/s of file size, and pages/s for PDF.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import ragtune as rt

CHAPTERS = ("appetite", "controlflow", "datastructures", "inputoutput", "errors")
FORMS = {"rst": "rst/tutorial", "html": "html/python-tutorial", "pdf": "pdf/python-tutorial"}
SPEED = {"rst": ("rst", (".rst",)), "html": ("html", (".html",)), "pdf": ("pdf", (".pdf",)),
         "docx": ("docx", (".docx",)), "ipynb": ("ipynb", (".ipynb",))}


def five_chapters(folder: Path) -> rt.Corpus:
    corpus = rt.load_corpus(folder)
    docs = [d for d in corpus if d.id.rsplit(".", 1)[0] in CHAPTERS]
    return rt.Corpus(docs, kind=corpus.kind, root=corpus.root)


def quality(data: Path, golden_path: str) -> None:
    golden = rt.load_golden(golden_path)
    corpora = {form: five_chapters(data / sub) for form, sub in FORMS.items()}
    for form, corpus in corpora.items():
        missing = [(i.id, a) for i in golden for a in i.relevant if not corpus.has_anchor(a)]
        print(f"{form}: {len(corpus)} documents, {corpus.n_sections} sections, "
              f"{sum(len(d.text) for d in corpus):,} characters; golden anchors missing: {len(missing)}"
              + (f" {missing}" if missing else ""))
    print(f"\n{len(golden.answerable)} answerable questions of {len(golden)} ({golden_path})")
    print(f"{'retriever':<10}{'form':<6}{'chunks':>7}{'R@5':>7}{'R@10':>7}{'R@20':>7}{'MRR':>7}{'nDCG@10':>8}")
    for retriever in ("hybrid", "bm25"):
        r5 = {}
        for form, corpus in corpora.items():
            usable = rt.GoldenSet([i for i in golden if all(corpus.has_anchor(a) for a in i.relevant)],
                                  source=golden.source)
            p = rt.build_pipeline(corpus, rt.PipelineConfig.from_flags({"retriever": retriever}))
            m = rt.run_eval(p, usable).metrics
            r5[form] = m["recall@5"]
            print(f"{retriever:<10}{form:<6}{len(p.chunks):>7}{m['recall@5']:>7.3f}{m['recall@10']:>7.3f}"
                  f"{m['recall@20']:>7.3f}{m['mrr']:>7.3f}{m['ndcg@10']:>8.3f}")
        spread = max(r5.values()) - min(r5.values())
        print(f"{'':<10}recall@5 spread across forms: {spread:.3f}")


def _pages(corpus: rt.Corpus) -> int:
    return sum(int(d.metadata.get("pages", 0) or 0) for d in corpus)


def speed(data: Path) -> None:
    print(f"\n{'format':<7}{'files':>6}{'loaded':>7}{'MB':>7}{'cold s':>8}{'MB/s':>7}{'pages/s':>8}{'cached s':>9}")
    for fmt, (sub, suffixes) in SPEED.items():
        folder = data / sub
        files = [p for p in folder.rglob("*") if p.suffix.lower() in suffixes]
        if not files:
            continue
        mb = sum(p.stat().st_size for p in files) / 2**20
        only = {s: "none" for s in (".md", ".txt", ".rst", ".html", ".pdf", ".docx", ".ipynb") if s not in suffixes}
        with tempfile.TemporaryDirectory() as cache:
            os.environ["RAGTUNE_CACHE_DIR"] = cache
            t0 = time.perf_counter()
            corpus = rt.load_corpus(folder, formats=only)
            cold = time.perf_counter() - t0
            t0 = time.perf_counter()
            rt.load_corpus(folder, formats=only)
            warm = time.perf_counter() - t0
        pages = _pages(corpus)
        print(f"{fmt:<7}{len(files):>6}{len(corpus):>7}{mb:>7.2f}{cold:>8.2f}{mb / cold:>7.2f}"
              f"{(f'{pages / cold:.1f}' if pages else '-'):>8}{warm:>9.2f}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", required=True, type=Path, help="the formats/ folder of the shared datasets")
    ap.add_argument("--golden", default="bench/golden/python-tutorial.jsonl")
    ap.add_argument("--no-quality", action="store_true", help="extraction speed only")
    args = ap.parse_args(argv)
    if not args.no_quality:
        quality(args.data, args.golden)
    speed(args.data)
    return 0


if __name__ == "__main__":
    sys.exit(main())
