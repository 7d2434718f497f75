"""Training a cross-encoder end to end on a made-up corpus with a tiny random BERT (no downloads)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

import ragtune as rt  # noqa: E402
from ragtune.errors import ConfigError  # noqa: E402
from ragtune.train import TrainOptions, train_reranker  # noqa: E402
from tests.helpers import golden_rows, write_files, write_jsonl  # noqa: E402

TOPICS = {
    "garden.md": ("Garden", [("Tomatoes", "tomato plants need sun water and stakes; prune tomato suckers weekly"),
                             ("Roses", "rose bushes need pruning in spring; feed roses with compost"),
                             ("Compost", "compost heaps turn kitchen scraps into soil; turn the heap monthly")]),
    "kitchen.md": ("Kitchen", [("Bread", "bread dough rises with yeast; knead bread dough ten minutes"),
                               ("Soup", "soup simmers with onions carrots and stock; salt the soup late"),
                               ("Knives", "sharpen knives on a whetstone; wash knives by hand")]),
    "garage.md": ("Garage", [("Tyres", "check tyre pressure monthly; rotate tyres every season"),
                             ("Oil", "engine oil needs changing yearly; check the oil level cold"),
                             ("Battery", "a car battery drains in frost; charge the battery overnight")]),
    "office.md": ("Office", [("Printer", "the printer jams on damp paper; clear printer jams gently"),
                             ("Backups", "backups copy files nightly; test backups by restoring files"),
                             ("Passwords", "passwords need length; store passwords in a manager")]),
}
QUESTIONS = [
    ("q1", "how often to prune tomato suckers", ["garden.md#tomatoes"]),
    ("q2", "when do rose bushes need pruning", ["garden.md#roses"]),
    ("q3", "how to turn kitchen scraps into soil", ["garden.md#compost"]),
    ("q4", "how long to knead bread dough", ["kitchen.md#bread"]),
    ("q5", "when to salt the soup", ["kitchen.md#soup"]),
    ("q6", "how to sharpen knives", ["kitchen.md#knives"]),
    ("q7", "how often to check tyre pressure", ["garage.md#tyres"]),
    ("q8", "when to change engine oil", ["garage.md#oil"]),
    ("q9", "why does the car battery drain", ["garage.md#battery"]),
    ("q10", "why does the printer jam", ["office.md#printer"]),
    ("q11", "how to test backups", ["office.md#backups"]),
    ("q12", "where to store passwords", ["office.md#passwords"]),
]


def _markdown(title: str, sections) -> str:
    return f"# {title}\n\n" + "".join(f"## {h}\n\n{body}.\n\n" for h, body in sections)


@pytest.fixture(scope="module", autouse=True)
def _one_thread():
    """Tiny models: more torch threads only add synchronisation (and stall when other processes keep the cores
    busy); scoring here runs on one."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("train")
    corpus = rt.load_corpus(write_files(root / "corpus", {n: _markdown(t, s) for n, (t, s) in TOPICS.items()}))
    golden = rt.load_golden(write_jsonl(root / "train.jsonl", golden_rows(QUESTIONS)))
    return root, corpus, golden


@pytest.fixture(scope="module")
def tiny_base(data) -> str:
    """A randomly initialised 2-layer BERT (hidden 32) with a word-level tokenizer over the corpus words."""
    from tokenizers import Tokenizer, models, pre_tokenizers, processors
    from transformers import BertConfig, BertForSequenceClassification, PreTrainedTokenizerFast

    root, corpus, _ = data
    words = sorted({w for d in corpus for w in d.text.lower().replace(";", " ").replace(".", " ").split()}
                   | {w for _, q, _ in QUESTIONS for w in q.split()} | {">", "#"})
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    vocab = {w: i for i, w in enumerate(specials + words)}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tok.normalizer = __import__("tokenizers").normalizers.Lowercase()
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])])
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]",
                                   sep_token="[SEP]", mask_token="[MASK]", model_max_length=128)
    import torch

    torch.manual_seed(0)
    config = BertConfig(vocab_size=len(vocab), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=128, num_labels=1)
    folder = root / "tiny-bert"
    BertForSequenceClassification(config).save_pretrained(folder)
    fast.save_pretrained(folder)
    return str(folder)


@pytest.fixture(scope="module")
def trained(data, tiny_base):
    root, corpus, golden = data
    options = TrainOptions(base=tiny_base, retriever="bm25", negatives=3, random_negatives=3, epochs=20,
                           max_length=48, lr=5e-3, batch_queries=3, validation_share=0.0, warmup_share=0.0,
                           bf16=False, threads=1)
    return train_reranker(corpus, golden, out_dir=root / "model", options=options, show_progress=False)


def test_listwise_loss_falls_and_best_epoch_kept(trained):
    losses = trained.losses
    assert trained.steps == len(losses) == 20 * 4
    first, last = sum(losses[:4]) / 4, sum(losses[-4:]) / 4
    assert last < 0.6 * first, (first, last)  # about log(7) = 1.95 for a group of 7 scored at random
    assert trained.train_groups == len(QUESTIONS) and trained.validation_groups == 0
    assert trained.best_epoch == 20  # nothing held out: the last epoch is kept


def _scorer(folder):
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    tok, model = AutoTokenizer.from_pretrained(folder), AutoModelForSequenceClassification.from_pretrained(folder)
    model.eval()

    def scores(pairs):
        with torch.no_grad():
            enc = tok([q for q, _ in pairs], [t for _, t in pairs], padding=True, truncation=True, max_length=48,
                      return_tensors="pt")
            return model(**enc).logits.view(-1).tolist()

    return scores


def _mrr(folder, chunks) -> float:
    """MRR of each training question's section among every chunk, scored by the model in ``folder``."""
    score, rr = _scorer(folder), []
    for _, q, (anchor,) in QUESTIONS:
        s = score([(q, c.embed_text) for c in chunks])
        mine = s[[c.anchor for c in chunks].index(anchor)]
        rr.append(1 / (1 + sum(x > mine for x in s)))
    return sum(rr) / len(rr)


def test_saved_folder_reloads_and_ranks(trained, data, tiny_base):
    import math

    from ragtune.chunking import chunk_corpus
    from ragtune.rerank.cross_encoder import CrossEncoderReranker
    from ragtune.types import Hit, Ranking

    out = Path(trained.out_dir)
    manifest = json.loads((out / "ragtune-train.json").read_text())
    assert manifest["epochs"][0]["epoch"] == 0 and len(manifest["epochs"]) == 21
    assert manifest["data"]["pairs"] == "golden" and manifest["options"]["negatives"] == 3

    _, corpus, _ = data
    chunks = chunk_corpus(corpus, rt.default_chunker(corpus))
    # the trained model ranks the training questions' sections higher than the random model it started from
    assert _mrr(out, chunks) > _mrr(tiny_base, chunks) + 0.2

    q = QUESTIONS[3][1]
    logits = _scorer(out)([(q, c.embed_text) for c in chunks])
    reranked = CrossEncoderReranker(str(out), max_length=48).rerank(q, Ranking(q, tuple(Hit(c, 0.0) for c in chunks)))
    # the sentence-transformers path loads the folder: its scores are the model's logits through a sigmoid
    by_id = {h.chunk.id: h.score for h in reranked.hits}
    for c, z in zip(chunks, logits):
        assert by_id[c.id] == pytest.approx(1 / (1 + math.exp(-z)), abs=1e-4)
    assert [h.chunk.id for h in reranked.hits] == [c.id for _, c in sorted(zip(logits, chunks), key=lambda p: -p[0])]


def test_overlap_with_the_evaluation_set_is_refused(data, tiny_base, tmp_path):
    root, corpus, golden = data
    same_id = rt.load_golden(write_jsonl(tmp_path / "a.jsonl", golden_rows([("q4", "something else", [])])))
    with pytest.raises(ConfigError, match=r"shares 1 of its 12 question\(s\).*id 'q4'"):
        train_reranker(corpus, golden, out_dir=tmp_path / "m", eval_golden=same_id, base=tiny_base)
    same_text = rt.load_golden(write_jsonl(tmp_path / "b.jsonl", golden_rows([
        ("t1", "How  long to KNEAD bread dough", ["kitchen.md#bread"]),
        ("t2", "when to salt the soup", ["kitchen.md#soup"])])))
    with pytest.raises(ConfigError, match=r"shares 2 of its 12 .*evaluation id 't1'"):
        train_reranker(corpus, golden, out_dir=tmp_path / "m", eval_golden=same_text, base=tiny_base)
    assert not (tmp_path / "m").exists()

    from ragtune.train import check_overlap

    kept = check_overlap(golden, same_text, drop=True)
    assert [i.id for i in kept] == [i.id for i in golden if i.id not in ("q4", "q5")]


def test_options_are_checked(data, tmp_path):
    _, corpus, golden = data
    with pytest.raises(ConfigError, match="unknown option.*'epoch'.*valid options: base"):
        train_reranker(corpus, golden, out_dir=tmp_path, epoch=2)
    with pytest.raises(ConfigError, match="at least one negative"):
        TrainOptions(negatives=0, random_negatives=0)
    with pytest.raises(ConfigError, match="pairs"):
        TrainOptions(pairs="labels")
    with pytest.raises(ConfigError, match="no such folder"):
        train_reranker(corpus, golden, out_dir=tmp_path, base="./no/such/model")
    with pytest.raises(ConfigError, match="corpus alone"):
        train_reranker(corpus, golden, out_dir=tmp_path, pairs="pseudo")
    with pytest.raises(ConfigError, match="needs a training golden set"):
        train_reranker(corpus, None, out_dir=tmp_path)


def test_layers_keeps_the_first_layers_and_the_folder_reloads_smaller(data, tiny_base, tmp_path):
    from transformers import AutoConfig, AutoModelForSequenceClassification

    _, corpus, golden = data
    r = train_reranker(corpus, golden, out_dir=tmp_path / "one", base=tiny_base, retriever="bm25", layers=1,
                       max_steps=2, max_length=48, validation_share=0.0, bf16=False, threads=1, show_progress=False)
    assert r.steps == 2
    assert AutoConfig.from_pretrained(tmp_path / "one").num_hidden_layers == 1
    model = AutoModelForSequenceClassification.from_pretrained(tmp_path / "one")
    assert len(model.base_model.encoder.layer) == 1
    with pytest.raises(ConfigError, match="has only 2 layer"):  # found before mining
        train_reranker(corpus, golden, out_dir=tmp_path / "three", base=tiny_base, retriever="bm25", layers=3,
                       max_steps=1, show_progress=False)
    from ragtune.train import mine, train_groups

    groups = mine(corpus, golden, TrainOptions(retriever="bm25"), show_progress=False)
    with pytest.raises(ConfigError, match="has only 2 layer"):  # and when training groups made elsewhere
        train_groups(groups, out_dir=tmp_path / "g", base=tiny_base, layers=3, max_steps=1, show_progress=False)
    with pytest.raises(ConfigError, match="layers"):
        TrainOptions(layers=0)


def test_the_training_length_travels_with_the_model(trained, tmp_path):
    """Issue 25 item 12: trained at 48 tokens per pair, the folder, its ONNX export and the reranker loaded
    from either read 48 by default (not 256); an explicit length still wins."""
    pytest.importorskip("onnxruntime")
    pytest.importorskip("onnx")
    from ragtune.registry import RERANKERS
    from ragtune.rerank_export import export_cross_encoder
    from ragtune.rerank.onnx import OnnxCrossEncoder
    from ragtune.rerank.cross_encoder import CrossEncoderReranker

    out = Path(trained.out_dir)
    assert trained.max_length == 48
    assert json.loads((out / "config.json").read_text())["ragtune_max_length"] == 48
    assert json.loads((out / "ragtune-train.json").read_text())["max_length"] == 48
    assert CrossEncoderReranker(str(out)).max_length == 48
    assert CrossEncoderReranker(str(out), max_length=32).max_length == 32

    onnx_dir = tmp_path / "onnx"
    export_cross_encoder(out, onnx_dir)  # no max_length given: the training length
    assert json.loads((onnx_dir / "ragtune.json").read_text())["max_length"] == 48
    assert OnnxCrossEncoder(onnx_dir).max_length == 48
    reranker = RERANKERS.build("cross-encoder", options={"model": str(onnx_dir)})
    assert reranker.max_length == 48 and reranker.config["max_length"] == 48
    assert RERANKERS.build("cross-encoder", options={"model": str(onnx_dir), "max_length": 40}).max_length == 40
    export_cross_encoder(out, tmp_path / "onnx64", max_length=64)  # an explicit length wins over the training one
    assert json.loads((tmp_path / "onnx64" / "ragtune.json").read_text())["max_length"] == 64


def test_a_time_box_that_cuts_training_says_so(data, tiny_base, tmp_path):
    """Issue 25 item 12: a minutes limit that stops training early records steps done of planned; a step bound
    runs its planned steps and records no cut."""
    _, corpus, golden = data
    common = dict(base=tiny_base, retriever="bm25", epochs=20, max_length=48, batch_queries=3, validation_share=0.0,
                  bf16=False, threads=1, show_progress=False)
    r = train_reranker(corpus, golden, out_dir=tmp_path / "boxed", max_minutes=1e-6, **common)
    assert r.planned_steps == 20 * 4 and r.steps < r.planned_steps and r.cut_by == "max_minutes"
    manifest = json.loads((tmp_path / "boxed" / "ragtune-train.json").read_text())
    assert (manifest["steps"], manifest["planned_steps"], manifest["cut_by"]) == (r.steps, 80, "max_minutes")
    r = train_reranker(corpus, golden, out_dir=tmp_path / "stepped", max_steps=3, **common)
    assert (r.steps, r.planned_steps, r.cut_by) == (3, 3, None)


def test_bf16_is_used_only_where_the_cpu_has_it_natively(data, tiny_base, tmp_path, monkeypatch, capsys):
    """On a CPU without native bfloat16 (AVX2 only), bf16 autocast is emulated, 17x slower than fp32 in a
    measured linear layer: the default falls back to fp32 there and says so."""
    import torch

    from ragtune.train import trainer

    _, corpus, golden = data
    seen = []
    real = torch.autocast

    def spy(*a, **kw):
        seen.append(kw.get("dtype"))
        return real(*a, **kw)

    monkeypatch.setattr(torch, "autocast", spy)
    kw = dict(base=tiny_base, retriever="bm25", max_steps=1, max_length=48, validation_share=0.0, threads=1)
    monkeypatch.setattr(trainer, "bf16_native", lambda: False)
    train_reranker(corpus, golden, out_dir=tmp_path / "emulated", show_progress=False, **kw)
    assert seen == [] and "training in fp32: this CPU has no native bfloat16" in capsys.readouterr().err
    monkeypatch.setattr(trainer, "bf16_native", lambda: True)
    train_reranker(corpus, golden, out_dir=tmp_path / "native", show_progress=False, **kw)
    assert seen and set(seen) == {torch.bfloat16} and "training in fp32" not in capsys.readouterr().err
