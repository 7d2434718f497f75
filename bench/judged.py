"""How much of a sweep was judged, and what judging its pool changed (issue 21).

    ragtune sweep --corpus docs --golden docs/golden.jsonl --grid examples/demo-grid.toml --out out/demo-sweep
    ragtune pool out/demo-sweep --corpus docs --golden docs/golden.jsonl --depth 10 --out out/pool10.jsonl
    # judge holes of the pool into a copy of the golden set (out/golden-judged.jsonl), then sweep again:
    ragtune sweep --corpus docs --golden out/golden-judged.jsonl --grid examples/demo-grid.toml --out out/demo-sweep-judged
    python bench/judged.py out/demo-sweep out/demo-sweep-judged

Prints, per configuration, judged@10 and the sweep metric with its upper bound (every unjudged hit relevant) under
the first labels, the metric under the second, and both ranks; then how many (question, configuration) misses at
k became hits once the holes were judged, and Kendall's tau between the two rankings.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def _load(folder: str) -> dict:
    return json.loads((Path(folder) / "results.json").read_text(encoding="utf-8"))


def _tau(a: list[float], b: list[float]) -> float:
    """Kendall's tau-b of two score lists (ties counted as neither concordant nor discordant)."""
    conc = disc = ta = tb = 0
    for i in range(len(a)):
        for j in range(i + 1, len(a)):
            da, db = a[i] - a[j], b[i] - b[j]
            if da == 0 and db == 0:
                continue
            if da == 0:
                ta += 1
            elif db == 0:
                tb += 1
            elif (da > 0) == (db > 0):
                conc += 1
            else:
                disc += 1
    denom = ((conc + disc + ta) * (conc + disc + tb)) ** 0.5
    return (conc - disc) / denom if denom else float("nan")


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__)
        return 2
    before, after = _load(argv[0]), _load(argv[1])
    metric = before["metric"]
    name, _, k = metric.partition("@")
    upper = f"{name}_upper" + (f"@{k}" if k else "")
    b = {c["key"]: c for c in before["configs"]}
    a = {c["key"]: c for c in after["configs"]}
    keys = [c["key"] for c in before["configs"]]
    rank_b = {key: i + 1 for i, key in enumerate(keys)}
    rank_a = {c["key"]: i + 1 for i, c in enumerate(after["configs"])}
    print(f"| configuration | judged@10 | {metric} [upper] before | {metric} after | rank before -> after |")
    print("|---|---|---|---|---|")
    flipped = total = 0
    for key in keys:
        mb, ma = b[key]["metrics"], a[key]["metrics"]
        print(f"| {b[key]['label']} | {mb['judged@10']:.2f} | {mb[metric]:.3f} [{mb.get(upper, float('nan')):.3f}] | "
              f"{ma[metric]:.3f} | {rank_b[key]} -> {rank_a[key]} |")
    for key in keys:
        qb = {q["id"]: q for q in json.loads((Path(argv[0]) / "runs" / f"{key}.json").read_text())["result"]["questions"]}
        qa = {q["id"]: q for q in json.loads((Path(argv[1]) / "runs" / f"{key}.json").read_text())["result"]["questions"]}
        for qid, q in qb.items():
            if not q["answerable"]:
                continue
            total += 1
            if (q["scores"].get(f"hit@{k}") or 0) < 1 and (qa[qid]["scores"].get(f"hit@{k}") or 0) >= 1:
                flipped += 1
    tau = _tau([b[x]["metrics"][metric] for x in keys], [a[x]["metrics"][metric] for x in keys])
    moved = sum(1 for x in keys if rank_b[x] != rank_a[x])
    print(f"\n{len(keys)} configurations; judged@10 {min(b[x]['metrics']['judged@10'] for x in keys):.2f} to "
          f"{max(b[x]['metrics']['judged@10'] for x in keys):.2f} before, "
          f"{min(a[x]['metrics']['judged@10'] for x in keys):.2f} to {max(a[x]['metrics']['judged@10'] for x in keys):.2f}"
          f" after; misses at {k} that became hits: {flipped} of {total} (question, configuration) pairs; "
          f"{moved} configurations changed rank; Kendall tau-b of the {metric} rankings {tau:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
