"""``@frozen`` makes the class ``@dataclass(frozen=True)`` makes, without compiling its methods.

Every ``@frozen`` class of haytham is compared with its twin: the class
``dataclasses.make_dataclass(..., frozen=True)`` of the running Python makes from the same
fields. They must agree on the signature, the fields, ``__match_args__`` and the dataclass
parameters; and, on instances built from the same arguments, on ``repr``, ``==`` (also with
one field changed), ``hash``, ``asdict``, ``replace`` and the ``FrozenInstanceError`` (and its
message) of an assignment or a deletion. Small classes written both ways then cover what no
record of haytham uses yet: keyword-only fields, ``init=False`` fields, ``__post_init__``, a
field named ``self``, methods of the class's own, no docstring, and the errors ``dataclass``
raises.
"""

from __future__ import annotations

import copy
import dataclasses
import importlib
import inspect
import pickle
import pkgutil
from collections.abc import Callable
from typing import Any, ClassVar

import pytest

import haytham
from haytham import frozen as frozen_module
from haytham.frozen import frozen

CORE = (
    "haytham.records",
    "haytham.errors",
    "haytham.config",
    "haytham.format",
    "haytham.store",
    "haytham.git",
)


def _frozen_classes() -> list[type]:
    """Every class of haytham's core (and git) made with ``@frozen``."""
    found: dict[str, type] = {}
    for module in pkgutil.walk_packages(haytham.__path__, "haytham."):
        if not module.name.startswith(CORE):
            continue
        for value in vars(importlib.import_module(module.name)).values():
            if isinstance(value, type) and made_by_frozen(value):
                found[f"{value.__module__}.{value.__qualname__}"] = value
    return [found[name] for name in sorted(found)]


def made_by_frozen(cls: type) -> bool:
    """Whether ``cls``'s ``__setattr__`` is ``@frozen``'s (``dataclass``'s is compiled from text)."""
    code = getattr(cls.__dict__.get("__setattr__"), "__code__", None)
    return code is not None and code.co_filename == frozen_module.__file__


def _twin(cls: type) -> type:
    """The class ``@dataclass(frozen=True)`` makes of ``cls``'s fields (and ``__post_init__``)."""
    fields = [
        (
            f.name,
            f.type,
            dataclasses.field(
                default=f.default,
                default_factory=f.default_factory,
                init=f.init,
                repr=f.repr,
                hash=f.hash,
                compare=f.compare,
                metadata=dict(f.metadata),
                kw_only=f.kw_only,
            ),
        )
        for f in dataclasses.fields(cls)
    ]
    namespace: dict[str, Any] = {"__qualname__": cls.__qualname__, "__doc__": cls.__doc__}
    namespace |= {k: v for k, v in vars(cls).items() if k in ("__post_init__",)}
    return dataclasses.make_dataclass(cls.__name__, fields, frozen=True, namespace=namespace)


def _arguments(cls: type, salt: str = "") -> dict[str, Any]:
    """A distinct hashable value for every field of ``cls`` that ``__init__`` takes."""
    return {f.name: f"{f.name}-{salt}" for f in dataclasses.fields(cls) if f.init}


def _refused(action: Callable[[], object]) -> str:
    with pytest.raises(dataclasses.FrozenInstanceError) as refused:
        action()
    return str(refused.value)


def _same_class(mine: type, twin: type) -> None:
    assert str(inspect.signature(mine)) == str(inspect.signature(twin))
    assert mine.__init__.__annotations__ == twin.__init__.__annotations__  # type: ignore[misc]
    assert mine.__match_args__ == twin.__match_args__  # type: ignore[attr-defined]
    assert repr(mine.__dataclass_params__) == repr(twin.__dataclass_params__)  # type: ignore[attr-defined]
    assert mine.__doc__ == twin.__doc__
    assert [repr(f) for f in dataclasses.fields(mine)] == [repr(f) for f in dataclasses.fields(twin)]
    for name in ("__init__", "__repr__", "__eq__", "__hash__", "__setattr__", "__delattr__"):
        assert (getattr(mine, name).__qualname__, getattr(mine, name).__name__) == (
            getattr(twin, name).__qualname__,
            getattr(twin, name).__name__,
        )


def _same_instances(mine: type, twin: type, arguments: dict[str, Any], other: dict[str, Any]) -> None:
    a, b, t = mine(**arguments), mine(**arguments), twin(**arguments)
    assert repr(a) == repr(t)
    assert a == b
    assert hash(a) == hash(b) == hash(t)
    assert dataclasses.asdict(a) == dataclasses.asdict(t)
    assert a != t  # another class: never equal, as two dataclasses never are
    for name, value in other.items():  # one field changed: equal, and hashed alike, as the twin says
        changed, twin_changed = mine(**{**arguments, name: value}), twin(**{**arguments, name: value})
        assert (changed == a) == (twin_changed == t), name
        assert (hash(changed) == hash(a)) == (hash(twin_changed) == hash(t)), name
        assert dataclasses.replace(a, **{name: value}) == changed
    for name in [*[f.name for f in dataclasses.fields(mine)][:3], "not_a_field"]:
        for record in (a, t):  # the same refusal, in the same words
            assert _refused(lambda r=record, n=name: setattr(r, n, 1)) == f"cannot assign to field {name!r}"
            assert _refused(lambda r=record, n=name: delattr(r, n)) == f"cannot delete field {name!r}"
    assert copy.deepcopy(a) == a == copy.copy(a)


@pytest.mark.parametrize("cls", _frozen_classes(), ids=lambda cls: f"{cls.__module__}.{cls.__qualname__}")
def test_each_frozen_class_of_haytham_is_the_class_dataclass_makes(cls: type) -> None:
    twin = _twin(cls)
    _same_class(cls, twin)
    arguments = _arguments(cls)
    if "__post_init__" in vars(cls):
        return  # its checks would refuse made-up values; the class itself is compared above
    _same_instances(cls, twin, arguments, _arguments(cls, "other"))
    assert pickle.loads(pickle.dumps(cls(**arguments))) == cls(**arguments)


def test_the_core_records_are_all_made_by_frozen() -> None:
    # What start-up pays for (issue 26): no frozen dataclass of the core compiles its methods.
    classes = {f"{cls.__module__}.{cls.__qualname__}" for cls in _frozen_classes()}
    assert {
        "haytham.records.PhaseCheckpoint",
        "haytham.errors.Issue",
        "haytham.git.merge.MergeResult",
    } <= classes
    assert len(classes) >= 50
    compiled = [
        f"{value.__module__}.{value.__qualname__}"
        for module in pkgutil.walk_packages(haytham.__path__, "haytham.")
        if module.name.startswith(CORE)
        for value in vars(importlib.import_module(module.name)).values()
        if isinstance(value, type)
        and dataclasses.is_dataclass(value)
        and value.__module__ == module.name
        and value.__dataclass_params__.frozen  # type: ignore[attr-defined]
        and not made_by_frozen(value)
    ]
    assert compiled == []


def both(make: Callable[[Callable[[type], type]], type]) -> tuple[type, type]:
    """The class ``make`` writes, decorated by ``@frozen`` and by ``@dataclass(frozen=True)``."""
    return make(frozen), make(dataclasses.dataclass(frozen=True))


def test_keyword_only_init_false_defaults_and_factories_are_dataclass_s() -> None:
    def make(decorate: Callable[[type], type]) -> type:
        @decorate
        class Shape:
            """A shape."""

            name: str
            sides: int = 3
            tags: tuple[str, ...] = dataclasses.field(default_factory=tuple)
            area: float = dataclasses.field(default=0.0, init=False)
            corners: list[int] = dataclasses.field(default_factory=list, init=False, compare=False)
            unset: str = dataclasses.field(init=False, repr=False, compare=False)
            colour: str = dataclasses.field(default="red", kw_only=True)
            label: str = dataclasses.field(kw_only=True, hash=False, default="")

        return Shape

    mine, twin = both(make)
    _same_class(mine, twin)
    a, t = mine("tri", colour="blue"), twin("tri", colour="blue")
    assert repr(a) == repr(t)
    assert repr(a).endswith(
        ".Shape(name='tri', sides=3, tags=(), area=0.0, corners=[], colour='blue', label='')"
    )
    assert mine("tri", 3, ("x",), label="l") == mine("tri", 3, ("x",), label="l")
    assert mine("tri", label="x") != mine("tri", label="y")  # compared, not hashed
    assert hash(mine("tri", label="x")) == hash(mine("tri", label="y"))
    assert a.corners is not mine("tri").corners  # a factory's value is made for each instance
    with pytest.raises(AttributeError):
        _ = a.unset  # init=False without a default: never set, as dataclass leaves it
    for cls in (mine, twin):  # colour is keyword-only
        with pytest.raises(TypeError, match="takes from 2 to 4 positional arguments but 5 were given"):
            cls("tri", 3, (), "blue")


def test_post_init_a_field_named_self_and_no_docstring_are_dataclass_s() -> None:
    seen: list[object] = []

    def make(decorate: Callable[[type], type]) -> type:
        @decorate
        class Odd:
            self: int
            other: str = "o"

            def __post_init__(me) -> None:  # noqa: N805 (a field is named self)
                seen.append(me.self)

        return Odd

    mine, twin = both(make)
    _same_class(mine, twin)
    assert mine.__doc__ is not None
    assert mine.__doc__.startswith("Odd(self: ")  # dataclass's doc of a class without one
    odd, twin_odd = mine(self=4), twin(self=5)
    assert repr(odd).replace("4", "5") == repr(twin_odd)
    assert repr(odd).endswith("<locals>.Odd(self=4, other='o')")
    assert seen == [4, 5]


def test_methods_of_the_class_s_own_are_kept_as_dataclass_keeps_them() -> None:
    def make(decorate: Callable[[type], type]) -> type:
        @decorate
        class Own:
            """Its own equality, hash and repr."""

            key: str
            note: str = ""

            def __eq__(self, other: object) -> bool:
                return isinstance(other, Own) and other.key == self.key

            def __hash__(self) -> int:
                return len(self.key)

            def __repr__(self) -> str:
                return f"<{self.key}>"

        return Own

    mine, twin = both(make)
    for cls in (mine, twin):
        assert cls("a", "x") == cls("a", "y")
        assert hash(cls("abc")) == 3
        assert repr(cls("k")) == "<k>"

    def eq_only(decorate: Callable[[type], type]) -> type:
        @decorate
        class EqOnly:
            """Its own __eq__ and no __hash__ (Python sets it to None): dataclass adds one."""

            key: str

            def __eq__(self, other: object) -> bool:
                return isinstance(other, EqOnly) and other.key == self.key

        return EqOnly

    mine, twin = both(eq_only)
    assert hash(mine("a")) == hash(twin("a")) == hash(("a",))


def test_subclasses_and_single_and_empty_records_are_dataclass_s() -> None:
    def make(decorate: Callable[[type], type]) -> tuple[type, type, type]:
        @decorate
        class One:
            """One field."""

            value: int

        @decorate
        class Empty:
            """No field."""

        @decorate
        class Two(One):
            """A record of a record: dataclass's checks (a frozen base) apply."""

            more: int = 0

        return One, Empty, Two

    (one, empty, two), (one_t, empty_t, two_t) = make(frozen), make(dataclasses.dataclass(frozen=True))
    assert hash(one(5)) == hash(one_t(5)) == hash((5,))
    assert hash(empty()) == hash(empty_t()) == hash(())
    assert empty() == empty()
    assert repr(empty()) == repr(empty_t())
    assert repr(empty()).endswith(".Empty()")
    assert repr(two(1, 2)) == repr(two_t(1, 2))
    assert repr(two(1, 2)).endswith(".Two(value=1, more=2)")

    class Plain(one):  # type: ignore[valid-type, misc]
        """A plain subclass: its own attributes may be set, the record's fields may not."""

    plain = Plain(1)
    plain.extra = 2
    assert plain.extra == 2
    assert _refused(lambda: setattr(plain, "value", 3)) == "cannot assign to field 'value'"


def test_init_is_compiled_when_first_looked_up_by_an_instance_a_subclass_or_inspect() -> None:
    def make() -> type:
        @frozen
        class Late:
            """Made, never built until asked."""

            key: str
            note: str = ""

        return Late

    late = make()
    assert type(vars(late)["__init__"]).__name__ == "_LazyInit"  # nothing compiled yet

    class Sub(late):  # type: ignore[valid-type, misc]
        """Built first: the record's __init__ is compiled through the subclass."""

    assert repr(Sub("k")) == repr(Sub(key="k", note=""))
    assert repr(Sub("k")).endswith("Sub(key='k', note='')")
    init = vars(late)["__init__"]
    assert inspect.isfunction(init)
    assert init.__qualname__.endswith("Late.__init__")
    assert init.__module__ == late.__module__ == __name__
    assert late("a") == late("a", "")
    assert vars(late)["__init__"] is init  # compiled once

    other = make()
    assert str(inspect.signature(other)) == "(key: 'str', note: 'str' = '') -> None"
    assert inspect.isfunction(vars(other)["__init__"])


def test_what_dataclass_refuses_frozen_refuses() -> None:
    with pytest.raises(TypeError, match="non-default argument 'b' follows default argument"):

        @frozen
        class Late:
            a: int = 0
            b: int  # type: ignore[misc]

    with pytest.raises(TypeError, match="Cannot overwrite attribute __setattr__ in class Mutable"):

        @frozen
        class Mutable:
            a: int

            def __setattr__(self, name: str, value: object) -> None:
                object.__setattr__(self, name, value)

    with pytest.raises(TypeError, match=r"ClassVar or InitVar \['kind'\]"):

        @frozen
        class WithClassVar:
            kind: ClassVar[str] = "k"
            a: int
