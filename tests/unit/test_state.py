import json

import pytest

from sbclab.cluster import spec
from sbclab.cluster.state import ClusterState
from sbclab.errors import SbclabError


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("SBCLAB_HOME", str(tmp_path))
    return tmp_path


def small():
    return spec.build(name="unit", backend="processes", workers=1, cores=2, memory_bytes=24 * 2**30)


def test_resources_are_on_disk_before_they_exist(home):
    state = ClusterState.create(small())
    entry = state.record("netns", name="sbclab-unit-master")
    on_disk = json.loads(state.path.read_text())
    assert on_disk["resources"] == [entry]
    state.forget(entry)
    assert json.loads(state.path.read_text())["resources"] == []


def test_state_round_trips_and_names_are_listed(home):
    state = ClusterState.create(small())
    state.record("directory", path="/x")
    state.set_phase("up")
    back = ClusterState.load("unit")
    assert back.spec == state.spec and back.phase == "up" and back.resources == state.resources
    assert ClusterState.names() == ["unit"]


def test_a_second_cluster_of_the_same_name_is_refused(home):
    ClusterState.create(small())
    with pytest.raises(SbclabError) as err:
        ClusterState.create(small())
    assert "down --force" in str(err.value)


def test_a_state_file_of_another_version_is_refused(home):
    state = ClusterState.create(small())
    raw = json.loads(state.path.read_text())
    raw["version"] = 99
    state.path.write_text(json.dumps(raw))
    with pytest.raises(SbclabError) as err:
        ClusterState.load("unit")
    assert "version 99" in str(err.value)


def test_loading_a_cluster_that_does_not_exist_says_how_to_make_one(home):
    with pytest.raises(SbclabError) as err:
        ClusterState.load("nope")
    assert "sbclab cluster up" in str(err.value)
