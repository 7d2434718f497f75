"""Training groups for a cross-encoder: one query, one positive passage, hard and random negatives.

- :func:`golden_pairs`: (query, relevant anchors) from a golden set's *train* split;
- :func:`pseudo_pairs`: (query, section) pairs from the corpus alone, no labels: a section's heading
  path asks for it, a section's first sentence asks for the rest of the section;
- :func:`llm_pairs`: questions an LLM wrote for each section (with a generator configured);
- :func:`mine_groups`: hard negatives for each pair from ragtune's own first stage (hybrid by default),
  every chunk covering a positive anchor excluded, plus random negatives;
- :func:`check_overlap`: refuse a training set that shares questions with the evaluation set.

Passages are what the reranker sees at inference: a chunk's ``embed_text`` (its heading path or title
prefixed), positives and negatives alike.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from dataclasses import dataclass

from ..corpus.corpus import Corpus
from ..errors import ConfigError, GoldenSetError
from ..golden import GoldenSet
from ..progress import note, progress_iter
from ..types import Chunk

__all__ = ["Pair", "Group", "golden_pairs", "pseudo_pairs", "llm_pairs", "mine_groups", "check_overlap", "overlap"]


@dataclass(frozen=True, slots=True)
class Pair:
    """A query and what answers it. ``anchors`` are excluded from its negatives; ``positive`` is the
    passage text (None: the text of the chunk covering the first anchor, without ``cut``)."""

    qid: str
    query: str
    anchors: tuple[str, ...]
    positive: str | None = None
    cut: str = ""  # text taken out of the positive (a pseudo query drawn from it), whitespace-insensitive


@dataclass(frozen=True, slots=True)
class Group:
    """One listwise training example: the positive passage first, then the negatives."""

    qid: str
    query: str
    passages: tuple[str, ...]  # [positive, *negatives]

    def to_dict(self) -> dict:
        return {"qid": self.qid, "query": self.query, "passages": list(self.passages)}


def _norm(q: str) -> str:
    return " ".join(q.lower().split())


def overlap(train: GoldenSet, evaluation: GoldenSet) -> list:
    """The training items sharing a question id or a question text (case and spacing ignored) with ``evaluation``."""
    ids = {i.id for i in evaluation}
    texts = {_norm(i.q) for i in evaluation}
    return [i for i in train if i.id in ids or _norm(i.q) in texts]


def check_overlap(train: GoldenSet, evaluation: GoldenSet, *, drop: bool = False) -> GoldenSet:
    """``train`` when it shares no question id or question text with ``evaluation``; otherwise raise
    :class:`ConfigError` naming how many and one example, or with ``drop`` return ``train`` without them."""
    shared = overlap(train, evaluation)
    if not shared:
        return train
    if drop:
        keep = [(i, w) for i, w in zip(train.items, train.locations) if i not in shared]
        return GoldenSet([i for i, _ in keep], source=train.source, locations=[w for _, w in keep])
    ids = {i.id for i in evaluation}
    by_text = {_norm(i.q): i.id for i in evaluation}
    ex = shared[0]
    how = f"id {ex.id!r}" if ex.id in ids else f"question {ex.q[:80]!r} (evaluation id {by_text[_norm(ex.q)]!r})"
    raise ConfigError(
        f"the training golden set shares {len(shared)} of its {len(train)} question(s) with the evaluation set, "
        f"e.g. {how}; train on a split disjoint from the one you evaluate on (BEIR: the train split, evaluate "
        "on test), or leave the shared questions out of training (drop_overlap=True)")


def golden_pairs(golden: GoldenSet, corpus: Corpus) -> list[Pair]:
    """One pair per relevant anchor of each answerable, non-draft question (unknown anchors are an error)."""
    pairs = []
    for item in golden:
        if item.status == "draft" or not item.relevant:
            continue
        for anchor in item.relevant:
            corpus.resolve(anchor)  # raises UnknownAnchorError with suggestions
            # this anchor first: its chunk is the positive; every other anchor is kept out of the negatives
            pairs.append(Pair(item.id, item.q, (anchor, *[a for a in item.relevant if a != anchor])))
    if not pairs:
        raise GoldenSetError(f"{golden.source or 'the training golden set'}: no answerable question to train on; "
                             "a training pair needs a question with at least one relevant anchor")
    return pairs


_HEADING = re.compile(r"^\s{0,3}#{1,6}\s.*$", re.M)
# markup lines that are no prose: admonition fences (``/// warning``, ``///``) and include lines (``{* file *}``)
_MARKUP = re.compile(r"^\s*(?:///.*|\{\*.*\*\})\s*$", re.M)
_ID = re.compile(r"\s*\{\s*#[^}]*\}\s*$")
_SENTENCE = re.compile(r"(.+?[.!?])(\s+|$)", re.S)


def _body(text: str) -> str:
    """Text without markdown heading lines and markup-only lines, whitespace collapsed."""
    return " ".join(_MARKUP.sub(" ", _HEADING.sub(" ", text)).split())


def _clean_title(t: str) -> str:
    return _ID.sub("", t).strip()


def pseudo_pairs(corpus: Corpus, *, min_chars: int = 80, seed: int = 0) -> list[Pair]:
    """Pairs from the corpus alone, for a corpus with sections (markdown).

    For each section with at least ``min_chars`` characters of its own text (headings and markup removed):
    its heading path (``Tutorial > Security > OAuth2 scopes``) asks for the section; and when the text has
    more than one sentence, its first sentence (six words or more) asks for the section without that
    sentence (an inverse cloze task). The positive is the section's chunk as the reranker will see it
    (heading path prefixed), like its negatives: a passage that differs from its negatives in form (headings
    stripped from one side only, say) teaches the model that form instead of relevance. Admonition fences
    (``/// note``) and include lines (``{* file *}``) do not count as text. Deterministic for a corpus;
    ``seed`` is unused here and kept for symmetry.
    """
    del seed
    pairs: list[Pair] = []
    for doc in corpus:
        for s in doc.sections:
            own = _body(doc.text[s.start:s.own_end])
            if len(own) < min_chars:
                continue
            path = " > ".join(_clean_title(t) for t in s.heading_path if _clean_title(t))
            if path:
                pairs.append(Pair(f"{s.anchor}::heading", path, (s.anchor,)))
            m = _SENTENCE.match(own)
            if m:
                first, rest = m.group(1).strip(), own[m.end():].strip()
                if len(first.split()) >= 6 and not first.endswith(":") and len(rest) >= min_chars // 2:
                    pairs.append(Pair(f"{s.anchor}::sentence", first, (s.anchor,), cut=first))
    if not pairs:
        raise ConfigError("pairs='pseudo' found no section with enough text to make pairs; it needs a corpus with "
                          "headings (markdown); give a golden set instead (pairs='golden')")
    return pairs


def llm_pairs(corpus: Corpus, generator: str, *, base_url: str | None = None, per_section: int = 2,
              min_words: int = 12, limit: int | None = None, show_progress: bool = True) -> list[Pair]:
    """Pairs whose questions an LLM wrote: ``per_section`` paraphrase questions for every section with
    ``min_words`` words or more of its own (the prompts of :mod:`ragtune.judgments.draft`, one call per section),
    each asking for its section. ``generator`` is ``anthropic:<model>`` or ``openai:<model>`` (keys from the
    environment)."""
    from ..judgments.draft import DraftLLM, draft_golden, draft_units, estimate_draft_cost

    llm = DraftLLM(generator, base_url=base_url)
    units = draft_units(corpus, per_section=per_section, kinds=("paraphrase",), min_words=min_words, limit=limit)
    if not units:
        raise ConfigError(f"no section has {min_words} words or more of its own text to write questions about; "
                          "train without a generator (heading and first-sentence pairs only)")
    est = estimate_draft_cost(units, generator=llm.name)
    note(f"asking {llm.name} for {est['questions']} question(s): {est['calls']} call(s), about "
         f"{est['input_tokens']:,} input tokens", enabled=show_progress)
    result = draft_golden(progress_iter(units, "LLM questions", enabled=show_progress, total=len(units)), llm,
                          id_prefix="llm")
    pairs = [Pair(item["id"], item["q"], tuple(item["relevant"])) for item in result.items]
    usage = result.usage
    note(f"{len(pairs)} LLM question(s) from {len(units) - len(result.failed)} section(s); "
         f"{usage.get('calls', 0)} call(s), {usage.get('input_tokens', 0):,} input and "
         f"{usage.get('output_tokens', 0):,} output tokens"
         + (f"; no readable reply for {len(result.failed)} section(s)" if result.failed else ""), enabled=show_progress)
    if not pairs:
        raise ConfigError(f"the generator {llm.name} wrote no usable question for {len(units)} section(s); check "
                          "the model name and the API (or train without a generator)")
    return pairs


def mine_groups(pipeline, pairs: Sequence[Pair], *, negatives: int = 7, random_negatives: int = 1, depth: int = 30,
                seed: int = 0, show_progress: bool = True) -> list[Group]:
    """For each pair: the positive passage, the first ``negatives`` first-stage hits that cover none of the
    pair's anchors (hard negatives), and ``random_negatives`` other chunks drawn at random.

    ``pipeline`` is a :class:`ragtune.pipeline.Pipeline` (its ``base`` retriever is searched to ``depth``).
    A pair whose positive text is missing takes the text of the chunk that covers its first anchor best
    (largest overlap), without the pair's ``cut``. Pairs with too few negatives (a tiny corpus) keep what they
    got, at least one; a pair with none is dropped."""
    from ..evaluate.evaluate import covers

    corpus, chunks = pipeline.corpus, pipeline.chunks
    rng = random.Random(seed)
    by_doc: dict[str, list[Chunk]] = {}
    for c in chunks:
        by_doc.setdefault(c.doc_id, []).append(c)
    groups: list[Group] = []
    for pair in progress_iter(pairs, "mining hard negatives", enabled=show_progress):
        spans = [corpus.resolve(a) for a in pair.anchors]
        positive = pair.positive
        if positive is None:
            span = spans[0]
            covering = [c for c in by_doc.get(span.doc_id, ()) if covers(c, span)]
            if not covering:
                continue
            best = max(covering, key=lambda c: min(c.end, span.end) - max(c.start, span.start))
            positive = best.embed_text
            if pair.cut:  # the query was drawn from this passage: take it out (spacing ignored)
                positive = " ".join(" ".join(positive.split()).replace(" ".join(pair.cut.split()), " ", 1).split())
        ranking = pipeline.base.search(pair.query, k=depth)
        hard: list[str] = []
        seen = {positive}
        for h in ranking.hits:
            if len(hard) >= negatives:
                break
            t = h.chunk.embed_text
            if t and t not in seen and not any(covers(h.chunk, s) for s in spans):
                hard.append(t)
                seen.add(t)
        rand: list[str] = []
        for _ in range(20 * max(1, random_negatives)):
            if len(rand) >= random_negatives:
                break
            c = chunks[rng.randrange(len(chunks))]
            t = c.embed_text
            if t and t not in seen and not any(covers(c, s) for s in spans):
                rand.append(t)
                seen.add(t)
        if hard or rand:
            groups.append(Group(pair.qid, pair.query, (positive, *hard, *rand)))
    if not groups:
        raise ConfigError("no training group could be made: every question's candidates were all relevant, or no "
                          "chunk covers its anchors; check that the golden set's anchors belong to this corpus")
    return groups
