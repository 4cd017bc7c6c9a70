"""Credentials in a power source's URL never reach what a run writes."""

from sbclab import redact
from sbclab.monitor.settings import PowerSpec


def test_a_plugs_user_password_and_token_are_redacted():
    shown = redact.url("http://admin:s3cr3t@10.0.0.5/status?auth_key=t0k3n&id=0")
    assert "s3cr3t" not in shown and "t0k3n" not in shown and "admin" not in shown
    assert shown.startswith("http://REDACTED@10.0.0.5/status?") and "id=0" in shown
    assert redact.url("http://10.0.0.5/status") == "http://10.0.0.5/status"


def test_an_error_that_quotes_the_url_is_redacted_too():
    said = ("ConnectionError: HTTPConnectionPool(host='10.0.0.5', port=80): Max retries exceeded with url: "
            "/rpc/Switch.GetStatus?id=0&token=t0k3n (Caused by x); see http://u:s3cr3t@plug/s")
    shown = redact.text(said)
    assert "t0k3n" not in shown and "s3cr3t" not in shown and "id=0" in shown and "host='10.0.0.5'" in shown


def test_a_power_source_is_recorded_without_its_credentials():
    spec = PowerSpec(source="http-plug", url="https://u:s3cr3t@plug.local/rpc?token=t0k3n", format="shelly-gen2")
    shown = spec.shown()
    assert "s3cr3t" not in str(shown) and "t0k3n" not in str(shown)
    assert spec.url.endswith("token=t0k3n"), "the source itself keeps what it needs to be read"
