import pytest

from sbclab.cluster import pagecache
from sbclab.cluster.pagecache import NodeCache, cache_limit

MB = 2**20


def test_the_cache_gets_the_scaled_share_of_what_the_processes_leave():
    # 3 GB held by JVMs on a 7 GB node at factor 0.25: 1 GB of cache, as 4 GB would be on the board.
    assert cache_limit(3000 * MB, 0, 7000 * MB, 0.25) == 4000 * MB
    assert cache_limit(7500 * MB, 0, 7000 * MB, 0.25) == 7000 * MB  # never above the node's memory
    assert cache_limit(3000 * MB, 2000 * MB, 7000 * MB, 0.25) == 5000 * MB  # dirty pages are not forced out


def memory_group(tmp_path, usage, cache, mapped=0, dirty=0, under_oom=0, limit=7000 * MB):
    group = tmp_path / "worker1"
    group.mkdir(exist_ok=True)
    (group / "memory.stat").write_text(f"cache {cache}\nrss {usage - cache}\ntotal_cache {cache}\n"
                                       f"total_rss {usage - cache}\ntotal_mapped_file {mapped}\ntotal_shmem 0\n"
                                       f"total_dirty {dirty}\ntotal_writeback 0\n")
    (group / "memory.usage_in_bytes").write_text(str(usage))
    (group / "memory.limit_in_bytes").write_text(str(limit))
    (group / "memory.oom_control").write_text(f"oom_kill_disable 1\nunder_oom {under_oom}\noom_kill 0\n")
    return group


def test_a_tick_sets_the_limit_from_what_the_node_holds(tmp_path):
    group = memory_group(tmp_path, usage=4000 * MB, cache=1200 * MB, mapped=200 * MB)
    node = NodeCache(group, 7000 * MB, 0.25)
    assert node.tick(0.0)
    held = 2800 * MB + 200 * MB  # anonymous and kernel memory, and the mapped code counted as held
    assert int((group / "memory.limit_in_bytes").read_text()) == held + (7000 * MB - held) // 4


def test_an_oom_wait_gives_the_node_its_memory_and_at_full_size_the_kernel_kills_as_on_a_board(tmp_path):
    group = memory_group(tmp_path, usage=5000 * MB, cache=100 * MB, under_oom=1, limit=5000 * MB)
    node = NodeCache(group, 7000 * MB, 0.25)
    node.start()  # the killer off (a sysfs file here: written over by the kernel's view below)
    memory_group(tmp_path, usage=5000 * MB, cache=100 * MB, under_oom=1, limit=5000 * MB)
    node.tick(0.0)
    assert int((group / "memory.limit_in_bytes").read_text()) == 7000 * MB
    assert (group / "memory.oom_control").read_text() != "0"  # still waiting, not killed: the limit was ours
    memory_group(tmp_path, usage=5000 * MB, cache=100 * MB, under_oom=1, limit=7000 * MB)
    node.tick(0.5)  # the waiting thread has not run yet: it is given time, not killed
    assert "oom_kill_disable 1" in (group / "memory.oom_control").read_text()
    memory_group(tmp_path, usage=7000 * MB, cache=10 * MB, under_oom=1, limit=7000 * MB)
    node.tick(1.0)  # out of memory with all of it
    assert (group / "memory.oom_control").read_text() == "0"
    memory_group(tmp_path, usage=5000 * MB, cache=100 * MB)
    node.tick(1.0 + pagecache.RELEASE_S / 2)
    assert int((group / "memory.limit_in_bytes").read_text()) == 7000 * MB  # released for a while after


def test_giving_back_leaves_the_node_as_it_was_made(tmp_path):
    group = memory_group(tmp_path, usage=4000 * MB, cache=1200 * MB, limit=3000 * MB)
    NodeCache(group, 7000 * MB, 0.25).give_back()
    assert int((group / "memory.limit_in_bytes").read_text()) == 7000 * MB
    assert (group / "memory.oom_control").read_text() == "0"


def test_the_governor_ends_with_its_nodes(tmp_path):
    assert not NodeCache(tmp_path / "gone", 7000 * MB, 0.25).tick(0.0)
    pagecache.main(["--node", f"{tmp_path / 'gone'}:{7000 * MB}", "--factor", "0.25"])  # returns at once
