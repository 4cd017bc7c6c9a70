"""Secrets kept out of everything a run writes. A smart plug's URL may carry a user and password
(http://admin:pass@plug/status) or a token in its query (?auth_key=...); the inventory or experiment
file keeps it, while run documents, log copies, series, reports and exports get it redacted."""

import re
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

HIDDEN = "REDACTED"
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>)]+")
# Query keys whose values are credentials in the plug and meter APIs people use (Shelly, Tasmota,
# Home Assistant, cloud relays) and in URLs generally.
_SECRET_KEYS = re.compile(r"(pass|pwd|token|key|secret|auth|sig|cred|session)", re.I)


def url(address: str) -> str:
    """The URL with its user, password and credential-like query values replaced."""
    try:
        parts = urlsplit(address)
    except ValueError:
        return HIDDEN
    netloc = parts.netloc
    if "@" in netloc:
        netloc = f"{HIDDEN}@{netloc.rsplit('@', 1)[1]}"
    query = urlencode([(k, HIDDEN if _SECRET_KEYS.search(k) else v) for k, v in parse_qsl(parts.query,
                                                                                           keep_blank_values=True)],
                      safe=HIDDEN)
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


_PAIR = re.compile(r"(?i)(\b\w*(?:pass|pwd|token|key|secret|auth|sig|cred|session)\w*=)([^&\s'\"<>)]+)")


def text(words: str) -> str:
    """Free text (an error message, a note) with every URL in it redacted, and every credential-like
    key=value pair outside one (an HTTP library's error quotes the path and query alone)."""
    return _PAIR.sub(lambda m: m.group(1) + HIDDEN, _URL.sub(lambda m: url(m.group(0)), words))
