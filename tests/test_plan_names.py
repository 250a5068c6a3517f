"""A declaration's ``module:NAME`` that cannot be used says why (issue 66, item 5): a typo names
nothing; a module that exists but fails to import (a package missing on this host) says that
reason, instead of "names nothing", which read like a typo in the YAML."""

from __future__ import annotations

import sys

import pytest

from cudalab.core.errors import CudalabError
from cudalab.grading.plan import named
from cudalab.labs.checks import Checks


def test_a_typo_names_nothing_and_a_missing_package_is_said(tmp_path, monkeypatch):
    with pytest.raises(CudalabError, match="names nothing: no module cudalab.labs.nope"):
        named("cudalab.labs.nope:X", Checks, "yours.checks.kit")
    with pytest.raises(CudalabError, match="has no 'NOPE'"):
        named("cudalab.labs.fw.checks:NOPE", Checks, "yours.checks.kit")
    (tmp_path / "needs_a_package.py").write_text("import no_such_package_here\nKIT = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("needs_a_package", None)
    with pytest.raises(CudalabError, match="cannot be imported: No module named 'no_such_package_here'"):
        named("needs_a_package:KIT", Checks, "yours.checks.kit")
    with pytest.raises(CudalabError, match="is not a"):
        named("cudalab.labs.fw.checks:KINDS", Checks, "yours.checks.kit")
