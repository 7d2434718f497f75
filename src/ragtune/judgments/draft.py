"""Drafting golden questions with an LLM, for a person to accept: :func:`draft_golden` and :func:`review_drafts`.

One call per section asks for questions of given kinds, each tagged:

- ``paraphrase``: asks what the section says in other words than it uses;
- ``identifier``: names an identifier of the section (a flag, a function, a config key);
- ``multi-hop``: needs this section and the next one of the same document (both relevant, each its own
  evidence group: the question is supported only when both reached the model);
- ``near-duplicate``: tells this section apart from the most similar section elsewhere
  (found by shared content words), only this one relevant;
- ``unanswerable``: a plausible neighbouring topic the corpus lacks (``"relevant": []``),
  asked once per document;
- ``conversation`` (asked only when named: not among the default kinds): a user's conversation of two or three
  turns over this section and the next ones of its document, one turn each, the follow-ups leaning on the earlier
  turns as people write them ("and how do I test it?"); written as one conversation line whose turns are drafts.
  Asked at every third section of a document (the first, the fourth, ...), so conversations do not overlap.

Every item is written with ``"status": "draft"`` and notes under ``"draft"``;
:func:`ragtune.golden.load_golden` refuses to score drafts until
:func:`review_drafts` (``ragtune golden review``) writes the accepted ones
without a status.

Copying is measured, not trusted to the prompt: ``overlap`` is the share of a
question's content words (stemmed, stop words left out) found in the section's
heading and first sentence. A question above ``max_overlap`` is flagged
``copies_section`` (or dropped with ``drop_copies``); identifier and
unanswerable questions are not measured.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

from ..corpus.corpus import Corpus
from ..errors import ConfigError
from ..config import Opt

__all__ = ["KINDS", "DraftLLM", "draft_golden_set", "SectionUnit", "draft_units", "draft_golden", "estimate_draft_cost",
           "question_overlap", "review_drafts", "write_drafts", "parse_questions", "DraftResult"]

KINDS = ("paraphrase", "identifier", "multi-hop", "near-duplicate", "unanswerable", "conversation")
DEFAULT_KINDS = KINDS[:5]  # conversation is asked only when named
CONVERSATION_TURNS = 3  # at most this many turns, one section each
OUTPUT_TOKENS_PER_QUESTION = 40  # what the estimate assumes a drafted question costs in output tokens
SECTION_CHARS = 4000  # at most this much of a section goes into a prompt
NEAR_DUPLICATE = 0.35  # Jaccard similarity of content words from which two sections count as near twins

_STOP = frozenset("""a about above after again against all am an and any are as at be because been before being below
between both but by can could did do does doing down during each few for from further had has have having he her
here hers how i if in into is it its itself just me more most my no nor not now of off on once only or other our out
over own same she should so some such than that the their them then there these they this those through to too under
until up very was we were what when where which while who whom why will with would you your yours use used using
get gets one two also may might must shall does""".split())
_WORD = re.compile(r"[A-Za-z0-9_]+(?:[.\-][A-Za-z0-9_]+)*")
_IDENT = re.compile(r"`[^`\n]{2,60}`|--[a-z][a-z0-9-]+|\b[a-z]+_[a-z0-9_]+\b|\b[a-z]+[A-Z][A-Za-z0-9]+\b")

SYSTEM = """You write evaluation questions for a search system over a documentation corpus.
Each question must be one a real user would type, answerable from the text given (except
unanswerable ones). Paraphrase: use your own words, not the section's; do not reuse its
heading or first sentence, and prefer the words a user who has not read the page would use.
Reply with JSON only: {"questions": [{"kind": "<kind>", "q": "<question>"}, ...]}; a conversation is
{"kind": "conversation", "turns": ["<first question>", "<follow-up>", ...]}."""

_KIND_HELP = {
    "paraphrase": "asks about what SECTION says, in different words than SECTION uses",
    "identifier": "names one identifier that appears in SECTION (a command, flag, function or setting) and asks "
                  "about it",
    "multi-hop": "needs both SECTION and NEXT SECTION to answer",
    "near-duplicate": "is answered by SECTION and not by SIMILAR SECTION (ask about what sets them apart)",
    "unanswerable": "asks about a plausible neighbouring topic that none of the CORPUS HEADINGS covers (the "
                    "corpus cannot answer it)",
    "conversation": "is a conversation: its first turn is answered by SECTION, turn N by FOLLOW-UP SECTION N; each "
                    "follow-up is what the user types next after reading the answer, leaning on the earlier turns "
                    "(it, that, and ...?) instead of repeating their topic",
}


@dataclass(frozen=True)
class SectionUnit:
    """One section to draft from: its anchor, heading, own text, and the neighbours some kinds need."""

    anchor: str
    title: str
    text: str
    kinds: tuple[str, ...]  # one entry per question to ask, e.g. ("paraphrase", "paraphrase", "identifier")
    next_anchor: str | None = None
    next_text: str = ""
    similar_anchor: str | None = None
    similar_text: str = ""
    headings: tuple[str, ...] = ()  # the document's headings, for unanswerable questions
    follow: tuple[tuple[str, str, str], ...] = ()  # (anchor, title, text) of a conversation's later turns' sections

    def prompt(self) -> tuple[str, str]:
        """(system, user) messages for this unit."""
        parts = [f"SECTION ({self.anchor}), heading {self.title!r}:\n{self.text[:SECTION_CHARS]}"]
        if "multi-hop" in self.kinds and self.next_anchor:
            parts.append(f"NEXT SECTION ({self.next_anchor}):\n{self.next_text[:SECTION_CHARS // 2]}")
        if "near-duplicate" in self.kinds and self.similar_anchor:
            parts.append(f"SIMILAR SECTION ({self.similar_anchor}):\n{self.similar_text[:SECTION_CHARS // 2]}")
        if "unanswerable" in self.kinds:
            parts.append("CORPUS HEADINGS:\n" + "\n".join(f"- {h}" for h in self.headings[:80]))
        if "conversation" in self.kinds:
            parts.extend(f"FOLLOW-UP SECTION {n} ({a}):\n{t[:SECTION_CHARS // 2]}"
                         for n, (a, _, t) in enumerate(self.follow, start=2))
        wanted = {k: self.kinds.count(k) for k in dict.fromkeys(self.kinds)}
        asks = "\n".join(f'- {n} question(s) of kind "{k}": {_KIND_HELP[k]}' if k != "conversation" else
                         f'- {n} conversation(s) of {len(self.follow) + 1} turns: {_KIND_HELP[k]}'
                         for k, n in wanted.items())
        return SYSTEM, "\n\n".join(parts) + f"\n\nWrite:\n{asks}\n\nJSON:"


def _stemmer():
    import Stemmer

    return Stemmer.Stemmer("english")


def content_words(text: str, stem: Callable[[list[str]], list[str]] | None = None) -> list[str]:
    """Lower-cased, stemmed words of ``text`` that carry content (stop words and 1-2 letter words left out)."""
    words = [w.lower() for w in _WORD.findall(text)]
    words = [w for w in words if len(w) > 2 and w not in _STOP]
    return list((stem or _stemmer().stemWords)(words))


def _first_sentence(text: str) -> str:
    body = text.strip()
    m = re.search(r"(?<=[.!?])\s|\n\s*\n", body)
    return body[:m.start()] if m else body


def question_overlap(question: str, title: str, text: str) -> float:
    """Share of the question's content words found in the section's heading and first sentence (0..1)."""
    stem = _stemmer().stemWords
    q = set(content_words(question, stem))
    if not q:
        return 0.0
    seen = set(content_words(title + " " + _first_sentence(text), stem))
    return len(q & seen) / len(q)


def _own_text(doc, sec) -> str:
    """The section's text without its heading line, up to its first subsection."""
    raw = doc.text[sec.start:sec.own_end]
    first, _, rest = raw.partition("\n")
    return rest.strip() if first.lstrip().startswith("#") or first.strip() == sec.title.strip() else raw.strip()


def draft_units(corpus: Corpus, *, per_section: int = 2, min_words: int = 25, limit: int | None = None,
                kinds: Sequence[str] = DEFAULT_KINDS) -> list[SectionUnit]:
    """The sections worth drafting from (at least ``min_words`` words of their own), with the kinds each asks.

    Each section asks ``per_section`` paraphrases, plus one identifier question when its text holds an
    identifier, one multi-hop question with the next section of its document, one near-duplicate question
    when another section shares at least ``NEAR_DUPLICATE`` of its content words; the first section of a
    document also asks one unanswerable question; every third section of a document with a next one (the first,
    the fourth, ...) asks one conversation over it and up to two next sections. ``kinds`` keeps only those kinds.
    """
    bad = [k for k in kinds if k not in KINDS]
    if bad:
        raise ConfigError(f"unknown question kind(s) {', '.join(map(repr, bad))}; choose from {', '.join(KINDS)}")
    if isinstance(per_section, bool) or not isinstance(per_section, int) or per_section < 0:
        raise ConfigError(f"per_section must be an integer >= 0, got {per_section!r}")
    stem = _stemmer().stemWords
    rows = []  # (doc, anchor, title, text, words)
    for doc in corpus:
        secs = [(s.anchor, s.title, _own_text(doc, s)) for s in doc.sections] or [(doc.id, doc.title, doc.text)]
        for anchor, title, text in secs:
            if len(_WORD.findall(text)) >= min_words:
                rows.append((doc, anchor, title, text, set(content_words(text, stem))))
    units = []
    pos = 0  # the section's place among its document's drafted sections
    for i, (doc, anchor, title, text, words) in enumerate(rows):
        pos = 0 if i == 0 or rows[i - 1][0] is not doc else pos + 1
        follow = tuple((r[1], r[2], r[3]) for r in rows[i + 1:i + CONVERSATION_TURNS] if r[0] is doc)
        ks = ["paraphrase"] * per_section
        if _IDENT.search(text):
            ks.append("identifier")
        nxt = rows[i + 1] if i + 1 < len(rows) and rows[i + 1][0] is doc else None
        if nxt is not None:
            ks.append("multi-hop")
        best, sim = None, 0.0
        for j, other in enumerate(rows):
            if j != i and words and other[4]:
                jac = len(words & other[4]) / len(words | other[4])
                if jac > sim:
                    best, sim = other, jac
        if best is not None and sim >= NEAR_DUPLICATE:
            ks.append("near-duplicate")
        first_of_doc = i == 0 or rows[i - 1][0] is not doc
        if first_of_doc:
            ks.append("unanswerable")
        if follow and pos % CONVERSATION_TURNS == 0:
            ks.append("conversation")
        ks = [k for k in ks if k in kinds]
        if not ks:
            continue
        units.append(SectionUnit(
            anchor, title, text, tuple(ks),
            next_anchor=nxt[1] if nxt else None, next_text=nxt[3] if nxt else "",
            similar_anchor=best[1] if best is not None and sim >= NEAR_DUPLICATE else None,
            similar_text=best[3] if best is not None and sim >= NEAR_DUPLICATE else "",
            headings=tuple(f"{d.title} > {s.title}" if s.title != d.title else s.title
                           for d in corpus for s in d.sections) if first_of_doc else (),
            follow=follow if "conversation" in ks else ()))
        if limit is not None and len(units) >= limit:
            break
    return units


class DraftLLM:
    """``anthropic``, ``anthropic:<model>`` or ``openai:<model>``: one chat call at a time, usage counted.

    A :class:`ragtune.answer.llm.ChatLLM` (keys from ``ANTHROPIC_API_KEY`` / ``OPENAI_API_KEY``;
    ``base_url`` or ``OPENAI_BASE_URL`` / ``ANTHROPIC_BASE_URL``). Nothing is sent until :meth:`chat`.
    """

    def __init__(self, spec: str, *, base_url: str | None = None, max_tokens: int = 800, timeout: float = 60.0,
                 max_retries: int = 5, backoff: float = 0.5):
        from ..llm import ChatLLM

        self.llm = ChatLLM.from_spec(spec, base_url=base_url, max_tokens=max_tokens, timeout=timeout,
                                     max_retries=max_retries, backoff=backoff)
        self.kind, self.model, self.name = self.llm.kind, self.llm.model, self.llm.name
        self.max_tokens = max_tokens

    @property
    def usage(self) -> dict[str, int]:
        return dict(self.llm.usage)

    def chat(self, system: str, user: str) -> str:
        return self.llm.chat(system, user)


def estimate_draft_cost(units: Sequence[SectionUnit], *, generator: str, price_in: float = 0.0,
                        price_out: float = 0.0) -> dict[str, Any]:
    """What drafting would send, before sending anything: calls, tokens (about 4 characters a token), cost in $."""
    from ..llm import estimate_tokens

    tokens_in = estimate_tokens(*(t for x in units for t in x.prompt()))
    questions = sum(len(x.kinds) + (len(x.follow) if "conversation" in x.kinds else 0) for x in units)  # turns
    tokens_out = questions * OUTPUT_TOKENS_PER_QUESTION
    return {"generator": generator, "sections": len(units), "calls": len(units), "questions": questions,
            "input_tokens": tokens_in, "output_tokens": tokens_out,
            "cost": (tokens_in * price_in + tokens_out * price_out) / 1e6}


def parse_questions(text: str) -> list[dict[str, Any]] | None:
    """The ``questions`` list of a reply (code fences and prose around the JSON tolerated); None if unreadable.
    A conversation is ``{"kind": "conversation", "turns": [...]}`` (two turns or more)."""
    from ..llm import json_values

    qs = next((v["questions"] for v in json_values(text)
               if isinstance(v, Mapping) and isinstance(v.get("questions"), list)), None)
    if qs is None:
        return None
    out: list[dict[str, Any]] = []
    for q in qs:
        if not isinstance(q, Mapping) or q.get("kind") not in KINDS:
            continue
        turns = q.get("turns")
        if q["kind"] == "conversation" and isinstance(turns, list) and len(turns) >= 2 and \
                all(isinstance(t, str) and t.strip() for t in turns):
            out.append({"kind": "conversation", "turns": [" ".join(t.split()) for t in turns]})
        elif q["kind"] != "conversation" and isinstance(q.get("q"), str) and q["q"].strip():
            out.append({"kind": q["kind"], "q": " ".join(q["q"].split())})
    return out


@dataclass
class DraftResult:
    """The drafted items (dicts in golden-set form, each ``"status": "draft"``; a conversation one line whose every
    turn is a draft) and what happened."""

    items: list[dict[str, Any]] = field(default_factory=list)
    flagged: int = 0
    dropped: int = 0
    failed: list[str] = field(default_factory=list)  # anchors whose replies could not be read
    usage: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"drafts": len(self.items), "flagged": self.flagged, "dropped": self.dropped,
                "failed_sections": self.failed, "usage": self.usage,
                "tags": {k: sum(1 for i in self.items if k in _tags(i)) for k in KINDS}}


def _tags(item: Mapping[str, Any]) -> list[str]:
    """A drafted line's tags: its own, or its turns' for a conversation."""
    return [t for x in item.get("turns", [item]) for t in x.get("tags", [])]


def draft_golden(units: Sequence[SectionUnit], llm: Any, *, max_overlap: float = 0.5, drop_copies: bool = False,
                 attempts: int = 2, id_prefix: str = "draft") -> DraftResult:
    """Ask ``llm`` (anything with ``chat(system, user) -> str``) for each unit's questions; items are drafts.

    A reply that is not the JSON asked for is asked again up to ``attempts`` times, then the section is
    listed in ``failed``. Kinds a unit did not ask for are ignored, and each kind keeps at most as many
    questions as were asked for.
    """
    from ..llm import ask_parsed

    if not 0.0 <= max_overlap <= 1.0:
        raise ConfigError(f"max_overlap must be between 0 and 1, got {max_overlap!r}")
    out = DraftResult()
    seen: set[str] = set()
    for unit in units:
        qs, _ = ask_parsed(llm, *unit.prompt(), parse_questions, attempts=attempts)
        if qs is None:
            out.failed.append(unit.anchor)
            continue
        left = {k: unit.kinds.count(k) for k in unit.kinds}
        for q in qs:
            kind = q["kind"]
            text = q["turns"][0] if kind == "conversation" else q["q"]
            if left.get(kind, 0) <= 0 or text.lower() in seen:
                continue
            left[kind] -= 1
            seen.add(text.lower())
            if kind == "conversation":
                conv = _conversation(unit, q["turns"], max_overlap, f"{id_prefix}-{len(out.items) + 1:04d}")
                copies = sum(1 for t in conv["turns"] if t["draft"].get("flag"))
                if copies and drop_copies:
                    out.dropped += 1
                else:
                    out.flagged += copies
                    out.items.append(conv)
                continue
            relevant: list[str] = {"unanswerable": [], "multi-hop": [unit.anchor, unit.next_anchor]}.get(
                kind, [unit.anchor])
            notes: dict[str, Any] = {"section": unit.anchor}
            if kind in ("paraphrase", "multi-hop", "near-duplicate"):
                overlap = round(question_overlap(q["q"], unit.title, unit.text), 3)
                notes["overlap"] = overlap
                if overlap > max_overlap:
                    if drop_copies:
                        out.dropped += 1
                        continue
                    notes["flag"] = "copies_section"
                    out.flagged += 1
            if kind == "near-duplicate":
                notes["similar"] = unit.similar_anchor
            item = {"id": f"{id_prefix}-{len(out.items) + 1:04d}", "q": q["q"], "relevant": relevant}
            if kind == "multi-hop":  # both sections needed: each its own evidence group
                item["evidence"] = [[a] for a in relevant]
            out.items.append({**item, "tags": [kind], "status": "draft", "draft": notes})
    out.usage = dict(getattr(llm, "usage", {}) or {})
    return out


def _conversation(unit: SectionUnit, turns: Sequence[str], max_overlap: float, cid: str) -> dict[str, Any]:
    """A drafted conversation line: turn N answered by the unit's Nth section (turns beyond its sections left
    out), each turn a draft with the overlap of its question with its section (flagged above ``max_overlap``)."""
    sections = [(unit.anchor, unit.title, unit.text), *unit.follow]
    rows = []
    for q, (anchor, title, text) in zip(turns, sections):
        overlap = round(question_overlap(q, title, text), 3)
        notes: dict[str, Any] = {"section": anchor, "overlap": overlap}
        if overlap > max_overlap:
            notes["flag"] = "copies_section"
        rows.append({"q": q, "relevant": [anchor], "tags": ["conversation"], "status": "draft", "draft": notes})
    return {"id": cid, "turns": rows}


def write_drafts(items: Iterable[Mapping[str, Any]], path: str | os.PathLike[str]) -> int:
    from ..io import write_jsonl

    rows = list(items)
    write_jsonl(path, rows)
    return len(rows)


def _groups(items: Sequence[Any]) -> list[list[Any]]:
    """The items as the lines they stand on: one item, or a conversation's turns together."""
    out: list[list[Any]] = []
    for item in items:
        if item.conversation is not None and out and out[-1][0].conversation == item.conversation:
            out[-1].append(item)
        else:
            out.append([item])
    return out


def _show_draft(group: Sequence[Any], seen: int, n_drafts: int) -> str:
    """What review shows of one draft: a question with its anchors, or a conversation turn by turn."""
    first = group[0]
    flags = [f"[{i.draft['flag']}: overlap {i.draft.get('overlap')}]" for i in group if i.draft.get("flag")]
    flag = f"  {' '.join(flags)}" if flags else ""
    if first.conversation is None:
        return (f"\n[{seen}/{n_drafts}] {first.id} ({', '.join(first.tags) or 'untagged'}){flag}\n"
                f"  q: {first.q}\n  relevant: {', '.join(first.relevant) or '(none: unanswerable)'}")
    turns = "".join(f"\n  turn {n}: {i.q}\n    relevant: {', '.join(i.relevant) or '(none: unanswerable)'}"
                    for n, i in enumerate(group, start=1))
    return f"\n[{seen}/{n_drafts}] conversation {first.conversation} ({len(group)} turns){flag}{turns}"


def _edit(group: list[Any], ask: Callable[[str], str]) -> bool:
    """Ask for new text: the question, or each turn's (empty keeps it); whether anything changed."""
    from dataclasses import replace

    changed = False
    for n, item in enumerate(group):
        try:
            text = ask("  new question: " if len(group) == 1 else f"  new turn {n + 1} (empty keeps it): ").strip()
        except EOFError:
            text = ""
        if text:
            group[n] = replace(item, q=" ".join(text.split()))
            changed = True
    return changed


def _renamed(group: list[Any], taken: set[str]) -> list[Any]:
    """The group with an id no accepted question has (``-2``, ``-3``... appended; a conversation's id, its turns
    following), its history following edited turns."""
    from dataclasses import replace

    base, k = group[0].conversation or group[0].id, 2
    name = base

    def ids(n: str) -> list[str]:
        return [n] if group[0].conversation is None else [f"{n}#{t + 1}" for t in range(len(group))]

    while any(i in taken for i in ids(name)):
        name = f"{base}-{k}"
        k += 1
    taken.update(ids(name))
    if group[0].conversation is None:
        return [replace(group[0], id=name)]
    return [replace(i, id=f"{name}#{t + 1}", conversation=name, turn=t, history=tuple(x.q for x in group[:t]))
            for t, i in enumerate(group)]


def review_drafts(path: str | os.PathLike[str], out: str | os.PathLike[str], *,
                  ask: Callable[[str], str] = input, show: Callable[[str], None] = print) -> dict[str, int]:
    """Go through the drafts of ``path`` one by one: accept, edit (the question text), reject, or quit. A
    conversation is one draft: shown turn by turn, accepted or rejected whole, edited turn by turn.

    Accepted items go to ``out`` without their status and drafting notes (appended when ``out`` exists:
    ids already there get a ``-2``, ``-3``... suffix). Items of ``path`` that are not drafts pass through
    to ``out`` as they are. On quit (or end of input) the undecided drafts are written back to ``path``, so
    a later review resumes there; otherwise ``path`` is left with no drafts.
    """
    from dataclasses import replace

    from ..golden import golden_records, load_golden

    src = Path(path)
    golden = load_golden(src, strict=False, labels="all")
    outp = Path(out)
    if outp.resolve() == src.resolve():
        raise ConfigError(f"--out {out} is the draft file itself; write the accepted questions to another file")
    taken = set()
    if outp.exists():
        taken = {i.id for i in load_golden(outp, strict=False, labels="all")}
    accepted: list[list[Any]] = []
    left: list[Any] = []
    counts = {"accepted": 0, "edited": 0, "rejected": 0, "left": 0, "passed": 0}
    groups = _groups(golden.items)
    n_drafts, seen = sum(1 for g in groups if any(i.status == "draft" for i in g)), 0
    quit_ = False
    for group in groups:
        if all(i.status != "draft" for i in group):
            accepted.append(group)
            counts["passed"] += 1
            continue
        if quit_:
            left.extend(group)
            continue
        seen += 1
        show(_show_draft(group, seen, n_drafts))
        while True:
            try:
                choice = ask("  [a]ccept, [e]dit, [r]eject, [q]uit? ").strip().lower()
            except EOFError:
                choice = "q"
            if choice in ("a", "accept", "e", "edit", "r", "reject", "q", "quit"):
                break
            show("  type a, e, r or q")
        if choice[0] == "q":
            quit_ = True
            left.extend(group)
            continue
        if choice[0] == "r":
            counts["rejected"] += 1
            continue
        if choice[0] == "e" and _edit(group, ask):
            counts["edited"] += 1
        accepted.append([replace(i, status=None, draft={}) for i in group])
        counts["accepted"] += 1
    kept = [i for group in accepted for i in _renamed(group, taken)]
    counts["left"] = len(_groups(left))
    with open(outp, "a", encoding="utf-8") as f:
        for record in golden_records(kept):
            f.write(json.dumps(record, ensure_ascii=False) + "\n")
    if n_drafts:
        write_drafts(golden_records(left), src)
    return counts


def draft_golden_set(
    corpus: Corpus, *,
    generator: Annotated[str, Opt("anthropic, anthropic:<model> or openai:<model>")],
    out: Annotated[str, Opt("the draft golden set (JSONL)", metavar="FILE")],
    per_section: Annotated[int, Opt("paraphrase questions per section", lo=0, hi=20)] = 2,
    kinds: Annotated[str | None, Opt("comma-separated kinds to ask (default: paraphrase,identifier,multi-hop,"
                                     "near-duplicate,unanswerable; conversation, a chain of follow-ups over the "
                                     "next sections, only when named)")] = None,
    limit: Annotated[int | None, Opt("draft from the first N sections only", lo=1, hi=1_000_000)] = None,
    max_overlap: Annotated[float, Opt("flag questions sharing more than this share of content words with the "
                                      "section's heading and first sentence", lo=0.0, hi=1.0)] = 0.5,
    drop_copies: Annotated[bool, Opt("drop flagged questions instead")] = False,
    base_url: Annotated[str | None, Opt("the API's base URL (default: the provider's)")] = None,
    price_in: Annotated[float, Opt("$ per million input tokens", lo=0.0, hi=1e9)] = 0.0,
    price_out: Annotated[float, Opt("$ per million output tokens", lo=0.0, hi=1e9)] = 0.0,
    dry_run: Annotated[bool, Opt("print the cost estimate and stop")] = False,
    say: Callable[[str], None] = print,
) -> DraftResult | None:
    """Draft questions for the sections of ``corpus`` with the LLM ``generator`` and write them to ``out``:
    the cost estimate first (``say``), then nothing more with ``dry_run``; else the drafts and a summary."""
    llm = DraftLLM(generator, base_url=base_url)  # checks the name before any work
    units = draft_units(corpus, per_section=per_section, limit=limit,
                        kinds=[k.strip() for k in kinds.split(",")] if kinds else DEFAULT_KINDS)
    est = estimate_draft_cost(units, generator=llm.name, price_in=price_in, price_out=price_out)
    say(f"estimate: {est['calls']} calls to {llm.name} ({est['sections']} sections, {est['questions']} questions), "
        f"about {est['input_tokens']:,} input and {est['output_tokens']:,} output tokens"
        + (f", ${est['cost']:.4f}" if est["cost"] else " (give --price-in/--price-out for a cost in $)"))
    if dry_run:
        return None
    result = draft_golden(units, llm, max_overlap=max_overlap, drop_copies=drop_copies)
    write_drafts(result.items, out)
    d = result.to_dict()
    tags = ", ".join(f"{k} {n}" for k, n in d["tags"].items() if n)
    say(f"wrote {d['drafts']} draft question(s) to {out} ({tags or 'none'}); {d['flagged']} flagged as copying "
        f"the section, {d['dropped']} dropped; {d['usage'].get('calls', 0)} calls, "
        f"{d['usage'].get('input_tokens', 0):,} input and {d['usage'].get('output_tokens', 0):,} output tokens")
    if result.failed:
        say(f"no readable questions for {len(result.failed)} section(s): {', '.join(result.failed[:10])}")
    say(f"next: ragtune golden review {out} --out golden.jsonl")
    return result
