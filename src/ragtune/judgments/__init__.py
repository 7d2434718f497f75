"""Judgments: making and checking the relevance labels a golden set holds.

The golden-set story lives in three places, one concern each:

- :mod:`ragtune.golden` (a low layer, read by every loader): the format of a golden set and of its judgments
  (golden JSONL and YAML, BEIR, TREC and ranx qrels), one grading rule, and reading them
  (:func:`ragtune.load_golden`).
- :mod:`ragtune.judgments` (this package, one layer above :mod:`ragtune.evaluate`, whose matcher and ``covers``
  rule it uses): making and checking judgments.

  - :mod:`.pool`: the unjudged sections in the union of several runs' top k, the next things to judge
    (``ragtune pool``);
  - :mod:`.llm_labels`: an LLM grades a pool's holes (``ragtune golden judge``, :func:`ragtune.judge_pool`);
  - :mod:`.agreement`: Cohen's kappa and Kendall's tau between two label sets, base rates, prevalence and the
    calibration verdict (``ragtune golden agreement``);
  - :mod:`.ppi`: metrics filled by LLM labels, corrected by a people-judged sample with prediction-powered
    intervals (``ragtune golden ppi``);
  - :mod:`.draft`: drafting golden questions with an LLM for a person to accept (``ragtune golden draft`` and
    ``golden review``).
- :mod:`ragtune.label` (near the top): the labelling workbench, where a person judges a pool in the browser.

Scoring a ranking against judgments (metrics, ``judged@k``, runs, compare, the gate) stays in
:mod:`ragtune.evaluate`. The modules are imported one by one (``from ragtune.judgments import pool``); the
public functions are also reachable from :mod:`ragtune` itself.
"""
