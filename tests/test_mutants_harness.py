"""tests/mutants.py itself: a mutant counts as killed only where a test it runs fails."""

import importlib.util
import shutil
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


def test_selection_by_file_and_by_a_seeded_sample():
    m = [mutants.Mutant(f"m{i}", "t.py", [(f"f{i % 3}.py", "a", "b")]) for i in range(9)]
    assert [x.name for x in mutants.select(m, touching=["./f1.py"])] == ["m1", "m4", "m7"]
    assert [x.name for x in mutants.select(m, ["m1", "m2"], touching=["f2.py"])] == ["m2"]
    drawn = mutants.select(m, sample=4, seed=5)
    assert len(drawn) == 4 and drawn == mutants.select(m, sample=4, seed=5)  # same seed, same mutants
    assert [x.name for x in drawn] == sorted(x.name for x in drawn)  # in the list's order
    assert len({tuple(x.name for x in mutants.select(m, sample=4, seed=s)) for s in range(20)}) > 1
    assert mutants.select(m, sample=50) == m
    for bad in ({"names": ["nope"]}, {"touching": ["f9.py"]}, {"sample": 0}):
        with pytest.raises(ValueError):
            mutants.select(m, **bad)


def test_jobs_run_each_mutant_in_a_tree_of_its_own(tree, capsys):
    def copy(dst):
        shutil.copytree(tree, dst)
        copies.append(dst)

    copies = []
    chosen = [mutants.Mutant(f"m{i}", "test_lib.py", [("lib.py", "    return 2 * x", f"    return {r} * x")])
              for i, r in enumerate([3, 2, 4, 2])]
    outcomes = mutants.run_all(chosen, jobs=2, copy=copy)
    assert outcomes == {"m0": "killed", "m1": "survived", "m2": "killed", "m3": "survived"}
    assert len(copies) == 2
    assert [line.split()[0] for line in capsys.readouterr().out.splitlines()] == ["m0", "m1", "m2", "m3"]


def test_a_tree_with_kernels_linked_in_already_is_copied_with_a_link_of_its_own(tmp_path):
    """A checkout run with PYTHONPATH links kernels/ in as fastjem/kernels itself: the copy links its own kernels/
    (copying the link through failed on it: the folder existed when the harness made its link)."""
    root = tmp_path / "tree"
    (root / "kernels").mkdir(parents=True)
    (root / "kernels" / "op.py").write_text("X = 1\n")
    (root / "fastjem").mkdir()
    (root / "fastjem" / "__init__.py").write_text("")
    (root / "fastjem" / "kernels").symlink_to(root / "kernels", target_is_directory=True)
    mutants.copy_tree(tmp_path / "copy", root)
    link = tmp_path / "copy" / "fastjem" / "kernels"
    assert link.is_symlink() and link.resolve() == (tmp_path / "copy" / "kernels").resolve()
    assert (link / "op.py").read_text() == "X = 1\n"
