"""Where sbclab keeps its cache and cluster state: $SBCLAB_HOME, by default ~/.sbclab."""

import os
from pathlib import Path


def home() -> Path:
    return Path(os.environ.get("SBCLAB_HOME") or Path.home() / ".sbclab").absolute()


def cache_dir() -> Path:
    return home() / "cache"


def clusters_dir() -> Path:
    return home() / "clusters"


def cluster_dir(name: str) -> Path:
    return clusters_dir() / name
