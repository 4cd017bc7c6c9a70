"""Web-serving capacity, Hajji & Tso's method (2016, Fig. 4): nginx serves a static document from a
worker; httperf on the master offers a rate for a step of seconds, from 100 req/s (of the board's:
times the scale factor on an emulated node), doubling it until the replies fall short of the
requests or errors appear, then halves the gap to the first failed rate until the peak is known
within 5 %. The seed raised the rate by 100 req/s a step: the same peak, reached in a logarithmic
number of steps instead of 28 for the seed's 2809 req/s. The
highest sustained rate, the network throughput there and the worker's CPU are the result, for
each document size. Both ends stay on the cluster network:
nginx listens on the worker's cluster address only.

With the cluster's runtime `container`, nginx serves from a container on the worker, behind the
container runtime's default software bridge with its port published on the worker's cluster
address, as Docker serves by default: Hajji & Tso attribute Docker's overhead on small documents to
that bridge. httperf stays native on the master."""

import re
import time
from pathlib import Path
from typing import Any

from .. import profiles
from ..cluster import containers, tools
from ..errors import SbclabError
from ..results.schema import Check
from .base import Attempt, NodeBenchmark, RunContext, timed

DOC_SIZES_KB = (1, 4, 10, 50, 70, 100)
PORT = 8080
SUSTAINED = 0.95  # replies per second at least this share of the offered rate, and no errors
RESOLUTION = 0.05  # the peak is found to within this share of the lowest rate that was not sustained
# A step's rate is its replies over httperf's whole test, which ends with the last replies' drain: up
# to 80 ms on an emulated RPi 2B whose client is itself a shaped node (docs/notes.md). Over a 1-s step
# that is 8 %, more than the 5 % a sustained step may fall short, so a 1-s step failed at any rate;
# over 3 s it is under 3 %.
SHORTEST_STEP_S = 3
STALLED = 0.1  # a step answered below this share of its connections, under a rate that failed: a stall
MAX_STALLS = 3  # stalls in a row, each waited out, before the search stops where it is
RECOVERY_S = 90  # the longest a stalled server is waited for
FINER_STEP = 0.1  # past the first failed rate, the search rises by this share of the highest sustained
# httperf's: a request unanswered for this long is an error. At a sustained rate a reply takes
# milliseconds, or a second when a SYN was lost; past the peak the backlog makes every connection
# wait, and each overloaded step of the search for the peak lasts the step and this.
REPLY_TIMEOUT_S = 2
# The client's ports: Linux's connect() takes the even ephemeral ports first and, once all 14,000 are
# in TIME_WAIT (a minute; the search's steps open that many in seconds), hunts the odd ones for each
# new connection, and the client opened about 25 a second: the "stall" after an overloaded step was the
# client's (docs/notes.md). httperf's own --hog binds ports itself and waits as long once they are all
# in TIME_WAIT. An emulated client node reuses TIME_WAIT ports for new connections, as load
# generators are set up to, over the whole port range; the node's namespace goes with the cluster.
CLIENT_SYSCTLS = {"net.ipv4.tcp_tw_reuse": "1", "net.ipv4.ip_local_port_range": "1024 65535"}


def nginx_conf(root: Path, docs: Path, address: str, workers: int, user: str) -> str:
    """address: where nginx listens (in a container on the bridge, every address of its own: the
    runtime forwards only the node's cluster address to it)."""
    # Workers run as the user sbclab runs as: the documents live under its home, which nginx's
    # default user may not read (every reply would be a 403, fast and worthless). Temporary files go
    # under root too: Debian's defaults in /var/lib/nginx are root's, and nginx will not start
    # without them when a board's SSH user is not root.
    temp = " ".join(f"{kind}_temp_path {root}/tmp/{kind};" for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
    return f"""daemon off;
user {user};
worker_processes {workers};
pid {root}/nginx.pid;
error_log {root}/error.log;
events {{ worker_connections 4096; }}
http {{
  access_log off;
  {temp}
  types {{ text/html html; }}
  server {{ listen {address}:{PORT}; root {docs}; }}
}}
"""


def document(kb: int) -> str:
    """A static HTML page of exactly kb kilobytes."""
    return ("<html><body>" + "sbclab " * (kb * 1024))[: kb * 1024 - 14] + "</body></html>"


_TOTAL = re.compile(r"Total: connections (\d+) requests (\d+) replies (\d+) test-duration ([\d.]+) s")
_ERRORS = re.compile(r"Errors: total (\d+)")
# httperf's two lines of error kinds: which side gave up (the client's file descriptors or ports, or
# the server's replies not coming within the timeout).
_ERROR_KINDS = re.compile(r"(client-timo|socket-timo|connrefused|connreset|fd-unavail|addrunavail|ftab-full|other) (\d+)")
_NET = re.compile(r"Net I/O: ([\d.]+) KB/s")
_STATUS = re.compile(r"Reply status: 1xx=(\d+) 2xx=(\d+)")


def parse_httperf(text: str) -> dict:
    total, errors, net = _TOTAL.search(text), _ERRORS.search(text), _NET.search(text)
    if not total:
        raise SbclabError("httperf printed no totals.", "Read the run's log: httperf could not run.")
    requests, replies, seconds = int(total.group(2)), int(total.group(3)), float(total.group(4))
    status = _STATUS.search(text)
    return {"requests": requests, "replies": replies, "seconds": seconds,
            "replies_per_s": round(replies / seconds, 1) if seconds else 0.0,
            "errors": int(errors.group(1)) if errors else 0,
            "error_kinds": {kind: int(n) for kind, n in _ERROR_KINDS.findall(text) if int(n)},
            "net_kb_s": float(net.group(1)) if net else None,
            "ok_replies": int(status.group(2)) if status else None}


def sustained(step: dict, rate: int) -> bool:
    """Every request answered with the document (2xx), no errors, at the offered rate."""
    served = step.get("ok_replies")
    return (step["errors"] == 0 and step["replies"] >= step["requests"]
            and (served is None or served >= step["requests"])
            and step["replies_per_s"] >= SUSTAINED * rate)


def _stall(step: dict, lowest_failed: float) -> bool:
    """A step offered below a rate that already failed and answered almost none of its connections
    (those answered and those in error: httperf counts a connection it could not open, out of file
    descriptors behind the stalled ones, as an error, not a request)."""
    return (lowest_failed != float("inf") and step["rate"] < lowest_failed
            and step["replies"] < STALLED * (step["replies"] + step["errors"]))


def measured(steps: list[dict]) -> list[dict]:
    """The steps that measured the server at their rate. Past its peak an emulated node stopped
    answering for 30-40 s (docs/notes.md): a step in that stall measured the stall, not its rate,
    and is offered again once the server answers."""
    kept, lowest_failed = [], float("inf")
    for step in steps:
        if sustained(step, step["rate"]):
            kept.append(step)
        elif not _stall(step, lowest_failed):
            kept.append(step)
            lowest_failed = min(lowest_failed, step["rate"])
    return kept


def stalled(steps: list[dict]) -> int:
    """How many of the last steps in a row were stalls."""
    kept = {id(s) for s in measured(steps)}
    count = 0
    while count < len(steps) and id(steps[len(steps) - 1 - count]) not in kept:
        count += 1
    return count


def next_rate(steps: list[dict], step: int, max_rate: int) -> int | None:
    """The next rate to offer: twice the last while every step was sustained (max_rate itself once
    doubling would pass it); after the first that was not, up from the highest sustained rate by
    FINER_STEP, or halfway to the lowest failed rate where that is nearer, until the two are within
    RESOLUTION of each other (a ramp from 100 req/s alone would put the peak of a slow document, 98
    req/s at 100 KB, at 0). Rising in small steps keeps each overloaded step near the peak, where
    the stall after it is shortest. None when the peak is found, max_rate was sustained or the
    server stalled MAX_STALLS times in a row."""
    if stalled(steps) >= MAX_STALLS:
        return None
    judged = measured(steps)
    held = [s["rate"] for s in judged if sustained(s, s["rate"])]
    failed = [s["rate"] for s in judged if not sustained(s, s["rate"])]
    best = max(held, default=0)
    if not failed:
        if best >= max_rate:
            return None
        return min(2 * best, max_rate) if best else step
    worst = min(failed)
    if worst - best <= max(1, RESOLUTION * worst):
        return None
    halfway = (best + worst) // 2
    return min(max(best + 1, round(best * (1 + FINER_STEP))), halfway) if best else halfway


class Web(NodeBenchmark):
    """nginx on a worker (the first, unless `node` names one), httperf from the master."""

    name = "web"
    description = "web-serving capacity: nginx on a worker, httperf from the master, by document size"
    programs = ("nginx", "httperf")
    shortest_timed_s = SHORTEST_STEP_S

    def defaults(self) -> dict[str, Any]:
        return {**super().defaults(), "doc_sizes_kb": list(DOC_SIZES_KB), "step": 100, "step_seconds": 10,
                "max_rate": 5000}

    def check_parameters(self, params: dict[str, Any]) -> None:
        sizes = params.get("doc_sizes_kb")
        if not isinstance(sizes, list) or not sizes or not all(isinstance(kb, int) and kb > 0 for kb in sizes):
            raise SbclabError(f"Document sizes {sizes!r} are not a list of kilobytes.", "Write e.g. 1,4,10,50,70,100.")
        if params.get("step_seconds", SHORTEST_STEP_S) < SHORTEST_STEP_S:
            raise SbclabError(f"Steps of {params['step_seconds']} s are too short to tell a sustained rate from the "
                              "last replies' drain.", f"Give --step-seconds {SHORTEST_STEP_S} or more.")

    def expand(self, params, nodes):
        """One run per document size, on the first worker unless a node is named."""
        node = params["node"] if params.get("node", "all") != "all" else next(n for n, role in nodes if role == "worker")
        rest = {k: v for k, v in params.items() if k != "doc_sizes_kb"}
        return [{**rest, "node": node, "doc_size": f"{kb}KB"} for kb in params["doc_sizes_kb"]]

    def node(self, ctx: RunContext, run_id: str, params: dict[str, Any], data: dict[str, Any]) -> Attempt:
        transport, client = ctx.transport, ctx.spec.master
        server = ctx.spec.node(params["node"])
        doc_kb = int(params["doc_size"].removesuffix("KB"))
        # The seed's steps are of 100 req/s on a board; a node scaled by the factor serves that share of
        # the board's rate, so its steps are that share too, and as many steps reach its peak.
        step = max(1, round(params["step"] * ctx.spec.scale.factor))
        step_seconds, max_rate = params["step_seconds"], params["max_rate"]
        # Written where the server node sees them: its own folder, on the board itself for real boards.
        root = transport.node_dir(server) / "web"
        docs = root / "docs"
        transport.make_dirs(server, [docs, root / "tmp"])
        transport.put(server, docs, {f"doc-{doc_kb}k.html": document(doc_kb)})
        contained = ctx.spec.runtime == "container"
        transport.put(server, root, {"nginx.conf": nginx_conf(root, docs, "*" if contained else server.address,
                                                              profiles.board(server.board).cores,
                                                              transport.user(server))})
        httperf = tools.on_node(transport, client, timeout_s=step_seconds * 10 + 60)
        client_ports = _client_ports(httperf) if ctx.spec.backend == "emulated" else \
            "the board's own: above about 470 connections a second its TIME_WAIT ports may limit the rate"
        uri = f"/doc-{doc_kb}k.html"
        nginx = ["nginx", "-c", str(root / "nginx.conf"), "-p", str(root)]
        log = ctx.cluster.state.root / "web" / server.name / "nginx.log"
        container: dict[str, str] = {}

        def serving():
            if not contained:
                return tools.ServingOnNode(transport, server, nginx, log, "nginx", env={"PATH": "/usr/sbin:/usr/bin:/bin"})
            runtime = containers.runtime_on(transport, server)
            if isinstance(runtime, str):
                raise SbclabError(f"nginx cannot serve from a container: {runtime}.",
                                  "Run the native cells only (runtimes: [native]), or install podman (make setup).")
            image = containers.image_for(transport, runtime, [server], ctx.progress)
            container.update({**runtime.record(), **image.record()})
            return containers.serving(transport, server, runtime, image, nginx, log, "nginx", network="bridge",
                                      publish=((server.address, PORT, PORT),), mounts=(containers.Mount(root),))

        def body():
            steps = []
            with serving():
                _wait_listening(httperf, server.address, log)
                rate = step
                while rate is not None:
                    waited = None
                    if steps and not sustained(steps[-1], steps[-1]["rate"]):
                        # Past its peak the node answered a trickle and none of a thousand a second
                        # for 30-40 s: the next rate is offered once it answers the highest rate it held.
                        held = [s["rate"] for s in measured(steps) if sustained(s, s["rate"])]
                        waited = _wait_recovered(httperf, server.address, uri, max(held, default=1))
                    began = time.time()
                    _, out, _ = httperf(["httperf", "--server", server.address, "--port", str(PORT), "--uri", uri,
                                         "--rate", str(rate), "--num-conns", str(rate * step_seconds),
                                         "--timeout", str(REPLY_TIMEOUT_S)])
                    # Each step's time, so the server's CPU can be read at the peak rate, not over the ramp.
                    figures = {"rate": rate, "start": round(began, 3), "end": round(time.time(), 3), **parse_httperf(out)}
                    if waited is not None:
                        figures["waited_for_server_s"] = waited
                    steps.append(figures)
                    rate = next_rate(steps, step, max_rate)
            judged = measured(steps)
            good = [s for s in judged if sustained(s, s["rate"])]
            peak = max(good, key=lambda s: s["rate"]) if good else None
            result = {"doc_size": f"{doc_kb}KB", "server": server.name, "peak_rate": peak["rate"] if peak else 0,
                      "net_mbit_s_at_peak": round(peak["net_kb_s"] * 8 * 1024 / 1e6, 2)
                      if peak and peak["net_kb_s"] else None,
                      "steps": steps,
                      "limited_by": ("max rate reached" if peak and peak["rate"] >= max_rate
                                     else "the server stalled after an overloaded step" if stalled(steps) >= MAX_STALLS
                                     else "replies fell short"),
                      "stalled_steps": len(steps) - len(judged), "client_ports": client_ports}
            # How far above the peak the lowest rate that failed was: RESOLUTION when the search
            # narrowed it down, more when it stopped at a stall.
            failed = [s["rate"] for s in judged if not sustained(s, s["rate"])]
            if peak and failed:
                result["peak_known_within"] = round(min(failed) / peak["rate"] - 1, 3)
            if contained:
                result.update(runtime="container", container=dict(container))
            checks = [Check(name="nginx answered", passed=bool(steps) and steps[0]["replies"] > 0,
                            detail=f"{len(steps)} steps, ramp of {step} req/s"),
                      Check(name="a sustained rate found", passed=peak is not None,
                            detail=f"peak {result['peak_rate']} req/s" if peak else f"not even {step} req/s")]
            return result, checks
        attempt = timed(ctx, run_id, self.name, server, ["httperf", "--server", server.address, "--port", str(PORT),
                                                         "--uri", uri, "--rate", "R"], body)
        attempt.parameters["client"] = client.name
        return attempt


def _client_ports(on_client: tools.Runner) -> str:
    """Set the client node's TIME_WAIT reuse and port range; what it has, said."""
    for key, value in CLIENT_SYSCTLS.items():
        status, _, err = on_client(["sysctl", "-q", "-w", f"{key}={value}"])
        if status != 0:
            return f"the node's own ({key} could not be set: {err.strip()[:120]})"
    return "TIME_WAIT reused, ports 1024-65535"


def _wait_recovered(httperf: tools.Runner, address: str, uri: str, rate: int) -> float:
    """Until the server answers a second of `rate` in full, or RECOVERY_S: during a stall single
    requests and a trickle of 32 a second got through while a thousand a second got none."""
    began = time.monotonic()
    deadline = began + RECOVERY_S
    while time.monotonic() < deadline:
        _, out, _ = httperf(["httperf", "--server", address, "--port", str(PORT), "--uri", uri, "--rate", str(rate),
                             "--num-conns", str(rate), "--timeout", "1"])
        try:
            burst = parse_httperf(out)
        except SbclabError:
            burst = {"requests": 0, "replies": 0, "errors": 1}
        if burst["errors"] == 0 and burst["requests"] and burst["replies"] >= burst["requests"]:
            break
        time.sleep(1)
    return round(time.monotonic() - began, 1)


def _wait_listening(httperf: tools.Runner, address: str, log: Path, attempts: int = 50) -> None:
    for _ in range(attempts):
        _, out, _ = httperf(["httperf", "--server", address, "--port", str(PORT), "--uri", "/",
                             "--num-conns", "1", "--timeout", "1"])
        if "replies 1" in out:
            return
        time.sleep(0.2)
    said = log.read_text(errors="replace").strip().splitlines() if log.exists() else []
    raise SbclabError(f"nginx did not answer on {address}:{PORT}" + (f" (its log ends: {said[-1][:300]})." if said else "."),
                      "Read nginx.log in the cluster's web folder and error.log in the node's web folder.")
