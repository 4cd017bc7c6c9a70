import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from sbclab.cluster import spec
from sbclab.errors import SbclabError
from sbclab.experiments import model, plan
from sbclab.stack import config, sizing
from sbclab.stack.choices import StackChoices
from sbclab.stack.distribution import Distribution
from sbclab.stack.versions import STACKS

GiB = 2**30


@pytest.fixture
def dist(tmp_path):
    return Distribution(STACKS["lee-park-2026"], tmp_path / "hadoop", tmp_path / "spark", tmp_path / "jobs.jar")


def layout(tmp_path, node):
    return config.NodeLayout(conf_dir=tmp_path / node.name / "conf", disk=tmp_path / node.name / "disk",
                             log_dir=tmp_path / node.name / "logs")


def render(tmp_path, dist, preset="stock", backend="emulated"):
    s = spec.build(backend=backend, workers=2, cores=2, memory_bytes=24 * GiB)
    out = {}
    for n in s.nodes:
        where = layout(tmp_path, n)
        out[n.name], files = config.render(s, StackChoices(preset=preset), n, where, dist)
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


@pytest.mark.parametrize("file, name, value", [
    ("yarn-site", "yarn.resourcemanager.webapp.address", "0.0.0.0:8088"),
    ("yarn-site", "yarn.nodemanager.webapp.address", "192.168.1.50:8042"),
    ("hdfs-site", "dfs.namenode.http-address", "10.213.0.10:9870"),
    ("hdfs-site", "dfs.namenode.rpc-bind-host", "0.0.0.0"),
    ("yarn-site", "yarn.resourcemanager.hostname", "::"),
    ("mapred-site", "mapreduce.jobhistory.webapp.address", "0.0.0.0:19888"),
    ("spark-defaults", "spark.driver.bindAddress", "0.0.0.0"),
    ("spark-defaults", "spark.driver.host", "*"),
])
def test_an_experiment_cannot_move_where_a_daemon_listens(file, name, value):
    with pytest.raises(SbclabError) as err:
        model.parse({"workloads": ["pi"], "cluster": {"settings": {file: {name: value}}}}, "x.yaml")
    assert f"{file} {name} would have a daemon listen on '{value}', not on its node's own address" in str(err.value)
    assert "--expose-web-uis" in str(err.value)


def test_a_switch_named_like_an_address_is_no_address():
    model.parse({"workloads": ["pi"], "cluster": {"settings": {"hdfs-site": {"dfs.client.use.datanode.hostname": True}}}})


@pytest.mark.parametrize("file, name", [
    ("core-site", "fs.s3a.secret.key"), ("core-site", "fs.s3a.access.key"), ("core-site", "fs.s3a.session.token"),
    ("core-site", "fs.azure.account.key.lab.blob.core.windows.net"), ("hdfs-site", "dfs.https.server.keystore.password"),
    ("core-site", "hadoop.http.authentication.signature.secret"), ("spark-defaults", "spark.hadoop.fs.s3a.secret.key"),
    ("core-site", "fs.gs.auth.service.account.json.keyfile.credential"),
])
def test_a_credential_in_the_settings_is_refused_without_echoing_it(file, name):
    secret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
    with pytest.raises(SbclabError) as err:
        model.parse({"workloads": ["pi"], "cluster": {"settings": {file: {name: secret}}}}, "x.yaml")
    said = str(err.value)
    assert f"{file} {name} holds a credential" in said and "run document" in said and "credential store" in said
    assert secret not in said


def test_the_credential_provider_that_keeps_them_may_be_named():
    model.parse({"workloads": ["pi"], "cluster": {"settings": {"core-site": {
        "hadoop.security.credential.provider.path": "jceks://file/home/pi/s3.jceks",
        "fs.s3a.aws.credentials.provider": "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider"}}}})


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
    _, newest = render(tmp_path, dist, preset="paper-2026")
    for file in ("hdfs-site", "mapred-site", "spark-defaults"):  # `paper` is the newest seed's
        assert {k: v for k, v in newest["worker1"][file].items() if "/" not in v} == \
               {k: v for k, v in paper["worker1"][file].items() if "/" not in v}
    _, older = render(tmp_path / "paper-2021", dist, preset="paper-2021")
    assert older["master"]["mapred-site"]["yarn.app.mapreduce.am.resource.mb"] == "3072"  # the 2021 seed's Table 11
    assert older["master"]["mapred-site"]["mapreduce.reduce.memory.mb"] == "4096"
    assert older["worker1"]["yarn-site"]["yarn.nodemanager.resource.memory-mb"] == "4096"
    assert older["master"]["hdfs-site"]["dfs.replication"] == "3"


def test_yarn_is_sized_from_the_profile(tmp_path, dist):
    s, rendered = render(tmp_path, dist)
    yarn = rendered["worker1"]["yarn-site"]
    worker = s.worker_nodes[0]
    memory_mb, _ = sizing.yarn_share(worker)
    assert int(yarn["yarn.nodemanager.resource.memory-mb"]) == memory_mb
    # The board's: an emulated node given a share of its RAM is seen as its board (test_heaps.py).
    assert s.scale.memory_factor < 1 and memory_mb == sizing.worker_memory(8 * GiB).containers_mb
    assert yarn["yarn.nodemanager.resource.cpu-vcores"] == "4"
    assert int(yarn["yarn.scheduler.maximum-allocation-mb"]) <= memory_mb


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


def test_boards_keep_web_uis_on_loopback_unless_exposed(tmp_path, dist):
    from sbclab.cluster import inventory
    inv = inventory.Inventory(source="hosts.yml", hosts=(
        inventory.Host(name="pi0", role="master", address="10.0.0.10"),
        inventory.Host(name="pi1", role="worker", address="10.0.0.11")))
    s = spec.from_inventory(inv, name="pis")
    for expose, web in ((False, "127.0.0.1"), (True, None)):
        choices = plan.choices_for(preset="stock", on_boards=True, expose_web_uis=expose)
        master, worker = s.master, s.worker_nodes[0]
        on_master = config.settings(s, choices, master, layout(tmp_path, master), dist)
        on_worker = config.settings(s, choices, worker, layout(tmp_path, worker), dist)
        assert on_master["hdfs-site"]["dfs.namenode.http-address"] == f"{web or master.address}:9870"
        assert on_master["yarn-site"]["yarn.resourcemanager.webapp.address"] == f"{web or master.address}:8088"
        assert on_master["mapred-site"]["mapreduce.jobhistory.webapp.address"] == f"{web or master.address}:19888"
        assert on_worker["hdfs-site"]["dfs.datanode.http.address"] == f"{web or worker.address}:9864"
        assert on_worker["yarn-site"]["yarn.nodemanager.webapp.address"] == f"{web or worker.address}:8042"
        assert on_worker["spark-defaults"].get("spark.ui.enabled") == (None if expose else "false")
        # What the daemons need of each other stays on the cluster addresses.
        assert on_worker["hdfs-site"]["dfs.namenode.rpc-address"] == f"{master.address}:8020"
        assert on_worker["hdfs-site"]["dfs.datanode.address"] == f"{worker.address}:9866"
        assert on_worker["mapred-site"]["mapreduce.jobhistory.address"] == f"{master.address}:10020"



def test_spark_waits_for_every_executor_yarn_can_hold(tmp_path, dist):
    _, stock = render(tmp_path / "stock", dist)
    # Two workers of 5 GiB of containers: the two default executors (1 GiB + 384 MB, in 2 GiB
    # containers) fit beside the ApplicationMaster, so a job waits for both.
    assert stock["worker1"]["spark-defaults"]["spark.scheduler.minRegisteredResourcesRatio"] == "1"
    small = spec.build(backend="emulated", workers=1, cores=2, memory_bytes=24 * GiB)
    share = sizing.yarn_share(small.worker_nodes[0])[0]
    fit = sizing.executors_that_fit(small, 1408, 896)
    assert fit == (share - 1024) // 2048
    values = config.settings(small, StackChoices(), small.master, layout(tmp_path, small.master), dist)
    assert float(values["spark-defaults"]["spark.scheduler.minRegisteredResourcesRatio"]) == min(1.0, fit / 2)


def test_an_experiments_own_settings_are_set_over_the_preset(tmp_path, dist):
    s = spec.build(backend="emulated", workers=2, cores=2, memory_bytes=24 * GiB)
    choices = StackChoices(preset="paper", settings=(("hdfs-site", "dfs.blocksize", "16777216"),
                                                     ("hdfs-site", "dfs.replication", "2")))
    values = config.settings(s, choices, s.master, layout(tmp_path, s.master), dist)
    assert values["hdfs-site"]["dfs.blocksize"] == "16777216" and values["hdfs-site"]["dfs.replication"] == "2"
