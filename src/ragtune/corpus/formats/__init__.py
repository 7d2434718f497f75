"""File formats of a corpus folder: one loader per format, looked up in :data:`ragtune.registry.LOADERS`.

A loader entry is registered with the file name endings it reads (``suffixes``) and a typed config of its options;
its factory returns an object with::

    name: str        # the format ("html"), also Document.format
    version: str     # bumped when extraction changes: extractions cached by another version are made again
    cache: bool      # whether extraction is worth caching by file content and running in worker processes
    def load(self, data: bytes, doc_id: str, source: str) -> Document

``load`` gets the file's bytes (read by ragtune, which refuses special files and files over the size limit first)
and builds the Document with :class:`~ragtune.corpus.formats.builder.DocumentBuilder`, so sections, anchors, code
blocks, tables and locations mean the same in every format. A file it cannot read raises
:class:`~ragtune.errors.CorpusError` with one line saying what is wrong and what to do; any other exception from a
parsing library is reported the same way, naming the file. A loader of another package registers through the
``ragtune.loaders`` entry-point group, like every other stage.

Built in: ``markdown`` and ``text`` (:mod:`.text`), ``html``, ``pdf``, ``docx``, ``rst``, ``ipynb``. The
libraries they use sit behind the ``formats`` extra (or one extra per format) and are imported on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .builder import DocumentBuilder, heading_slug, strip_section_number

if TYPE_CHECKING:
    from ...errors import CorpusError

__all__ = ["DocumentBuilder", "heading_slug", "strip_section_number", "missing_library"]


def missing_library(fmt: str, module: str, extra: str) -> CorpusError:
    """The error for a format whose library is not installed: which one, and the pip command that adds it."""
    from ...errors import CorpusError

    return CorpusError(f"reading {fmt} files needs the {module} package: pip install 'ragtune[{extra}]' "
                       f"(or 'ragtune[formats]' for every format)")
