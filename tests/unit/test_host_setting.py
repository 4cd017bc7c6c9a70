"""A host-wide kernel switch held by the clusters that need it: on while any holds it, back as found after the last."""

from sbclab.cluster.host_setting import HostSetting


def _setting(tmp_path, value: str | None = "0"):
    switch = tmp_path / "proc" / "task_delayacct"
    switch.parent.mkdir()
    if value is not None:
        switch.write_text(value + "\n")
    return switch, HostSetting(switch, "1", registry=tmp_path / "run")


def _clusters(tmp_path, *names):
    roots = [tmp_path / "homes" / name for name in names]
    for root in roots:
        root.mkdir(parents=True)
    return roots


def test_the_switch_stays_on_until_the_last_cluster_lets_go_whichever_went_first(tmp_path):
    switch, setting = _setting(tmp_path)
    first, second = _clusters(tmp_path, "gw0/clusters/a", "gw1/clusters/b")
    assert setting.hold(first) and switch.read_text() == "1\n"
    assert setting.hold(second) and switch.read_text() == "1\n"
    assert setting.release(first) and switch.read_text() == "1\n", "the second cluster still samples"
    assert setting.release(second) and switch.read_text() == "0\n", "put back as the first cluster found it"
    assert not list((tmp_path / "run").glob("*/*")), "nothing of the registry is left"


def test_a_switch_found_on_is_left_on(tmp_path):
    switch, setting = _setting(tmp_path, "1")
    [root] = _clusters(tmp_path, "a")
    assert setting.hold(root) and setting.release(root)
    assert switch.read_text() == "1\n"


def test_a_holder_whose_cluster_was_removed_without_letting_go_holds_nothing(tmp_path):
    switch, setting = _setting(tmp_path)
    gone, live = _clusters(tmp_path, "gone", "live")
    setting.hold(gone)
    setting.hold(live)
    gone.rmdir()  # its state removed by hand, its holder file left
    assert setting.release(live) and switch.read_text() == "0\n"


def test_a_kernel_without_the_switch_is_held_by_nobody(tmp_path):
    switch, setting = _setting(tmp_path, None)
    [root] = _clusters(tmp_path, "a")
    assert not setting.hold(root)
    assert setting.release(root) and not switch.exists()
