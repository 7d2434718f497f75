"""Mutation score per module from `mutmut results --all true` (store.py: only gc and _gc_locked count).

Usage: python tests/mutation/score.py results.txt   (modules with no mutant in the file are not printed)"""
import collections
import re
import sys

rows = [line.strip() for line in open(sys.argv[1]) if ":" in line]
groups = {"metrics.py": lambda n: n.startswith("ragtune.evaluate.metrics."),
          "fusion.py": lambda n: n.startswith("ragtune.retrieve.fusion."),
          "rerank/": lambda n: n.startswith(("ragtune.rerank.base.", "ragtune.rerank.embedding.",
                                             "ragtune.rerank.cross_encoder.")),
          "parents.py": lambda n: n.startswith("ragtune.retrieve.parents."),
          "store.py gc": lambda n: re.match(r"ragtune\.store\.store\.xǁIndexStoreǁ_?gc(_locked)?__mutmut", n),
          "significance.py": lambda n: n.startswith("ragtune.evaluate.significance."),
          "compare.py": lambda n: n.startswith("ragtune.evaluate.compare."),
          "results.py": lambda n: n.startswith("ragtune.sweep.results.")}
for g, f in groups.items():
    c = collections.Counter(line.rsplit(":", 1)[1].strip() for line in rows if f(line.rsplit(":", 1)[0].strip()))
    total = sum(c.values())
    if not total:
        continue
    done = c["killed"] + c["timeout"]
    rest = ", ".join(f"{k} {v}" for k, v in sorted(c.items()) if k not in ("killed", "timeout"))
    print(f"{g:<16} killed or timed out {done}/{total}  (killed {c['killed']}, timeout {c['timeout']}"
          + (f"; {rest}" if rest else "") + ")")
