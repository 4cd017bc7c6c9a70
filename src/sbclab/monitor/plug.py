"""Smart plugs as power meters: their HTTP JSON status, polled at the sampling rate.

Formats (the vendors' documented APIs):
- shelly       Shelly Gen1 `GET /status`: meters[0].power (W)
- shelly-gen2  Shelly Gen2+ `GET /rpc/Switch.GetStatus?id=0`: apower (W)
- tasmota      Tasmota `GET /cm?cmnd=Status%208`: StatusSNS.ENERGY.Power (W)
The URL is the user's, whole; sbclab only reads the answer.
"""

import json
import threading
import time
from pathlib import Path

import requests

from .. import redact
from .settings import PowerSpec


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


def read_watts(spec: PowerSpec, session: requests.Session | None = None) -> float:
    answer = (session or requests).get(spec.url, timeout=spec.timeout_s)
    answer.raise_for_status()
    return PARSERS[spec.format](answer.json())


class Poller:
    """A background thread reading one plug every interval; each reading kept with its time."""

    def __init__(self, spec: PowerSpec, interval_s: float, out: Path):
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
