"""Searching a space with Optuna: validation before anything loads, conditional keys, the study in the sweep folder
(resumed, repeated configurations served from the cache), pruning, and the held-out questions kept out of it."""

import json
import statistics

import pytest

optuna = pytest.importorskip("optuna")

from ragtune import load_corpus, load_golden  # noqa: E402
from ragtune.cli import main  # noqa: E402
from ragtune.errors import GridError  # noqa: E402
from ragtune.golden import GoldenSet  # noqa: E402
from ragtune.pipeline import PipelineConfig, Resources, build_pipeline, run_eval  # noqa: E402
from ragtune.sweep import LocalExecutor, Search, load_plan, parse_grid, parse_space, sweep  # noqa: E402
from ragtune.sweep.holdout import fold_questions, split_questions  # noqa: E402
from tests.helpers import SWEEP_DOCS, SWEEP_GRID, SWEEP_QUESTIONS, golden_rows, write_files, write_jsonl  # noqa: E402
from tests.sweep.noise import noise_corpus, noise_retriever  # noqa: E402

SETTINGS = {k: v for k, v in SWEEP_GRID.items() if k != "grid"}


def space(**keys):
    return {**SETTINGS, "space": keys}


@pytest.mark.parametrize("keys, message", [
    ({"sise": [1]}, "space.sise: unknown key (did you mean 'size'?)"),
    ({"chunker": ["fixed"], "size": {"low": 512, "high": 128}}, "space.size: an empty range, low 512 > high 128; swap them"),
    ({"chunker": ["fixed"], "size": []}, "space.size: an empty list; give at least one choice"),
    ({"chunker": ["fixed"], "size": {"low": 128, "high": 1000, "step": 64}},
     "space.size: 128..1000 step 64 does not end on a step; use high = 960 or 1024"),
    ({"chunker": ["fixed"], "size": {"low": 128.5, "high": 256}}, "space.size: size takes integers"),
    ({"retriever": ["bm25"], "rrf_k": [30, 60]},
     "space.rrf_k applies only to retrievers hybrid, milvus-hybrid, and the space's retriever choices are bm25: add "
     "one of them to space.retriever, or remove rrf_k"),
    ({"retriever": ["bm25"], "candidates": [20]}, "space.candidates applies only with a reranker, and the space has none"),
    ({"chunker": ["section"], "overlap": [0, 32]}, "space.overlap applies only to chunkers fixed, recursive, markdown"),
    ({"chunker": ["fixed"], "size": {"low": 64, "high": 512, "step": 64}, "overlap": {"low": 0, "high": 64, "step": 32}},
     "[chunker=fixed, size=64, overlap=64]: FixedChunkerConfig: overlap=64 must be smaller than size=64"),
    ({"retriever": ["hybrid"], "rrf_k": {"low": 10, "high": 100, "log": True, "step": 5}}, "a log range needs low > 0 and no step"),
    ({"chunker": {"low": 1, "high": 2}}, "space.chunker: a list of names"),
    ({"chunker": ["fixd"]}, "space.chunker: unknown chunker 'fixd'"),
    ({"size": 512}, "space.size: a list of choices, such as [256, 512], or a range"),
])
def test_every_problem_of_a_space_is_named_with_its_fix_before_anything_loads(keys, message):
    with pytest.raises(GridError) as e:
        parse_space(space(**keys))
    assert message in str(e.value)


def test_problems_are_reported_together_and_a_grid_key_in_a_space_file_is_named():
    with pytest.raises(GridError, match=r"3 problem\(s\)") as e:
        parse_space({**SETTINGS, "grid": {}, "space": {"sise": [1], "k1": {"low": 2, "high": 1}}})
    assert "a search reads its keys from [space]" in str(e.value) and "space.k1: an empty range" in str(e.value)


def test_the_points_of_a_space_count_only_the_keys_that_apply():
    _, s = parse_space(space(chunker=["fixed", "section"], size=[128, 256], overlap=[0, 32], prefix=[True, False],
                             retriever=["bm25", "hybrid"], rrf_k=[30, 60, 90], rerank=["", "embedding"],
                             candidates=[20, 50]))
    # (fixed: 2 sizes x 2 overlaps + section: 1) x 2 prefixes x (bm25: 1 + hybrid: 3 rrf_k) x (none: 1 + 2 shortlists)
    assert s.points == (2 * 2 + 1) * 2 * (1 + 3) * (1 + 2) == 120
    lines = s.describe()
    assert "overlap     2 choice(s): 0, 32 (only with chunkers fixed)" in lines
    assert "candidates  2 choice(s): 20, 50 (only with reranker embedding)" in lines and lines[-1] == "points: 120"
    _, stepped = parse_space(space(chunker=["fixed"], size={"low": 128, "high": 1024, "step": 64},
                                   k1={"low": 0.6, "high": 2.0, "step": 0.2}, retriever=["bm25", "hybrid"],
                                   rrf_k={"low": 10, "high": 200, "log": True}))
    assert stepped.points == 15 * 8 * (1 + 191)  # integers on a log scale: every one of 10..200
    _, cont = parse_space(space(chunker=["fixed"], size={"low": 128, "high": 1024, "step": 64}, retriever=["bm25"],
                                b={"low": 0.3, "high": 1.0}))
    assert cont.points is None and cont.describe()[-1].startswith("points: infinite (continuous range(s): b")
    # a grid's lists read as a space hold as many points as the grid has configurations
    _, as_space = parse_space(SWEEP_GRID, table="grid")
    assert as_space.points == len(parse_grid(SWEEP_GRID).specs) == 6


def test_suggestions_take_only_the_keys_that_apply_and_stay_on_the_steps():
    _, s = parse_space(space(chunker=["fixed", "section"], size={"low": 128, "high": 512, "step": 64},
                             overlap=[0, 32], retriever=["bm25", "hybrid"], rrf_k={"low": 10, "high": 200, "log": True},
                             weights=[[1, 1], [1, 2]], k1={"low": 0.6, "high": 2.0, "step": 0.2},
                             rerank=["", "embedding"], candidates=[20, 50]))
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=3))
    seen = set()
    for _ in range(150):
        flags = s.suggest(study.ask())
        assert ("size" in flags) == ("overlap" in flags) == (flags["chunker"] == "fixed")
        assert ("rrf_k" in flags) == ("weights" in flags) == (flags["retriever"] == "hybrid")
        assert ("candidates" in flags) == (flags["rerank"] == "embedding")
        assert flags.get("size", 128) in range(128, 513, 64) and 10 <= flags.get("rrf_k", 10) <= 200
        assert round(flags["k1"] * 5, 9) == round(flags["k1"] * 5) and flags.get("weights", [1, 1]) in ([1, 1], [1, 2])
        seen.add(PipelineConfig.from_flags(flags, strict=True).key)  # every suggestion builds
    assert len(seen) > 100


@pytest.fixture
def small(tmp_path):
    corpus = load_corpus(write_files(tmp_path / "c", SWEEP_DOCS))
    golden = load_golden(write_jsonl(tmp_path / "g.jsonl", golden_rows(SWEEP_QUESTIONS)))
    return corpus, golden, tmp_path


def test_a_search_is_a_sweep_whose_study_resumes_and_serves_repeats_from_the_cache(small):
    corpus, golden, tmp = small
    grid, s = parse_space(space(chunker=["fixed", "section"], size=[8, 40], prefix=[True, False], retriever=["bm25"]))
    assert s.points == 6
    out = tmp / "out"
    res = sweep(corpus, golden, Search(grid, s, sampler="random", trials=10, prune_share=0), out, show_progress=False)
    trials = res.search["studies"][0]["trials"]
    assert len(trials) == 10 and all(t["state"] == "complete" for t in trials)
    keys = {t["key"] for t in trials}
    assert len(keys) <= 6 and sum(t["cached"] for t in trials) == 10 - len(keys)  # a repeat is never re-evaluated
    runs = {p.stem for p in (out / "runs").glob("*.json")}
    assert runs == keys | {res.baseline_key}
    data = json.loads((out / "results.json").read_text())
    assert {c["key"] for c in data["configs"]} == runs and data["search"]["trials"] == 10
    assert (out / "report.html").exists() and (out / "search.journal").exists()
    assert "search (random, seed 0): 10 trials over a space of 6 points: 10 evaluated, 0 pruned" in res.table()
    # the best trial's value is its mean on every answerable question (no holdout: all of them are selection)
    best = res.search["studies"][0]["best"]
    rec = next(r for r in res.records if r["key"] == best["key"])
    assert best["value"] == pytest.approx(rec["result"]["metrics"]["recall@1"])
    # a rerun continues the study to 14 trials in all; the first 10 are the same trials
    again = sweep(corpus, golden, Search(grid, s, sampler="random", trials=14, prune_share=0), out, show_progress=False)
    more = again.search["studies"][0]["trials"]
    assert len(more) == 14 and more[:10] == trials
    assert {p.stem for p in (out / "runs").glob("*.json")} == {t["key"] for t in more} | {res.baseline_key}


def test_the_same_seed_gives_the_same_search(small):
    corpus, golden, tmp = small
    grid, s = parse_space(space(chunker=["fixed", "section"], size=[8, 16, 40], prefix=[True, False],
                                retriever=["bm25"], k1={"low": 0.6, "high": 2.0, "step": 0.2}))
    runs = [sweep(corpus, golden, Search(grid, s, trials=8, prune_share=0), tmp / f"o{i}", show_progress=False)
            for i in range(2)]
    params = [[t["params"] for t in r.search["studies"][0]["trials"]] for r in runs]
    assert params[0] == params[1] and len({json.dumps(p, sort_keys=True) for p in params[0]}) > 3


def test_pruned_trials_are_kept_with_their_partial_score_on_the_first_questions(tmp_path):
    with noise_retriever():
        c, g = noise_corpus(tmp_path)
        corpus, golden = load_corpus(c), load_golden(g)
        grid, s = parse_space({"metric": "recall@5", "samples": 200, "seed": 1,
                               "baseline": {"chunker": "document", "retriever": "noise"},
                               "space": {"chunker": ["document"], "retriever": ["noise"],
                                         "salt": {"low": 1, "high": 10_000}}})
        out = tmp_path / "out"
        res = sweep(corpus, golden, Search(grid, s, sampler="random", trials=24, prune_share=0.3), out,
                    show_progress=False)
    study = res.search["studies"][0]
    pruned = [t for t in study["trials"] if t["state"] == "pruned"]
    complete = [t for t in study["trials"] if t["state"] == "complete"]
    assert pruned and complete and study["rung_questions"] == 24  # 30% of each tag's 40 answerable questions
    for t in pruned:  # scored on the first questions only: a partial file, no run
        assert t["value"] is None and t["rung"] is not None
        assert (out / "partial" / f"{t['key']}.json").exists() and not (out / "runs" / f"{t['key']}.json").exists()
    ids = split_questions(res.records[0]["result"]["questions"], 0.3, 1)[1]
    for t in complete:  # the completed trials' first-questions scores come from their full runs: like for like
        rec = next(r for r in res.records if r["key"] == t["key"])
        q = {x["id"]: x["scores"]["recall@5"] for x in rec["result"]["questions"] if x["answerable"]}
        assert t["rung"] == pytest.approx(sum(q[i] for i in ids if i in q) / sum(1 for i in ids if i in q))
        worst_kept = min(x["rung"] for x in complete)
    assert min(t["rung"] for t in pruned) <= worst_kept  # what is pruned scored low on the first questions
    # the rule: a trial is pruned when its first-questions score falls below the median of the trials completed
    # before it (not only the bottom quarter), and kept otherwise
    startup = max(4, min(10, 24 // 5))
    for t in study["trials"]:
        before = sorted(x["rung"] for x in complete if x["number"] < t["number"])
        if len(before) < startup or t["state"] not in ("pruned", "complete"):
            continue
        median = statistics.median(before)
        assert (t["state"] == "pruned") == (t["rung"] < median), (t, median)
    # a kept trial's full run reuses what its first-questions run built (one Resources for the whole study), and
    # only completed trials are run in full and latency-timed
    partial_first = [t for t in complete if (out / "partial" / f"{t['key']}.json").exists()]
    assert partial_first
    for t in partial_first:
        stats = next(r for r in res.records if r["key"] == t["key"])["stats"]
        assert stats["index_reused"] is True and stats["latency_ms"]["questions"] > 0
    assert {r["key"] for r in res.records} == {t["key"] for t in complete} | {res.baseline_key}
    assert f"{len(pruned)} pruned after 30% of the selection questions" in res.table()


def test_with_two_rungs_a_trial_is_pruned_after_a_tenth_or_after_the_rest_of_the_first_share(tmp_path):
    """--prune-rungs 2: the median rule after 10% of the selection questions, then after 30% for the trials that
    pass (the 10% are among the 30%, and only the other 20% are evaluated at the second rung)."""
    with noise_retriever():
        c, g = noise_corpus(tmp_path)
        corpus, golden = load_corpus(c), load_golden(g)
        grid, s = parse_space({"metric": "recall@5", "samples": 200, "seed": 1,
                               "baseline": {"chunker": "document", "retriever": "noise"},
                               "space": {"chunker": ["document"], "retriever": ["noise"],
                                         "salt": {"low": 1, "high": 10_000}}})
        out = tmp_path / "out"
        search = Search(grid, s, sampler="random", trials=40, prune_share=0.3, prune_rungs=2)
        assert search.prune_shares == pytest.approx((0.1, 0.3))
        res = sweep(corpus, golden, search, out, show_progress=False)
    study = res.search["studies"][0]
    questions = res.records[0]["result"]["questions"]
    answerable = {q["id"] for q in questions if q["answerable"]}
    rungs = [[i for i in split_questions(questions, share, 1)[1] if i in answerable] for share in (0.1, 0.3)]
    assert set(rungs[0]) < set(rungs[1]) and study["rungs"] == [len(rungs[0]), len(rungs[1])] == [8, 24]
    pruned = [t for t in study["trials"] if t["state"] == "pruned"]
    complete = [t for t in study["trials"] if t["state"] == "complete"]
    assert {t["step"] for t in pruned} == {0, 1}  # some pruned at each rung
    full = {r["key"]: {q["id"]: q["scores"]["recall@5"] for q in r["result"]["questions"] if q["answerable"]}
            for r in res.records}

    def mean(scores, ids):
        return sum(scores[i] for i in ids) / len(ids)

    startup = max(4, min(10, 40 // 5))
    for t in pruned:
        saved = json.loads((out / "partial" / f"{t['key']}.json").read_text())["scores"]
        assert set(saved) == set(rungs[t["step"]])  # evaluated as far as its rung, no further
        assert t["rung"] == pytest.approx(mean(saved, rungs[t["step"]]))
        before = [mean(full[x["key"]], rungs[t["step"]]) for x in complete if x["number"] < t["number"]]
        assert len(before) >= startup and t["rung"] < statistics.median(before)
        if t["step"] == 1:  # it passed the first rung
            first = [mean(full[x["key"]], rungs[0]) for x in complete if x["number"] < t["number"]]
            assert mean(saved, rungs[0]) >= statistics.median(first)
    for t in complete:  # a kept trial's rung score is its full run's on the last rung's questions
        assert t["rung"] == pytest.approx(mean(full[t["key"]], rungs[1]))
    assert f"{len(pruned)} pruned after 10%, 30% of the selection questions" in res.table()


def test_the_held_out_questions_never_inform_the_search(tmp_path):
    """Two golden sets that differ only on the held-out questions give the same trials, value for value."""
    with noise_retriever():
        c, g = noise_corpus(tmp_path)
        corpus, golden = load_corpus(c), load_golden(g)
        rows = [json.loads(line) for line in g.read_text().splitlines()]
        qs = [{"id": r["id"], "tags": r["tags"], "answerable": bool(r["relevant"])} for r in rows]
        _, held = split_questions(qs, 0.4, 0)
        for r in rows:
            if r["id"] in held and r["relevant"]:
                r["relevant"] = [f"d{(int(r['id'][1:]) + 7) % 20:02d}.md"]  # other answers for the held-out ones
        other = load_golden(write_jsonl(tmp_path / "g2.jsonl", rows))
        grid, s = parse_space({"metric": "recall@5", "samples": 200, "holdout": 0.4,
                               "baseline": {"chunker": "document", "retriever": "noise"},
                               "space": {"chunker": ["document"], "retriever": ["noise"],
                                         "salt": {"low": 1, "high": 500}}})
        a = sweep(corpus, golden, Search(grid, s, trials=10), tmp_path / "a", show_progress=False)
        b = sweep(corpus, other, Search(grid, s, trials=10), tmp_path / "b", show_progress=False)
    ta, tb = a.search["studies"][0]["trials"], b.search["studies"][0]["trials"]
    assert [(t["params"], t["value"], t["state"]) for t in ta] == [(t["params"], t["value"], t["state"]) for t in tb]
    assert a.selection()["held_out_ids"] == b.selection()["held_out_ids"] == [i for i in held if i.startswith("q")]
    assert a.selection()["chosen"] == b.selection()["chosen"]
    assert a.selection()["held_out_score"] != b.selection()["held_out_score"]  # the change was there to see


def test_the_command_line_searches_a_space_file_and_dry_runs_print_its_size(small, capsys):
    corpus, golden, tmp = small
    path = tmp / "space.toml"
    path.write_text('metric = "recall@1"\nk = [1, 5]\nsamples = 200\n[baseline]\nchunker = "section"\nretriever = "bm25"\n'
                    '[space]\nchunker = ["fixed", "section"]\nsize = {low = 8, high = 40, step = 8}\n'
                    'prefix = [true, false]\nretriever = ["bm25"]\n')
    base = ["sweep", "--corpus", str(tmp / "c"), "--golden", str(tmp / "g.jsonl"), "--grid", str(path),
            "--out", str(tmp / "o")]
    assert main(base + ["--search", "tpe", "--trials", "5", "--dry-run"]) == 0
    out, err = capsys.readouterr()
    assert out.strip().splitlines()[-1] == "points: 12" and "size       8..40 step 8: 5 value(s)" in out
    assert "search: tpe, 5 trials over a space of 12 points" in err and not (tmp / "o").exists()
    assert main(base + ["--search", "random", "--trials", "4", "--seed", "2", "--prune-share", "0"]) == 0
    out, _ = capsys.readouterr()
    assert "search (random, seed 2): 4 trials over a space of 12 points" in out
    assert json.loads((tmp / "o" / "results.json").read_text())["search"]["seed"] == 2
    for extra, message in ((["--trials", "4"], "trials set(s) a search"),
                           ([], "is a space file ([space]): search it"),
                           (["--search", "tpe", "--holdout", "0.3", "--folds", "3"], "choose one way to hold")):
        assert main(base + extra) == 2
        assert message in capsys.readouterr().err
    plan = load_plan(path, search="tpe", folds=3)
    assert isinstance(plan, Search) and plan.grid.folds == 3 and plan.trials == 50 and plan.prune_share == 0.3


def test_with_folds_each_fold_searches_its_own_selection_questions_and_chooses_among_its_trials(tmp_path):
    with noise_retriever():
        c, g = noise_corpus(tmp_path, questions=60, unanswerable=3)
        corpus, golden = load_corpus(c), load_golden(g)
        grid, s = parse_space({"metric": "recall@5", "samples": 200, "folds": 3,
                               "baseline": {"chunker": "document", "retriever": "noise"},
                               "space": {"chunker": ["document"], "retriever": ["noise"],
                                         "salt": {"low": 1, "high": 300}}})
        res = sweep(corpus, golden, Search(grid, s, sampler="random", trials=5, prune_share=0), tmp_path / "out",
                    show_progress=False)
    studies = res.search["studies"]
    assert [st["name"] for st in studies] == ["fold-1", "fold-2", "fold-3"]
    assert all(len(st["trials"]) == 5 and st["selection_questions"] == 40 for st in studies)  # 2 of 3 folds
    sel = res.selection()
    records = {r["key"]: r for r in res.records}
    folds = fold_questions(res.records[0]["result"]["questions"], 3, 0)

    def mean_on(key, ids):
        scores = {q["id"]: q["scores"]["recall@5"] for q in records[key]["result"]["questions"] if q["answerable"]}
        return sum(scores[i] for i in ids if i in scores) / sum(1 for i in ids if i in scores)

    for f, (st, fold) in enumerate(zip(studies, sel["per_fold"])):
        ids = [i for g, part in enumerate(folds) if g != f for i in part]
        for t in st["trials"]:  # each trial was scored on its fold's selection questions, never on the fold's own
            assert t["value"] == pytest.approx(mean_on(t["key"], ids))
        pool = st["candidates"] + [res.baseline_key]
        assert fold["chosen"] == min(pool, key=lambda k: (-mean_on(k, ids), records[k]["label"]))  # ties: by label
        assert fold["held_out_score"] == pytest.approx(mean_on(fold["chosen"], folds[f]))
    assert {r["key"] for r in res.records} == {k for st in studies for k in st["candidates"]} | {res.baseline_key}
    assert "in each of 3 fold searches" in res.table() and "3-fold selection" in res.table()


def test_a_trial_a_killed_run_left_running_is_asked_again(small):
    corpus, golden, tmp = small
    grid, s = parse_space(space(chunker=["fixed", "section"], size=[8, 40], prefix=[True, False], retriever=["bm25"]))
    search = Search(grid, s, sampler="random", trials=3, prune_share=0)
    out = tmp / "out"
    sweep(corpus, golden, search, out, show_progress=False)
    # a run killed mid-trial: the journal holds a trial that started and never finished
    storage = optuna.storages.JournalStorage(optuna.storages.journal.JournalFileBackend(str(out / "search.journal")))
    study = optuna.load_study(study_name=f"search-{search.resolved(corpus.kind).key}", storage=storage)
    trial = study.ask()
    flags = s.suggest(trial)
    res = sweep(corpus, golden, Search(grid, s, sampler="random", trials=4, prune_share=0), out, show_progress=False)
    trials = res.search["studies"][0]["trials"]  # the interrupted one is left out; its configuration ran again
    assert len(trials) == 4 and all(t["state"] == "complete" for t in trials)
    assert trials[-1]["params"] == trial.params and trials[-1]["number"] == trial.number + 1
    assert PipelineConfig.from_flags(flags, strict=False).resolved(corpus.kind).key == trials[-1]["key"]
    states = [t.state for t in optuna.load_study(study_name=study.study_name, storage=storage).trials]
    assert states.count(optuna.trial.TrialState.FAIL) == 1


class RecordingExecutor:
    """A sweep executor (the :class:`ragtune.sweep.Executor` protocol) that notes every configuration it is given,
    with the questions and timing of its job, and runs it locally."""

    def __init__(self):
        self.inner = LocalExecutor()
        self.calls = []

    def run(self, job, todo, progress):
        for i, spec in todo:
            self.calls.append((spec.key, job.questions, job.timed))
        yield from self.inner.run(job, todo, progress)


def test_a_search_evaluates_every_configuration_through_its_executor_with_the_scores_of_a_local_run(tmp_path):
    with noise_retriever():
        c, g = noise_corpus(tmp_path)
        corpus, golden = load_corpus(c), load_golden(g)
        grid, s = parse_space({"metric": "recall@5", "samples": 200, "seed": 1,
                               "baseline": {"chunker": "document", "retriever": "noise"},
                               "space": {"chunker": ["document"], "retriever": ["noise"],
                                         "salt": {"low": 1, "high": 10_000}}})
        search = Search(grid, s, sampler="random", trials=10, prune_share=0.3)
        recorder = RecordingExecutor()
        res = sweep(corpus, golden, search, tmp_path / "rec", show_progress=False, executor=recorder)
        default = sweep(corpus, golden, search, tmp_path / "default", show_progress=False)
        trials = res.search["studies"][0]["trials"]
        pruned = [t for t in trials if t["state"] == "pruned"]
        complete = [t for t in trials if t["state"] == "complete"]
        assert pruned and complete and not any(t["cached"] for t in trials)
        full = [key for key, questions, timed in recorder.calls if questions is None and timed]
        first = [(key, questions) for key, questions, timed in recorder.calls if questions is not None and not timed]
        assert len(full) + len(first) == len(recorder.calls)  # nothing else: a full run, or an untimed first one
        assert sorted(full) == sorted([res.baseline_key] + [t["key"] for t in complete])  # each run in full once
        assert {key for key, _ in first} >= {t["key"] for t in pruned}  # pruned ones: first questions only
        rung = set(split_questions(res.records[0]["result"]["questions"], 0.3, 1)[1])
        assert all(set(questions) == rung - {q.id for q in golden if not q.answerable} for _, questions in first)
        # the scores of the default run (the recorder runs an explicit LocalExecutor); and those the search computed
        # before the executor evaluated its first questions (the pipeline built and evaluated on them here)
        same = [[(t["params"], t["value"], t["state"], t["rung"]) for t in r.search["studies"][0]["trials"]]
                for r in (res, default)]
        assert same[0] == same[1]
        for t in pruned:
            spec = PipelineConfig.from_dict(json.loads((tmp_path / "rec" / "partial" / f"{t['key']}.json")
                                                       .read_text())["spec"])
            ids = set(json.loads((tmp_path / "rec" / "partial" / f"{t['key']}.json").read_text())["scores"])
            sub = GoldenSet([q for q in golden if q.id in ids], source=golden.source, labels=golden.labels)
            direct = run_eval(build_pipeline(corpus, spec, resources=Resources(cache_dir=tmp_path / "cache")), sub,
                              ks=grid.ks, depth=grid.depth)
            scores = [q.scores["recall@5"] for q in direct.questions if q.answerable]
            assert t["rung"] == pytest.approx(sum(scores) / len(scores))
