"""``haytham.format.digest``: the same SHA-256 from the interpreter's own implementation and
from hashlib's, and hashlib (OpenSSL) imported only once a process has hashed its first
mebibyte, counted in a process of its own."""

from __future__ import annotations

import hashlib
import subprocess
import sys

import pytest

from haytham.format.digest import BUILTIN_BYTES, sha256
from haytham.store.lifecycle import outputs_digest


@pytest.mark.parametrize("data", [b"", b"a", "é\n".encode() * 1000, bytes(range(256)) * 300])
def test_the_digest_is_sha256_whichever_implementation_makes_it(data: bytes) -> None:
    for size in (len(data), BUILTIN_BYTES + 1):  # the builtin's (while the budget lasts), hashlib's
        made = sha256(size)
        made.update(data[:7])
        made.update(data[7:])
        assert made.hexdigest() == hashlib.sha256(data).hexdigest()


PROBE = """
import sys
from haytham.format import digest
from haytham.store.lifecycle import outputs_digest
small = outputs_digest({"writer": "a draft"})
after_small = "hashlib" in sys.modules
large = outputs_digest({"writer": "x" * digest.BUILTIN_BYTES})
print(small, after_small, large, "hashlib" in sys.modules)
"""


def test_a_process_imports_hashlib_only_once_it_has_hashed_a_mebibyte() -> None:
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, check=True)
    small, after_small, large, after_large = done.stdout.split()
    assert (after_small, after_large) == ("False", "True")
    assert small == outputs_digest({"writer": "a draft"})
    assert large == outputs_digest({"writer": "x" * BUILTIN_BYTES})
