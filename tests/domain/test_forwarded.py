"""The caller's address behind trusted proxies: the rightmost X-Forwarded-For entry that
is not a trusted proxy, and only when the connection comes from one."""

from __future__ import annotations

import pytest

from notebook_kit.domain.forwarded import caller_address, parse_proxies, proxies_setting
from notebook_kit.domain.settings import find_setting, parse_value
from notebook_kit.errors import ValidationError

TRUSTED = parse_proxies("127.0.0.1, 10.0.0.0/8 fd00::/8")


@pytest.mark.parametrize(
    ("peer", "forwarded", "caller"),
    [
        ("127.0.0.1", [], "127.0.0.1"),  # a trusted peer that names nobody
        ("127.0.0.1", ["203.0.113.7"], "203.0.113.7"),
        ("127.0.0.1", ["198.51.100.1, 203.0.113.7"], "203.0.113.7"),  # the left one: a claim
        ("127.0.0.1", ["198.51.100.1, 203.0.113.7, 10.1.2.3"], "203.0.113.7"),  # two proxies
        ("127.0.0.1", ["198.51.100.1", "203.0.113.7, 10.1.2.3"], "203.0.113.7"),  # two headers
        ("127.0.0.1", ["10.9.9.9, 10.1.2.3"], "10.9.9.9"),  # all trusted: the leftmost
        ("127.0.0.1", ["not-an-address, 10.1.2.3"], "10.1.2.3"),  # garbage ends the walk
        ("127.0.0.1", ["203.0.113.7:4711"], "203.0.113.7"),
        ("127.0.0.1", ["[2001:db8::1]:4711"], "2001:db8::1"),
        ("127.0.0.1", ["2001:db8::1, fd00::2"], "2001:db8::1"),
        ("::ffff:127.0.0.1", ["203.0.113.7"], "203.0.113.7"),  # IPv4 in IPv6
        ("192.0.2.5", ["203.0.113.7"], "192.0.2.5"),  # an untrusted peer is the caller
        ("192.0.2.5", ["10.1.2.3"], "192.0.2.5"),
    ],
)
def test_the_caller_is_the_rightmost_address_that_is_no_trusted_proxy(
    peer: str, forwarded: list[str], caller: str
) -> None:
    assert caller_address(peer, forwarded, TRUSTED) == caller


def test_without_trusted_proxies_the_header_is_ignored() -> None:
    assert caller_address("127.0.0.1", ["203.0.113.7"], ()) == "127.0.0.1"


def test_the_setting_keeps_checked_networks_and_refuses_anything_else() -> None:
    setting = find_setting("trusted_proxies")
    assert setting.default is None
    assert parse_value(setting, "127.0.0.1,10.0.0.0/8  ::1") == "127.0.0.1/32, 10.0.0.0/8, ::1/128"
    assert parse_value(setting, "10.1.2.3/8") == "10.0.0.0/8"  # host bits dropped
    for empty in ("", "  ", "none", "unset"):
        assert proxies_setting(empty) is None
    with pytest.raises(ValidationError, match="'nginx' is not an IP address"):
        parse_value(setting, "127.0.0.1, nginx")
