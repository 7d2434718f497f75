"""Ray options are checked once, cheaply, and Ray stays out of ``import ragtune`` (runs without the extra)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from ragtune.errors import ConfigError, MissingDependencyError
from ragtune.scale import RayOptions


def test_options_are_checked_once_with_a_clear_message():
    for bad, words in (({"address": "10.0.0.5"}, "HOST:PORT"), ({"address": "http://h:1"}, "ray://HOST:PORT"),
                       ({"batch_size": 100}, "multiple of 32"), ({"task_cpus": 0}, "> 0"),
                       ({"address": "auto", "num_cpus": 2}, "local start only"), ({"num_cpus": 0}, ">= 1")):
        with pytest.raises(ConfigError, match=words):
            RayOptions(**bad)


def test_every_address_form_is_accepted():
    pytest.importorskip("ray")
    for good in (None, "local", "auto", "10.0.0.5:6379", "ray://head.example:10001"):
        assert RayOptions(address=good).address == good


def test_without_the_extra_the_error_names_the_install_command(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # as if the extra were not installed
    with pytest.raises(MissingDependencyError, match=r"pip install 'ragtune\[ray\]'"):
        RayOptions()


def test_ragtune_imports_no_ray():
    code = ("import sys, ragtune, ragtune.scale, ragtune.sweep, ragtune.store, ragtune.pipeline; "
            "print('ray' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "False"
