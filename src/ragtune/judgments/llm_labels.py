"""LLM relevance labels for a pool's holes: ``ragtune golden judge`` (:func:`judge_pool`).

For every hole of a pool file (``ragtune pool --out``: the unjudged sections the runs retrieved), an LLM reads
the question and the section's text and grades the section on a four-point scale of the UMBRELA kind (the
prompt is ragtune's own, :data:`SYSTEM`, versioned by :data:`PROMPT_VERSION`):

=====  ===============================================  ==================
LLM    meaning                                          ragtune grade
=====  ===============================================  ==================
0      not relevant: about something else               0 (judged, not relevant)
1      related to the topic, but does not answer        0 (judged, not relevant)
2      answers the question (partly, or among other     1 (relevant)
       things)
3      dedicated to the question, answers it fully      2 (highly relevant)
=====  ===============================================  ==================

A golden anchor means "this section answers the question", so "related but does not answer" is judged not
relevant, as TREC binarizes UMBRELA's scale at 2. Each label is added to the golden set as a ``judgments``
record ``{"anchor", "grade", "by": "llm:<model>", "at": <UTC time>, "pool": <pool file name>}`` and the anchor
to ``relevant`` (grade > 0) or ``judged`` (grade 0); ``by`` marks it as an LLM's label, and scoring leaves it
out unless asked (``labels="all"``, CLI ``--labels all``).

Replies are cached on disk by (model, prompt version, question text, sha256 of the section text), so a rerun
sends nothing for what was graded before; calls go through :class:`~ragtune.llm.ChatLLM` (retries on 429, 5xx
and timeouts; tokens and dollars counted), and a reply without a readable grade is asked again
(:func:`~ragtune.llm.ask_parsed`), then the hole is left unjudged and listed.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Annotated, Any

from ..config import Opt
from ..errors import ConfigError, CorpusNotFoundError, UnknownAnchorError
from ..io import write_atomic
from .pool import read_pool_file

__all__ = ["PROMPT_VERSION", "SYSTEM", "GRADE_MAP", "JudgeResult", "judge_pool", "parse_grade", "label_prompt",
           "judged_question"]

PROMPT_VERSION = "relevance-1"
GRADE_MAP = {0: 0, 1: 0, 2: 1, 3: 2}  # the LLM's grade -> ragtune's (0 = not relevant)
SECTION_CHARS = 6000  # at most this much of a section goes into a prompt
OUTPUT_TOKENS = 24  # what the estimate assumes a reply costs ({"grade": 2} and a little more)

SYSTEM = """You judge search results for a documentation search engine. You get a QUESTION a user asked and a
PASSAGE (one section of the documentation). Grade how well the passage answers the question:
0 = not relevant: the passage is about something else.
1 = related: the passage is on the question's topic but does not answer it.
2 = answers: the passage answers the question, partly or among other things.
3 = perfect: the passage is dedicated to the question and answers it fully.
Judge only the passage given, not what other pages might say. Reply with JSON only: {"grade": <0, 1, 2 or 3>}."""


def judged_question(item: Any) -> str:
    """The question a judge reads: its text, after the questions asked before it for a turn of a conversation (a
    follow-up such as "and how often?" means nothing alone)."""
    if not item.history:
        return item.q
    return f"{' / '.join(' '.join(h.split()) for h in item.history)} / then: {item.q}"


def label_prompt(question: str, title: str, text: str) -> tuple[str, str]:
    """(system, user) messages asking for the grade of one section for one question."""
    body = text if len(text) <= SECTION_CHARS else text[:SECTION_CHARS] + " ..."
    head = f"PASSAGE ({title}):" if title else "PASSAGE:"
    return SYSTEM, f"QUESTION: {' '.join(question.split())}\n\n{head}\n{body}\n\nGrade (JSON):"


_BARE = re.compile(r"^\s*(?:grade\s*[:=]?\s*)?([0-3])\s*\.?\s*$", re.IGNORECASE)


def parse_grade(text: str) -> int | None:
    """The 0-3 grade of a reply: ``{"grade": 2}`` (prose or code fences around it tolerated), or a bare digit;
    None when the reply holds neither."""
    from ..llm import json_values

    for v in json_values(text):
        if isinstance(v, Mapping) and "grade" in v:
            g = v["grade"]
            if isinstance(g, str) and g.strip().isdigit():
                g = int(g.strip())
            if isinstance(g, int) and not isinstance(g, bool) and 0 <= g <= 3:
                return g
            return None
    m = _BARE.match(text)
    return int(m.group(1)) if m else None


@dataclass
class JudgeResult:
    """What :func:`judge_pool` did: the estimate, the labels added, where they went, calls and cost."""

    judge: str
    estimate: dict[str, Any]
    dry_run: bool = False
    labels: list[dict[str, Any]] = field(default_factory=list)  # {"id", "anchor", "llm_grade", "grade", "cached"}
    failed: list[tuple[str, str]] = field(default_factory=list)  # (question id, anchor) without a readable grade
    skipped: dict[str, int] = field(default_factory=dict)  # why holes were not judged, and how many
    usage: dict[str, Any] = field(default_factory=dict)
    written: str | None = None

    def __str__(self) -> str:
        return self.summary()

    def to_dict(self) -> dict[str, Any]:
        return {"judge": self.judge, "prompt_version": PROMPT_VERSION, "estimate": self.estimate,
                "dry_run": self.dry_run, "labels": self.labels, "failed": [list(f) for f in self.failed],
                "skipped": self.skipped, "usage": self.usage, "written": self.written}

    def summary(self) -> str:
        e = self.estimate
        cost = f", ${e['cost']:.4f}" if e["cost"] else " (give --price-in/--price-out for a cost in $)"
        lines = [] if not self.dry_run else [f"estimate: {e['calls']} calls to {self.judge} for {e['holes']} holes ({e['cached']} cached), "
                 f"about {e['input_tokens']:,} input and {e['output_tokens']:,} output tokens{cost}"]
        if self.dry_run:
            return "\n".join(lines + ["dry run: nothing sent, nothing written"])
        rel = sum(1 for x in self.labels if x["grade"] > 0)
        u = self.usage
        share = f", the judge's base rate of relevant {rel / len(self.labels):.0%}" if self.labels else ""
        lines.append(f"labelled {len(self.labels)} hole(s): {rel} relevant, {len(self.labels) - rel} not relevant"
                     f"{share} ({sum(x['cached'] for x in self.labels)} from the cache); {u.get('calls', 0)} calls, "
                     f"{u.get('input_tokens', 0):,} input and {u.get('output_tokens', 0):,} output tokens, "
                     f"${u.get('cost', 0.0):.4f}")
        if self.skipped:
            lines.append("not judged: " + ", ".join(f"{n} {why}" for why, n in self.skipped.items()))
        if self.failed:
            lines.append(f"no readable grade for {len(self.failed)} hole(s): "
                         + ", ".join(f"{q} {a}" for q, a in self.failed[:5]))
        if self.written:
            lines.append(f"wrote {self.written}: every new label is by llm:<model>; scores leave them out unless "
                         "--labels all (check agreement first: ragtune golden agreement; correct the figures with "
                         "questions people judged: ragtune golden ppi)")
        return "\n".join(lines)


def _cache_key(model: str, question: str, text: str) -> str:
    section = hashlib.sha256(text.encode("utf-8")).hexdigest()
    return hashlib.sha256(json.dumps([model, PROMPT_VERSION, question, section]).encode("utf-8")).hexdigest()



def judge_pool(
    pool: Annotated[str, Opt("the pool file (`ragtune pool --out`)", flag="POOL")],
    *,
    corpus: Annotated[str, Opt("the corpus the pool's anchors are in (markdown/text folder, BEIR folder or "
                               "corpus.jsonl)")],
    golden: Annotated[str, Opt("the golden set the pool was made for (.jsonl, .yaml)")],
    judge: Annotated[str, Opt("the LLM: anthropic:<model> or openai:<model>")],
    out: Annotated[str | None, Opt("where the labelled golden set goes (JSONL; default GOLDEN's name + "
                                   ".judged.jsonl; never the input unless given as it)", metavar="FILE")] = None,
    dry_run: Annotated[bool, Opt("print the estimate (calls, tokens, cost) and send nothing")] = False,
    max_holes: Annotated[int | None, Opt("judge at most N holes per question (the best ranked)", lo=1,
                                         metavar="N")] = None,
    base_url: Annotated[str | None, Opt("the API's base URL (default: the provider's)")] = None,
    price_in: Annotated[float, Opt("$ per million input tokens", lo=0.0, hi=1e9)] = 0.0,
    price_out: Annotated[float, Opt("$ per million output tokens", lo=0.0, hi=1e9)] = 0.0,
    cache_dir: Annotated[str | None, Opt("where graded labels are cached (default: ragtune's cache folder, "
                                         "llm-labels/)", metavar="DIR")] = None,
    max_retries: Annotated[int, Opt("retries per call on rate limits, server errors and timeouts", lo=0,
                                    hi=20)] = 5,
    say: Callable[[str], None] = print,
) -> JudgeResult:
    """Grade the holes of ``pool`` with the LLM ``judge`` and write the golden set with the labels added (see
    the module docstring). The estimate is printed first (``say``); ``dry_run`` stops there."""
    from ..corpus import load_corpus
    from ..golden import GoldenSet, Judgment, golden_records, load_golden
    from ..llm import ChatLLM, ask_parsed, estimate_tokens
    from ..paths import default_cache_dir

    llm = ChatLLM.from_spec(judge, what="judge", flag="--judge", base_url=base_url, max_tokens=OUTPUT_TOKENS * 2,
                            max_retries=max_retries, price_in=price_in, price_out=price_out)
    pool_path, golden_path = Path(pool), Path(golden)
    holes = read_pool_file(pool_path)
    gold = load_golden(golden_path, strict=False, labels="all")
    docs = load_corpus(corpus)
    by_id = {item.id: n for n, item in enumerate(gold.items)}
    cache = Path(cache_dir) if cache_dir else default_cache_dir() / "llm-labels"
    todo: list[tuple[int, str, str, str, str]] = []  # (item index, anchor, key, system, user)
    skipped: dict[str, int] = {}
    for qid, anchors in holes:
        if qid not in by_id:
            skipped["question not in the golden set"] = skipped.get("question not in the golden set", 0) + len(anchors)
            continue
        item = gold.items[by_id[qid]]
        labelled = item.judged_anchors
        fresh = [a for a in anchors if a not in labelled]
        if len(fresh) < len(anchors):
            skipped["already labelled"] = skipped.get("already labelled", 0) + len(anchors) - len(fresh)
        if max_holes is not None and len(fresh) > max_holes:
            skipped[f"past --max-holes {max_holes}"] = skipped.get(f"past --max-holes {max_holes}", 0) + len(fresh) - max_holes
            fresh = fresh[:max_holes]
        for anchor in fresh:
            try:
                span = docs.resolve(anchor)
            except UnknownAnchorError as e:
                raise UnknownAnchorError(f"{pool_path}: question {qid!r}: {e}; was the pool made on this corpus?") from None
            text = docs[span.doc_id].text[span.start:span.end]
            title = " > ".join(span.section.heading_path) if span.section is not None else docs[span.doc_id].title
            question = judged_question(item)
            todo.append((by_id[qid], anchor, _cache_key(llm.model, question, text), *label_prompt(question, title, text)))
    uncached = [t for t in todo if not (cache / f"{t[2]}.json").is_file()]
    tokens_in = estimate_tokens(*(m for t in uncached for m in t[3:]))
    est = {"holes": len(todo), "cached": len(todo) - len(uncached), "calls": len(uncached),
           "input_tokens": tokens_in, "output_tokens": OUTPUT_TOKENS * len(uncached),
           "cost": llm.price(tokens_in, OUTPUT_TOKENS * len(uncached))}
    result = JudgeResult(llm.name, est, dry_run=dry_run, skipped=skipped)
    if dry_run:
        return result
    say(replace(result, dry_run=True).summary().splitlines()[0])
    at = datetime.now(timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")
    by = f"llm:{llm.model}"
    items = list(gold.items)
    for index, anchor, key, system, user in todo:
        entry = cache / f"{key}.json"
        cached = entry.is_file()
        grade = parse_grade(json.loads(entry.read_text(encoding="utf-8")).get("reply", "")) if cached else None
        if grade is None:
            cached = False
            grade, _ = ask_parsed(llm, system, user, parse_grade, attempts=2)
            if grade is None:
                result.failed.append((items[index].id, anchor))
                continue
            write_atomic(entry, json.dumps({"model": llm.model, "prompt_version": PROMPT_VERSION,
                                             "reply": json.dumps({"grade": grade})}) + "\n")
        mapped = float(GRADE_MAP[grade])
        item = items[index]
        items[index] = replace(
            item, relevant={**item.relevant, anchor: mapped} if mapped > 0 else item.relevant,
            judged=item.judged if mapped > 0 else {**item.judged, anchor: 0.0},
            judgments=(*item.judgments, Judgment(anchor, mapped, by, at, pool_path.name)))
        result.labels.append({"id": item.id, "anchor": anchor, "llm_grade": grade, "grade": mapped, "cached": cached})
    target = Path(out) if out else golden_path.with_name(golden_path.stem + ".judged.jsonl")
    if golden_path.is_dir() and not out:
        target = golden_path.parent / (golden_path.name + ".judged.jsonl")
    labelled = GoldenSet(items, source=str(target), labels="all")
    write_atomic(target, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in golden_records(labelled)))
    result.written = str(target)
    result.usage = {**llm.usage, "cost": llm.cost}
    return result
