"""Loading corpora: markdown and text folders, BEIR folders (what is refused or skipped: see ``loaders``)."""

from .corpus import AnchorSpan, Corpus
from .loaders import MAX_FILE_BYTES, is_beir_folder, iter_jsonl, load_beir_corpus, load_corpus, load_folder, read_text_file
from .markdown import parse_markdown, slugify

__all__ = [
    "MAX_FILE_BYTES",
    "AnchorSpan",
    "Corpus",
    "is_beir_folder",
    "iter_jsonl",
    "load_beir_corpus",
    "load_corpus",
    "load_folder",
    "parse_markdown",
    "read_text_file",
    "slugify",
]
