"""Who is on the other end: the socket's peer, or, behind a trusted reverse proxy, the client it forwards for.

`--trusted-proxy CIDR` (Limits.trusted_proxies) names the proxies. A request from one of them may say, in
X-Forwarded-For, whom it came from; the header is read from its right end (each proxy appends the address it
heard from), skipping the addresses of trusted proxies, and the first address that is not one is the client.
A request from anyone else is taken at its socket's address, whatever its headers say: a client cannot choose
the address its sign-in failures are counted against.
"""

from __future__ import annotations

import ipaddress
from typing import Iterable

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def networks(cidrs: Iterable[str]) -> tuple[Network, ...]:
    """Parse `--trusted-proxy` values (an address alone is a network of one); ValueError names a bad one."""
    out = []
    for c in cidrs:
        try:
            out.append(ipaddress.ip_network(c.strip(), strict=False))
        except ValueError:
            raise ValueError(f"--trusted-proxy {c!r} is not an address or a network (CIDR)") from None
    return tuple(out)


def _ip(text: str):
    try:
        ip = ipaddress.ip_address(text.strip().strip("[]"))
    except ValueError:
        return None
    return ip.ipv4_mapped or ip if isinstance(ip, ipaddress.IPv6Address) else ip


def trusted(address: str, proxies: tuple[Network, ...]) -> bool:
    ip = _ip(address)
    return ip is not None and any(ip in n for n in proxies)


def client_address(peer: str, forwarded_for: list[str], proxies: tuple[Network, ...]) -> str:
    """The client's address: `peer`, or, when `peer` is a trusted proxy, the rightmost untrusted address of the
    X-Forwarded-For values (all the headers' values, in order)."""
    if not proxies or not trusted(peer, proxies):
        return peer
    hops = [h.strip() for value in forwarded_for for h in value.split(",") if h.strip()]
    for hop in reversed(hops):
        ip = _ip(hop)
        if ip is None:  # a malformed hop: what is left of it cannot be believed
            return peer
        if not any(ip in n for n in proxies):
            return str(ip)
    return str(_ip(hops[0])) if hops else peer  # every hop a trusted proxy: the farthest one


def loopback(address: str) -> bool:
    ip = _ip(address)
    return ip is not None and ip.is_loopback
