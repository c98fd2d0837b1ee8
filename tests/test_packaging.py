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
