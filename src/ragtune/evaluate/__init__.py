"""Evaluation: metrics over anchors, ``evaluate`` and its result, ``Run`` and ``compare``."""

from .compare import Comparison, Report, ReportRow, compare, compare_runs
from .evaluate import DEFAULT_KS, EvalResult, Judgement, QuestionResult, covers, evaluate, judge
from .gate import GateCheck, GateReport, regression_gate, write_baseline
from .metrics import hit_at_k, ndcg_at_k, precision_at_k, recall_at_k, reciprocal_rank
from .run import Run, load_run, load_runs

__all__ = [
    "Comparison",
    "DEFAULT_KS",
    "EvalResult",
    "GateCheck",
    "GateReport",
    "Judgement",
    "QuestionResult",
    "Report",
    "ReportRow",
    "Run",
    "compare",
    "compare_runs",
    "covers",
    "evaluate",
    "hit_at_k",
    "judge",
    "load_run",
    "load_runs",
    "ndcg_at_k",
    "precision_at_k",
    "recall_at_k",
    "reciprocal_rank",
    "regression_gate",
    "write_baseline",
]
