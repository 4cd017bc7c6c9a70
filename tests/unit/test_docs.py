"""The README and docs/ against the command line they describe: every command example parses as
sbclab would parse it, so a renamed command or option fails here rather than in a reader's shell;
the examples that need no cluster run; and every link between the pages leads somewhere."""

import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import click
import pytest

from sbclab import paths
from sbclab.cli import main_group
from sbclab.cluster import calibration
from sbclab.cluster.calibration import DiskFigures, HostCalibration
from sbclab.errors import SbclabError

REPO = Path(__file__).resolve().parents[2]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
SHELL_FENCES = {"sh", "console"}
# A shell operator ends the sbclab command of a line: `sbclab stack fetch && ...`.
OPERATORS = {"&&", "||", "|", ";", ">", ">>", "<", "2>", "&"}
# Files only the reader has (their power file). click checks that such a path exists, so the check
# stands an empty file of the same name in for each.
READERS_FILES = {"power.yml"}


@dataclass(frozen=True)
class Example:
    page: Path
    line: int
    text: str

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(REPO)}:{self.line}"

    @property
    def args(self) -> list[str]:
        """What follows `sbclab`, as the shell passes it, read the way the pages write shorthand: `...`
        (more options of the reader's) is left out and `[--purge]` (an optional word) kept unbracketed."""
        args = []
        for word in shlex.split(self.text, comments=True)[1:]:
            if word in OPERATORS:
                break
            if word == "...":
                continue
            args.append(word[1:-1] if word.startswith("[") and word.endswith("]") else word)
        return args


def examples() -> list[Example]:
    """Every line of a sh or console block that starts with `sbclab` (or `$ sbclab`), continued over
    trailing backslashes, with the number of its first line."""
    found = []
    for page in PAGES:
        fence, start, pending = None, 0, ""
        for number, line in enumerate(page.read_text().splitlines(), 1):
            stripped = line.strip()
            if stripped.startswith("```"):
                fence = stripped[3:].strip() if fence is None else None
                continue
            if fence not in SHELL_FENCES or (not pending and stripped.startswith("#")):
                continue
            start = start if pending else number
            pending += stripped
            if pending.endswith("\\"):
                pending = pending[:-1] + " "
                continue
            text, pending = pending.removeprefix("$ "), ""
            if text.startswith("sbclab "):
                found.append(Example(page, start, text))
    return found


def needs_no_cluster(example: Example) -> bool:
    """Examples that only print what sbclab knows or plans: cheap, and nothing is brought up."""
    args = example.args
    return bool(args) and (args[-1] in ("--help", "-h", "--list", "--dry-run") or args == ["knobs"]
                           or args[:2] in (["profiles", "list"], ["profiles", "show"], ["stack", "list"]))


EXAMPLES = examples()
CHEAP = [e for e in EXAMPLES if needs_no_cluster(e)]


def parse(args: list[str]) -> None:
    """`sbclab ARGS` parsed as the command line parses it, down to the last command's options,
    arguments and their values; nothing is run."""
    parent, command, name = None, main_group, "sbclab"
    while isinstance(command, click.Group) and args and not args[0].startswith("-"):
        parent = click.Context(command, info_name=name, parent=parent)
        found = command.get_command(parent, args[0])
        if found is None:
            raise click.UsageError(f"No such command '{args[0]}'.", parent)
        command, name, args = found, args[0], args[1:]
    try:
        command.make_context(name, list(args), parent=parent, resilient_parsing=False)
    except click.exceptions.Exit as done:  # --help and --version end parsing by exiting, 0 when all is well
        if done.exit_code:
            raise


def stand_in(word: str, folder: Path) -> str:
    if word not in READERS_FILES:
        return word
    (folder / word).touch()
    return str(folder / word)


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.where for e in EXAMPLES])
def test_every_documented_command_is_one_the_command_line_accepts(example, tmp_path, monkeypatch):
    # Paths in examples are the checkout's (examples/experiments/quick.yaml), typed from its top.
    monkeypatch.chdir(REPO)
    try:
        parse([stand_in(word, tmp_path) for word in example.args])
    except (click.ClickException, SbclabError) as err:
        message = err.format_message() if isinstance(err, click.ClickException) else str(err)
        pytest.fail(f"{example.where}: {example.text}\n{message}", pytrace=False)


def test_a_mistyped_example_would_fail_that_check():
    # The check above passes whatever it cannot tell apart; these must not pass.
    for args in (["clustr", "up"], ["cluster", "upp"], ["run", "--wrokers", "2"], ["doctor", "--size", "lots"],
                 ["cluster", "up", "--backend", "vm"], ["profiles", "show"], ["bench", "no/such/experiment.yaml"]):
        with pytest.raises(click.UsageError):
            parse(args)


def test_the_pages_hold_the_examples_the_checks_need():
    # A fence or prefix the extractor no longer recognises would leave every check above with nothing.
    assert len(EXAMPLES) >= 50
    texts = {e.text.split("#")[0].strip() for e in CHEAP}
    assert {"sbclab reproduce --list", "sbclab profiles list", "sbclab stack list",
            "sbclab bench examples/experiments/quick.yaml --dry-run"} <= texts


@pytest.fixture
def home(tmp_path, monkeypatch):
    """An SBCLAB_HOME of the test's own, so nothing an example writes reaches the one in use and no
    cluster recorded there is seen."""
    fetched = paths.cache_dir().resolve()
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("SBCLAB_HOME", str(home))
    # A dry run checks that its cells' stack is fetched and only reads it, so the home shares the
    # cache rather than fetch 400 MB again.
    if fetched.is_dir():
        (home / "cache").symlink_to(fetched)
    # A dry run on the emulated backend shapes every cell to this host, which would first be measured
    # (a minute of sysbench, fio and iperf3 on cores other tests are using): figures of this host's
    # kind, as tests/unit/test_spec.py uses, let it plan at once.
    cores = len(os.sched_getaffinity(0))
    stand_in_figures = HostCalibration(
        host_key=calibration.host_key(), measured_at=datetime.now(timezone.utc), cpu_model="stand-in",
        cores=cores, kernel="stand-in",
        sysbench={prime: {1: 29479.0, cores: cores * 29479.0} for prime in calibration.needed_primes()},
        disk=DiskFigures(seq_read_mb_s=2262.0, seq_write_mb_s=1190.0, rand_read_iops=33000.0,
                         rand_write_iops=33000.0),
        disk_path=str(home), veth_mbps=28000.0, tool_versions={})
    calibration.cache_file().parent.mkdir(parents=True)
    calibration.cache_file().write_text(stand_in_figures.model_dump_json())
    return home


@pytest.mark.parametrize("example", CHEAP, ids=[e.where for e in CHEAP])
def test_the_documented_commands_that_need_no_cluster_run(example, home):
    done = subprocess.run([sys.executable, "-m", "sbclab.cli", *example.args], capture_output=True, text=True,
                          timeout=60, cwd=REPO, env=dict(os.environ))
    # Without a fetched stack a dry run is refused with the command that fetches it, as a reader's
    # would be; `make test` fetches it first, a bare checkout has none.
    if done.returncode != 0 and "is not fetched" in done.stderr:
        pytest.skip(f"no stack fetched here: {done.stderr.strip()}")
    assert "Traceback" not in done.stdout + done.stderr, f"{example.where}: {example.text}\n{done.stderr}"
    assert done.returncode == 0, f"{example.where}: {example.text}\n{done.stderr}"


def slug(heading: str) -> str:
    """The anchor a Markdown renderer gives a heading: lower case, punctuation dropped, spaces hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    text = re.sub(r"^```.*?^```", "", page.read_text(), flags=re.M | re.S)
    return {slug(h) for h in re.findall(r"^#+ (.+)$", text, flags=re.M)}


def test_every_link_between_the_pages_leads_to_a_file_and_heading():
    # Sections moved between pages change both; a broken link is found here, not by a reader.
    broken = []
    for page in PAGES:
        text = re.sub(r"^```.*?^```", "", page.read_text(), flags=re.M | re.S)
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+:", target):
                continue
            path, _, anchor = target.partition("#")
            linked = (page.parent / path).resolve() if path else page
            if not linked.exists() or (anchor and linked.suffix == ".md" and anchor not in anchors(linked)):
                broken.append(f"{page.relative_to(REPO)}: {target}")
    assert not broken
