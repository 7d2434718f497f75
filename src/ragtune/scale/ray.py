"""Ray: embedding batches and sweep configurations as Ray tasks, on one machine or a cluster.

Two uses, both giving the results of a local run:

- :class:`RayEmbedder` sends the texts a build or refresh must embed to Ray tasks in batches. Each task
  builds the embedder from its registered name on the worker, embeds its batch and ships the vectors back;
  the driver checks that the worker's model has the driver's weights (same cache key), gathers the batches
  in order and writes them into its own content-addressed embedding cache, as a local run would.
- :class:`RaySweepExecutor` (through :func:`run_specs`) runs sweep configurations as Ray tasks. Each task ships its finished run record back to
  the driver, which writes ``runs/<key>.json``: workers never need to see the driver's disk. Workers share
  the content-addressed caches (embeddings, chunkings, BM25 indexes) through ``cache_dir``: on one machine
  that is the driver's cache folder; on a cluster, each node uses that path on its own disk (or a shared
  filesystem mounted there), and every cache is keyed by content, so any node's copy is as good as another.

Ray is imported when a task is sent, never by ``import ragtune``; without it :class:`RayOptions` raises
:class:`~ragtune.errors.MissingDependencyError` naming the install command.
"""

from __future__ import annotations

import importlib.util
import os
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import APIError, ConfigError, MissingDependencyError, RagtuneError

__all__ = ["RayOptions", "RayEmbedder", "RaySweepExecutor", "connect", "ray_embedders", "run_specs"]

INSTALL = "pip install 'ragtune[ray]'"
_ADDRESS = re.compile(r"^(auto|local|ray://[^\s:/]+:\d+|[^\s:/]+:\d+)$")


def _ray_installed() -> bool:
    try:
        return importlib.util.find_spec("ray") is not None
    except (ValueError, ImportError):  # a sys.modules entry without a spec (or set to None): not usable
        return False


def _import_ray():
    try:
        import ray
    except ImportError:
        raise MissingDependencyError(f"running on Ray needs Ray, which is not installed: {INSTALL}") from None
    return ray


@dataclass(frozen=True)
class RayOptions:
    """Where and how to run Ray tasks.

    ``address``: ``None`` or ``"local"`` starts a Ray instance in this process (``num_cpus`` CPUs, default all);
    ``"auto"`` joins the cluster started on this machine with ``ray start``; ``"host:6379"`` joins a cluster by
    its head's GCS address; ``"ray://host:10001"`` connects through the Ray Client. When Ray is already
    initialised in this process, that session is used as it is.

    ``batch_size``: texts per embedding task (a multiple of 32, so that batches split where a local run splits
    them). ``task_cpus``: CPUs each task reserves. ``cache_dir``: the cache folder the sweep workers use
    (default: this machine's ``RAGTUNE_CACHE_DIR``, made absolute).
    """

    address: str | None = None
    num_cpus: int | None = None
    batch_size: int = 256
    task_cpus: float = 1.0
    cache_dir: str | None = None

    def __post_init__(self) -> None:
        if self.address is not None and (not isinstance(self.address, str) or not _ADDRESS.match(self.address)):
            raise ConfigError(f"Ray address {self.address!r} is not one of: local (start Ray here), auto (the "
                              "cluster started on this machine), HOST:PORT (a head's GCS address, e.g. "
                              "10.0.0.5:6379) or ray://HOST:PORT (Ray Client, e.g. ray://10.0.0.5:10001)")
        if self.num_cpus is not None and (isinstance(self.num_cpus, bool) or not isinstance(self.num_cpus, int)
                                          or self.num_cpus < 1):
            raise ConfigError(f"Ray num_cpus must be an integer >= 1, got {self.num_cpus!r}")
        if self.num_cpus is not None and self.address not in (None, "local"):
            raise ConfigError(f"Ray num_cpus applies to a local start only; the cluster at {self.address} "
                              "has its own CPUs (set them with `ray start --num-cpus N`)")
        if isinstance(self.batch_size, bool) or not isinstance(self.batch_size, int) or self.batch_size < 32 \
                or self.batch_size % 32:
            raise ConfigError(f"Ray batch_size must be a multiple of 32 (texts per embedding task), "
                              f"got {self.batch_size!r}; e.g. 256")
        if isinstance(self.task_cpus, bool) or not isinstance(self.task_cpus, (int, float)) or not self.task_cpus > 0:
            raise ConfigError(f"Ray task_cpus must be a number > 0, got {self.task_cpus!r}")
        if not _ray_installed():
            raise MissingDependencyError(f"running on Ray needs Ray, which is not installed: {INSTALL}")

    def worker_cache_dir(self) -> str:
        """The cache folder the workers use: ``cache_dir``, else this machine's cache folder as an absolute path."""
        from ..embed.cache import default_cache_dir

        return self.cache_dir or str(default_cache_dir().resolve())


def connect(options: RayOptions):
    """The ``ray`` module, connected: Ray as already initialised in this process, else started or joined as
    ``options.address`` says. Ray shuts itself down when the process exits."""
    ray = _import_ray()
    if ray.is_initialized():
        return ray
    import logging

    kwargs: dict[str, Any] = {"include_dashboard": False, "logging_level": logging.WARNING}
    if options.address in (None, "local"):
        kwargs.update(address="local", num_cpus=options.num_cpus)  # "local": a new instance, never a stale one
    else:
        kwargs["address"] = options.address
        kwargs.pop("include_dashboard")  # a setting of the cluster, not of a driver joining it
    try:
        ray.init(**kwargs)
    except Exception as e:  # noqa: BLE001 - Ray raises ConnectionError, RuntimeError or its own errors
        where = options.address or "local"
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        hint = ("start a cluster first (`ray start --head` on the head node, `ray start --address HEAD:6379` on "
                "each worker) or check the address" if where != "local" else "check that Ray can start here")
        raise APIError(f"cannot start or join Ray at {where}: {first}; {hint}") from None
    return ray


_REMOTES: dict[str, Any] = {}


def _remote(ray, fn):
    if fn.__name__ not in _REMOTES:
        _REMOTES[fn.__name__] = ray.remote(fn)
    return _REMOTES[fn.__name__]


def _get(ray, refs):
    """``ray.get`` with a task's ragtune error re-raised as itself, and a missing ragtune on a worker said plainly."""
    try:
        return ray.get(refs)
    except ray.exceptions.RayTaskError as e:
        cause = getattr(e, "cause", None)
        if isinstance(cause, RagtuneError):
            raise cause from None
        if isinstance(cause, ImportError) and "ragtune" in str(cause):
            raise MissingDependencyError(f"a Ray worker cannot import ragtune ({cause}): install the same ragtune "
                                         "release, with its extras, on every node of the cluster") from None
        raise


def _check_worker(version: str, cache_dir: str | None = None) -> None:
    """On a worker: the driver's ragtune release, and its cache folder (created here when absent; a node that
    cannot create it caches in its temporary folder: every cache is keyed by content, so results are the same)."""
    from .._version import __version__

    if version != __version__:
        raise ConfigError(f"a Ray worker runs ragtune {__version__} but the driver runs {version}: install the "
                          "same ragtune release on every node of the cluster")
    if cache_dir is not None:
        try:
            Path(cache_dir).mkdir(parents=True, exist_ok=True)
        except OSError:  # the driver's path does not exist and cannot be made on this node: cache node-locally
            import tempfile

            cache_dir = str(Path(tempfile.gettempdir()) / "ragtune-cache")
        os.environ["RAGTUNE_CACHE_DIR"] = cache_dir


# ---------------------------------------------------------------------------------------------------------------
# Embedding

_WORKER_EMBEDDERS: dict[str, Any] = {}


def _embed_batch(name: str, texts: list[str], version: str) -> tuple[str, np.ndarray]:
    """A Ray task: the embedder ``name`` (built once per worker process) embeds ``texts``."""
    _check_worker(version)
    emb = _WORKER_EMBEDDERS.get(name)
    if emb is None:
        from ..embed import get_embedder

        emb = _WORKER_EMBEDDERS[name] = get_embedder(name)
    return emb.cache_key, np.asarray(emb.embed(texts), dtype=np.float32)


class RayEmbedder:
    """An embedder whose :meth:`embed` runs as Ray tasks, ``options.batch_size`` texts each.

    Wrap it in :class:`~ragtune.embed.CachedEmbedder` (``Resources(make_embedder=ray_embedders(options))`` does): only cache misses travel,
    and the vectors land in the driver's cache. Names, dimensions, the cache key, the tokenizer (input keys,
    token counts) and query embedding are the local embedder's: constructing one loads no model."""

    def __init__(self, name: str, options: RayOptions):
        from ..embed import get_embedder

        self.name = name
        self.options = options
        self.local = get_embedder(name)
        self.model_id = self.local.model_id
        self.dim = self.local.dim
        self.max_tokens = self.local.max_tokens
        self._slots: int | None = None

    @property
    def cache_key(self) -> str:
        return self.local.cache_key

    def __getattr__(self, attr: str) -> Any:
        # input_keys, count_tokens...: the tokenizer is the local one. warm_up is not: the model loads on workers
        if attr in ("warm_up", "local") or attr.startswith("__"):
            raise AttributeError(attr)
        return getattr(self.local, attr)

    @property
    def progress_step(self) -> int:
        """Texts per :meth:`embed` call from :class:`CachedEmbedder`: two batches per task slot of the cluster."""
        if self._slots is None:
            ray = connect(self.options)
            cpus = float(ray.cluster_resources().get("CPU", 1.0))
            self._slots = max(1, int(cpus // self.options.task_cpus))
        return 2 * self.options.batch_size * self._slots

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        from .._version import __version__

        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        ray = connect(self.options)
        task = _remote(ray, _embed_batch).options(num_cpus=self.options.task_cpus)
        b = self.options.batch_size
        refs = [task.remote(self.name, texts[s:s + b], __version__) for s in range(0, len(texts), b)]
        parts = _get(ray, refs)
        for key, _ in parts:
            if key != self.cache_key:
                raise ConfigError(f"the Ray workers' embedder {self.name!r} has weights {key}, this machine's "
                                  f"{self.cache_key}: vectors would not match; install the same model (and ragtune) "
                                  "on every node")
        return np.concatenate([v for _, v in parts]).astype(np.float32, copy=False)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self.local.embed_queries(texts)


# ---------------------------------------------------------------------------------------------------------------
# Sweeps

_WORKER_RESOURCES: dict[str, Any] = {"key": None, "resources": None}


def _sweep_task(job, i: int, spec, version: str, cache_dir: str) -> dict:
    """A Ray task: one sweep configuration, evaluated and timed on the worker (:func:`ragtune.sweep.run_config`);
    returns its run record.

    Chunkings, first-stage indexes and embedders stay in the worker process between tasks of the same sweep
    (one :class:`~ragtune.pipeline.Resources` per worker, as a local run keeps one); the on-disk caches are in
    ``cache_dir``."""
    from ..embed.cache import default_cache_dir
    from ..pipeline import Resources
    from ..sweep import run_config

    _check_worker(version, cache_dir)
    key = (job.key, cache_dir)
    if _WORKER_RESOURCES["key"] != key:
        _WORKER_RESOURCES.update(key=key, resources=Resources(cache_dir=default_cache_dir()))
    return run_config(job, spec, _WORKER_RESOURCES["resources"], position=i)


class RaySweepExecutor:
    """A sweep executor (:class:`ragtune.sweep.Executor`): the configurations left to run become Ray tasks, run
    in parallel; each ships its record back to the driver, which writes it. Latencies are then measured on
    workers that may be busy with other tasks."""

    def __init__(self, options: RayOptions):
        self.options = options

    def run(self, job, todo: Sequence[tuple[int, Any]], progress: Any) -> Iterator[tuple[int, dict]]:
        for i, record in run_specs(job, todo, self.options):
            progress.finished(record["label"])
            yield i, record


def ray_embedders(options: RayOptions):
    """``make_embedder`` for :class:`~ragtune.pipeline.Resources` (and ``build_version``/``refresh_version``):
    the embedder of a name, embedding as Ray tasks."""
    return lambda name: RayEmbedder(name, options)


def run_specs(job, todo: Sequence[tuple[int, Any]], options: RayOptions) -> Iterator[tuple[int, dict]]:
    """Run the sweep configurations ``todo`` (``(position, config)`` pairs) of ``job``
    (:class:`ragtune.sweep.SweepJob`) as Ray tasks; yields ``(position, record)`` as each finishes. Unfinished
    tasks are cancelled when the caller stops early."""
    from .._version import __version__

    if not todo:
        return
    ray = connect(options)
    job_ref = ray.put(job)
    task = _remote(ray, _sweep_task).options(num_cpus=options.task_cpus)
    cache_dir = options.worker_cache_dir()
    pending = {task.remote(job_ref, i, spec, __version__, cache_dir): i for i, spec in todo}
    try:
        while pending:
            done, _ = ray.wait(list(pending), num_returns=1)
            for ref in done:
                i = pending.pop(ref)
                yield i, _get(ray, ref)
    finally:
        for ref in pending:
            ray.cancel(ref)
