"""Secrets kept out of everything a run writes. A smart plug's URL may carry a user and password
(http://admin:pass@plug/status) or a token in its query (?auth_key=...); the inventory or experiment
file keeps it, while run documents, log copies, series, reports and exports get it redacted."""

import re
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

HIDDEN = "REDACTED"
# A URL runs to the first space or quote; a ')' may be part of it (a password's), so the ones that
# close a parenthesis opened before the URL are trimmed afterwards (_unbalanced_tail).
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>]+")
# Query keys whose values are credentials in the plug and meter APIs people use (Shelly, Tasmota,
# Home Assistant, cloud relays) and in URLs generally; `pw` only as a word of its own (?pw=, ?user_pw=).
_SECRET_KEYS = re.compile(r"(pass|pwd|token|key|secret|auth|sig|cred|session)|(^|[_.-])pw($|[_.-])", re.I)


def url(address: str) -> str:
    """The URL with its user, password, credential-like query values and fragment replaced (a fragment
    is never sent to the plug, and single-page apps keep tokens there)."""
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
    return urlunsplit((parts.scheme, netloc, parts.path, query, HIDDEN if parts.fragment else ""))


_PAIR = re.compile(r"(?i)(\b(?:\w*(?:pass|pwd|token|key|secret|auth|sig|cred|session)\w*|(?:\w*_)?pw(?:_\w*)?)=)"
                   r"([^&\s'\"<>]+)")


def _unbalanced_tail(found: str) -> int:
    """How many ')' at the end of a match close a parenthesis opened before it, in prose such as
    '(see http://plug/status)'."""
    tail = len(found) - len(found.rstrip(")"))
    return max(0, min(tail, found.count(")") - found.count("(")))


def _redacted(found: re.Match, hide) -> str:
    text = found.group(0)
    cut = len(text) - _unbalanced_tail(text)
    return hide(found, text[:cut]) + text[cut:]


def text(words: str) -> str:
    """Free text (an error message, a note) with every URL in it redacted, and every credential-like
    key=value pair outside one (an HTTP library's error quotes the path and query alone)."""
    words = _URL.sub(lambda m: _redacted(m, lambda _, u: url(u)), words)
    return _PAIR.sub(lambda m: _redacted(m, lambda pair, _: pair.group(1) + HIDDEN), words)
