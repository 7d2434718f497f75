"""From no golden set to N judged questions through the workbench alone, by a scripted judge (issue 22).

Starts ``ragtune label`` on a corpus with a new, empty golden set and drives it in headless chromium
(Playwright) as a keyboard-only judge would: for each of the first N questions of a reference golden set, type
the question (``a``, text, Enter), grade every pooled section (``2`` for a reference anchor, ``0`` otherwise),
search for each reference section the pool missed (``/``, its heading, Enter, ``j`` to it, ``2``), and mark
unanswerable questions (``u``). Then checks the written file against the reference and reports:

- keystrokes per question (the question's own text counted apart), pool sizes, what the pool missed and search
  found;
- the workbench's own time per judgment (key press to the grade drawn from the server's answer: saved to disk),
  which is what the tool adds to a person's reading time, not a person's pace;
- the start-up time (pool retrievers built: BM25, dense and hybrid over sections; cold without an embedding
  cache).

Usage::

    python bench/label.py --corpus ../shared/datasets/fastapi_docs/md/docs/en/docs \\
        --golden bench/golden/fastapi.jsonl --questions 30 --out out/label-bench [--depth 10]
"""

from __future__ import annotations

import argparse
import json
import shutil
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from ragtune import load_corpus, load_golden


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_ready(url: str, proc: subprocess.Popen, timeout: float) -> float:
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if proc.poll() is not None:
            raise SystemExit(f"ragtune label exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(url + "/api/state", timeout=5) as r:
                if json.loads(r.read())["retrieval"]["ready"]:
                    return time.monotonic() - t0
        except OSError:
            pass
        time.sleep(0.5)
    raise SystemExit(f"the workbench was not ready in {timeout:g} s")


def section_of(corpus, anchor: str) -> str:
    """The section a judge grades for a reference anchor: the anchor's own section, or for a whole document
    (``page.md``) its first section, the page's title (what a person marks when the page answers)."""
    span = corpus.resolve(anchor)
    if span.section is None and span.page is None and corpus[span.doc_id].sections:
        return corpus[span.doc_id].sections[0].anchor
    return span.anchor if span.section is not None else anchor


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--golden", required=True, help="the reference golden set the scripted judge follows")
    ap.add_argument("--questions", type=int, default=30)
    ap.add_argument("--depth", type=int, default=10, help="hits per system pooled (ragtune label --depth)")
    ap.add_argument("--out", default="out/label-bench")
    ap.add_argument("--chromium", default=shutil.which("chromium") or shutil.which("chromium-browser"))
    ap.add_argument("--timeout", type=float, default=1800, help="seconds allowed for the start-up")
    args = ap.parse_args()
    from playwright.sync_api import expect, sync_playwright

    corpus = load_corpus(args.corpus)
    items = list(load_golden(args.golden))
    n = min(args.questions, len(items))  # evenly spaced over the set: its mix of kinds, unanswerable ones too
    reference = [items[(i * len(items)) // n] for i in range(n)]
    out = Path(args.out)
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    golden = out / "golden.jsonl"
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    err = open(out / "label.err", "w")
    proc = subprocess.Popen([sys.executable, "-m", "ragtune", "label", "--corpus", args.corpus, "--golden",
                             str(golden), "--port", str(port), "--judge", "bench", "--depth", str(args.depth)], stdout=subprocess.DEVNULL,
                            stderr=err)
    rows, grade_ms = [], []
    try:
        startup = wait_ready(url, proc, args.timeout)
        print(f"workbench ready in {startup:.1f} s", file=sys.stderr)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=args.chromium, args=["--no-sandbox", "--disable-gpu"])
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.goto(url + "/")
            page.wait_for_selector("body[data-ready='1']")
            t_all = time.monotonic()
            for n, ref in enumerate(reference, start=1):
                keys = 0

                def press(key: str) -> None:
                    nonlocal keys
                    keys += 1
                    page.keyboard.press(key)

                want = {section_of(corpus, a): g for a, g in ref.relevant.items()}
                t_q = time.monotonic()
                press("a")
                page.keyboard.type(ref.q)
                press("Enter")
                expect(page.locator("#q-text")).to_have_text(ref.q)
                page.wait_for_selector("#pool .card.focus")
                cards = page.locator("#pool .card")
                size = cards.count()
                in_pool = {cards.nth(i).get_attribute("data-anchor") for i in range(size)}
                for _ in range(size):
                    anchor = page.locator("#pool .card.focus").get_attribute("data-anchor")
                    g = min(2, int(want.get(anchor, 0)))
                    before = page.locator("#pool .card[class*=' g']").count()
                    t0 = time.perf_counter()
                    press(str(g))
                    expect(page.locator("#pool .card[class*=' g']")).to_have_count(before + 1)
                    grade_ms.append((time.perf_counter() - t0) * 1000)
                found_by_search, missed = 0, []
                for anchor in [a for a in want if a not in in_pool]:
                    span = corpus.resolve(anchor)
                    title = span.section.title if span.section else corpus[span.doc_id].title
                    press("/")
                    page.keyboard.type(title)
                    press("Enter")
                    try:
                        page.wait_for_selector("#results .card.focus", timeout=10_000)
                    except Exception:  # noqa: BLE001 - nothing outside the pool matched
                        missed.append(anchor)
                        press("Escape")
                        continue
                    results = [page.locator("#results .card").nth(i).get_attribute("data-anchor")
                               for i in range(page.locator("#results .card").count())]
                    if anchor not in results:
                        missed.append(anchor)
                        press("Escape")
                        continue
                    for _ in range(results.index(anchor)):
                        press("j")
                    t0 = time.perf_counter()
                    press(str(min(2, int(want[anchor]))))
                    page.wait_for_selector(f"#pool .card.g2[data-anchor='{anchor}'], #pool .card.g1[data-anchor='{anchor}']")
                    grade_ms.append((time.perf_counter() - t0) * 1000)
                    found_by_search += 1
                if not want:
                    press("u")
                    expect(page.locator("#q-status")).to_have_text("unanswerable")
                rows.append({"id": ref.id, "pool": size, "relevant": len(want), "in_pool": len(set(want) & in_pool),
                             "found_by_search": found_by_search, "missed": missed, "keys": keys,
                             "typed": len(ref.q), "seconds": round(time.monotonic() - t_q, 2)})
                print(f"{n:>3} {ref.id}: pool {size}, relevant {len(want)} ({len(set(want) & in_pool)} pooled, "
                      f"{found_by_search} by search, {len(missed)} missed), {keys} keys", file=sys.stderr)
            wall = time.monotonic() - t_all
            page.screenshot(path=str(out / "final.png"))
            browser.close()
    finally:
        proc.terminate()
        proc.wait(30)
    written = {i.id: i for i in load_golden(golden, strict=False)}
    by_q = {i.q: i for i in written.values()}
    agree = sum(1 for ref in reference
                if ref.q in by_q and set(by_q[ref.q].relevant) == {section_of(corpus, a) for a in ref.relevant}
                and by_q[ref.q].status is None)
    judgments = sum(len(i.judgments) for i in written.values())
    summary = {
        "corpus": args.corpus, "reference": args.golden, "questions": len(reference), "depth": args.depth,
        "startup_s": round(startup, 1), "wall_s": round(wall, 1), "judgments": judgments,
        "grade_ms_median": round(statistics.median(grade_ms), 1),
        "grade_ms_p95": round(sorted(grade_ms)[int(0.95 * (len(grade_ms) - 1))], 1),
        "keys_per_question_median": statistics.median(r["keys"] for r in rows),
        "keys_per_question_mean": round(statistics.mean(r["keys"] for r in rows), 1),
        "typed_chars_median": statistics.median(r["typed"] for r in rows),
        "pool_median": statistics.median(r["pool"] for r in rows),
        "relevant": sum(r["relevant"] for r in rows), "relevant_in_pool": sum(r["in_pool"] for r in rows),
        "relevant_found_by_search": sum(r["found_by_search"] for r in rows),
        "relevant_missed": sum(len(r["missed"]) for r in rows),
        "questions_matching_reference": agree, "unanswerable": sum(1 for r in rows if not r["relevant"]),
        "rows": rows,
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=2))
    print(json.dumps({k: v for k, v in summary.items() if k != "rows"}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
