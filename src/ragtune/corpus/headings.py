"""The bound on a heading's length where it is repeated: a section's title, its heading path, its slug.

A heading is repeated in every chunk cut from its section (the heading path, the ``Title > Heading`` prefix)
and in every section under it. One heading of 30,000 words cut into a few thousand window-sized pieces made
every piece carry the whole heading: memory and output grew with the square of the file (2.3 GB for a 400 KB
file). A heading longer than :data:`MAX_HEADING_CHARS` is therefore clipped wherever it is repeated; the
section's own text, where the heading is written, keeps it whole.
"""

from __future__ import annotations

__all__ = ["MAX_HEADING_CHARS", "clip_heading"]

MAX_HEADING_CHARS = 300  # about 50 words: far longer than a real heading, short enough to repeat in every chunk

ELLIPSIS = "\u2026"


def clip_heading(text: str) -> str:
    """``text`` when at most :data:`MAX_HEADING_CHARS` characters; else its start, cut at the last space
    before the bound (or at the bound when that space is early), followed by ``…``. Costs O(bound), whatever
    the length of ``text``."""
    if len(text) <= MAX_HEADING_CHARS:
        return text
    head = text[:MAX_HEADING_CHARS]
    cut = head.rfind(" ")
    if cut < MAX_HEADING_CHARS // 2:
        cut = MAX_HEADING_CHARS - 1
    return head[:cut].rstrip() + ELLIPSIS
