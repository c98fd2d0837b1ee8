"""Slow tier: a JEM that diverges by itself, with the guard off and on (python -m pytest -m slow)."""

import json

import pytest

from fastjem.config import get_preset
from fastjem.train import DivergedError, Trainer

pytestmark = pytest.mark.slow


def _train_lines(run_dir):
    return [json.loads(s) for s in (run_dir / "metrics.jsonl").read_text().splitlines()]


def test_natural_divergence_without_and_with_the_guard(tmp_path):
    """The quick preset at twice its learning rate with no decay (seed 1) trains to ~99% batch accuracy and
    then, near iteration 1850 on this CPU, blows up: sample energies reach 1e8+, the loss -1e8 and beyond,
    accuracy falls to chance. The guard must catch it, roll back, and finish near the best accuracy."""
    cfg = get_preset("quick").replace(lr=2e-3, decay_epochs=(), iters=2600, log_every=100, device="cpu")
    try:
        off = Trainer(cfg.replace(guard=False), out_dir=tmp_path / "off", progress=False).fit()
        assert off["test_acc"] < 0.5, off
    except DivergedError:  # the unguarded loss may also end non-finite, which stops the run
        pass
    lines = _train_lines(tmp_path / "off")
    assert min(r["loss"] for r in lines if "loss" in r) < -1e6, "the unguarded run did not diverge"

    on_trainer = Trainer(cfg, out_dir=tmp_path / "on", progress=False)
    on = on_trainer.fit()
    events = [r for r in _train_lines(tmp_path / "on") if r.get("event") == "divergence"]
    assert on["recoveries"] >= 1 and events and events[0]["action"] == "recover"
    assert on["test_acc"] >= 0.9, on
