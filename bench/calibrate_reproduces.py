"""Does the --gate that `ragtune calibrate` prints reproduce the figures it prints? On every golden set at hand.

    python bench/calibrate_reproduces.py \\
        docs=docs:docs/golden.jsonl \\
        docs-judged=docs:bench/golden/docs-judged.jsonl \\
        fastapi=../shared/datasets/fastapi_docs/md/docs/en/docs:bench/golden/fastapi.jsonl \\
        fastapi-multihop=../shared/datasets/fastapi_docs/md/docs/en/docs:bench/golden/fastapi-multihop.jsonl \\
        rust-book=../shared/datasets/rust_book/md/src:bench/golden/rust-book.jsonl \\
        python-tutorial=../shared/datasets/formats/rst/tutorial:bench/golden/python-tutorial.jsonl \\
        python-tutorial-multihop=../shared/datasets/formats/rst/tutorial:bench/golden/python-tutorial-multihop.jsonl \\
        -- --retriever bm25

Each set is NAME=CORPUS:GOLDEN; everything after ``--`` is passed to both commands (pipeline options). For each
set the script runs ``ragtune calibrate`` as a user would, reads the threshold from its ``use it:`` line and the
abstention precision, recall and answered rate from its text, then runs ``ragtune eval --answers --gate
<printed> --answer-k <k>`` and compares the three figures eval prints. A set whose corpus folder is absent is
skipped, and so is a set without unanswerable questions (the multi-hop and conversation sets: calibrate needs both
kinds and refuses it). It also reports what the old rule (the cut's own score, printed to 4 significant digits)
would have measured. Without ``--`` the sets run with the default pipeline. Calibrate runs once (its text, and its
JSON through ``--out``); a set whose corpus fingerprint differs between calibrate and eval (a folder edited
meanwhile, such as a docs folder others are writing) is reported as such, not compared: run it on a copy. The last lines are a markdown table of
every set. Exit status 1 when any set does not reproduce.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from ragtune.answer.gate import abstention_scores
from ragtune.cli import main as ragtune
from ragtune.golden import load_golden


def _run(argv: list[str]) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        rc = ragtune(argv)
    if rc != 0:
        raise SystemExit(f"ragtune {' '.join(argv)} exited {rc}")
    return out.getvalue()


def _printed(text: str) -> tuple[str, tuple[str, str, str]]:
    """The --gate of calibrate's ``use it:`` line and the precision, recall and answered rate it printed for the
    golden set (the line ``abstention precision P  recall R  F1 F  (...; answered A)``)."""
    lines = text.splitlines()
    gate = next(x for x in lines if x.startswith("use it:")).split("--gate ")[1].split(",")[0]
    line = next(x for x in lines if x.split(": ")[-1].startswith("abstention precision") or
                x.startswith("abstention precision"))
    fig = line[line.index("abstention precision"):].split()
    answered = line.split("; answered ")[1].split(")")[0]
    return gate, (fig[2], fig[4], answered)


def check(name: str, corpus: str, golden: str, extra: list[str], k: int) -> dict:
    common = ["--corpus", corpus, "--golden", golden, *extra]
    with tempfile.TemporaryDirectory() as tmp:  # one calibrate run: its text and (--out) its JSON
        cal_text = _run(["calibrate", *common, "-k", str(k), "--out", os.path.join(tmp, "cal.json")])
        cal = json.loads(Path(tmp, "cal.json").read_text(encoding="utf-8"))
    gate, printed = _printed(cal_text)
    result = json.loads(_run(["eval", *common, "--answers", "--gate", gate, "--answer-k", str(k), "--json",
                              "-k", str(k), "--depth", str(max(k, 10))]))
    answers = result["answers"]
    # a corpus edited between the two commands (a docs folder others are writing) is no test of the threshold
    same_corpus = cal["config"]["corpus"]["fingerprint"] == result["config"]["corpus"]["fingerprint"]
    m = answers["metrics"]
    measured = (f"{m['abstention_precision'] or 0:.3f}", f"{m['abstention_recall'] or 0:.3f}",
                f"{m['answered_rate']:.3f}")
    # the old rule: the upper neighbour (an observed score) printed to 4 significant digits
    a = np.array([r["top_score"] if r["top_score"] is not None else -np.inf for r in answers["answers"]
                  if r["answerable"]])
    u = np.array([r["top_score"] if r["top_score"] is not None else -np.inf for r in answers["answers"]
                  if not r["answerable"]])
    upper = cal["between"][1]
    old = float(f"{upper:.4g}") if upper is not None else None
    old_moves = (old is not None and abstention_scores(old, a, u)[:2] != abstention_scores(upper, a, u)[:2])
    return {"set": name, "questions": cal["n_answerable"] + cal["n_unanswerable"],
            "unanswerable": cal["n_unanswerable"], "gate": gate, "between": cal["between"],
            "printed": printed, "measured": measured, "reproduces": printed == measured, "same_corpus": same_corpus,
            "old_rule_gate": f"{upper:.4g}" if upper is not None else None, "old_rule_moves_a_question": old_moves}


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    extra = argv[argv.index("--") + 1:] if "--" in argv else []
    argv = argv[:argv.index("--")] if "--" in argv else argv
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("sets", nargs="+", metavar="NAME=CORPUS:GOLDEN")
    ap.add_argument("-k", type=int, default=5, help="contexts per answer (default 5)")
    args = ap.parse_args(argv)
    failed, rows = 0, []
    for spec in args.sets:
        name, _, rest = spec.partition("=")
        corpus, _, golden = rest.partition(":")
        if not os.path.isdir(corpus) or not os.path.exists(golden):
            print(f"{name}: skipped ({corpus} or {golden} absent)")
            continue
        items = list(load_golden(golden))
        if all(i.answerable for i in items):
            print(f"{name}: skipped ({len(items)} questions, none unanswerable: calibrate needs both kinds)")
            continue
        t0 = time.perf_counter()
        r = check(name, corpus, golden, extra, args.k)
        if not r["same_corpus"]:
            print(f"{name}: the corpus changed between calibrate and eval (its fingerprint differs): run it again "
                  "on a copy nobody edits")
            failed += 1
            continue
        rows.append(r)
        failed += not r["reproduces"]
        print(f"{name}: {r['questions']} questions ({r['unanswerable']} unanswerable), --gate {r['gate']} "
              f"between {r['between']}; printed P/R/answered {'/'.join(r['printed'])}, eval measured "
              f"{'/'.join(r['measured'])}: {'reproduces' if r['reproduces'] else 'DIFFERS'}; old rule "
              f"--gate {r['old_rule_gate']} {'moves a question' if r['old_rule_moves_a_question'] else 'same'} "
              f"({time.perf_counter() - t0:.0f} s)", flush=True)
    print(f"\npipeline options: {' '.join(extra) or '(default pipeline)'}; k = {args.k}")
    print("| set | questions (unanswerable) | printed --gate | calibrate printed P / R / answered | eval measured "
          "| reproduces | old rule (4 digits) |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['set']} | {r['questions']} ({r['unanswerable']}) | {r['gate']} | {' / '.join(r['printed'])} | "
              f"{' / '.join(r['measured'])} | {'yes' if r['reproduces'] else 'NO'} | {r['old_rule_gate']}: "
              f"{'moves a question' if r['old_rule_moves_a_question'] else 'same figures'} |")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
