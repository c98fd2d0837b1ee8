import re
from pathlib import Path

from fastjem import kernels

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_library_example_runs():
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
    assert blocks
    # reference ops: under TRITON_INTERPRET=1 the interpreter would make this example take a minute
    with kernels.backend("reference"):
        for code in blocks:
            scope = {}
            exec(compile(code, "README.md", "exec"), scope)
    samples = scope["samples"]
    # the Gaussian example: unit variance, zero mean, within Monte Carlo and step-size error
    assert abs(samples.mean().item()) < 0.1 and abs(samples.var().item() - 1.0) < 0.15
    assert scope["x"].shape == (64, 3, 32, 32)


def test_readme_gives_the_two_commands():
    text = README.read_text()
    assert 'python -m pip install . && fastjem train' in text
    assert 'python -m pip install -e ".[test]" && TRITON_INTERPRET=1 python -m pytest' in text
    ci = (README.parent / ".ci" / "run").read_text()
    assert 'python -m pip install -e ".[test]"' in ci and "TRITON_INTERPRET=1" in ci and "python -m pytest" in ci
