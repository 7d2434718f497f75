"""Experiment tracking: a finished sweep logged to MLflow, one run per configuration under a parent run.

Works from what the sweep folder holds (``results.json``, ``sweep-state.json``, ``report.html``), so a sweep can
be logged once it has run, or long after::

    parent run  (name: the folder's name; tags ragtune.role=sweep, the fingerprints, the ranking settings)
      params     ks, depth
      tags       ragtune.recommended (the key of the one configuration the sweep recommends), its _label, _basis
                 and _reason
      metrics    configurations, the recommended configuration's score (recommended_<metric>; with a held-out
                 figure, recommended_<metric>_in_sample and _held_out), the held-out figures (holdout_*, or folds_*)
      artifacts  results.json, report.html
      child run per configuration  (tags ragtune.role=config, ragtune.config_key, ragtune.label,
                                    ragtune.is_recommended=true on the recommended one, ...)
        params     the pipeline configuration, flat: chunker, size, overlap, prefix, retriever, rrf_k, ...
        metrics    every mean (recall_at_10, mrr, ...), its interval (recall_at_10_ci_low/_ci_high), latency,
                   rank, and the comparison with the baseline on the sweep metric (recall_at_10_delta, _p_holm, ...)
        artifacts  questions.csv, the per-question scores

MLflow names allow no ``@``: ``recall@10`` is logged as ``recall_at_10``. Logging again (a resumed sweep, or the
same folder ranked on another metric) updates the runs it logged before instead of adding new ones: the folder's
``mlflow.json`` keeps a sweep id, every run carries it as the tag ``ragtune.sweep_id``, and runs are found by it
and by ``ragtune.config_key``; a run whose content did not change (tag ``ragtune.digest``) is left alone.

A tracking server is given bounded time: each request waits at most :data:`HTTP_TIMEOUT_S` seconds and is retried
:data:`HTTP_RETRIES` times, 1 s then 2 s apart (MLflow's own default retries a refused connection for about four
minutes), so a server that cannot be reached fails the logging in seconds, and one that hangs within a minute or
two; ``MLFLOW_HTTP_REQUEST_TIMEOUT`` and ``MLFLOW_HTTP_REQUEST_MAX_RETRIES``, when set, are used instead. The
tracking URI is never printed or stored with its credentials: messages, ``mlflow.json`` and MLflow's own exception
text go through :func:`ragtune.http.redact_text`.
"""

from __future__ import annotations

import contextlib
import csv
import hashlib
import io
import json
import math
import os
import re
import time
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._version import __version__
from ..errors import MissingDependencyError, SweepStateError, TrackingError
from ..http import redact_text, redact_url
from ..io import write_atomic
from .holdout import folds_text, selection_text

__all__ = ["log_to_mlflow", "mlflow_uri", "mlflow_runs", "metric_name", "DEFAULT_EXPERIMENT", "HTTP_TIMEOUT_S",
           "HTTP_RETRIES"]

DEFAULT_EXPERIMENT = "ragtune"
_INSTALL = "pip install 'ragtune[mlflow]'"
_BAD = re.compile(r"[^\w.\- /:]")  # what MLflow refuses in a metric, param or tag name
_MAX_TAG = 8000  # MLflow's longest tag value
HTTP_TIMEOUT_S = 20  # the longest one request to a tracking server waits (connect, and each read)
HTTP_RETRIES = 2  # retries of a failed request (refused, timed out, 429 or 5xx), 1 s then 2 s apart
# MLflow reads these at each request; set only while ragtune logs, and only where the user set nothing
_HTTP_BOUNDS = {"MLFLOW_HTTP_REQUEST_TIMEOUT": str(HTTP_TIMEOUT_S), "MLFLOW_HTTP_REQUEST_MAX_RETRIES": str(HTTP_RETRIES),
                "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR": "1", "MLFLOW_HTTP_REQUEST_BACKOFF_JITTER": "0"}


def metric_name(name: str) -> str:
    """A ragtune metric name as MLflow accepts it: ``recall@10`` -> ``recall_at_10``."""
    return _BAD.sub("_", name.replace("@", "_at_"))


def _client_class() -> Any:
    try:
        from mlflow.tracking import MlflowClient
    except ImportError:
        raise MissingDependencyError(f"logging a sweep to MLflow needs mlflow: {_INSTALL}") from None
    return MlflowClient


def mlflow_uri(out_dir: str | os.PathLike[str], uri: str | None = None) -> str:
    """The tracking URI :func:`log_to_mlflow` logs to: ``uri``, or (None or empty) a SQLite store in the sweep
    folder, ``sqlite:///OUT/mlruns/mlflow.db`` (artifacts under ``OUT/mlruns/artifacts``). Raises
    :class:`~ragtune.MissingDependencyError` when mlflow is not installed, so a command can check it before a
    sweep runs."""
    _client_class()
    return uri or _local_uri(Path(out_dir))


def _local_uri(out: Path) -> str:
    return f"sqlite:///{(out.resolve() / 'mlruns' / 'mlflow.db').as_posix()}"


@dataclass
class _Run:
    """What one MLflow run receives."""

    name: str
    params: dict[str, str] = field(default_factory=dict)
    metrics: dict[str, float] = field(default_factory=dict)
    tags: dict[str, str] = field(default_factory=dict)
    texts: dict[str, str] = field(default_factory=dict)  # artifact name -> content
    files: dict[str, Path] = field(default_factory=dict)  # artifact name -> local file

    def metric(self, name: str, value: Any) -> None:
        if isinstance(value, bool):
            value = float(value)
        if isinstance(value, (int, float)) and math.isfinite(float(value)):
            self.metrics[metric_name(name)] = float(value)

    def digest(self) -> str:
        files = {k: hashlib.sha256(p.read_bytes()).hexdigest() for k, p in self.files.items()}
        blob = json.dumps([self.name, self.params, self.metrics, self.tags, self.texts, files], sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]


def _param(value: Any) -> str:
    return json.dumps(list(value)) if isinstance(value, (list, tuple)) else str(value)


def _flat(prefix: str, value: Any, out: dict[str, str]) -> None:
    if isinstance(value, Mapping):
        for k, v in value.items():
            _flat(f"{prefix}.{k}" if prefix else str(k), v, out)
    elif value is not None:
        out[_BAD.sub("_", prefix)] = _param(value)


def _questions_csv(config: Mapping[str, Any], held_out: set[str] | None) -> str:
    qs = config.get("questions") or []
    scores = list(dict.fromkeys(k for q in qs for k in q["scores"]))
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["id", "answerable", "first_hit_rank", *(["held_out"] if held_out is not None else []), *scores])
    for q in qs:
        extra = [q["id"] in held_out] if held_out is not None else []
        w.writerow([q["id"], q["answerable"], "" if q["first_hit_rank"] is None else q["first_hit_rank"], *extra,
                    *("" if q["scores"].get(s) is None else q["scores"][s] for s in scores)])
    return buf.getvalue()


def _runs(results: Mapping[str, Any], state: Mapping[str, Any], out: Path, sweep_id: str) -> tuple[_Run, list[_Run]]:
    """The parent run and one run per configuration, built from results.json and sweep-state.json."""
    metric = results["metric"]
    m = metric_name(metric)
    configs = results["configs"]
    selection = results.get("selection") or None
    folds = bool(selection and "folds" in selection)  # K-fold selection, else one held-out split
    usable = bool(selection and "problem" not in selection)
    recommended = results.get("recommended") or {}
    held = set(selection.get("held_out_ids") or []) if usable and not folds else None
    fold_wins = ({r["chosen"]: 0 for r in selection["per_fold"]} if usable and folds else {})
    for r in selection["per_fold"] if usable and folds else []:
        fold_wins[r["chosen"]] += 1
    moved = set(results.get("rank_could_change") or [])
    common = {"ragtune.sweep_id": sweep_id, "ragtune.version": __version__, "ragtune.metric": metric,
              **({"ragtune.corpus_fingerprint": str(state["corpus"])} if "corpus" in state else {}),
              **({"ragtune.golden_fingerprint": str(state["golden"])} if "golden" in state else {})}

    parent = _Run(out.name or "sweep", tags={**common, "ragtune.role": "sweep", "ragtune.baseline": results["baseline"],
                                              "ragtune.test": str(results.get("test")),
                                              "ragtune.samples": str(results.get("samples")),
                                              "ragtune.seed": str(results.get("seed")),
                                              "ragtune.correction": str(results.get("correction")),
                                              "mlflow.source.name": "ragtune sweep"})
    parent.params = {"ks": _param(results.get("ks") or state.get("ks") or []), "depth": str(state.get("depth", ""))}
    parent.metric("configurations", len(configs))  # a metric: a resumed sweep may add some
    notes = [results.get("ranking")]
    if selection:
        notes.append((folds_text if folds else selection_text)(selection, metric))
    notes += [results.get("judged_note"), results.get("power_note")]
    parent.tags["mlflow.note.content"] = "\n\n".join(n for n in notes if n)[:_MAX_TAG]
    if recommended:  # the one configuration the sweep recommends: no other tag names a winner
        parent.tags.update({"ragtune.recommended": recommended["key"],
                            "ragtune.recommended_label": recommended["label"],
                            "ragtune.recommended_basis": str(recommended.get("basis")),
                            "ragtune.recommended_reason": str(recommended.get("reason"))[:_MAX_TAG]})
        parent.metric(f"recommended_{m}_in_sample" if usable else f"recommended_{m}", recommended.get("in_sample"))
        if recommended.get("held_out") is not None:
            parent.metric(f"recommended_{m}_held_out", recommended["held_out"])
    parent.metric("significant", sum(1 for c in configs if (c.get("vs_baseline") or {}).get("p_holm") is not None
                                     and c["vs_baseline"]["p_holm"] < 0.05))
    kind = "folds" if folds else "holdout"
    if usable:
        parent.tags[f"ragtune.{kind}.beats_baseline"] = str(bool(selection["beats_baseline"])).lower()
        parent.tags[f"ragtune.{kind}.select"] = selection.get("rule", "best")
        if folds:
            parent.tags["ragtune.folds.chosen_counts"] = json.dumps(selection["chosen_counts"])[:_MAX_TAG]
            parent.metric("folds", selection["folds"])
            parent.metric("folds_questions", selection.get("questions"))
        else:
            parent.metric("holdout_share", selection["share"])
            parent.metric("holdout_selection_questions", selection.get("selection_questions"))
            parent.metric("holdout_held_out_questions", selection.get("held_out_questions"))
        for k in ("selection_score", "held_out_score", "optimism", "baseline_held_out", "delta_vs_baseline",
                  "p_vs_baseline"):
            parent.metric(f"{kind}_{k}", selection.get(k))
        lo, hi = selection.get("held_out_ci") or (None, None)
        parent.metric(f"{kind}_held_out_ci_low", lo)
        parent.metric(f"{kind}_held_out_ci_high", hi)
    elif selection:
        parent.tags[f"ragtune.{kind}.problem"] = selection["problem"]
    for name in ("report.html",):
        if (out / name).is_file():
            parent.files[name] = out / name
    parent.texts["results.json"] = json.dumps(results, indent=1, ensure_ascii=False, default=str) + "\n"

    children = []
    for rank, c in enumerate(configs, start=1):
        run = _Run(c["label"], tags={**common, "ragtune.role": "config", "ragtune.config_key": c["key"],
                                     "ragtune.label": c["label"],
                                     "ragtune.is_baseline": str(c["key"] == results["baseline"]).lower(),
                                     "ragtune.rank_could_change": str(c["key"] in moved).lower(),
                                     "ragtune.is_recommended": str(c["key"] == recommended.get("key")).lower()})
        if usable and folds:
            run.metric("folds_chosen", fold_wins.get(c["key"], 0))  # folds whose choice this configuration was
        _flat("", {k: v for k, v in (c.get("chunker_config") or {}).items() if k != "name"}, run.params)
        _flat("", c["config"], run.params)  # the configuration as the grid set it wins over resolved defaults
        run.metric("rank", rank)
        for name, v in c["metrics"].items():
            run.metric(name, v)
        for name, ci in (c.get("metrics_ci") or {}).items():
            if ci and len(ci) == 2:
                run.metric(f"{name}_ci_low", ci[0])
                run.metric(f"{name}_ci_high", ci[1])
        for tag, row in (c.get("by_tag") or {}).items():
            run.metric(f"by_tag.{tag}.{metric}", row.get(metric))
        stats = c.get("stats") or {}
        lat = stats.get("latency_ms") or {}
        for q in ("p50", "p95"):
            run.metric(f"latency_{q}_ms", lat.get(q))
            for stage, v in (lat.get("stages") or {}).items():
                run.metric(f"latency_{stage}_{q}_ms", (v or {}).get(q))
            run.metric(f"query_embedding_{q}_ms", (stats.get("query_embedding_ms") or {}).get(q))
        for k in ("chunks", "parents", "texts_embedded", "embedding_cache_hits", "index_build_s"):
            run.metric(k, stats.get(k))
        vs = c.get("vs_baseline")
        if vs:
            for k in ("delta", "p", "p_holm", "wins", "ties", "losses", "mde", "needed"):
                run.metric(f"{m}_{k}", vs.get(k))
            lo, hi = vs.get("delta_ci") or (None, None)
            run.metric(f"{m}_delta_ci_low", lo)
            run.metric(f"{m}_delta_ci_high", hi)
        run.texts["questions.csv"] = _questions_csv(c, held)
        children.append(run)
    return parent, children


def _sweep_id(out: Path) -> str:
    """The folder's sweep id (created on first use, kept in ``mlflow.json``)."""
    path = out / "mlflow.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    except (OSError, json.JSONDecodeError):
        data = {}
    if not isinstance(data, dict) or not isinstance(data.get("sweep_id"), str):
        data = {"sweep_id": uuid.uuid4().hex, "logged": {}}
        _write_json(path, data)
    return data["sweep_id"]


def _write_json(path: Path, data: Any) -> None:
    write_atomic(path, json.dumps(data, indent=1) + "\n")


@contextlib.contextmanager
def _bounded_http() -> Iterator[None]:
    """MLflow's HTTP retries and timeout bounded (:data:`HTTP_TIMEOUT_S`, :data:`HTTP_RETRIES`) for the calls made
    inside; a variable the user set is left as it is, and everything set here is removed after."""
    added = {k: v for k, v in _HTTP_BOUNDS.items() if k not in os.environ}
    os.environ.update(added)
    try:
        yield
    finally:
        for k in added:
            os.environ.pop(k, None)


def _search(client: Any, experiment_id: str, sweep_id: str) -> Iterator[Any]:
    token = None
    while True:
        page = client.search_runs([experiment_id], filter_string=f"tags.`ragtune.sweep_id` = '{sweep_id}'",
                                  max_results=1000, page_token=token)
        yield from page
        token = page.token
        if not token:
            return


def _batches(items: list, n: int) -> Iterator[list]:
    for i in range(0, len(items), n):
        yield items[i:i + n]


def _log(client: Any, entities: Any, run_id: str, run: _Run, existing: Any) -> None:
    """Everything of ``run`` into the MLflow run ``run_id`` (params it already has are left as they are)."""
    now = int(time.time() * 1000)
    have = dict(existing.data.params) if existing is not None else {}
    params = [entities.Param(k, v) for k, v in run.params.items() if k not in have]
    tags = [entities.RunTag(k, v) for k, v in {**run.tags, "ragtune.digest": run.digest()}.items()]
    metrics = [entities.Metric(k, v, now, 0) for k, v in run.metrics.items()]
    for batch in _batches(params, 100):
        client.log_batch(run_id, params=batch)
    for batch in _batches(metrics, 1000):
        client.log_batch(run_id, metrics=batch)
    for name, text in run.texts.items():
        client.log_text(run_id, text, name)
    for name, path in run.files.items():
        client.log_artifact(run_id, str(path))
    for batch in _batches(tags, 100):  # last: the digest says the rest is there
        client.log_batch(run_id, tags=batch)
    for key in existing.data.tags if existing is not None else ():
        if key.startswith("ragtune.") and key not in run.tags and key != "ragtune.digest":
            client.delete_tag(run_id, key)  # what no longer holds (a holdout's choice, once folds chose instead)
    with contextlib.redirect_stdout(io.StringIO()):  # MLflow prints links to a server's UI on standard output
        client.set_terminated(run_id, "FINISHED")


def log_to_mlflow(out_dir: str | os.PathLike[str], *, result: Any = None, uri: str | None = None,
                  experiment: str | None = None) -> str:
    """Log a sweep folder to MLflow and return the parent run's id (see the module docstring for what goes where).

    ``result``: the :class:`~ragtune.SweepResult` the sweep returned (default: the folder's ``results.json``).
    ``uri``: the tracking URI (``http://host:5000``, ``sqlite:///path.db``, ...; default :func:`mlflow_uri`'s store
    in the folder). ``experiment``: the experiment's name (default ``$MLFLOW_EXPERIMENT_NAME``, else
    ``ragtune``), created when missing. Logging the same folder again updates its runs, never duplicates them.
    Raises :class:`~ragtune.MissingDependencyError` without mlflow, :class:`~ragtune.SweepStateError` when the
    folder holds no results, and :class:`~ragtune.TrackingError` (an :class:`~ragtune.APIError`) when the tracking
    store refuses or cannot be reached
    (the sweep folder is untouched: log it again later), within a bounded time (see the module docstring). The URI
    is redacted (:func:`ragtune.http.redact_url`) in every message and in ``mlflow.json``."""
    out = Path(out_dir)
    client_class = _client_class()
    import mlflow.entities as entities
    from mlflow.exceptions import MlflowException

    if result is not None:
        results = result.to_dict()
    elif (out / "results.json").is_file():
        results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    else:
        raise SweepStateError(f"{out} holds no results.json: run the sweep first (ragtune sweep --out {out})")
    results = json.loads(json.dumps(results, default=str))  # the values results.json holds (tuples: lists)
    state_path = out / "sweep-state.json"
    state = json.loads(state_path.read_text(encoding="utf-8")) if state_path.is_file() else {}
    uri = mlflow_uri(out, uri)
    local = uri == _local_uri(out)
    name = experiment or os.environ.get("MLFLOW_EXPERIMENT_NAME") or DEFAULT_EXPERIMENT
    sweep_id = _sweep_id(out)
    parent, children = _runs(results, state, out, sweep_id)
    try:
        with _bounded_http():
            experiment_id, parent_id = _log_runs(client_class, entities, uri, out, local, name, sweep_id, parent,
                                                 children)
    except MlflowException as e:
        raise TrackingError(f"the sweep finished, logging it to MLflow failed: MLflow at {redact_url(uri)} refused "
                            f"or failed: {redact_text(e)}. The sweep's results are kept in {out}: log them again "
                            "(rerun the same sweep, which resumes without recomputing)") from None
    _record(out, redact_url(uri), name, experiment_id, parent_id)
    return parent_id


def _log_runs(client_class: Any, entities: Any, uri: str, out: Path, local: bool, name: str, sweep_id: str,
              parent: _Run, children: list[_Run]) -> tuple[str, str]:
    """The experiment's id and the parent run's id, once every run is logged (MLflow's exceptions pass through)."""
    if local:
        (out / "mlruns").mkdir(parents=True, exist_ok=True)
    client = client_class(tracking_uri=uri)
    exp = client.get_experiment_by_name(name)
    if exp is None:
        where = (out / "mlruns" / "artifacts").resolve().as_uri() if local else None
        experiment_id = client.create_experiment(name, artifact_location=where)
    else:
        experiment_id = exp.experiment_id
    found = list(_search(client, experiment_id, sweep_id))
    old_parent = next((r for r in found if r.data.tags.get("ragtune.role") == "sweep"), None)
    old = {r.data.tags.get("ragtune.config_key"): r for r in found if r.data.tags.get("ragtune.role") == "config"}
    if old_parent is None:
        parent_id = client.create_run(experiment_id, run_name=parent.name, tags={"ragtune.sweep_id": sweep_id,
                                                                               "ragtune.role": "sweep"}).info.run_id
    else:
        parent_id = old_parent.info.run_id
    for run in children:
        prior = old.get(run.tags["ragtune.config_key"])
        if prior is not None and prior.data.tags.get("ragtune.digest") == run.digest():
            continue
        run_id = prior.info.run_id if prior is not None else client.create_run(
            experiment_id, run_name=run.name, tags={**run.tags, "mlflow.parentRunId": parent_id}).info.run_id
        _log(client, entities, run_id, run, prior)
    if old_parent is None or old_parent.data.tags.get("ragtune.digest") != parent.digest():
        _log(client, entities, parent_id, parent, old_parent)
    return experiment_id, parent_id


def _record(out: Path, uri: str, experiment: str, experiment_id: str, parent_id: str) -> None:
    path = out / "mlflow.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    data.setdefault("logged", {})[uri] = {"experiment": experiment, "experiment_id": experiment_id,
                                          "parent_run_id": parent_id}
    _write_json(path, data)


def mlflow_runs(out_dir: str | os.PathLike[str]) -> dict[str, dict[str, str]]:
    """Where a sweep folder was logged: tracking URI (credentials redacted) -> experiment, experiment id and parent
    run id."""
    path = Path(out_dir) / "mlflow.json"
    return json.loads(path.read_text(encoding="utf-8")).get("logged", {}) if path.is_file() else {}
