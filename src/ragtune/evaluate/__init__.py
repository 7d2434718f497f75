"""Evaluation: metrics over anchors (one table of them), ``evaluate`` and its result, ``Run`` and ``compare``."""

from .compare import Comparison, Report, ReportRow, compare, compare_runs
from .evaluate import DEFAULT_KS, EvalResult, Judgement, QuestionResult, covers, evaluate, judge
from .gate import GateCheck, GateReport, regression_gate, write_baseline
from .metrics import hit_at_k, ndcg_at_k, precision_at_k, recall_at_k, reciprocal_rank
from .run import Run, load_run, load_runs
from .table import METRICS, Metric, register_metric, unregister_metric

__all__ = [
    "Comparison",
    "DEFAULT_KS",
    "EvalResult",
    "GateCheck",
    "GateReport",
    "Judgement",
    "METRICS",
    "Metric",
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
    "register_metric",
    "regression_gate",
    "unregister_metric",
    "write_baseline",
]
