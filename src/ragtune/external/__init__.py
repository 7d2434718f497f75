"""Measure retrievers ragtune did not build: any callable, an HTTP endpoint, TREC or JSON run files.

Outside hits name results by anchor, document id or path, URL or text; :class:`HitMatcher`
maps them onto spans of the corpus so they are scored by the same rule as ragtune's own
chunks (docs/guide/external-retrievers.md).
"""

from .adapter import ExternalRetriever, evaluate_retriever, hits_to_ranking
from .hits import ExternalHit, to_hit
from .match import AnchorsOnly, HitMatcher, MatchReport, Unmatched

__all__ = [
    "AnchorsOnly",
    "ExternalHit",
    "ExternalRetriever",
    "HitMatcher",
    "MatchReport",
    "Unmatched",
    "evaluate_retriever",
    "hits_to_ranking",
    "to_hit",
]
