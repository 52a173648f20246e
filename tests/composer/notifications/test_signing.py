"""The webhook signature scheme: a fixed vector anyone can check their receiver against,
and what a receiver must refuse."""

from __future__ import annotations

import hashlib
import hmac

from composer.notifications.signing import new_secret, signature_header, signature_verify

SECRET = "whsec_test_only_0123456789abcdef"
BODY = b'{"type":"test"}'
T = 1_700_000_000


def test_a_fixed_vector() -> None:
    header = signature_header(secret=SECRET, body=BODY, timestamp=T)
    assert header == (
        "t=1700000000,v1="
        + hmac.new(SECRET.encode(), b"1700000000." + BODY, hashlib.sha256).hexdigest()
    )
    # Computed once by hand with openssl (the secret is SECRET):
    # printf '1700000000.{"type":"test"}' | openssl dgst -sha256 -hmac "$SECRET"
    assert (
        header == "t=1700000000,v1=7e955f60b655c51564eaf8e537e041ccde3c3d5bf626c56bafa9b07e87bca49e"
    )


def test_a_receiver_accepts_a_fresh_signature_of_the_same_bytes() -> None:
    header = signature_header(secret=SECRET, body=BODY, timestamp=T)
    assert signature_verify(header=header, secret=SECRET, body=BODY, now=T + 10)


def test_a_receiver_refuses_another_body_another_secret_or_an_old_signature() -> None:
    header = signature_header(secret=SECRET, body=BODY, timestamp=T)
    assert not signature_verify(header=header, secret=SECRET, body=BODY + b" ", now=T)
    assert not signature_verify(header=header, secret=SECRET + "x", body=BODY, now=T)
    assert not signature_verify(header=header, secret=SECRET, body=BODY, now=T + 301)
    assert not signature_verify(header="t=abc,v1=00", secret=SECRET, body=BODY, now=T)
    assert not signature_verify(header="", secret=SECRET, body=BODY, now=T)


def test_any_of_several_signatures_may_match() -> None:
    good = signature_header(secret=SECRET, body=BODY, timestamp=T).split(",")[1]
    assert signature_verify(header=f"t={T},v1=deadbeef,{good}", secret=SECRET, body=BODY, now=T)


def test_secrets_are_long_random_and_say_what_they_are() -> None:
    one, two = new_secret(), new_secret()
    assert one != two and one.startswith("whsec_") and len(one) >= 40
