"""Mutation score per module from `mutmut results --all true` (store.py: only gc and _gc_locked count)."""
import re, sys, collections
rows = [l.strip() for l in open(sys.argv[1]) if ":" in l]
groups = {"metrics.py": lambda n: n.startswith("ragtune.evaluate.metrics."),
          "fusion.py": lambda n: n.startswith("ragtune.retrieve.fusion."),
          "rerank.py": lambda n: n.startswith("ragtune.retrieve.rerank."),
          "parents.py": lambda n: n.startswith("ragtune.retrieve.parents."),
          "store.py gc": lambda n: re.match(r"ragtune\.store\.store\.xǁIndexStoreǁ_?gc(_locked)?__mutmut", n)}
for g, f in groups.items():
    c = collections.Counter(l.rsplit(":", 1)[1].strip() for l in rows if f(l.rsplit(":", 1)[0].strip()))
    total = sum(c.values())
    print(f"{g:<12} killed {c['killed']}/{total}  " + ", ".join(f"{k} {v}" for k, v in sorted(c.items()) if k != "killed"))
