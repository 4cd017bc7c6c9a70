"""Credentials in a power source's URL never reach what a run writes."""

import pytest
from pydantic import ValidationError

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


def test_a_pw_query_a_fragment_and_a_password_with_a_parenthesis_are_redacted():
    shown = redact.url("http://plug/status?pw=hunter2&user_pw=hunter3&upward=1#access_token=t0k3n")
    assert "hunter" not in shown and "t0k3n" not in shown
    assert shown == "http://plug/status?pw=REDACTED&user_pw=REDACTED&upward=1#REDACTED"
    said = redact.text("GET failed (see http://admin:pa)ss@plug/status) and pw=ab)cd (token=t0k3n)")
    assert "pa)ss" not in said and "ss@" not in said and "ab)cd" not in said and ")cd" not in said
    assert "t0k3n" not in said
    assert said == "GET failed (see http://REDACTED@plug/status) and pw=REDACTED (token=REDACTED)"


@pytest.mark.parametrize("url, said", [("ftp://admin:s3cr3t@plug/status", "starts with 'ftp://'"),
                                       ("admin:s3cr3t@plug/status", "has no scheme")])
def test_a_plug_url_of_another_scheme_is_refused_without_its_password(url, said):
    with pytest.raises(ValidationError) as err:
        PowerSpec(source="http-plug", url=url, format="shelly")
    message = err.value.errors()[0]["msg"]  # what the commands print of it
    assert said in message and "s3cr3t" not in message
