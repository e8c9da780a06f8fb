"""Regular expressions compiled the first time they are used, not when their module is imported.

Compiling a pattern costs tens to hundreds of microseconds, and the modules a new process
imports hold dozens of them, most of which a given command never uses (``haytham status``
needs none of the feedback writer's, nor the checks of names it does not write). A module
declares ``NAME = lazy(r"...")`` where it would write ``NAME = re.compile(r"...")``; the
calls stay ``NAME.match(text)``. On first use the pattern is compiled and each method
asked for is kept on the object, so later calls cost what a compiled pattern's do.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any


class _Lazy:
    """A pattern's text and flags, compiled (once) when one of its attributes is read."""

    def __init__(self, pattern: str, flags: int) -> None:
        self._text = pattern
        self._flags = flags

    def __getattr__(self, name: str) -> Any:
        # Only attributes not set yet get here: compile, then keep the attribute (a bound
        # method of the compiled pattern) so that the next read is a plain lookup.
        if name.startswith("__") or name in ("_text", "_flags"):
            raise AttributeError(name)
        value = getattr(re.compile(self._text, self._flags), name)
        setattr(self, name, value)
        return value

    def __repr__(self) -> str:
        return f"lazy({self._text!r}, {self._flags!r})"


if TYPE_CHECKING:

    def lazy(pattern: str, flags: int = 0) -> re.Pattern[str]:
        """``re.compile(pattern, flags)``, compiled when first used."""

else:

    def lazy(pattern: str, flags: int = 0) -> _Lazy:
        """``re.compile(pattern, flags)``, compiled when first used."""
        return _Lazy(pattern, flags)
