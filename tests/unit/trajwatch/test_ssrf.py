"""The SSRF guard's one URL reader and its address judgement, case by case; and a URL
refused by its form failing at start rather than at the first kill."""

from __future__ import annotations

import ipaddress
import socket

import pytest

from models.errors import ConfigError, DestinationRefused
from trajwatch.actions.ssrf import AddressPolicy, parse, pin
from trajwatch.config import actions_config
from trajwatch.settings import Settings

SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("http://127.0.0.1:9000\\@8.8.8.8/hook", "backslash"),
        ("http://8.8.8.8\\.127.0.0.1/hook", "backslash"),
        ("http://example.com/a\\b", "backslash"),
        ("http://user@example.com/", "userinfo"),
        ("http://user:pw@example.com/", "userinfo"),
        ("http://@example.com/", "userinfo"),
        ("http://example.com@127.0.0.1/", "userinfo"),
        ("http://exa mple.com/", "space"),
        ("http://example.com/\thook", "control"),
        ("http://example.com\n.evil/", "control"),
        (" http://example.com/", "space"),
        ("http://exämple.com/", "non-ASCII"),
        ("ftp://example.com/", "only http and https"),
        ("file:///etc/passwd", "only http and https"),
        ("gopher://127.0.0.1:6379/_", "only http and https"),
        ("http:/example.com/", "not of the form"),
        ("http:example.com", "not of the form"),
        ("//example.com/", "not of the form"),
        ("http:///example.com", "names no host"),
        ("http://example.com/#frag", "fragment"),
        ("http://127.1/", "dotted quad"),
        ("http://0x7f.0.0.1/", "dotted quad"),
        ("http://2130706433/", "dotted quad"),
        ("http://0177.0.0.1/", "dotted quad"),
        ("http://127.0.0.1./", "dotted quad"),
        ("http://10.0.0.010/", "dotted quad"),
        ("http://%31%32%37.0.0.1/", "not a host name"),
        ("http://exam_ple..com/", "not a host name"),
        ("http://[::1%25eth0]/", "zone"),
        ("http://[::1]x/", "after its IPv6 host"),
        ("http://[127.0.0.1]/", "not an IPv6 address"),
        ("http://example.com:0/", "port"),
        ("http://example.com:65536/", "port"),
        ("http://example.com:/", "port"),
        ("http://example.com:80:81/", "port"),
        ("http://example.com:+80/", "port"),
        ('http://example.com/"><img>', "percent-encode"),
        ("http://example.com/a b", "space"),
    ],
)
def test_urls_two_readers_could_read_differently_are_refused(url: str, why: str) -> None:
    with pytest.raises(DestinationRefused, match=why):
        parse(url)


@pytest.mark.parametrize(
    ("url", "host", "port", "target", "host_header"),
    [
        ("https://Breaker.Example.com/v1/hook", "breaker.example.com", 443, "/v1/hook",
         "breaker.example.com"),
        ("HTTP://example.com", "example.com", 80, "/", "example.com"),
        ("http://example.com:8080/a?b=c&d=%20", "example.com", 8080, "/a?b=c&d=%20",
         "example.com:8080"),
        ("http://example.com/?q=a?b", "example.com", 80, "/?q=a?b", "example.com"),
        ("https://[2606:4700::1111]:8443/x", "2606:4700::1111", 8443, "/x",
         "[2606:4700::1111]:8443"),
        ("http://127.0.0.1:4319/v1/webhooks", "127.0.0.1", 4319, "/v1/webhooks",
         "127.0.0.1:4319"),
        ("http://breaker.internal./hook", "breaker.internal.", 80, "/hook", "breaker.internal."),
        ("http://my_host.example.com/@x", "my_host.example.com", 80, "/@x",
         "my_host.example.com"),
    ],
)
def test_the_one_reading_of_a_plain_url(
    url: str, host: str, port: int, target: str, host_header: str
) -> None:
    found = parse(url)
    assert (found.host, found.port, found.request_target, found.host_header) == (
        host,
        port,
        target,
        host_header,
    )


@pytest.mark.parametrize(
    ("address", "default", "private_allowed"),
    [
        ("8.8.8.8", None, None),
        ("2606:4700::1111", None, None),
        ("127.0.0.1", "loopback", None),
        ("::1", "loopback", None),
        ("10.1.2.3", "private", None),
        ("192.168.1.1", "private", None),
        ("fd12::1", "private", None),
        ("224.0.0.1", "multicast", None),
        ("192.0.2.1", "private", None),  # documentation: not public
        ("100.64.0.1", "shared address space", "shared address space"),
        ("100.100.100.200", "shared address space", "shared address space"),
        ("169.254.169.254", "link-local", "link-local"),
        ("169.254.170.2", "link-local", "link-local"),
        ("fe80::1", "IPv6 link-local", "IPv6 link-local"),
        ("fd00:ec2::254", "AWS's IPv6 metadata", "AWS's IPv6 metadata"),
        ("168.63.129.16", "Azure", "Azure"),
        ("0.0.0.0", "unspecified", "unspecified"),
        ("::", "unspecified", "unspecified"),
        ("::ffff:127.0.0.1", "loopback", None),
        ("::ffff:169.254.169.254", "link-local", "link-local"),
        ("64:ff9b::a9fe:a9fe", "link-local", "link-local"),  # NAT64 of 169.254.169.254
        ("64:ff9b::7f00:1", "loopback", None),  # NAT64 of 127.0.0.1
        ("::ffff:8.8.8.8", None, None),
        ("2002:a9fe:a9fe::", "link-local", "link-local"),  # 6to4 of 169.254.169.254
    ],
)
def test_which_addresses_are_refused(
    address: str, default: str | None, private_allowed: str | None
) -> None:
    ip = ipaddress.ip_address(address)
    for policy, expected in (
        (AddressPolicy(), default),
        (AddressPolicy(allow_private=True), private_allowed),
    ):
        why = policy.judge(ip)
        assert (why is None) == (expected is None), (policy, why)
        if expected is not None:
            assert why is not None and expected in why
    assert AddressPolicy(allow_addresses=frozenset({ip})).judge(ip) is None


def test_a_name_with_one_inward_answer_is_refused_whole() -> None:
    def resolver(host: str, port: int) -> list[tuple[socket.AddressFamily, tuple[str, int]]]:
        return [(socket.AF_INET, ("8.8.8.8", port)), (socket.AF_INET, ("10.0.0.1", port))]

    with pytest.raises(DestinationRefused, match=r"resolves to 10\.0\.0\.1: private"):
        pin("https://mixed.example/", AddressPolicy(), resolver)
    public = pin("https://mixed.example/", AddressPolicy(allow_private=True), resolver)
    assert [a[1][0] for a in public.addresses] == ["8.8.8.8", "10.0.0.1"]


def test_a_literal_address_is_not_looked_up() -> None:
    def resolver(host: str, port: int) -> list[tuple[socket.AddressFamily, tuple[str, int]]]:
        raise AssertionError(f"looked {host} up")

    pinned = pin("http://8.8.8.8:81/x", AddressPolicy(), resolver)
    assert pinned.addresses == ((socket.AF_INET, ("8.8.8.8", 81)),)


def test_a_url_refused_by_its_form_fails_at_start() -> None:
    settings = Settings(webhook_url="http://127.0.0.1:9000\\@8.8.8.8/hook", webhook_secret=SECRET)
    with pytest.raises(ConfigError, match=r"TRAJWATCH_WEBHOOK_URL: .*backslash"):
        actions_config({}, settings)
    named = {"webhooks": {"ops": {"url": "http://u:p@ops.example/", "secret_env": "OPS"}}}
    with pytest.raises(ConfigError, match=r"\[webhooks.ops\] url: .*userinfo"):
        actions_config(named, Settings(), {"OPS": SECRET})


def test_allow_addresses_are_exact_addresses_from_the_config_and_the_environment() -> None:
    settings = Settings(webhook_allow_addresses="127.0.0.1, ::1")
    found = actions_config({"actions": {"allow_addresses": ["100.100.100.200"]}}, settings)
    assert found.allow_addresses == {
        ipaddress.ip_address(a) for a in ("127.0.0.1", "::1", "100.100.100.200")
    }
    with pytest.raises(ConfigError, match="exact addresses"):
        actions_config({}, Settings(webhook_allow_addresses="10.0.0.0/8"))
    with pytest.raises(ConfigError, match="list of strings"):
        actions_config({"actions": {"allow_addresses": "127.0.0.1"}}, Settings())
