"""How documentation site generators publish a markdown corpus: each page's URL path and each heading's id.

A hit from a search service over a published site names a page URL and a heading id (``.../guide/install/#step_1``).
Which document and which section that is depends on the generator that built the site, so ragtune knows the rules
of the common ones (:data:`SITES`):

============  =========================================================  ==============================================
site          page URL of ``guide/install.md`` (``index.md``)             heading id
============  =========================================================  ==============================================
github        ``guide/install.md`` (``blob/<ref>/`` cut off)              GitHub's slug (:func:`~.markdown.slugify`),
                                                                          duplicates ``-1``, ``-2``; ``{#id}`` kept
mkdocs        ``guide/install/`` or ``guide/install.html``               Python-Markdown's toc slug (:func:`mkdocs_slug`:
              (``use_directory_urls`` either way); ``index.md`` and      ASCII-folded, lowercase, non-word characters
              ``README.md`` are their folder (``""``, the site root)     dropped, runs of ``-`` and spaces one ``-``),
                                                                          duplicates ``_1``, ``_2``; ``{#id}`` (attr_list)
                                                                          kept
sphinx        ``guide/install.html`` (``dirhtml``: ``guide/install/``);   docutils' ``make_id`` of the title
              ``index.md`` is its folder                                  (:func:`sphinx_id`: ASCII, ``[a-z0-9]`` runs
                                                                          joined by ``-``, no leading digits),
                                                                          duplicates and empty ids ``id1``, ``id2``
docusaurus    ``guide/install`` with number prefixes cut off             GitHub's slug (github-slugger), duplicates
              (``01-guide/``), the front matter's ``id`` and ``slug``,    ``-1``; ``{#id}`` kept
              ``index``/``README``/a file named as its folder are the
              folder
============  =========================================================  ==============================================

:func:`page_path` normalises a URL path the same way for every site (no slashes at either end, no ``index.html``,
no ``.html``), so ``guide/install/``, ``/guide/install.html`` and ``guide/install`` are one key; :func:`page_keys`
gives the keys a document is published under and :func:`heading_ids` the id of each of its sections. Sphinx
numbers duplicate ids with one counter per page that footnotes and other auto-numbered targets share; for pages of
headings, paragraphs and code (what a markdown corpus holds) the counter is the sections'.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator, Mapping
from typing import Literal

from ..types import Document, Section

__all__ = ["SITES", "Site", "mkdocs_slug", "sphinx_id", "heading_ids", "page_keys", "page_path"]

Site = Literal["github", "mkdocs", "sphinx", "docusaurus"]
#: the generators whose rules are known, in the order ``auto`` prefers them on a tie
SITES: tuple[str, ...] = ("github", "mkdocs", "sphinx", "docusaurus")

_EXTS = (".md", ".markdown", ".mdx", ".rst", ".txt")
_MK_DROP = re.compile(r"[^\w\s-]")
_MK_SEP = re.compile(r"[-\s]+")
_MK_COUNT = re.compile(r"^(.*)_([0-9]+)$")
_SPHINX_NON_ID = re.compile(r"[^a-z0-9]+")
_SPHINX_ENDS = re.compile(r"^[-0-9]+|-+$")
# docutils' _non_id_translate and _non_id_translate_digraphs: letters NFKD does not reduce to ASCII
_SPHINX_TRANSLATE = str.maketrans({
    "ø": "o", "đ": "d", "ħ": "h", "ı": "i", "ł": "l", "ŧ": "t", "ƀ": "b", "ƃ": "b", "ƈ": "c", "ƌ": "d", "ƒ": "f",
    "ƙ": "k", "ƚ": "l", "ƞ": "n", "ƥ": "p", "ƫ": "t", "ƭ": "t", "ƴ": "y", "ƶ": "z", "ǥ": "g", "ȥ": "z", "ȴ": "l",
    "ȵ": "n", "ȶ": "t", "ȷ": "j", "ȼ": "c", "ȿ": "s", "ɀ": "z", "ɇ": "e", "ɉ": "j", "ɋ": "q", "ɍ": "r", "ɏ": "y",
    "ß": "sz", "æ": "ae", "œ": "oe", "ĸ": "kappa", "ƕ": "hv", "ȸ": "db", "ȹ": "qp"})
_NUMBER_PREFIX = re.compile(r"^\d+[-_.]\s*")


def mkdocs_slug(text: str) -> str:
    """Python-Markdown's toc ``slugify(text, "-")``, MkDocs' heading ids: ASCII-folded (NFKD), characters that are
    not word characters, whitespace or ``-`` dropped, trimmed, lowercased, each run of ``-`` and whitespace one
    ``-`` (``"A -- B"`` -> ``a-b``; GitHub gives ``a----b``)."""
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    text = _MK_DROP.sub("", text).strip().lower()
    return _MK_SEP.sub("-", text)


def _mkdocs_unique(slug: str, used: set[str]) -> str:
    """Python-Markdown's toc ``unique``: ``x``, ``x_1``, ``x_2`` (an empty slug is ``_1``)."""
    if slug in used or not slug:
        m = _MK_COUNT.match(slug)
        base, count = (m.group(1), int(m.group(2))) if m else (slug, 0)
        count += 1
        while f"{base}_{count}" in used:
            count += 1
        slug = f"{base}_{count}"
    used.add(slug)
    return slug


def sphinx_id(text: str) -> str:
    """docutils' ``make_id`` of a section title (lowercased and whitespace-normalised, as its name is): ASCII only,
    every run of characters outside ``[a-z0-9]`` one ``-``, leading digits and hyphens and trailing hyphens cut
    (``"2. Install"`` -> ``install``)."""
    s = " ".join(text.lower().split()).translate(_SPHINX_TRANSLATE)
    s = unicodedata.normalize("NFKD", s).encode("ascii", "ignore").decode("ascii")
    s = _SPHINX_NON_ID.sub("-", " ".join(s.split()))
    return _SPHINX_ENDS.sub("", s)


def heading_ids(doc: Document, site: str) -> dict[str, Section]:
    """The id each section of ``doc`` gets on a ``site`` page -> the section (the first, for an id written twice)."""
    out: dict[str, Section] = {}
    if site in ("github", "docusaurus"):
        for s in doc.sections:
            out.setdefault(s.id, s)
    elif site == "mkdocs":
        used = {s.explicit_id for s in doc.sections if s.explicit_id}
        for s in doc.sections:
            out.setdefault(s.explicit_id or _mkdocs_unique(mkdocs_slug(s.title), used), s)
    elif site == "sphinx":
        counter = 0
        for s in doc.sections:
            # MyST keeps a heading's {#id} in its title (attr_list is MkDocs' and Docusaurus' syntax, not MyST's)
            sid = sphinx_id(f"{s.title} {{#{s.explicit_id}}}" if s.explicit_id else s.title)
            if not sid or sid in out:
                counter += 1
                while f"id{counter}" in out:
                    counter += 1
                sid = f"id{counter}"
            out[sid] = s
    else:
        raise ValueError(f"unknown site {site!r}; known: {', '.join(SITES)}")
    return out


def page_path(path: str) -> str:
    """A URL path as one key: no slashes at either end, no trailing ``index.html``, no ``.html``/``.htm``."""
    p = path.strip().strip("/")
    for tail in ("index.html", "index.htm"):
        if p == tail or p.endswith("/" + tail):
            p = p[: -len(tail)].rstrip("/")
    for ext in (".html", ".htm"):
        if p.endswith(ext):
            p = p[: -len(ext)]
    return p


def _stem(doc_id: str) -> str:
    low = doc_id.lower()
    for ext in _EXTS:
        if low.endswith(ext):
            return doc_id[: -len(ext)]
    return doc_id


def _parent(parts: list[str]) -> str:
    return "/".join(parts[:-1])


def page_keys(doc: Document, site: str) -> Iterator[tuple[str, int]]:
    """The :func:`page_path` keys ``doc`` is published under on ``site``, each with a priority (lower wins when two
    documents claim one key: ``index.md`` over ``README.md`` for their folder)."""
    stem = _stem(doc.id)
    parts = stem.split("/")
    last = parts[-1]
    if site == "github":
        yield stem, 0
        if last.lower() in ("readme", "index"):
            yield _parent(parts), 1 if last.lower() == "readme" else 2
    elif site == "mkdocs":
        if last == "index":
            yield _parent(parts), 0
        elif last.lower() == "readme":
            yield _parent(parts), 1
        else:
            yield stem, 0
    elif site == "sphinx":
        yield stem, 0
        if last == "index":
            yield _parent(parts), 0
    elif site == "docusaurus":
        yield _docusaurus_path(doc, parts), 0
    else:
        raise ValueError(f"unknown site {site!r}; known: {', '.join(SITES)}")


def _docusaurus_path(doc: Document, parts: list[str]) -> str:
    meta: Mapping[str, object] = doc.metadata if isinstance(doc.metadata, Mapping) else {}
    folders = [_NUMBER_PREFIX.sub("", p) for p in parts[:-1]]
    slug = meta.get("slug")
    if isinstance(slug, str) and slug.strip():
        slug = slug.strip()
        return slug.strip("/") if slug.startswith("/") else "/".join(folders + [slug.strip("/")]).strip("/")
    name = meta.get("id") if isinstance(meta.get("id"), str) and meta.get("id") else _NUMBER_PREFIX.sub("", parts[-1])
    assert isinstance(name, str)
    if name.lower() in ("index", "readme") or (folders and name.lower() == folders[-1].lower()):
        return "/".join(folders)
    return "/".join(folders + [name])
