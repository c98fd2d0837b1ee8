import os

import pytest
import torch

from fastjem.config import TrainConfig


def pytest_collection_modifyitems(config, items):
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs CUDA")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def _one_bf16_probe(tmp_path_factory):
    """On a CPU with AVX512-BF16 and no AMX, precision auto follows a timed probe that is cached only when no other
    work shared the cores (fp32 for that run otherwise): the tests' own processes are such work, and two runs a test
    compares could pick different precisions. Timed once here and cached for every thread count, as a quiet
    machine would have kept it; tests of the probe give their own cache folder."""
    from helpers import cache_bf16_probe

    from fastjem.engine import cpu_bf16_flags, time_bf16_probe

    flags = cpu_bf16_flags()
    if "avx512_bf16" in flags and "amx_bf16" not in flags and torch.backends.mkldnn.is_available():
        cache_bf16_probe(tmp_path_factory.getbasetemp() / "cache" / "cpu-bf16-probe.json", *time_bf16_probe())


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory, monkeypatch, _one_bf16_probe):
    """Keep dataset caches and default data folders out of the user's home during tests."""
    root = tmp_path_factory.getbasetemp()
    monkeypatch.setenv("FASTJEM_CACHE", str(root / "cache"))
    monkeypatch.setenv("FASTJEM_DATA", str(root / "data"))
    yield


def main_checkout(repo):
    """The main checkout of the repository at ``repo``: ``repo`` itself, or, for a linked worktree (its .git a file,
    "gitdir: <main>/.git/worktrees/<name>"), the checkout whose .git holds it; its ../shared is the shared data, which
    a worktree elsewhere (/work/wt/<name>) has no sibling of."""
    import pathlib

    repo = pathlib.Path(repo)
    dot_git = repo / ".git"
    try:
        if dot_git.is_file():
            gitdir = pathlib.Path(dot_git.read_text().partition("gitdir:")[2].strip())
            gitdir = gitdir if gitdir.is_absolute() else repo / gitdir
            common = (gitdir / (gitdir / "commondir").read_text().strip()).resolve()
            if common.name == ".git":
                return common.parent
    except OSError:
        pass
    return repo


@pytest.fixture
def cifar10_tarballs():
    """The folder holding the real CIFAR-10 copy's two JPEG tarballs (where bench/cifar_run.py looks), or skip."""
    import pathlib

    repo = pathlib.Path(__file__).resolve().parents[1]
    places = [os.environ.get("FASTJEM_CIFAR10_DIR", ""), repo / ".data" / "cifar10",
              repo.parent / "shared" / "data" / "cifar10", main_checkout(repo).parent / "shared" / "data" / "cifar10"]
    for p in places:
        if p and all((pathlib.Path(p) / f"cifar10-{split}.tar.gz").is_file() for split in ("train", "test")):
            return pathlib.Path(p)
    pytest.skip(f"no CIFAR-10 tarballs in {', '.join(str(p) for p in places if p)}")


@pytest.fixture
def counted_bars(monkeypatch) -> list:
    """(count, total, desc) of each shown tqdm bar as it closes (tqdm.tqdm replaced for the test)."""
    import tqdm

    closed = []

    class Counted(tqdm.tqdm):
        def close(self):
            if not self.disable:
                closed.append((self.n, self.total, self.desc))
            super().close()

    monkeypatch.setattr(tqdm, "tqdm", Counted)
    return closed


@pytest.fixture
def drawn(monkeypatch):
    """The figures the plot functions draw, kept instead of written."""
    figures = []
    monkeypatch.setattr("fastjem.eval.plots._save", lambda fig, path, tight=False: figures.append(fig) or path)
    yield figures


@pytest.fixture
def tiny_config() -> TrainConfig:
    """A JEM on digits that runs an iteration in milliseconds."""
    return _tiny_config()


@pytest.fixture(scope="module")
def tiny_config_module() -> TrainConfig:
    """tiny_config for module-scoped fixtures (runs shared by a module's tests)."""
    return _tiny_config()


def _tiny_config() -> TrainConfig:
    # fp32, not auto: tests check against fp32 arithmetic, and auto picks bf16 on some CPUs (AMX, or AVX512-BF16
    # where the probe finds it faster); the bf16 engine's tests ask for it
    return TrainConfig(dataset="digits", arch="convnet", width=8, batch_size=16, sgld_steps=3, buffer_size=200,
                       iters=12, warmup_iters=5, lr=1e-3, log_every=4, ckpt_every=0, device="cpu", seed=3,
                       compile=False, preset="test", precision="fp32")


def pytest_configure(config):
    os.environ.setdefault("PYTHONHASHSEED", "0")
