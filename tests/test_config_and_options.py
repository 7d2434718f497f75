"""ragtune.config (typed configs, parsing at the edges) and ragtune.cli.options (flags derived from annotated
parameters), on their own."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Annotated, Literal

import pytest

from ragtune.cli.options import add_flags, add_pipeline_flags, kwargs, pipeline_flags
from ragtune.config import Config, Opt, check_range, parse_list, parse_number, read_config_file
from ragtune.errors import ConfigError


@dataclass(frozen=True)
class Toy(Config):
    size: int = 8
    weight: float = 0.5
    names: tuple[str, ...] = ()
    label: str | None = None

    def __post_init__(self) -> None:
        check_range("Toy", "size", self.size, lo=1, integer=True)


def test_from_dict_checks_names_and_types_and_lists_the_valid_ones():
    assert Toy.from_dict({"size": 3, "weight": 1, "names": ["a", "b"]}) == Toy(3, 1, ("a", "b"))
    with pytest.raises(ConfigError, match=r"unknown option\(s\) 'sise'; valid options: size, weight, names, label"):
        Toy.from_dict({"sise": 3})
    for bad, said in (({"size": "3"}, "size must be an integer"), ({"size": True}, "size must be an integer"),
                      ({"weight": float("nan")}, "weight must be a finite number"),
                      ({"names": "a"}, "names must be a list"), ({"label": 3}, "label must be a string"),
                      ({"size": 0}, "size=0 must be >= 1")):
        with pytest.raises(ConfigError, match=said):
            Toy.from_dict(bad)
    assert Toy.from_dict({"label": None}).label is None


def test_numbers_and_lists_from_the_edges():
    assert parse_number("12", int, 1, 20) == 12 and parse_number("0.5", float) == 0.5
    for text, kind, said in (("x", int, "expected an integer"), ("inf", float, "finite"),
                             ("30", int, r"out of range: expected 1..20")):
        with pytest.raises(ConfigError, match=said):
            parse_number(text, kind, 1, 20)
    assert parse_list("5, 10,20") == [5, 10, 20]
    with pytest.raises(ConfigError, match="comma-separated"):
        parse_list(" , ")


def test_config_files_toml_and_yaml(tmp_path):
    (tmp_path / "a.toml").write_text('chunker = "markdown"\nsize = 256\n')
    (tmp_path / "a.yaml").write_text("chunker: markdown\nsize: 256\n")
    (tmp_path / "bad.toml").write_text("chunker = \n")
    (tmp_path / "list.yaml").write_text("- a\n")
    assert read_config_file(str(tmp_path / "a.toml")) == read_config_file(str(tmp_path / "a.yaml"))
    with pytest.raises(ConfigError, match="cannot parse"):
        read_config_file(str(tmp_path / "bad.toml"))
    with pytest.raises(ConfigError, match="expected a table of flag names"):
        read_config_file(str(tmp_path / "list.yaml"))


def gate(*, max_drop: Annotated[float, Opt("tolerated drop", lo=0, hi=1)] = 0.02,
         mode: Annotated[Literal["fast", "exact"], Opt("how")] = "fast",
         strict: Annotated[bool, Opt("fail on any drop")] = False, untouched: int = 3) -> dict:
    return {"max_drop": max_drop, "mode": mode, "strict": strict}


def test_flags_come_from_annotated_parameters_and_hand_back_by_name(capsys):
    p = argparse.ArgumentParser(prog="x")
    add_flags(p, gate)
    assert {"--max-drop", "--mode", "--strict"} <= set(p._option_string_actions) and "--untouched" not in \
        p._option_string_actions
    args = p.parse_args(["--max-drop", "0.1", "--mode", "exact"])
    assert kwargs(gate, args) == {"max_drop": 0.1, "mode": "exact", "strict": False}
    assert gate(**kwargs(gate, p.parse_args([]))) == {"max_drop": 0.02, "mode": "fast", "strict": False}
    for bad in (["--max-drop", "2"], ["--mode", "slow"]):
        with pytest.raises(SystemExit):
            p.parse_args(bad)
    err = capsys.readouterr().err
    assert "out of range" in err and "invalid choice: 'slow'" in err


def test_pipeline_flags_reach_the_stage_that_takes_them():
    from ragtune.pipeline import PipelineConfig

    p = argparse.ArgumentParser(prog="x")
    add_pipeline_flags(p)
    flags = pipeline_flags(p.parse_args(["--chunker", "fixed", "--size", "64", "--retriever", "bm25", "--k1", "1.2",
                                         "--stemmer", "none"]))
    cfg = PipelineConfig.from_flags(flags)
    assert dict(cfg.chunker_options)["size"] == 64 and cfg.retriever_config().k1 == 1.2
    assert cfg.retriever_config().stemmer is None  # `none` sets an option to None on purpose
    with pytest.raises(ConfigError, match="size does not apply to retriever bm25|size does not apply to chunker section"):
        PipelineConfig.from_flags(pipeline_flags(p.parse_args(["--chunker", "section", "--size", "64"])))
