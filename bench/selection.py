"""How well a selection rule's choice holds up on questions it was not chosen on, over many splits.

    python bench/selection.py out/sel-fastapi/grid out/sel-fastapi/search --metric ndcg@10 --splits 500
    python bench/selection.py out/sel-fastapi/grid out/sel-fastapi/search out/sel-fastapi-s*/search \
        --metric ndcg@10 --paired

Each folder is a sweep's output (a grid's or a search's: ``runs/`` and ``results.json``). Every configuration there
was scored on every question, so a split costs nothing to re-make: for each of ``--splits`` seeds the answerable
questions are split as ``holdout = SHARE`` splits them (stratified by tag), each rule (``select = best`` or
``significant``, through the sweep's own ``choose``) chooses on the selection part among the folder's configurations
(a search's: those it evaluated in full), and the choice is scored on the held-out part. Prints, per folder and
rule, the mean held-out score of the choice over the splits, its mean optimism, how often the baseline was kept,
and, for the first two folders, the mean held-out difference of the second's choice minus the first's on the same
questions, with the share of splits where it is at least 0. One JSON object, also written to ``--out``.

A search's configurations were proposed by a sampler that saw one split's selection questions (the sweep's seed);
on other splits some of those questions are held out, which flatters the search. ``--paired`` removes that: the
first folder is a grid, the others searches each run with its own seed (``bench/search.py --only search --seed
N``), and each search's choice is compared with the grid's on its own seed's split, which it never saw.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from ragtune.sweep.holdout import SELECT_RULES, choose, question_scores, split_questions  # noqa: E402


def load(folder: Path, metric: str) -> dict:
    results = json.loads((folder / "results.json").read_text())
    records = [json.loads(p.read_text()) for p in sorted((folder / "runs").glob("*.json"))]
    per = {r["key"]: question_scores(r["result"], metric) for r in records}
    labels = {r["key"]: r["label"] for r in records}
    keys = list(per)
    if results.get("search"):
        keys = [k for k in results["search"]["studies"][0]["candidates"] if k in per]
        if results["baseline"] not in keys:
            keys.append(results["baseline"])
    return {"folder": str(folder), "per": per, "labels": labels, "keys": keys, "baseline": results["baseline"],
            "questions": records[0]["result"]["questions"], "test": results.get("test", "randomization"),
            "seed": int(results.get("seed", 0)), "holdout": float((results.get("grid") or {}).get("holdout") or 0)}


def paired(grid: dict, searches: list[dict], rules: list[str], share: float, samples: int) -> dict:
    """Each search was run with its own seed (its split and its sampler's): its choice against the grid's on the
    split of that seed, so that no search saw the questions it is scored on."""
    out = {}
    for rule in rules:
        rows = []
        for run in searches:
            seed = run["seed"]
            if run["holdout"] != share:
                raise SystemExit(f"{run['folder']} held out {run['holdout']} of the questions, not --share {share}: "
                                 "its search saw some of the questions this split would score it on")
            g, s = held_out(grid, rule, seed, share, samples), held_out(run, rule, seed, share, samples)
            assert g["out"] == s["out"], "the grid and the search must share the golden set"
            rows.append({"seed": seed, "grid": g["held_out"], "search": s["held_out"],
                         "grid_chosen": grid["labels"][g["chosen"]], "search_chosen": run["labels"][s["chosen"]],
                         "search_selection": s["selection"], "grid_selection": g["selection"]})
        d = [r["search"] - r["grid"] for r in rows]
        out[rule] = {"seeds": len(rows), "search_minus_grid_mean": float(np.mean(d)),
                     "search_minus_grid_sd": float(np.std(d, ddof=1)) if len(d) > 1 else None,
                     "at_least_as_good": sum(v >= -1e-12 for v in d) / len(d),
                     "grid_held_out_mean": float(np.mean([r["grid"] for r in rows])),
                     "search_held_out_mean": float(np.mean([r["search"] for r in rows])),
                     "grid_optimism_mean": float(np.mean([r["grid_selection"] - r["grid"] for r in rows])),
                     "search_optimism_mean": float(np.mean([r["search_selection"] - r["search"] for r in rows])),
                     "per_seed": rows}
    return out


def held_out(run: dict, rule: str, seed: int, share: float, samples: int) -> dict:
    selection, held = split_questions(run["questions"], share, seed)
    per = run["per"]
    some = per[run["baseline"]]
    sel = [i for i in selection if i in some]
    out = [i for i in held if i in some]
    chosen = choose(per, run["keys"], sel, baseline_key=run["baseline"], rule=rule, labels=run["labels"],
                    test=run["test"], samples=samples, seed=seed)
    return {"chosen": chosen, "selection": float(np.nanmean([per[chosen][i] for i in sel])),
            "held_out": float(np.nanmean([per[chosen][i] for i in out])), "out": out}


def emit(report: dict, out: Path | None) -> int:
    text = json.dumps(report, indent=1)
    print(text)
    if out:
        out.write_text(text + "\n")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folders", nargs="+", type=Path)
    ap.add_argument("--metric", required=True)
    ap.add_argument("--share", type=float, default=0.3)
    ap.add_argument("--splits", type=int, default=500)
    ap.add_argument("--samples", type=int, default=1000, help="resamples of each significance test")
    ap.add_argument("--rules", default=",".join(SELECT_RULES))
    ap.add_argument("--paired", action="store_true",
                    help="the first folder is a grid, the others searches each run with its own --seed: compare "
                         "each search's choice with the grid's on that seed's split (no re-splitting)")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    runs = [load(f, args.metric) for f in args.folders]
    rules = args.rules.split(",")
    t0 = time.perf_counter()
    if args.paired:
        report = {"metric": args.metric, "share": args.share, "grid": str(args.folders[0]),
                  "paired": paired(runs[0], runs[1:], rules, args.share, args.samples),
                  "wall_s": round(time.perf_counter() - t0, 1)}
        return emit(report, args.out)
    report: dict = {"metric": args.metric, "share": args.share, "splits": args.splits, "folders": {}}
    picks: dict = {}
    for run in runs:
        base = run["per"][run["baseline"]]
        rows = {}
        for rule in rules:
            got = [held_out(run, rule, s, args.share, args.samples) for s in range(args.splits)]
            picks[(run["folder"], rule)] = got
            counts: dict[str, int] = {}
            for g in got:
                counts[run["labels"][g["chosen"]]] = counts.get(run["labels"][g["chosen"]], 0) + 1
            rows[rule] = {
                "held_out_mean": float(np.mean([g["held_out"] for g in got])),
                "held_out_sd": float(np.std([g["held_out"] for g in got])),
                "optimism_mean": float(np.mean([g["selection"] - g["held_out"] for g in got])),
                "vs_baseline_held_out": float(np.mean([g["held_out"] - np.nanmean([base[i] for i in g["out"]])
                                                       for g in got])),
                "baseline_kept": sum(g["chosen"] == run["baseline"] for g in got) / len(got),
                "top_choices": dict(sorted(counts.items(), key=lambda kv: -kv[1])[:3])}
        every = {k: float(np.nanmean(list(run["per"][k].values()))) for k in run["keys"]}
        report["folders"][run["folder"]] = {
            "configurations": len(run["keys"]), "baseline_all": every[run["baseline"]],
            "best_all": max(every.values()), "rules": rows}
    if len(runs) >= 2:
        a, b = runs[0]["folder"], runs[1]["folder"]
        report["second_minus_first"] = {}
        for rule in rules:
            d = [y["held_out"] - x["held_out"] for x, y in zip(picks[(a, rule)], picks[(b, rule)])]
            report["second_minus_first"][rule] = {"mean": float(np.mean(d)),
                                                  "at_least_as_good": sum(v >= 0 for v in d) / len(d)}
    report["wall_s"] = round(time.perf_counter() - t0, 1)
    return emit(report, args.out)


if __name__ == "__main__":
    raise SystemExit(main())
