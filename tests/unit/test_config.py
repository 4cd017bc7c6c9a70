import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from sbclab.cluster import spec
from sbclab.stack import config
from sbclab.stack.distribution import Distribution

GiB = 2**30


@pytest.fixture
def dist(tmp_path):
    return Distribution(tmp_path / "hadoop", tmp_path / "spark", tmp_path / "jobs.jar")


def layout(tmp_path, node):
    return config.NodeLayout(conf_dir=tmp_path / node.name / "conf", disk=tmp_path / node.name / "disk",
                             log_dir=tmp_path / node.name / "logs")


def render(tmp_path, dist, preset="stock", backend="emulated"):
    s = spec.build(backend=backend, preset=preset, workers=2, cores=2, memory_bytes=24 * GiB)
    out = {}
    for n in s.nodes:
        where = layout(tmp_path, n)
        out[n.name], files = config.render(s, n, where, dist)
        where.conf_dir.mkdir(parents=True)
        for name, text in files.items():
            (where.conf_dir / name).write_text(text)
    return s, out


def read_xml(path: Path) -> dict[str, str]:
    root = ET.parse(path).getroot()
    return {p.findtext("name"): p.findtext("value") for p in root.iter("property")}


def test_every_address_is_a_node_address_never_the_wildcard(tmp_path, dist):
    s, rendered = render(tmp_path, dist)
    addresses = {n.address for n in s.nodes}
    for node, files in rendered.items():
        for file, props in files.items():
            for key, value in props.items():
                assert "0.0.0.0" not in value, (node, key)
                if key.endswith((".address", "-address")) and ":" in value:
                    assert value.split(":")[0] in addresses, (node, key, value)
    worker = rendered["worker1"]
    assert worker["hdfs-site"]["dfs.datanode.address"] == "10.213.0.11:9866"
    assert worker["yarn-site"]["yarn.nodemanager.hostname"] == "10.213.0.11"
    assert worker["core-site"]["fs.defaultFS"] == "hdfs://10.213.0.10:8020"


def test_stock_keeps_upstream_defaults_and_paper_sets_table_9_and_10(tmp_path, dist):
    _, stock = render(tmp_path / "stock", dist)
    assert "dfs.replication" not in stock["master"]["hdfs-site"]
    assert "mapreduce.job.reduces" not in stock["master"]["mapred-site"]
    assert "spark.executor.instances" not in stock["master"]["spark-defaults"]
    _, paper = render(tmp_path / "paper", dist, preset="paper")
    assert paper["master"]["hdfs-site"]["dfs.replication"] == "1"
    assert paper["master"]["mapred-site"]["mapreduce.job.reduces"] == "2"
    assert paper["master"]["spark-defaults"]["spark.executor.instances"] == "2"
    assert paper["master"]["spark-defaults"]["spark.executor.cores"] == "2"


def test_yarn_is_sized_from_the_profile(tmp_path, dist):
    s, rendered = render(tmp_path, dist)
    yarn = rendered["worker1"]["yarn-site"]
    worker = s.worker_nodes[0]
    assert int(yarn["yarn.nodemanager.resource.memory-mb"]) == worker.yarn_memory_mb
    assert int(yarn["yarn.nodemanager.resource.memory-mb"]) * 2**20 < worker.memory_bytes
    assert yarn["yarn.nodemanager.resource.cpu-vcores"] == "4"
    assert int(yarn["yarn.scheduler.maximum-allocation-mb"]) <= worker.yarn_memory_mb


def test_files_are_written_and_well_formed(tmp_path, dist):
    render(tmp_path, dist)
    conf = tmp_path / "worker2" / "conf"
    for name in ("core-site.xml", "hdfs-site.xml", "yarn-site.xml", "mapred-site.xml", "capacity-scheduler.xml"):
        assert read_xml(conf / name), name
    assert read_xml(conf / "hdfs-site.xml")["dfs.datanode.data.dir"].startswith(str(tmp_path / "worker2" / "disk"))
    assert "log4j.rootLogger" in (conf / "log4j.properties").read_text()
    assert "spark.master yarn" in (conf / "spark-defaults.conf").read_text()
    assert (conf / "workers").read_text().split() == ["10.213.0.11", "10.213.0.12"]


def test_processes_backend_gives_each_node_its_own_ports(tmp_path, dist):
    _, rendered = render(tmp_path, dist, backend="processes")
    for file, key in (("mapred-site", "mapreduce.shuffle.port"), ("hdfs-site", "dfs.datanode.address"),
                      ("hdfs-site", "dfs.datanode.http.address"), ("yarn-site", "yarn.nodemanager.webapp.address")):
        values = {rendered[n][file][key] for n in ("worker1", "worker2")}
        assert len(values) == 2, key
    assert rendered["worker1"]["hdfs-site"]["dfs.datanode.address"] == "127.0.0.1:9966"
