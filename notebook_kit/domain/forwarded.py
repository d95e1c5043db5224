"""The caller's address behind proxies the operator trusts (the ``trusted_proxies``
setting).

Behind nginx or HAProxy every connection comes from the proxy, so the peer's address
names the proxy, not the caller. A proxy appends the address it got a request from to
``X-Forwarded-For`` (nginx's ``$proxy_add_x_forwarded_for``, HAProxy's ``option
forwardfor``); what a caller put there itself comes first and proves nothing. So the
address is found by the usual walk: start at the peer; while the address in hand is a
trusted proxy, step one entry left in ``X-Forwarded-For``; the first address that is not
a trusted proxy is the caller's. A peer that is not trusted is the caller, whatever it
sends; an entry that is no IP address ends the walk at the proxy that passed it on.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Sequence

__all__ = ["Networks", "caller_address", "parse_proxies", "proxies_setting"]

Networks = tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]


def parse_proxies(text: str | None) -> Networks:
    """The networks ``text`` lists (addresses or CIDR networks, split by commas or
    spaces); a single address is a network of one. Raises ``ValueError`` naming the
    first entry that is neither."""
    networks = []
    for item in (text or "").replace(",", " ").split():
        try:
            networks.append(ipaddress.ip_network(item, strict=False))
        except ValueError:
            raise ValueError(
                f"{item!r} is not an IP address or a network such as 10.0.0.0/8"
            ) from None
    return tuple(networks)


def proxies_setting(text: str) -> str | None:
    """The setting's stored form of ``text``: its networks, checked, comma-separated
    (None: no proxy is trusted; so are ``none`` and ``unset``)."""
    if text.strip().lower() in ("none", "unset"):
        return None
    return ", ".join(map(str, parse_proxies(text))) or None


def _is_trusted(address: ipaddress.IPv4Address | ipaddress.IPv6Address, trusted: Networks) -> bool:
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return any(address in network for network in trusted)


def _address(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """An ``X-Forwarded-For`` entry as an address: plain, ``[v6]`` or ``[v6]:port``,
    ``v4:port``; None for anything else."""
    text = text.strip()
    if text.startswith("["):
        text = text[1:].partition("]")[0]
    elif text.count(":") == 1:
        text = text.partition(":")[0]
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None


def caller_address(peer: str, forwarded_for: Iterable[str], trusted: Networks) -> str:
    """Who called: ``peer`` (the connection's address) unless it is a trusted proxy, then
    the rightmost address of the ``X-Forwarded-For`` values (``forwarded_for``, in the
    order received) that is not one; all trusted: the leftmost."""
    if not trusted:
        return peer
    at = _address(peer)
    if at is None or not _is_trusted(at, trusted):
        return peer
    hops: Sequence[str] = [hop for value in forwarded_for for hop in value.split(",")]
    caller = peer
    for hop in reversed(hops):
        address = _address(hop)
        if address is None:
            return caller  # not an address: the proxy that passed it on is all we know
        caller = str(address)
        if not _is_trusted(address, trusted):
            return caller
    return caller
