"""Running host commands (ip, tc, losetup, mount…) with errors a user can act on."""

import shutil
import subprocess

from ..errors import SbclabError


def run(*argv: str, check: bool = True, input: str | None = None) -> subprocess.CompletedProcess:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, input=input, timeout=120)
    except FileNotFoundError as err:
        raise SbclabError(f"'{argv[0]}' is not installed on this host.",
                          "Run 'make setup' (or install iproute2, util-linux and e2fsprogs).") from err
    if check and done.returncode != 0:
        raise SbclabError(f"'{' '.join(argv)}' failed: {done.stderr.strip() or done.stdout.strip()}",
                          "If a previous cluster was not removed, run 'sbclab cluster down --force'.")
    return done


def quietly(*argv: str) -> bool:
    """Run a removal command whose target may already be gone; report whether it succeeded."""
    try:
        return subprocess.run(argv, capture_output=True, timeout=60).returncode == 0
    except (FileNotFoundError, subprocess.TimeoutExpired):
        return False


def require_tools(*names: str) -> None:
    missing = [n for n in names if shutil.which(n) is None]
    if missing:
        raise SbclabError(f"Missing host tools: {', '.join(missing)}.",
                          "Run 'make setup', or install iproute2, util-linux and e2fsprogs.")
