"""The layers of DESIGN.md §4 point one way: import-linter's contracts (pyproject.toml) hold for the
package, a back-door import breaks them, and no module imports sbclab inside a function (the way a
cycle is usually dodged)."""

import ast
import shutil
import subprocess
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"
PYPROJECT = SRC.parent / "pyproject.toml"


def lint(src: Path, tmp_path: Path) -> subprocess.CompletedProcess:
    config = tmp_path / "importlinter.toml"
    shutil.copy(PYPROJECT, config)
    return subprocess.run([sys.executable, "-c", "import sys; from importlinter.cli import lint_imports_command; "
                           "sys.exit(lint_imports_command())", "--config", str(config), "--no-cache"],
                          capture_output=True, text=True, cwd=tmp_path, env={"PYTHONPATH": str(src), "PATH": "/usr/bin:/bin"})


def test_every_layer_contract_holds(tmp_path):
    done = lint(SRC, tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 broken" in done.stdout


def with_back_door(tmp_path: Path, module: str, line: str) -> subprocess.CompletedProcess:
    """The contracts checked on a copy of the package with one import added to one module."""
    copy = tmp_path / "src"
    shutil.copytree(SRC / "sbclab", copy / "sbclab", ignore=shutil.ignore_patterns("__pycache__"))
    path = copy / "sbclab" / module
    path.write_text(path.read_text() + f"\n{line}  # noqa\n")
    return lint(copy, tmp_path)


def test_a_back_door_import_breaks_a_contract(tmp_path):
    """The cluster layer reaching up into the stack, as it once did, fails the check."""
    done = with_back_door(tmp_path, "cluster/spec.py", "from ..stack import daemons")
    assert done.returncode != 0
    assert "sbclab.cluster is not allowed to import sbclab.stack" in done.stdout


def test_results_import_nothing_of_the_layers_above(tmp_path):
    done = with_back_door(tmp_path, "results/schema.py", "from ..cluster.spec import NodeSpec")
    assert done.returncode != 0 and "results is a leaf" in done.stdout


def test_no_module_imports_sbclab_inside_a_function():
    found = []
    for path in sorted((SRC / "sbclab").rglob("*.py")):
        tree = ast.parse(path.read_text())
        for func in ast.walk(tree):
            if not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(func):
                if isinstance(node, ast.ImportFrom) and (node.level > 0 or (node.module or "").startswith("sbclab")):
                    found.append(f"{path.relative_to(SRC)}:{node.lineno}")
                elif isinstance(node, ast.Import) and any(a.name.startswith("sbclab") for a in node.names):
                    found.append(f"{path.relative_to(SRC)}:{node.lineno}")
    assert not found, f"function-level imports of sbclab: {found}"
