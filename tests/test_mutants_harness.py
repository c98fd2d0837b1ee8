"""tests/mutants.py itself: a mutant counts as killed only where a test it runs fails."""

import importlib.util
import sys
from pathlib import Path

import pytest

spec = importlib.util.spec_from_file_location("mutants", Path(__file__).resolve().parent / "mutants.py")
mutants = importlib.util.module_from_spec(spec)
sys.modules["mutants"] = mutants  # dataclasses look their module up while the class is made
spec.loader.exec_module(mutants)


@pytest.fixture
def tree(tmp_path):
    (tmp_path / "lib.py").write_text("def double(x):\n    return 2 * x\n")
    (tmp_path / "test_lib.py").write_text("from lib import double\n\n\ndef test_double():\n    assert double(3) == 6\n")
    return tmp_path


@pytest.mark.parametrize("tests, replacement, outcome", [
    ("test_lib.py", "    return 3 * x", "killed"),
    ("test_lib.py", "    return 2 * x  # same", "survived"),
    ("test_lib.py -k no_such_test", "    return 3 * x", "broken"),  # a filter that selects nothing kills nothing
    ("no_such_file.py", "    return 3 * x", "broken"),
])
def test_a_mutant_is_killed_only_by_a_failing_test(tree, tests, replacement, outcome):
    mutant = mutants.Mutant("m", tests, [("lib.py", "    return 2 * x", replacement)])
    assert mutants.run(mutant, tree)[0] == outcome
    assert (tree / "lib.py").read_text() == "def double(x):\n    return 2 * x\n"  # restored


def test_a_mutant_whose_text_is_gone_is_stale(tree):
    assert mutants.run(mutants.Mutant("m", "test_lib.py", [("lib.py", "return 4 * x", "")]), tree)[0] == "stale"
