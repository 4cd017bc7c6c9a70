"""sbclab as a user installs it without a checkout: a wheel built from the repository, installed into a clean
virtual environment, run from a folder elsewhere. Everything it reads ships in the wheel: profiles, the seeds'
tables, the reproductions, the report's templates, the PySpark jobs and the Maven modules that `stack fetch`
builds sbclab's jobs from."""

import os
import subprocess
import sys
import zipfile
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[2]


def _run(argv, **kw) -> subprocess.CompletedProcess:
    done = subprocess.run(argv, capture_output=True, text=True, timeout=900, **kw)
    assert done.returncode == 0, (argv, done.stdout[-2000:], done.stderr[-2000:])
    return done


def test_a_wheel_installed_in_a_clean_environment_runs_and_builds_the_jobs_outside_the_checkout(tmp_path):
    wheels = tmp_path / "wheels"
    _run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir", str(wheels), str(REPOSITORY)])
    wheel = next(wheels.glob("sbclab-*.whl"))
    shipped = zipfile.ZipFile(wheel).namelist()
    assert "sbclab/java/jobs/pom.xml" in shipped and "sbclab/experiments/reproductions.yaml" in shipped
    assert not [name for name in shipped if "/target/" in name], "no build output in the wheel"

    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", str(venv)])
    # Without byte-compiling every installed module (numpy's, scipy's, matplotlib's ...): half of pip's
    # time; Python compiles what it imports when it first imports it.
    _run([str(venv / "bin" / "pip"), "install", "--quiet", "--disable-pip-version-check", "--no-compile", str(wheel)])
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {**{k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "SBCLAB_JAVA_DIR")},
           "SBCLAB_HOME": str(tmp_path / "home"), "COLUMNS": "200"}
    sbclab = str(venv / "bin" / "sbclab")

    where = _run([str(venv / "bin" / "python"), "-c", "import sbclab; print(sbclab.__file__)"], cwd=elsewhere, env=env)
    assert where.stdout.startswith(str(venv)), where.stdout
    assert _run([sbclab, "--version"], cwd=elsewhere, env=env).stdout.strip()
    assert "rpi5b" in _run([sbclab, "profiles", "list"], cwd=elsewhere, env=env).stdout
    assert "table16" in _run([sbclab, "reproduce", "--list"], cwd=elsewhere, env=env).stdout
    # The jobs are built from the wheel's sources into this home's cache, as `stack fetch` does on first use.
    built = _run([str(venv / "bin" / "python"), "-c", "from sbclab.stack import distribution, versions; "
                  "print(distribution.build_jobs(versions.get(versions.DEFAULT)))"], cwd=elsewhere, env=env)
    jar = Path(built.stdout.strip().splitlines()[-1])
    assert jar.is_relative_to(tmp_path / "home")
    assert "org/sbclab/jobs/WordCount.class" in zipfile.ZipFile(jar).namelist()
