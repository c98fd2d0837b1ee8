import subprocess
import sys
import zipfile


def test_wheel_contains_kernels_subpackage_and_runs(tmp_path):
    """A wheel built from the repo (not only the editable install) imports and runs."""
    root = __import__("pathlib").Path(__file__).resolve().parents[1]
    out = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-w",
                          str(tmp_path / "dist"), str(root)], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    wheel = next((tmp_path / "dist").glob("fastjem-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    assert "fastjem/kernels/__init__.py" in names
    assert any(n.endswith("entry_points.txt") for n in names)
    # the license: an SPDX expression from setuptools >= 77 (the table form is deprecated there), the older field before
    metadata = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith("METADATA"))).decode()
    import setuptools

    spdx = int(setuptools.__version__.split(".")[0]) >= 77
    assert ("License-Expression: MIT" if spdx else "License: MIT") in metadata.splitlines()
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    code = ("import fastjem, fastjem.kernels, fastjem.models; "
            f"assert fastjem.__file__.startswith({str(site)!r}), fastjem.__file__; "
            "from fastjem.cli import main; raise SystemExit(main(['train', '--help']))")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         env={**__import__("os").environ, "PYTHONPATH": str(site)}, cwd=tmp_path)
    assert run.returncode == 0, run.stderr[-2000:]
    assert "--sgld-steps" in run.stdout


def _imported_roots(root) -> dict:
    """{top-level module: at import time?} of every absolute import in fastjem/ and kernels/: statements at a
    module's top level and those inside functions (lazy), and importlib.import_module("name") calls."""
    import ast

    found = {}
    for folder in ("fastjem", "kernels"):
        for path in (root / folder).rglob("*.py"):
            if folder == "fastjem" and "kernels" in path.relative_to(root / folder).parts:
                continue  # the kernels link of a checkout, read once as kernels/
            tree = ast.parse(path.read_text(), str(path))
            top = {id(node) for node in tree.body}
            for node in ast.walk(tree):
                if isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0:
                    names = [node.module]
                elif (isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "import_module"
                      and node.args and isinstance(node.args[0], ast.Constant)):
                    names = [node.args[0].value]
                else:
                    continue
                for name in names:
                    first = name.split(".")[0]
                    found[first] = found.get(first, False) or id(node) in top
    return found


def test_every_third_party_module_the_library_imports_is_declared():
    """Each module from outside the standard library that fastjem/ or kernels/ imports, at the top of a module or
    lazily inside a function, belongs to a distribution pyproject.toml declares (PIL, read lazily for image folders
    and sample grids, was not: it came only as a requirement of torchvision, which may drop it); one imported when
    fastjem is imported is a dependency, not an extra."""
    import importlib.metadata
    import pathlib
    import re

    import pytest

    tomllib = pytest.importorskip("tomllib")  # Python >= 3.11

    root = pathlib.Path(__file__).resolve().parents[1]
    project = tomllib.loads((root / "pyproject.toml").read_text())["project"]

    def dist(req: str) -> str:
        return re.sub(r"[-_.]+", "-", re.match(r"[A-Za-z0-9._-]+", req.strip()).group(0)).lower()

    required = {dist(r) for r in project["dependencies"]}
    extras = {dist(r) for reqs in project.get("optional-dependencies", {}).values() for r in reqs}
    providers = importlib.metadata.packages_distributions()
    imported = {m: top for m, top in _imported_roots(root).items()
                if m not in sys.stdlib_module_names and m not in ("fastjem", "__future__")}
    assert {"torch", "numpy", "PIL", "matplotlib"} <= imported.keys()  # the scan finds imports of both kinds
    undeclared, extra_at_import = [], []
    for module, at_import in sorted(imported.items()):
        names = {dist(d) for d in providers.get(module, [])}
        assert names, f"{module} is imported but not installed here: which distribution provides it?"
        if not names & (required | extras):
            undeclared.append(f"{module} ({', '.join(sorted(names))})")
        elif at_import and not names & required:
            extra_at_import.append(module)
    assert not undeclared, f"imported but not declared in pyproject.toml: {undeclared}"
    assert not extra_at_import, f"imported when fastjem is imported, but only an extra: {extra_at_import}"


def test_the_repository_holds_the_fixed_top_level_only():
    """What git tracks lies in fastjem/, kernels/, bench/, tests/, setup.py, pyproject.toml and README.md (and the
    repository's own dot files): a run folder or scratch file committed by mistake (t1/ with its checkpoint was)
    fails here."""
    import pytest

    root = __import__("pathlib").Path(__file__).resolve().parents[1]
    try:
        out = subprocess.run(["git", "ls-files"], capture_output=True, text=True, timeout=60, cwd=root)
    except FileNotFoundError:
        pytest.skip("git is not installed")
    if out.returncode != 0:
        pytest.skip(f"not a git checkout: {out.stderr.strip()}")
    fixed = {"fastjem", "kernels", "bench", "tests", "setup.py", "pyproject.toml", "README.md"}
    tops = {name.split("/")[0] for name in out.stdout.splitlines()}
    assert tops and {t for t in tops if t not in fixed and not t.startswith(".")} == set()
