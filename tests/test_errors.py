"""The exception tree: one root, each class also its built-in, all exported."""

from __future__ import annotations

import inspect

import pytest

import ragtune
from ragtune import errors

BUILTIN = {
    "ConfigError": ValueError,
    "CorpusError": ValueError,
    "CorpusNotFoundError": FileNotFoundError,
    "GoldenSetError": ValueError,
    "GoldenConflictError": ValueError,
    "UnknownAnchorError": KeyError,
    "InputTooLargeError": ValueError,
    "MissingDependencyError": ImportError,
    "GridError": ValueError,
    "SweepStateError": ValueError,
    "StoreError": ValueError,
    "DamagedStoreError": ValueError,
    "StoreLockedError": ValueError,
    "CurrentMovedError": ValueError,
    "EmptyIndexError": ValueError,
    "ParameterError": ValueError,
    "StageContractError": TypeError,
    "APIError": ConnectionError,
    "TrackingError": ConnectionError,
    "EngineError": RuntimeError,
    "TelemetryError": OSError,
    "TelemetryBusyError": OSError,
}


def error_classes():
    return {n: c for n, c in vars(errors).items() if inspect.isclass(c) and issubclass(c, BaseException)}


def test_every_error_class_is_listed_with_its_builtin():
    defined = {n for n, c in error_classes().items() if c.__module__ == errors.__name__} - {"RagtuneError"}
    assert defined == set(BUILTIN)
    assert set(errors.__all__) == defined | {"RagtuneError"}


@pytest.mark.parametrize("name", sorted(BUILTIN))
def test_each_error_is_a_ragtune_error_and_its_builtin(name):
    cls = getattr(errors, name)
    assert issubclass(cls, errors.RagtuneError)
    assert issubclass(cls, BUILTIN[name])
    e = cls("what was wrong; how to fix it")
    assert isinstance(e, BUILTIN[name]) and isinstance(e, ragtune.RagtuneError)
    assert str(e) == "what was wrong; how to fix it"  # KeyError's repr() quoting is undone too


@pytest.mark.parametrize("name", errors.__all__)
def test_exported_from_the_package(name):
    assert name in ragtune.__all__
    assert getattr(ragtune, name) is getattr(errors, name)


def test_the_tree_in_the_docstring_names_every_class():
    doc = errors.__doc__ or ""
    assert "\n    RagtuneError\n" in doc
    for name in set(errors.__all__) - {"RagtuneError"}:
        assert f"+-- {name} " in doc, name


def test_modules_reuse_the_classes_instead_of_defining_their_own():
    from ragtune.http import APIError
    from ragtune.serve.telemetry import TelemetryBusyError, TelemetryError
    from ragtune.store.store import StoreError
    from ragtune.sweep.grid import GridError
    from ragtune.sweep.runner import SweepStateError

    for cls in (APIError, TelemetryError, TelemetryBusyError, StoreError, GridError, SweepStateError):
        assert cls is getattr(errors, cls.__name__)


def test_no_error_class_is_defined_outside_errors_py():
    import importlib
    import pkgutil

    found = []
    for mod in pkgutil.walk_packages(ragtune.__path__, "ragtune."):
        if mod.name.endswith("__main__") or mod.name == errors.__name__:
            continue
        try:
            m = importlib.import_module(mod.name)
        except ImportError:  # an optional extra that is not installed
            continue
        for name, obj in vars(m).items():
            if inspect.isclass(obj) and issubclass(obj, BaseException) and obj.__module__ == m.__name__:
                found.append(f"{m.__name__}.{name}")
    assert found == []
