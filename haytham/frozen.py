"""``@frozen``: a frozen dataclass whose methods cost no compilation when its module is imported.

``@dataclass(frozen=True)`` writes six methods for each class as source text and compiles
each one (``__init__``, ``__repr__``, ``__eq__``, ``__hash__``, ``__setattr__`` and
``__delattr__``): on Python 3.11 about half a millisecond a class, and about 40 classes lie
on the way of ``haytham status``, the pre-commit hook and the merge driver, whose start-up
is their whole run (issue 26). ``@frozen`` makes the same class:

- it is a dataclass: ``dataclasses.fields``, ``replace``, ``asdict``, ``is_dataclass`` and
  ``__match_args__`` see it as ``@dataclass(frozen=True)`` made it, with the same
  ``__dataclass_params__``, and a type checker reads it as one (``dataclass_transform``);
- its ``__init__`` is compiled as ``dataclass``'s is (one ``exec``, the same parameters,
  defaults, default factories, keyword-only fields and ``__post_init__`` call, the same
  signature), since a generic one (``*args, **kwargs``) would make every record slower to
  build; but only when it is first looked up (``_LazyInit``), and it sets the fields in one
  update of the instance's ``__dict__``;
- ``__repr__``, ``__eq__``, ``__hash__``, ``__setattr__`` and ``__delattr__`` are closures over
  the class's field names, not compiled text, with the results of ``dataclass``'s: the same
  repr (recursion shown as ``...``), equal when the classes are the same and the compared
  fields are equal, the hash of the tuple of the hashed fields, ``FrozenInstanceError`` with
  the same message on assignment or deletion. ``tests/test_frozen.py`` checks each of these
  against ``@dataclass(frozen=True)`` of the running Python, for every ``@frozen`` class.

What it costs: ``==`` and ``repr`` of a record take a call more than compiled code does (on
3.11 about 0.6 against 0.2 microseconds for a six-field ``==``); building one is as fast or
faster. It takes no arguments (a record is frozen, compared, hashed and shown); a class that
needs ``order``, ``slots`` or ``InitVar`` fields uses ``dataclass`` itself.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable
from operator import attrgetter
from reprlib import recursive_repr
from typing import TYPE_CHECKING, Any, TypeVar, cast

if TYPE_CHECKING:
    from typing_extensions import dataclass_transform
else:

    def dataclass_transform(**_: Any) -> Callable[[Any], Any]:
        """Only read by type checkers (typing has it from Python 3.11 on)."""
        return lambda decorated: decorated


C = TypeVar("C", bound=type)


@dataclasses.dataclass(frozen=True)
class _Params:
    """The one class ``dataclass(frozen=True)`` itself makes here, for its parameters."""


_PARAMS = _Params.__dataclass_params__  # type: ignore[attr-defined]
"""What ``@dataclass(frozen=True)`` records as ``__dataclass_params__`` on this Python (its
fields differ between versions, so it is taken from a class it made, not built)."""


class _Factory:
    """The default of a parameter whose field has a ``default_factory``: the factory is called
    when the argument is this. Shown as ``dataclass``'s own (private) marker is, in signatures."""

    def __repr__(self) -> str:
        return "<factory>"


_FACTORY = _Factory()


@dataclass_transform(frozen_default=True, field_specifiers=(dataclasses.field, dataclasses.Field))
def frozen(cls: C) -> C:
    """``cls`` made a frozen dataclass, as ``@dataclass(frozen=True)`` makes it (see above)."""
    if any(dataclasses.is_dataclass(base) for base in cls.__mro__[1:]):
        return cast(C, dataclasses.dataclass(frozen=True)(cls))  # (rare) a subclass: dataclass's checks
    documented = bool(cls.__dict__.get("__doc__"))
    made: Any = dataclasses.dataclass(init=False, repr=False, eq=False)(cls)  # compiles nothing
    fields = dataclasses.fields(made)
    if len(fields) != len(made.__dataclass_fields__):
        pseudo = sorted(set(made.__dataclass_fields__) - {f.name for f in fields})
        raise TypeError(f"@frozen class {made.__qualname__}: ClassVar or InitVar {pseudo}; use dataclass")
    for name in ("__setattr__", "__delattr__"):
        if name in made.__dict__:
            raise TypeError(f"Cannot overwrite attribute {name} in class {made.__name__}")
    made.__dataclass_params__ = _PARAMS
    _check_order(fields)
    methods: dict[str, Any] = {
        "__init__": _LazyInit(made, fields),
        "__repr__": _repr(tuple(f.name for f in fields if f.repr)),
        "__eq__": _eq(_values(tuple(f.name for f in fields if f.compare))),
    }
    methods = {name: method for name, method in methods.items() if name not in made.__dict__}
    methods |= _frozen(made, frozenset(f.name for f in fields))
    own_hash = made.__dict__.get("__hash__", dataclasses.MISSING)
    if own_hash is dataclasses.MISSING or (own_hash is None and "__eq__" in made.__dict__):
        # no __hash__ of its own (None is Python's, for a class body that defines __eq__)
        methods["__hash__"] = _hash(_values(tuple(f.name for f in fields if _hashed(f))))
    for name, method in methods.items():
        setattr(made, name, _named(method, made, name))
    if not documented:  # dataclass's doc, written before __init__ existed: again, with it
        made.__doc__ = made.__name__ + str(inspect.signature(made)).replace(" -> None", "")
    return made  # type: ignore[no-any-return]


def _named(method: Any, cls: type, name: str) -> Any:
    """``method`` named as ``dataclass`` names the methods it makes for ``cls``."""
    if not isinstance(method, _LazyInit):
        method.__name__ = name
        method.__qualname__ = f"{cls.__qualname__}.{name}"
        method.__module__ = cls.__module__
    return method


class _LazyInit:
    """A ``@frozen`` class's ``__init__`` until it is first looked up: it is compiled then and
    put in this one's place on the class (most records a command's modules define, it never
    makes: ``haytham status`` makes 24 of 40 kinds). Any lookup compiles it, so making an
    instance, ``inspect.signature`` and ``cls.__init__`` see the compiled function."""

    def __init__(self, cls: type, fields: tuple[dataclasses.Field[Any], ...]) -> None:
        self.cls = cls
        self.fields = fields

    def __get__(self, instance: Any, owner: type | None = None) -> Any:
        init = _named(_init(self.cls, self.fields), self.cls, "__init__")
        type.__setattr__(self.cls, "__init__", init)  # (two threads may both compile: the same)
        return init if instance is None else init.__get__(instance, owner)


def _check_order(fields: tuple[dataclasses.Field[Any], ...]) -> None:
    """``dataclass``'s refusal, as the class is made, of a field without a default after one
    with a default among the positional parameters."""
    defaulted = False
    for f in fields:
        if f.init and not f.kw_only:
            has_default = f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
            if defaulted and not has_default:
                raise TypeError(f"non-default argument {f.name!r} follows default argument")
            defaulted = defaulted or has_default


def _hashed(f: dataclasses.Field[Any]) -> bool:
    """Whether ``dataclass`` hashes this field: ``hash=`` when given, else ``compare=``."""
    return f.compare if f.hash is None else f.hash


def _init(cls: type, fields: tuple[dataclasses.Field[Any], ...]) -> Callable[..., None]:
    """``dataclass``'s ``__init__`` for these fields, compiled from text as it is there (its own
    names are spelled ``__frozen_...__``, so that no field's name can hide one), but setting
    the fields in one update of the instance's ``__dict__`` instead of one
    ``object.__setattr__`` call each: the same attributes (a field is never a descriptor),
    about a third less to compile and to run."""
    names: dict[str, Any] = {"__frozen_factory__": _FACTORY}
    me = "__frozen_self__" if any(f.name == "self" for f in fields) else "self"
    parameters: list[str] = []
    keywords: list[str] = []
    values: list[str] = []
    for f in fields:
        factory = f"__frozen_factory_{f.name}__"
        default = f"__frozen_default_{f.name}__"
        has_factory = f.default_factory is not dataclasses.MISSING
        has_default = has_factory or f.default is not dataclasses.MISSING
        names[factory if has_factory else default] = f.default_factory if has_factory else f.default
        if f.init:
            given = "__frozen_factory__" if has_factory else default
            (keywords if f.kw_only else parameters).append(f"{f.name}={given}" if has_default else f.name)
            value = f"{factory}() if {f.name} is __frozen_factory__ else {f.name}" if has_factory else f.name
        elif has_default:
            value = f"{factory}()" if has_factory else default
        else:
            continue
        values.append(f"{f.name!r}: {value}")
    body = [f"  {me}.__dict__.update({{{', '.join(values)}}})"] if values else []
    if hasattr(cls, "__post_init__"):
        body.append(f"  {me}.__post_init__()")
    signature = ", ".join([me, *parameters, *(["*", *keywords] if keywords else [])])
    text = f"def __init__({signature}):\n" + ("\n".join(body) or "  pass") + "\n"
    # made above from the field names alone, as dataclass makes its own; the file name tells
    # it from dataclass's "<string>" (tests/test_startup_imports.py counts those)
    exec(compile(text, f"<frozen {cls.__qualname__}>", "exec"), names)
    init: Callable[..., None] = names["__init__"]
    init.__annotations__ = {f.name: f.type for f in fields if f.init} | {"return": None}
    return init


def _values(names: tuple[str, ...]) -> Callable[[Any], tuple[Any, ...]]:
    """The tuple of these attributes of a record, as ``dataclass`` compares and hashes it."""
    if len(names) > 1:
        return attrgetter(*names)
    if names:
        one = attrgetter(names[0])
        return lambda record: (one(record),)
    return lambda record: ()


def _repr(names: tuple[str, ...]) -> Callable[[Any], str]:
    @recursive_repr()
    def shown(self: Any) -> str:
        shown = ", ".join([f"{name}={getattr(self, name)!r}" for name in names])
        return f"{self.__class__.__qualname__}({shown})"

    return shown


def _eq(values: Callable[[Any], tuple[Any, ...]]) -> Callable[[Any, Any], Any]:
    def equal(self: Any, other: Any) -> Any:
        if other.__class__ is self.__class__:
            return values(self) == values(other)
        return NotImplemented

    return equal


def _hash(values: Callable[[Any], tuple[Any, ...]]) -> Callable[[Any], int]:
    def hashed(self: Any) -> int:
        return hash(values(self))

    return hashed


def _frozen(cls: Any, names: frozenset[str]) -> dict[str, Callable[..., None]]:
    """``__setattr__`` and ``__delattr__`` refusing any change of an instance of ``cls`` (and a
    field's in a subclass), as ``dataclass(frozen=True)``'s do."""

    def assign(self: Any, name: str, value: Any) -> None:
        if type(self) is cls or name in names:
            raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")
        super(cls, self).__setattr__(name, value)

    def delete(self: Any, name: str) -> None:
        if type(self) is cls or name in names:
            raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")
        super(cls, self).__delattr__(name)

    return {"__setattr__": assign, "__delattr__": delete}
