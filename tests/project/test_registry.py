"""The family registry's shape: a family holds its extension side, it does not inherit it.

Issue 35 asks for ``Family`` to have at most 35 members; before the extension side became a
composed object (``family.extension``, an instance of ``Family.extension_type``), ``Family``
inherited ``Extension`` and had 49 public members."""

from __future__ import annotations

import pytest

from posgeom._errors import PosgeomError
from posgeom.encodings import extension_of, families, family
from posgeom.encodings._extension import Extension
from posgeom.encodings._registry import Family

MAX_FAMILY_MEMBERS = 35


def _public(names: object) -> set[str]:
    return {n for n in names if not n.startswith("_")}


def test_family_has_at_most_35_public_members() -> None:
    """Own and inherited attributes and methods, plus what an instance sets (``extension``)."""
    members = _public(dir(Family)) | _public(vars(Family()))
    assert "extension" in members and "extension_type" in members
    assert len(members) <= MAX_FAMILY_MEMBERS, sorted(members)


def test_family_does_not_inherit_the_extension_side() -> None:
    assert not issubclass(Family, Extension)
    assert not _public(dir(Family)) & _public(dir(Extension))  # no extension member on a family


@pytest.mark.parametrize("name", list(families()))
def test_each_family_holds_its_extension_under_its_own_name(name: str) -> None:
    fam = family(name)
    assert type(fam.extension) is fam.extension_type
    assert issubclass(fam.extension_type, Extension)
    assert fam.extension.name == fam.name == name
    assert extension_of(name) is fam.extension


def test_a_subclassed_family_gets_its_own_extension_named_after_it() -> None:
    """A family subclassing another (as the studies' throwaway family does) keeps the parent's
    extension type but names its own instance."""
    parent = family("alibi")

    class Renamed(type(parent)):
        name = "alibi_renamed"

    child = Renamed()
    assert type(child.extension) is type(parent.extension)
    assert child.extension is not parent.extension
    assert (child.extension.name, parent.extension.name) == ("alibi_renamed", "alibi")


def test_extension_of_an_unknown_name_is_one_line() -> None:
    with pytest.raises(PosgeomError, match="unknown encoding 'no_such'"):
        extension_of("no_such")
