"""Property: whatever a user types or writes into a file, a command answers with a sentence and an
exit status, never a traceback. Hypothesis feeds the commands malformed options, experiment files,
power files and inventories; anything that gets as far as running is stopped there by a test
double (nothing is brought up), and counts as accepted."""

import string
import traceback
from pathlib import Path

import click
import pytest
import yaml
from hypothesis import HealthCheck, given, settings, strategies as st

from sbclab import cli
from sbclab.experiments import orchestrator

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
RELAXED = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


class WouldRun(Exception):
    """Raised where the command would start bringing up nodes: the input was accepted."""


@pytest.fixture(autouse=True)
def nothing_runs(monkeypatch, tmp_path):
    def refuse(found, options):
        raise WouldRun()
    monkeypatch.setattr(orchestrator, "execute", refuse)
    monkeypatch.setenv("SBCLAB_HOME", str(tmp_path / "home"))


def answer(argv: list[str], capsys) -> tuple[int, str]:
    """(exit status, what was printed) of `sbclab ARGV`, as a user would see it."""
    try:
        cli.main([str(a) for a in argv])
        status = 0
    except SystemExit as done:
        status = done.code if isinstance(done.code, int) else 1
    except WouldRun:
        status = 0
    except Exception:  # noqa: BLE001 - exactly what the property forbids
        pytest.fail(f"sbclab {' '.join(map(str, argv))} raised:\n{traceback.format_exc()}")
    out = capsys.readouterr()
    printed = out.out + out.err
    assert "Traceback" not in printed, printed
    if status != 0:
        assert printed.strip(), f"sbclab {argv} failed silently"
    return status, printed


words = st.text(alphabet=string.ascii_letters + string.digits + ",.:-_/ =@%~", max_size=24)
yaml_values = st.recursive(st.none() | st.booleans() | st.integers(-10**12, 10**12) | st.floats(allow_nan=True)
                           | words, lambda inner: st.lists(inner, max_size=4)
                           | st.dictionaries(words, inner, max_size=4), max_leaves=12)
FIELDS = ["name", "cluster", "engines", "workloads", "workers", "sizes", "storage", "presets", "repetitions",
          "parameters", "between_runs", "monitor", "concurrent", "engines_of", "colour"]


def mutated(base: dict):
    """A valid mapping with some of its fields replaced by anything."""
    return st.dictionaries(st.sampled_from(FIELDS), yaml_values, max_size=4).map(lambda bad: {**base, **bad})


@RELAXED
@given(content=st.one_of(yaml_values, mutated(yaml.safe_load((EXAMPLES / "experiments" / "quick.yaml").read_text())),
                         words.map(lambda w: f"workloads: [{w}\n  sizes: ]")))
def test_any_experiment_file_gets_a_sentence(tmp_path, capsys, content):
    path = tmp_path / "experiment.yaml"
    path.write_text(content if isinstance(content, str) else yaml.safe_dump(content))
    answer(["bench", path, "--dry-run", "--backend", "processes", "--results", tmp_path / "r"], capsys)


@RELAXED
@given(option=st.sampled_from(["--workers", "--sizes", "--engines", "--presets", "--workloads", "--storage",
                               "--repetitions", "--profile"]), value=words)
def test_any_bench_option_gets_a_sentence(tmp_path, capsys, option, value):
    answer(["bench", "--workloads", "wordcount,pi", "--backend", "processes", "--dry-run", "--results", tmp_path / "r",
            option, value], capsys)


@RELAXED
@given(command=st.sampled_from([["run", "--size"], ["run", "--workers"], ["run", "--disk-size"], ["run", "--scale"],
                                ["run", "--knob"], ["hpl", "--nodes"], ["hpl", "--nb"], ["hpl", "--n"],
                                ["micro", "--benchmarks"], ["micro", "--doc-sizes"], ["micro", "--node"],
                                ["micro", "--file-size"], ["micro", "--netpipe-upper"], ["cluster", "up", "--profile"],
                                ["cluster", "up", "--storage"], ["cluster", "status", "--name"],
                                ["data", "generate", "--bytes"]]), value=words)
def test_any_option_value_gets_a_sentence(tmp_path, capsys, command, value):
    answer([*command, value, *(["--backend", "processes"] if command[0] in ("run", "hpl", "micro") else []),
            *(["--results", tmp_path / "r"] if command[0] in ("run", "hpl", "micro") else []),
            *(["-o", tmp_path / "out.csv"] if command[0] == "data" else [])], capsys)


@RELAXED
@given(content=st.one_of(yaml_values, st.dictionaries(st.sampled_from(["default", "master", "worker1", "nosuch"]),
                                                      st.dictionaries(st.sampled_from(["source", "url", "format", "path",
                                                                                       "timeout_s"]), yaml_values,
                                                                      max_size=3), max_size=3)))
def test_any_power_file_gets_a_sentence(tmp_path, capsys, content):
    path = tmp_path / "power.yml"
    path.write_text(yaml.safe_dump(content))
    answer(["run", "--power-file", path, "--backend", "processes", "--results", tmp_path / "r"], capsys)


@RELAXED
@given(content=st.one_of(yaml_values, st.just(yaml.safe_load((EXAMPLES / "inventory.yml").read_text())).flatmap(
    lambda base: st.dictionaries(st.sampled_from(["all", "vars", "children", "hosts"]), yaml_values, max_size=2)
    .map(lambda bad: {**base, **bad}))))
def test_any_inventory_gets_a_sentence(tmp_path, capsys, content):
    path = tmp_path / "hosts.yml"
    path.write_text(yaml.safe_dump(content))
    answer(["bench", "--workloads", "pi", "--dry-run", "--inventory", path, "--results", tmp_path / "r"], capsys)


def test_the_named_mistakes_are_sentences(tmp_path, capsys):
    """The four that once printed tracebacks."""
    bad_yaml = tmp_path / "bad.yaml"
    bad_yaml.write_text("workloads: [wordcount\n  sizes: ]\n")
    bad_power = tmp_path / "power.yml"
    bad_power.write_text("worker1: {source: http-plug\n")
    for argv in (["bench", bad_yaml], ["run", "--power-file", bad_power], ["bench", "--workers", "1,x"],
                 ["hpl", "--nodes", "1,x"]):
        status, printed = answer(argv, capsys)
        lines = [line for line in printed.splitlines() if line.strip()]
        assert status != 0 and len(lines) <= 3 and any("rror" in line for line in lines), printed


LATIN_1 = "caf\xe9".encode("latin-1")  # a file saved by an editor set to Latin-1


@pytest.mark.parametrize("name, argv", [
    ("experiment.yaml", lambda f, r: ["bench", f, "--dry-run", "--backend", "processes", "--results", r]),
    ("hosts.yml", lambda f, r: ["bench", "--workloads", "pi", "--dry-run", "--inventory", f, "--results", r]),
    ("power.yml", lambda f, r: ["bench", "--workloads", "pi", "--dry-run", "--backend", "processes", "--power-file", f,
                                "--results", r]),
    ("runs/r1.json", lambda f, r: ["report", r]),
])
def test_a_file_not_in_utf8_is_named_with_its_byte_and_line(tmp_path, capsys, name, argv):
    results = tmp_path / "r"
    path = (results if name.startswith("runs/") else tmp_path) / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"# made elsewhere\nname: " + LATIN_1 + b"\n")
    status, printed = answer(argv(path, results), capsys)
    assert status != 0 and f"{path} is not UTF-8 text: byte 0xe9 on line 2" in printed, printed
