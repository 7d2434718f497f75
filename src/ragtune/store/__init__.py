"""The index as a deployable artifact: immutable versions, an atomic "current" pointer, refresh, rollback,
blue/green embedding migration."""

from .build import build_version, load_pipeline, migrate, refresh_version
from .milvus import open_current
from .open import open_pipeline
from .store import IndexStore, StoreError, VersionInfo

__all__ = ["IndexStore", "StoreError", "VersionInfo", "build_version", "load_pipeline", "migrate", "open_current",
           "open_pipeline", "refresh_version"]
