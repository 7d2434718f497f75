"""Markdown and plain-text files: the text is the file's, so spans are file offsets (see :class:`Document`)."""

from __future__ import annotations

from dataclasses import dataclass

from ...config import Config
from ...registry import LOADERS
from ...types import Document
from ..files import decode_text
from ..markdown import parse_markdown

__all__ = ["MarkdownLoader", "TextLoader"]


@dataclass(frozen=True)
class TextLoaderConfig(Config):
    pass


def _stem(doc_id: str) -> str:
    name = doc_id.rsplit("/", 1)[-1]
    return name.rsplit(".", 1)[0] if "." in name[1:] else name


class MarkdownLoader:
    """Front matter (YAML) becomes metadata, blanked out of the text; headings (ATX, setext) are sections."""

    name = "markdown"
    version = "1"
    cache = False

    def __init__(self, config: TextLoaderConfig | None = None):
        self.config = config

    def load(self, data: bytes, doc_id: str, source: str) -> Document:
        text = decode_text(data, source)
        parsed = parse_markdown(text, doc_id=doc_id, source=source)
        del text
        meta = parsed.front_matter
        title = meta.get("title")
        if not isinstance(title, str) or not title.strip():
            title = parsed.first_h1 or _stem(doc_id)
        return Document(id=doc_id, title=title.strip(), text=parsed.body, metadata=meta, sections=parsed.sections,
                        source=source, format="markdown")


class TextLoader:
    """The file's text as one document without sections."""

    name = "text"
    version = "1"
    cache = False

    def __init__(self, config: TextLoaderConfig | None = None):
        self.config = config

    def load(self, data: bytes, doc_id: str, source: str) -> Document:
        return Document(id=doc_id, title=_stem(doc_id), text=decode_text(data, source), source=source, format="text")


LOADERS.register("markdown", TextLoaderConfig, MarkdownLoader, summary="markdown: headings, front matter",
                 suffixes=(".md", ".markdown"), replace=True)
LOADERS.register("text", TextLoaderConfig, TextLoader, summary="plain text, one document per file",
                 suffixes=(".txt",), replace=True)
