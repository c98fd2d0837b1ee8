"""Slow tier: quality runs on real data (python -m pytest -m slow)."""

import pytest

from fastjem.config import get_preset
from fastjem.train import Trainer

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def quick_runs(tmp_path_factory):
    cfg = get_preset("quick").replace(device="cpu")
    root = tmp_path_factory.mktemp("quality")
    jem = Trainer(cfg, out_dir=root / "jem", progress=False).fit()
    base = Trainer(cfg.replace(px_weight=0.0), out_dir=root / "baseline", progress=False).fit()
    return jem, base


def test_quick_preset_reaches_90_percent_on_digits(quick_runs):
    jem, _ = quick_runs
    assert jem["test_acc"] >= 0.90, jem


def test_jem_accuracy_is_within_3_points_of_the_classifier_baseline(quick_runs):
    jem, base = quick_runs
    assert abs(jem["test_acc"] - base["test_acc"]) <= 0.03, (jem["test_acc"], base["test_acc"])


def test_a_classifier_learns_the_real_cifar10_copy_read_from_its_tarballs(tmp_path, cifar10_tarballs):
    """Labels line up with images on real data: 600 classifier-only iterations of the quick preset's small
    convnet on the JPEG copy of CIFAR-10, read from its two tarballs, reach well above chance (0.10)."""
    cfg = get_preset("quick").replace(dataset="cifar10", data_dir=str(cifar10_tarballs), px_weight=0.0, iters=600,
                                      eval_every=0, ckpt_every=0, device="cpu")
    summary = Trainer(cfg, out_dir=tmp_path / "cifar", progress=False, log=lambda *a: None).fit()
    assert summary["test_acc"] >= 0.25, summary
