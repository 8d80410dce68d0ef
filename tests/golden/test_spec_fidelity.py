"""The command blocks and tables in tests/golden/spec/ are byte-for-byte copies of the specification."""

from __future__ import annotations

import pytest
from conftest import SPEC_DIR
from spec_runner import SPEC_DIR as COPIES

SOURCES = {"mi355x": "000_e9580355c363dc8e.txt", "a2": "003_d4c4fad20ac2ebd8.txt", "a3": "003_d4c4fad20ac2ebd8.txt"}


@pytest.mark.parametrize("copy", sorted(p.name for p in [*COPIES.glob("*.sh"), *COPIES.glob("*.txt")]))
def test_copy_is_in_the_spec(copy):
    if not SPEC_DIR.is_dir():
        pytest.skip("the specification is not beside this checkout (../shared/spec)")
    source = SPEC_DIR / SOURCES[copy.split("_")[0]]
    text = (COPIES / copy).read_text()
    assert text.rstrip("\n") in source.read_text(), "%s is no longer a verbatim block of %s" % (copy, source.name)
