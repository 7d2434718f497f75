"""Sentence segmentation for quoting: a scanner that knows the dots of technical text.

A sentence ends at ``.``, ``!``, ``?`` (or a run of them, with closing quotes or brackets) that is followed by
whitespace and then by something that can start a sentence (not a lowercase letter), or by the end of the text.
So a dot never ends a sentence:

- inside inline code (`` `request.query_params` ``, ```` ``a. b`` ````), a URL (``https://x.org/a.b``,
  ``<https://...>``, ``www.x.org``) or a markdown link (``[the docs.](url)``);
- inside a word: identifiers (``a.b.c``), version numbers (``3.11``, ``v0.12.1``), file names (``config.toml``),
  since no whitespace follows it;
- after a known abbreviation (``e.g.``, ``i.e.``, ``cf.``, ``vs.``, ``Dr.``...), an initial (``J. Smith``,
  ``U.S.``) or a list enumerator (``1. Install``);
- before a lowercase word (``approx. five``, ``etc. and``).

Lines: a blank line, a markdown heading, list item, table row, quote or code fence starts a new block; any other
line continues the one before (soft-wrapped prose). Inside a fenced code block every line is its own segment.
Whitespace in a sentence is collapsed to single spaces.

No library was taken: pysbd and blingfire segment prose well but know neither backticks nor markdown blocks, and
NLTK's Punkt needs a model downloaded at run time.
"""

from __future__ import annotations

import re

__all__ = ["split_sentences"]

# spans in which no sentence may end
_PROTECTED_RE = re.compile(
    r"(?P<tick>`+)(?:(?!(?P=tick)).)+?(?P=tick)"  # inline code, any number of backticks
    r"|\[[^\]\n]*\]\([^)\s]*\)"  # markdown link
    r"|<(?:https?|ftp)://[^>\s]+>"  # autolink
    r"|(?:(?:https?|ftp)://|www\.)[^\s<>`\"]*[^\s<>`\"'.,;:!?)\]]"  # bare URL, trailing punctuation left out
)
_END_RE = re.compile(r"[.!?\u2026]+[\"'\u2019\u201d)\]]*(?=\s|$)")
_ABBREVIATIONS = frozenset(
    "e.g eg i.e ie cf vs viz al approx ca esp incl resp fig figs eq eqs sec ch vol pp ed eds "
    "mr mrs ms dr prof st jr sr mt ft no".split())
# "no" only before a digit ("No. 5"); otherwise "The answer is no. Then" ends a sentence
_ENUMERATOR_RE = re.compile(r"\s*(?:\d{1,3}|[a-zA-Z]|[ivxlcIVXLC]{1,5})")
_BLOCK_START_RE = re.compile(r"\s*(?:#{1,6}\s|[-*+]\s|\d{1,3}[.)]\s|\||>|```|~~~)")
_FENCE_RE = re.compile(r"\s*(?:```|~~~)")


def _blocks(text: str) -> list[str]:
    """Lines grouped into blocks: paragraphs joined across soft wraps; headings, list items, table rows,
    quotes and each line of a fenced code block apart."""
    blocks: list[list[str]] = []
    in_fence = False
    open_block = False  # may the next line continue the last block?
    for line in text.splitlines():
        if _FENCE_RE.match(line):
            in_fence = not in_fence
            blocks.append([line])
            open_block = False
            continue
        if in_fence or not line.strip():
            if line.strip():
                blocks.append([line])
            open_block = False
            continue
        starts = _BLOCK_START_RE.match(line)
        if open_block and not starts:
            blocks[-1].append(line)
        else:
            blocks.append([line])
        # a heading or a table row ends at its line; a paragraph, list item or quote may wrap
        open_block = not re.match(r"\s*(?:#{1,6}\s|\|)", line)
    return [" ".join(lines) for lines in blocks]


def _is_boundary(block: str, start: int, end: int, seg_start: int, protected: list[tuple[int, int]]) -> bool:
    if any(a <= start < b for a, b in protected):
        return False
    rest = block[end:].lstrip()
    if rest[:1].islower():
        return False
    if block[start] != ".":
        return True
    token = re.search(r"(\S*)$", block[seg_start:start]).group(1).lstrip("([\"'")
    word = token.lower()
    if word in _ABBREVIATIONS and (word != "no" or rest[:1].isdigit()):
        return False
    if re.fullmatch(r"(?:[A-Z]\.)*[A-Z]", token):  # an initial: J. Smith, U.S. Army
        return False
    if _ENUMERATOR_RE.fullmatch(block[seg_start:start]):  # "1. Install" / "b. Then"
        return False
    return True


def _split_block(block: str) -> list[str]:
    protected = [m.span() for m in _PROTECTED_RE.finditer(block)]
    out, seg_start = [], 0
    for m in _END_RE.finditer(block):
        if _is_boundary(block, m.start(), m.end(), seg_start, protected):
            out.append(block[seg_start:m.end()])
            seg_start = m.end()
    out.append(block[seg_start:])
    return out


def split_sentences(text: str) -> list[str]:
    """The sentences of ``text`` in reading order, whitespace collapsed; pieces without a word character
    (and single characters) are dropped."""
    out = []
    for block in _blocks(text):
        for piece in _split_block(block):
            s = " ".join(piece.split())
            if len(s) > 1 and re.search(r"\w", s):
                out.append(s)
    return out
