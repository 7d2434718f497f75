"""Past one machine: Ray for distributed embedding and parallel sweeps (``ragtune[ray]``).

Nothing here imports Ray until a task is sent; see ``docs/ray.md``.
"""

from __future__ import annotations

from .ray import RayEmbedder, RayOptions, RaySweepExecutor, connect, ray_embedders, run_specs

__all__ = ["RayEmbedder", "RayOptions", "RaySweepExecutor", "connect", "ray_embedders", "run_specs"]
