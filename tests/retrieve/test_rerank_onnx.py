"""The ONNX cross-encoder: export a tiny random BertForSequenceClassification (built here, no download), check
that onnxruntime reproduces torch's logits (fp32) and keeps their order (int8), and that the reranker loads
either form and reorders a Ranking."""

import json

import numpy as np
import pytest

from ragtune import Chunk, ConfigError, Hit, Ranking

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
pytest.importorskip("onnxruntime")
pytest.importorskip("onnx")  # the exporter writes through it (extra onnx)

WORDS = ("the cat dog sat on mat a fish swims in water bird flies over tree sun shines bright moon night sky "
         "stars rain falls from clouds wind blows hard snow is cold fire hot red blue green big small fast slow "
         "query passage what where when why how who").split()


def tiny_cross_encoder(path, *, num_labels=1, seed=0):
    """A 2-layer BERT with a random classification head and a word-level tokenizer.json."""
    from tokenizers import Tokenizer, models, pre_tokenizers, processors
    from transformers import BertConfig, BertForSequenceClassification, PreTrainedTokenizerFast

    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    vocab = {w: i for i, w in enumerate(specials + sorted(set(WORDS)))}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])])
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]",
                                   sep_token="[SEP]", mask_token="[MASK]")
    cfg = BertConfig(vocab_size=len(vocab), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                     intermediate_size=64, max_position_embeddings=128, num_labels=num_labels,
                     initializer_range=0.3)  # spread-out scores: int8 noise must not swamp them
    torch.manual_seed(seed)
    model = BertForSequenceClassification(cfg).eval()
    model.save_pretrained(path)
    fast.save_pretrained(path)
    return path


def torch_logits(folder, pairs, max_length=256):
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForSequenceClassification.from_pretrained(folder, attn_implementation="eager").eval()
    enc = tok([q for q, _ in pairs], [p for _, p in pairs], padding=True, truncation=True, max_length=max_length,
              return_tensors="pt")
    with torch.no_grad():
        return model(**enc).logits.numpy().astype(np.float64)


def pairs_of(n, seed=1):
    rng = np.random.default_rng(seed)
    return [(" ".join(rng.choice(WORDS, size=rng.integers(2, 6))), " ".join(rng.choice(WORDS, size=rng.integers(3, 40))))
            for _ in range(n)]


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    from ragtune.rerank_export import export_cross_encoder

    src = tiny_cross_encoder(tmp_path_factory.mktemp("hf") / "ce")
    out = tmp_path_factory.mktemp("onnx") / "ce-onnx"
    result = export_cross_encoder(src, out, int8=True, max_length=64)
    return src, out, result


def test_export_writes_the_folder_convention(exported):
    src, out, result = exported
    assert sorted(p.name for p in out.iterdir()) == ["model.onnx", "model_int8.onnx", "ragtune.json", "tokenizer.json"]
    manifest = json.loads((out / "ragtune.json").read_text())
    assert manifest["max_length"] == 64 and manifest["source"] == str(src) and manifest["num_labels"] == 1
    assert manifest["files"] == {"fp32": "model.onnx", "int8": "model_int8.onnx", "tokenizer": "tokenizer.json"}
    assert result.files["int8"] == "model_int8.onnx" and result.out_dir == out
    assert (out / "model_int8.onnx").stat().st_size < (out / "model.onnx").stat().st_size


def test_onnx_fp32_matches_torch_and_int8_keeps_the_order(exported):
    from scipy.stats import spearmanr

    from ragtune.rerank.onnx import OnnxCrossEncoder

    src, out, _ = exported
    pairs = pairs_of(30)
    # one query per call in the reranker; here every pair has its own query: score them one at a time
    expected = torch_logits(src, pairs)[:, 0]
    fp32 = OnnxCrossEncoder(out, precision="fp32", batch_size=4)
    got = np.array([fp32.score(q, [p])[0] for q, p in pairs])
    assert np.abs(got - expected).max() < 1e-4
    # one query, many passages of different lengths: batched by length (padding), restored to input order
    query = pairs[0][0]
    passages = [p for _, p in pairs]
    same_query = torch_logits(src, [(query, p) for p in passages])[:, 0]
    assert np.abs(fp32.score(query, passages) - same_query).max() < 1e-4
    int8 = OnnxCrossEncoder(out, precision="int8", batch_size=7)
    assert int8.precision == "int8" and OnnxCrossEncoder(out).precision == "int8"  # auto prefers int8
    q8 = int8.score(query, passages)
    rho = spearmanr(q8, same_query).statistic
    assert rho > 0.9
    assert not np.allclose(q8, same_query, atol=1e-6)  # it is a different, quantised graph


def test_truncation_at_max_length_matches_torch(exported):
    from ragtune.rerank.onnx import OnnxCrossEncoder

    src, out, _ = exported
    long = " ".join(WORDS * 3)
    pairs = [("what is the cat", long), ("sun", long[:200])]
    ce = OnnxCrossEncoder(out, precision="fp32", max_length=16)
    expected = torch_logits(src, pairs, max_length=16)[:, 0]
    got = np.array([ce.score(q, [p])[0] for q, p in pairs])
    assert np.abs(got - expected).max() < 1e-4
    assert abs(got[0] - OnnxCrossEncoder(out, precision="fp32", max_length=64).score(*pairs[0][:1], [long])[0]) > 1e-6


def two_class_folder(tmp_path):
    from ragtune.rerank_export import export_cross_encoder

    src = tiny_cross_encoder(tmp_path / "ce2", num_labels=2, seed=3)
    out = tmp_path / "ce2-onnx"
    export_cross_encoder(src, out)
    return src, out


def test_two_class_head_scores_the_positive_logit(tmp_path):
    from ragtune.rerank.onnx import OnnxCrossEncoder

    src, out = two_class_folder(tmp_path)
    assert sorted(p.name for p in out.iterdir()) == ["model.onnx", "ragtune.json", "tokenizer.json"]
    pairs = pairs_of(6, seed=5)
    logits = torch_logits(src, [(pairs[0][0], p) for _, p in pairs])
    assert logits.shape == (6, 2)
    got = OnnxCrossEncoder(out).score(pairs[0][0], [p for _, p in pairs])
    assert np.abs(got - logits[:, 1]).max() < 1e-4


def chunks_for(texts):
    return [Chunk(id=f"c{i}", doc_id=f"d{i}", text=t, start=0, end=len(t), embed_text=t) for i, t in enumerate(texts)]


@pytest.mark.parametrize("precision", ["fp32", "int8"])
def test_reranker_loads_either_form_and_reorders(exported, precision):
    from ragtune.pipeline import build_reranker
    from ragtune.rerank.onnx import OnnxCrossEncoder

    _, out, _ = exported
    rr = build_reranker("cross-encoder", str(out), precision=precision, mode="replace", threads=1)
    assert rr.backend == "onnx" and rr.precision == precision and rr.mode == "replace"
    texts = [p for _, p in pairs_of(8, seed=2)]
    ranking = Ranking("the cat sat", tuple(Hit(c, 1.0 / (i + 1)) for i, c in enumerate(chunks_for(texts))),
                      {"hybrid": 0.002})
    out_ranking = rr.rerank("the cat sat", ranking)
    scores = OnnxCrossEncoder(out, precision=precision).score("the cat sat", texts)
    assert [h.chunk.id for h in out_ranking.hits] == [f"c{i}" for i in np.argsort(-scores, kind="stable")]
    assert [h.score for h in out_ranking.hits] == pytest.approx(sorted(scores, reverse=True))
    assert out_ranking.timings["hybrid"] == 0.002 and out_ranking.timings["rerank"] > 0


def test_auto_backend_picks_onnx_for_an_onnx_folder_and_st_otherwise(exported, tmp_path):
    from ragtune.rerank.cross_encoder import pick_backend

    src, out, _ = exported
    assert pick_backend(str(out)) == "onnx"
    assert pick_backend(str(src)) == "st"
    assert pick_backend("org/some-model") == "st"
    assert pick_backend(str(out), "st") == "st"
    (tmp_path / "empty").mkdir()
    with pytest.raises(ConfigError) as e:
        pick_backend(str(tmp_path / "empty"))
    assert "expected model.onnx (or model_int8.onnx) and tokenizer.json" in str(e.value)


def test_missing_files_are_one_clear_error(exported, tmp_path):
    import shutil

    from ragtune.pipeline import build_reranker

    _, out, _ = exported
    only_fp32 = tmp_path / "fp32"
    only_fp32.mkdir()
    shutil.copy(out / "model.onnx", only_fp32)
    with pytest.raises(ConfigError) as e:
        build_reranker("cross-encoder", str(only_fp32))
    assert str(e.value).startswith(f"{only_fp32}: missing tokenizer.json;")
    shutil.copy(out / "tokenizer.json", only_fp32)
    assert build_reranker("cross-encoder", str(only_fp32)).precision == "fp32"
    with pytest.raises(ConfigError) as e:
        build_reranker("cross-encoder", str(only_fp32), precision="int8")
    assert str(e.value).startswith(f"{only_fp32}: missing model_int8.onnx;") and "--int8" in str(e.value)
    with pytest.raises(ConfigError) as e:
        build_reranker("cross-encoder", str(tmp_path / "nowhere"), backend="onnx")
    assert str(e.value).startswith(f"{tmp_path / 'nowhere'}: not a folder;")
    with pytest.raises(ConfigError, match="precision='int8' applies to the ONNX backend"):
        build_reranker("cross-encoder", "org/model", precision="int8")


def test_export_refuses_a_folder_that_is_not_a_model_and_an_existing_export(exported, tmp_path):
    from ragtune.rerank_export import ExportOptions, export_cross_encoder

    _, out, _ = exported
    with pytest.raises(ConfigError, match=r"no config.json there"):
        export_cross_encoder(tmp_path, tmp_path / "x")
    with pytest.raises(ConfigError, match=r"already holds an exported model"):
        export_cross_encoder(out, out)
    with pytest.raises(ConfigError, match=r"max_length must be an integer >= 1, got 0"):
        ExportOptions(max_length=0)


def test_inputs_never_exceed_the_models_positions(exported):
    """The tiny model has 128 position embeddings: a reranker asked for 256 tokens reads at most 128 (the export
    records the limit), where feeding 256 would make onnxruntime fail."""
    from ragtune.rerank.onnx import OnnxCrossEncoder

    src, out, _ = exported
    assert json.loads((out / "ragtune.json").read_text())["max_positions"] == 128
    long_text = " ".join(WORDS * 40)  # far more than 128 tokens
    enc = OnnxCrossEncoder(out, precision="fp32", max_length=256, threads=1)
    scores = enc.score("the cat sat", [long_text, "the cat"])
    assert enc.max_length == 128 and np.isfinite(scores).all()
    assert scores[0] == pytest.approx(torch_logits(src, [("the cat sat", long_text)], max_length=128)[0], abs=1e-4)
