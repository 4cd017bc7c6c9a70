"""Fixtures the unit tests share."""

import pytest

from sbclab import profiles


@pytest.fixture
def shipped_profiles_only(tmp_path, monkeypatch):
    """Only the shipped board and storage profiles: a reader's own files under SBCLAB_HOME must neither
    hide nor collide with them."""
    monkeypatch.setenv("SBCLAB_HOME", str(tmp_path))
    profiles.reload()
    yield
    profiles.reload()
