"""A smart plug as a power meter: its HTTP JSON status, polled from this host at the sampling rate.

Formats (the vendors' documented APIs):
- shelly       Shelly Gen1 `GET /status`: meters[0].power (W)
- shelly-gen2  Shelly Gen2+ `GET /rpc/Switch.GetStatus?id=0`: apower (W)
- tasmota      Tasmota `GET /cm?cmnd=Status%208`: StatusSNS.ENERGY.Power (W)
The URL is the user's, whole; sbclab only reads the answer. It may carry a user, a password or a
token, so runs record it redacted, and so is every error that quotes it.
"""

import json
import re
import threading
import time
from pathlib import Path
from typing import Annotated, Literal

import requests
from pydantic import BaseModel, Field

from ... import redact
from .base import NodeRecording, PowerSource, Readings, Redacted, measured, point_intervals


def shelly_watts(answer: dict) -> float:
    meters = answer.get("meters") or []
    if not meters or "power" not in meters[0]:
        raise ValueError("no meters[0].power in the Shelly status")
    if meters[0].get("is_valid") is False:
        raise ValueError("the Shelly meter reports its reading as not valid")
    return float(meters[0]["power"])


def shelly_gen2_watts(answer: dict) -> float:
    if "apower" not in answer:
        raise ValueError("no apower in the Shelly Switch.GetStatus answer")
    return float(answer["apower"])


def tasmota_watts(answer: dict) -> float:
    energy = (answer.get("StatusSNS") or answer).get("ENERGY") or {}
    if "Power" not in energy:
        raise ValueError("no StatusSNS.ENERGY.Power in the Tasmota answer")
    power = energy["Power"]
    # A multi-channel plug reports a list, one value per channel.
    return float(sum(power)) if isinstance(power, list) else float(power)


PARSERS = {"shelly": shelly_watts, "shelly-gen2": shelly_gen2_watts, "tasmota": tasmota_watts}


class PlugFields(BaseModel):
    url: Annotated[str | None, Redacted(redact.url)] = Field(None, description="the plug's status URL")
    format: Literal["shelly", "shelly-gen2", "tasmota"] | None = None
    timeout_s: float = Field(2.0, gt=0, le=30)


def read_watts(spec: PlugFields, session: requests.Session | None = None) -> float:
    answer = (session or requests).get(spec.url, timeout=spec.timeout_s)
    answer.raise_for_status()
    return PARSERS[spec.format](answer.json())


class PlugPoller:
    """A background thread reading one plug every interval; each reading kept with its time, in
    memory and appended to a file."""

    def __init__(self, spec: PlugFields, interval_s: float, out: Path):
        self.spec = spec
        self.interval = interval_s
        self.out = out
        self.samples: list[dict] = []
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"plug {redact.url(spec.url)}", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=self.spec.timeout_s + 2)

    def collected(self) -> dict:
        return {"samples": self.samples, "errors": self.errors}

    def _run(self) -> None:
        session = requests.Session()
        with open(self.out, "a") as out:
            next_tick = time.monotonic()
            while not self._stop.is_set():
                try:
                    watts = read_watts(self.spec, session)
                    sample = {"t": round(time.time(), 4), "w": watts}
                    self.samples.append(sample)
                    out.write(json.dumps(sample) + "\n")
                    out.flush()
                except (requests.RequestException, ValueError, KeyError, TypeError) as err:
                    if len(self.errors) < 20:
                        # requests names the URL it failed on, credentials and all.
                        self.errors.append(redact.text(f"{time.time():.1f}: {type(err).__name__}: {err}")[:300])
                next_tick += self.interval
                self._stop.wait(max(0.0, next_tick - time.monotonic()))


class HttpPlug(PowerSource):
    """a smart plug's HTTP JSON API (Shelly Gen1 /status, Shelly Gen2+ Switch.GetStatus, Tasmota Status 8)"""

    name = "http-plug"
    fields = PlugFields

    def check(self, spec: PlugFields) -> None:
        if not (spec.url and spec.format):
            raise ValueError("an http-plug source needs 'url' and 'format' (shelly, shelly-gen2 or tasmota)")
        if not spec.url.startswith(("http://", "https://")):
            # Only the scheme is quoted: what follows it may be a user and password.
            scheme = spec.url.partition("://")[0] if "://" in spec.url else ""
            found = f"starts with '{scheme}://'" if re.fullmatch(r"[A-Za-z][A-Za-z0-9+.-]{0,15}", scheme) else "has no scheme"
            raise ValueError(f"the plug's url {found}; it must start with http:// or https://")

    def poller(self, spec: PlugFields, interval_s: float, folder: Path, run_id: str) -> PlugPoller:
        folder.mkdir(parents=True, exist_ok=True)
        return PlugPoller(spec, interval_s, folder / f"{run_id}.plug.jsonl")

    def readings(self, spec: PlugFields, node: NodeRecording) -> Readings:
        # The spec here is as the run recorded it, so the URL in the reason is already redacted.
        errors = node.polled.get("errors") or []
        intervals = point_intervals([(s["t"], s["w"]) for s in node.polled.get("samples") or []], node.interval_s)
        return measured(intervals, f"the plug at {spec.url} gave no reading" + (f" ({errors[0]})" if errors else ""),
                        [f"{len(errors)} plug readings failed, first: {errors[0]}"] if errors else [])
