"""evaluate_outside takes typed values (an EndpointOptions, a MatchOptions) and its errors name parameters; the
command line spells them as flags."""

import pytest

from ragtune import Pipeline, evaluate
from ragtune.cli import main
from ragtune.errors import ConfigError, ParameterError
from ragtune.evaluate.match import MatchOptions
from ragtune.external.files import write_trec_run
from ragtune.external.outside import EndpointOptions, evaluate_outside

KS = (1, 3, 5)


@pytest.fixture
def files(tmp_path, corpus, golden):
    native = evaluate(Pipeline.build(corpus).retriever, golden, corpus, ks=KS)
    golden.to_jsonl(tmp_path / "g.jsonl")
    write_trec_run(native, tmp_path / "spans.trec", ids="span")
    return str(tmp_path / "g.jsonl"), str(tmp_path / "spans.trec"), native


def test_a_run_scored_from_typed_values(corpus, files):
    golden, run, native = files
    got = evaluate_outside(golden, run=run, corpus=corpus, ks=KS, match=MatchOptions(fuzzy=False))
    assert got.metrics["recall@5"] == pytest.approx(native.metrics["recall@5"])
    assert EndpointOptions(headers={"X-Key": "SEARCH_KEY"}, max_response_mb=1).evaluate_kwargs()["max_bytes"] == 2 ** 20


@pytest.mark.parametrize("given, message", [
    ({}, "give endpoint (a search service's URL) or run (a run file)"),
    ({"endpoint": "http://127.0.0.1:9/s", "run": "x.trec"}, "give endpoint or run, not both"),
    ({"run": "x.trec", "filters": ["dir=a"]}, "filters cannot apply to a run file; filter when you make the run"),
])
def test_errors_name_parameters_not_flags(files, given, message):
    with pytest.raises(ParameterError) as e:
        evaluate_outside(files[0], **given)
    assert str(e.value) == message
    assert isinstance(e.value, ConfigError)


def test_the_command_line_spells_them_as_flags(files, capsys):
    golden, run, _ = files
    assert main(["eval", "--golden", golden, "--run", run, "--endpoint", "http://127.0.0.1:9/s"]) == 2
    assert "error: give --endpoint or --run, not both" in capsys.readouterr().err
    assert main(["eval", "--golden", golden, "--run", run, "--filter", "dir=a"]) == 2
    assert "error: --filter cannot apply to a run file" in capsys.readouterr().err


def test_a_parameter_error_respells_and_pickles():
    import pickle

    e = ParameterError("drop {} (with {})", ["chunker", "rerank_model"], "store")
    assert str(e) == "drop chunker, rerank_model (with store)"
    assert e.respell(lambda n: "--" + n.replace("_", "-")) == "drop --chunker, --rerank-model (with --store)"
    back = pickle.loads(pickle.dumps(e))
    assert str(back) == str(e) and back.params == e.params


def test_a_prefix_is_text_not_fields():
    import pickle

    e = ParameterError("; pass the hit list's path ({})", "hits_path", prefix="http://x/s?q={query}: nothing")
    assert str(e) == "http://x/s?q={query}: nothing; pass the hit list's path (hits_path)"
    assert e.respell(lambda n: "--hits-path") == "http://x/s?q={query}: nothing; pass the hit list's path (--hits-path)"
    assert str(pickle.loads(pickle.dumps(e))) == str(e)
