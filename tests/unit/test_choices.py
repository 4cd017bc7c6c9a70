"""What a cluster runs is the stack's to keep, apart from the cluster's spec: chosen in one place,
stored beside the cluster's state, and read back from clusters recorded when the spec carried it."""

import json

import pytest
from pydantic import ValidationError

from sbclab.cluster import spec as cluster_spec
from sbclab.earlier import FIRST_STACK
from sbclab.experiments import plan
from sbclab.stack.choices import FIELDS, StackChoices
from sbclab.stack.record import StackRecord


def _spec():
    return cluster_spec.build(name="old", backend="emulated", workers=2, cores=2, memory_bytes=24 * 2**30)


def test_the_clusters_spec_carries_its_nodes_and_not_what_runs_on_them():
    assert not set(FIELDS) & set(cluster_spec.ClusterSpec.model_fields)
    with pytest.raises(ValidationError):
        StackChoices(preset="paper", heap="big")  # a misspelt choice is refused, never dropped


def test_a_cluster_recorded_when_its_spec_carried_the_choices_keeps_them(tmp_path):
    earlier = {**_spec().model_dump(mode="json"), "preset": "paper", "spark_manager": "standalone",
               "settings": [["hdfs-site", "dfs.blocksize", "4194304"]], "web_uis": "loopback", "data_scale": 0.25}
    (tmp_path / "state.json").write_text(json.dumps({"version": 1, "phase": "up", "spec": earlier, "resources": []}))
    (tmp_path / "stack.json").write_text(json.dumps({"versions": {"hadoop": "3.3.6"}}))
    assert cluster_spec.ClusterSpec.model_validate(earlier) == _spec()
    record = StackRecord.load(tmp_path)
    assert record.choices == StackChoices(preset="paper", spark_manager="standalone", web_uis="loopback",
                                          settings=(("hdfs-site", "dfs.blocksize", "4194304"),), data_scale=0.25,
                                          stack=FIRST_STACK)  # recorded before stacks had names: the first one
    assert record.versions == {"hadoop": "3.3.6"}


def test_a_clusters_choices_are_stored_with_its_stack_record_and_read_back_whole(tmp_path):
    chosen = StackChoices(preset="paper-2021", stack="lee-oh-park-2021",
                          settings=StackChoices.settings_of({"mapred-site": {"b": "2", "a": "1"}}))
    assert chosen.settings == (("mapred-site", "a", "1"), ("mapred-site", "b", "2"))
    StackRecord(choices=chosen).save(tmp_path)
    assert StackRecord.load(tmp_path).choices == chosen


@pytest.mark.parametrize("on_boards, exposed, web_uis", [(False, False, "cluster"), (True, False, "loopback"),
                                                          (True, True, "cluster")])
def test_boards_keep_their_web_uis_on_loopback_unless_the_user_exposes_them(on_boards, exposed, web_uis):
    chosen = plan.choices_for(preset="stock", on_boards=on_boards, expose_web_uis=exposed)
    assert chosen.web_uis == web_uis
