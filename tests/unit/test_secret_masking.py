"""lance_sync.model.secrets: what `mask` hides, in which forms, and the sinks built on it.

The registry is process-wide and only grows, so each test registers values of its own,
made from a seeded random generator, that no other test uses.
"""

from __future__ import annotations

import base64
import html
import io
import json
import random
import subprocess
import sys
from urllib.parse import quote, quote_plus

import pytest

from lance_sync.model import secrets
from lance_sync.model.secrets import MASK, MaskingStream, mask, register
from tests.servers.echo import leaks

ALPHABET = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"


def fresh_secret(seed: int, length: int = 24, special: str = "") -> str:
    """A value no other test registers (seeded), with `special` characters in the middle."""
    rng = random.Random(seed)
    body = "".join(rng.choice(ALPHABET) for _ in range(length))
    return body[: length // 2] + special + body[length // 2:]


def test_the_value_and_its_encodings_are_masked():
    secret = fresh_secret(1, special='/+= :"\\é&<')
    register(secret)
    raw = secret.encode()
    forms = [secret, quote(secret, safe=""), quote(secret), quote_plus(secret), json.dumps(secret)[1:-1],
             json.dumps(secret, ensure_ascii=False)[1:-1], json.dumps(secret)[1:-1].replace("/", "\\/"),
             repr(secret)[1:-1], html.escape(secret), base64.b64encode(raw).decode(),
             base64.urlsafe_b64encode(raw).decode()]
    for form in forms:
        assert mask(f"before {form} after") == f"before {MASK} after", form


@pytest.mark.parametrize("prefix", ["", "u", "us", "user:", "a-longer-client-id:"])
def test_base64_of_a_longer_text_that_holds_the_value_shows_none_of_it(prefix: str):
    """`Basic base64(id:secret)`: whatever the secret's offset, the characters that encode it
    alone are masked, and what is left does not decode to it."""
    secret = fresh_secret(2)
    register(secret)
    for suffix in ("", "x", "xy", "@host"):
        encoded = base64.b64encode(f"{prefix}{secret}{suffix}".encode()).decode()
        shown = mask(f"Authorization: Basic {encoded}")
        assert MASK in shown and not leaks(shown, secret), shown


def test_overlapping_secrets_are_masked_as_one_stretch():
    first, second = fresh_secret(3, 12), fresh_secret(4, 12)
    register(first, second)
    joined = first + second[:6]
    register(joined[4:] + "tail-of-the-third")  # a third value that overlaps the first
    text = f"[{first[:4]}{joined[4:]}tail-of-the-third]"
    assert mask(text) == f"[{MASK}]"
    assert mask(f"{first}{second}") == MASK


def test_a_value_inside_another_is_masked_with_it():
    outer = fresh_secret(5, 30)
    inner = outer[5:20]
    register(outer, inner)
    assert mask(f"<{outer}>") == f"<{MASK}>"
    assert mask(f"<{inner}>") == f"<{MASK}>"


def test_short_values_and_none_are_not_masked():
    """Three characters would hide ordinary words; lance-sync never prints them anyway."""
    register(None, "", "Qz7")
    assert mask("Qz7 and Qz7") == "Qz7 and Qz7"


def test_the_credential_of_an_authorization_header_is_registered():
    token = fresh_secret(6)
    secrets.register_authorization(f"Bearer {token}")
    assert mask(f"token={token}") == f"token={MASK}"


def test_the_password_of_a_url_is_decoded_before_it_is_registered():
    password = fresh_secret(7, special="@:")
    assert secrets.url_password(f"https://user:{quote(password, safe='')}@host:8080/api") == password
    assert secrets.url_password("https://host/api") is None
    assert secrets.url_password("/a/path/with@sign") is None


def test_masking_a_large_document_is_one_scan_per_form():
    """10,000 actions of JSON with five registered secrets: the masked document equals the
    input (nothing to mask) and every secret planted in it is found."""
    planted = [fresh_secret(100 + i) for i in range(5)]
    register(*planted)
    actions = [{"verb": "create", "id": ["warehouse", "sales", f"table_{i}"],
                "location": f"s3://bucket/sales/table_{i}.lance", "properties": {"team": "sales"}}
               for i in range(10_000)]
    text = json.dumps({"actions": actions}, indent=2)
    assert mask(text) == text
    actions[5_000]["properties"]["leak"] = planted[3]
    masked = mask(json.dumps({"actions": actions}, indent=2))
    assert planted[3] not in masked and masked.count(MASK) == 1


def test_the_masking_stream_masks_pieces_and_progress_lines():
    secret = fresh_secret(8)
    register(secret)
    target = io.StringIO()
    stream = MaskingStream(target)
    stream.write(secret[:5])  # print() writes its arguments one by one
    stream.write(secret[5:])
    stream.write(" done\n")
    stream.write(f"\r\033[Kplanning {secret}")
    stream.flush()
    assert target.getvalue() == f"{MASK} done\n\r\033[Kplanning {MASK}"
    with pytest.raises(TypeError):  # a text stream (click tells text from binary streams so)
        stream.write(b"bytes")  # type: ignore[arg-type]
    stream.buffer.write(f"bytes {secret}\n".encode())  # click writes bytes to the buffer
    assert target.getvalue().endswith(f"planning {MASK}bytes {MASK}\n")


def test_exception_text_is_masked_through_its_causes():
    secret = fresh_secret(9)
    register(secret)
    try:
        try:
            raise ValueError(f"server said: Bearer {secret}")
        except ValueError as cause:
            raise RuntimeError(f"call failed: {cause}") from cause
    except RuntimeError as error:
        secrets.mask_exception(error)
        assert str(error) == f"call failed: server said: Bearer {MASK}"
        assert str(error.__cause__) == f"server said: Bearer {MASK}"


def test_a_process_output_is_copied_masked(tmp_path, subprocesses: None):
    """What the Spark log gets: each line of a process's output, masked, until it ends."""
    secret = fresh_secret(10)
    register(secret)
    log = tmp_path / "out.log"
    script = f"import sys\nprint('one {secret}')\nsys.stderr.write('two {secret[:6]}' + '{secret[6:]}')\n"
    process = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    with log.open("wb") as sink:
        secrets.copy_masked(process.stdout, sink)
    assert process.wait() == 0
    assert log.read_text() == f"one {MASK}\ntwo {MASK}"
