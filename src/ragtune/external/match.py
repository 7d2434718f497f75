"""Matching outside hits to spans of the corpus: :class:`HitMatcher`.

The one matcher lives in :mod:`ragtune.evaluate.match` (run files read by ``eval --run``, ``compare`` and the gate
go through it, as outside retrievers do); this name stays for imports. The coverage rule is in its docstring and in
docs/concepts/matching.md.
"""

from ..evaluate.match import (ANCHOR_SPANS, DOC_HITS, METHODS, AnchorsOnly, HitMatcher, MatchOptions, MatchReport,
                              Unmatched, hits_to_ranking, score_matched)

__all__ = ["HitMatcher", "MatchReport", "MatchOptions", "Unmatched", "AnchorsOnly", "METHODS", "ANCHOR_SPANS",
           "DOC_HITS", "hits_to_ranking", "score_matched"]
