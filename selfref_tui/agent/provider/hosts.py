"""What a base URL names: OpenAI's own API, or this machine."""

from __future__ import annotations


def _host(base_url: str) -> str:
    """The host ``base_url`` names, lower case without a trailing dot ("" if none)."""
    from urllib.parse import urlsplit

    try:
        return (urlsplit(base_url).hostname or "").rstrip(".").lower()
    except ValueError:
        return ""



def is_openai(base_url: str) -> bool:
    """True when ``base_url`` is OpenAI's own API (``api.openai.com``), the one server
    known to take ``stream_options.include_obfuscation``."""
    return _host(base_url) == "api.openai.com"



def is_local(base_url: str) -> bool:
    """True when ``base_url`` names this machine (``localhost``, a loopback address).

    Only such a server is asked a second time to learn why its stream was empty:
    a request to it costs nothing, while a remote one may be billed.
    """
    import ipaddress

    host = _host(base_url)
    if not host:
        return False
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    mapped = getattr(address, "ipv4_mapped", None)
    return address.is_loopback or (mapped is not None and mapped.is_loopback)
