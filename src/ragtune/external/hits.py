"""What an outside retriever returns, normalised: :class:`ExternalHit` and :func:`to_hit`.

The module lives in :mod:`ragtune.evaluate.hits` (run files, read by ``compare`` and the gate as much as by
``eval --run``, need it below the outside-retriever adapters); this name stays for imports.
"""

from ..evaluate.hits import HIT_FIELDS, ExternalHit, to_hit

__all__ = ["ExternalHit", "to_hit", "HIT_FIELDS"]
