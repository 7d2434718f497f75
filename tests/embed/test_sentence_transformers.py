"""sentence-transformers code paths, with tiny random models built here (no download)."""

import numpy as np
import pytest

from ragtune import Chunk, Hit, Ranking

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
pytest.importorskip("sentence_transformers")


def tiny_bert(path, *, classifier: bool):
    from transformers import BertConfig, BertForSequenceClassification, BertModel, PreTrainedTokenizerFast

    from ragtune.chunking.tokens import bundled_minilm_tokenizer_path

    tok = PreTrainedTokenizerFast(tokenizer_file=str(bundled_minilm_tokenizer_path()), unk_token="[UNK]",
                                  pad_token="[PAD]", cls_token="[CLS]", sep_token="[SEP]", mask_token="[MASK]")
    cfg = BertConfig(vocab_size=tok.vocab_size, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                     intermediate_size=64, max_position_embeddings=128, num_labels=1)
    torch.manual_seed(0)
    model = BertForSequenceClassification(cfg) if classifier else BertModel(cfg)
    model.save_pretrained(path)
    tok.save_pretrained(path)
    return str(path)


def test_sentence_transformer_embedder_from_local_folder(tmp_path):
    from ragtune.embed import get_embedder

    folder = tiny_bert(tmp_path / "st", classifier=False)
    e = get_embedder(f"st:{folder}")
    v = e.embed(["hello world", "another sentence"])
    assert v.shape == (2, 32) and np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    assert e.dim == 32
    assert e.cache_key.startswith(f"st:{folder}:")


def test_cross_encoder_reranker_plumbing(tmp_path):
    from ragtune.pipeline import build_reranker

    folder = tiny_bert(tmp_path / "ce", classifier=True)
    rr = build_reranker("cross-encoder", folder)
    chunks = [Chunk(id=f"c{i}", doc_id="d", text=t, start=0, end=len(t), embed_text=t)
              for i, t in enumerate(["alpha beta", "gamma delta epsilon", "zeta"])]
    ranking = Ranking("query", tuple(Hit(c, 1.0) for c in chunks), {"bm25": 0.001})
    out = rr.rerank("query", ranking)
    assert sorted(h.chunk.id for h in out.hits) == ["c0", "c1", "c2"]
    scores = [h.score for h in out.hits]
    assert scores == sorted(scores, reverse=True) and len(set(scores)) == 3  # a real model scored each pair
    assert "rerank" in out.timings and "bm25" in out.timings
