"""Property: whatever a user types or writes into a file, a command answers with a sentence and an
exit status, never a traceback. Hypothesis feeds the commands malformed options, experiment files
(their cluster settings too), power files, inventories (their host names and variables too), raw
bytes in place of any of those files, and damaged run documents; anything that gets as far as
running is stopped there by a test double (nothing is brought up), and counts as accepted."""

import json
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
RECORDED_RUNS = Path(__file__).parent / "fixtures" / "results" / "runs"
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


SETTINGS_NAMES = ["yarn.nodemanager.resource.memory-mb", "mapreduce.map.memory.mb", "spark.executor.memory",
                  "spark.executor.instances", "spark.memory.fraction", "yarn.resourcemanager.webapp.address",
                  "spark.driver.host", "fs.s3a.secret.key", "dfs.blocksize", "dfs.client.use.datanode.hostname"]


@RELAXED
@given(settings_=st.dictionaries(st.sampled_from(["core-site", "hdfs-site", "yarn-site", "mapred-site",
                                                  "spark-defaults", "nosuch-site"]),
                                 st.one_of(yaml_values, st.dictionaries(st.sampled_from(SETTINGS_NAMES) | words,
                                                                        yaml_values, max_size=3)), max_size=2))
def test_any_cluster_settings_get_a_sentence(tmp_path, capsys, settings_):
    path = tmp_path / "experiment.yaml"
    path.write_text(yaml.safe_dump({"workloads": ["terasort", "pi"], "sizes": ["8MB"], "repetitions": 1,
                                    "cluster": {"settings": settings_}}))
    answer(["bench", path, "--dry-run", "--backend", "processes", "--results", tmp_path / "r"], capsys)


HOST_VARIABLES = ["ansible_host", "address", "ansible_port", "port", "user", "key", "board", "storage", "data_dir",
                  "power", "name", "role", "ansible_become"]


@RELAXED
@given(names=st.lists(st.none() | st.booleans() | st.integers(-5, 99) | st.floats(allow_nan=False) | words
                      | st.sampled_from(["~", "pi1", "pi2", "null", "yes"]), min_size=1, max_size=3),
       variables=st.dictionaries(st.sampled_from(HOST_VARIABLES) | words, yaml_values, max_size=3),
       where=st.sampled_from(["host", "group", "all"]))
def test_any_host_names_and_variables_get_a_sentence(tmp_path, capsys, names, variables, where):
    hosts = {name: {"address": f"10.0.0.{i + 11}", **(variables if where == "host" else {})}
             for i, name in enumerate(names)}
    content = {"all": {"vars": variables if where == "all" else {},
                       "children": {"master": {"hosts": {"pi0": {"address": "10.0.0.10"}}},
                                    "workers": {"vars": variables if where == "group" else {}, "hosts": hosts}}}}
    path = tmp_path / "hosts.yml"
    path.write_text(yaml.safe_dump(content))
    answer(["bench", "--workloads", "pi", "--workers", "1", "--dry-run", "--inventory", path, "--results",
            tmp_path / "r"], capsys)


# What a file saved by another tool, truncated or in another encoding, begins with.
any_bytes = st.one_of(st.binary(max_size=64), st.text(max_size=24).map(lambda s: s.encode("utf-16")),
                      st.tuples(st.sampled_from([b"workloads: [pi]\n", b"all:\n  children:\n", b"default: "]),
                                st.binary(max_size=24)).map(b"".join))


@RELAXED
@given(content=any_bytes, kind=st.sampled_from(["experiment", "inventory", "power"]))
def test_any_bytes_in_a_users_file_get_a_sentence(tmp_path, capsys, content, kind):
    path = tmp_path / "file.yml"
    path.write_bytes(content)
    results = tmp_path / "r"
    answer({"experiment": ["bench", path, "--dry-run", "--backend", "processes", "--results", results],
            "inventory": ["bench", "--workloads", "pi", "--dry-run", "--inventory", path, "--results", results],
            "power": ["bench", "--workloads", "pi", "--dry-run", "--backend", "processes", "--power-file", path,
                      "--results", results]}[kind], capsys)


def damaged(document: dict):
    """A recorded run document with some of its fields, or its whole self, replaced by anything, or
    its bytes cut short or replaced."""
    fields = st.dictionaries(st.sampled_from(sorted(document)), yaml_values, min_size=1, max_size=3)
    return st.one_of(fields.map(lambda bad: json.dumps({**document, **bad}).encode()),
                     yaml_values.map(lambda value: json.dumps(value).encode()),
                     st.integers(0, 400).map(lambda n: json.dumps(document).encode()[:n]), any_bytes)


# Each example builds a whole report (its plots among it): fewer examples than the parsers' tests get.
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(content=damaged(json.loads(next(RECORDED_RUNS.glob("*spark-pi*.json")).read_text())))
def test_any_damaged_run_document_gets_a_sentence(tmp_path, capsys, content):
    results = tmp_path / "r"
    (results / "runs").mkdir(parents=True, exist_ok=True)
    for recorded in RECORDED_RUNS.glob("*.json"):
        (results / "runs" / recorded.name).write_bytes(recorded.read_bytes())
    (results / "runs" / "20261122T201102Z-spark-pi-7bd9.json").write_bytes(content)
    answer(["results", "show", results, "20261122T201102Z-spark-pi-7bd9"], capsys)
    answer(["results", "summary", results], capsys)
    answer(["report", results, "--out", tmp_path / "report"], capsys)


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
    # A run document is set aside by name, with why, among the others (none here, so nothing to report).
    said = (f"{path.name} (not UTF-8 text: byte 0xe9 on line 2)" if name.startswith("runs/")
            else f"{path} is not UTF-8 text: byte 0xe9 on line 2")
    assert status != 0 and said in " ".join(printed.split()), printed
