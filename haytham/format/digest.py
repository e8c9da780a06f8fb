"""SHA-256 without OpenSSL's start-up for a process that hashes little.

``import hashlib`` loads OpenSSL's bindings and BLAKE2 and looks up every algorithm it always
offers: about 3 ms of ``haytham status``'s 100 (issue 26), a command that hashes a few hundred
kilobytes (its phases' outputs, the schema a generated check was made from). The interpreter's
own SHA-256 (``_sha256``, ``_sha2`` from Python 3.12; the standard library's ``random`` takes
its SHA-512 the same way) costs nothing to import but hashes about five times slower, so a
process uses it for its first ``BUILTIN_BYTES`` of digests and hashlib's after: validate of a
tree of thousands of sessions hashes at OpenSSL's speed. The digests are the same bytes
either way.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hashlib import _Hash

BUILTIN_BYTES = 1 << 20
"""How much a process hashes with the interpreter's own SHA-256 before it imports hashlib."""


def _builtin_sha256() -> Any:
    """The interpreter's own ``sha256`` constructor, None in a build without it."""
    try:
        from _sha256 import sha256  # type: ignore[import-not-found]  # Python 3.10, 3.11
    except ImportError:
        try:
            from _sha2 import sha256  # type: ignore[import-not-found]  # Python 3.12 on
        except ImportError:
            return None
    return sha256


_BUILTIN = _builtin_sha256()
_spent = 0
"""The bytes this process announced to ``sha256`` so far (a race between threads only moves
the switch to hashlib by a call)."""


def sha256(size: int) -> _Hash:
    """A new SHA-256 hash object for about ``size`` bytes (a hint: the caller's count of what
    it will hash): the interpreter's own while the process has hashed less than
    ``BUILTIN_BYTES`` with it, else hashlib's."""
    global _spent
    if _BUILTIN is not None and _spent + size <= BUILTIN_BYTES:
        _spent += size
        made: _Hash = _BUILTIN()
        return made
    import hashlib

    return hashlib.sha256()
