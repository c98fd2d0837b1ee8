import json
import math
import re

import pytest
import torch
from helpers import image_folder
from kernel_utils import assert_gaussian_moments

from fastjem.checkpoint import load_checkpoint
from fastjem.config import PRESETS, TrainConfig, get_preset
from fastjem.data import to_float
from fastjem.errors import CheckpointError, ConfigError
from fastjem.train import Trainer, evaluate, learning_rate, resume_config


def params(model):
    return torch.cat([p.detach().flatten() for p in model.parameters()])


def test_one_iteration_changes_parameters_and_buffer(tiny_config, tmp_path):
    t = Trainer(tiny_config, out_dir=tmp_path, progress=False)
    p0, b0 = params(t.model).clone(), t.buffer.data.clone()
    parts = t.train_step()
    assert not torch.equal(p0, params(t.model))
    changed_rows = (t.buffer.data != b0).flatten(1).any(1).sum().item()
    assert 1 <= changed_rows <= tiny_config.batch_size
    assert all(torch.isfinite(v) for v in parts.values())


def test_the_trainers_energy_is_the_networks_logsumexp_and_its_logit_given_a_label(tiny_config, tmp_path):
    """Trainer.energy_fn, for sampling from a trainer's network with one's own sampler: E(x) = -logsumexp f(x), and
    E(x, y) = -f(x)[y] given labels, of the network as it is now."""
    t = Trainer(tiny_config, out_dir=tmp_path, progress=False)
    x = torch.rand(5, *t.buffer.sample_shape, generator=torch.Generator().manual_seed(0)) * 2 - 1
    y = torch.tensor([0, 3, 9, 1, 1])
    logits = t.model(x).detach()
    torch.testing.assert_close(t.energy_fn()(x), -logits.logsumexp(1))
    torch.testing.assert_close(t.energy_fn(y)(x), -logits[torch.arange(5), y])


def test_a_recoverys_learning_rate_scale_is_the_rate_the_optimiser_steps_with(tiny_config, tmp_path):
    """After the guard's recoveries halved the learning rate (lr_scale 0.5), a step moves the parameters as a run
    with half the learning rate does (the same draws, so the same gradients): the optimiser steps with the scaled
    rate, not only the log. Plain SGD, whose update is lr * gradient."""
    cfg = tiny_config.replace(optimizer="sgd", warmup_iters=0)
    halved = Trainer(cfg.replace(lr=cfg.lr / 2), out_dir=tmp_path / "half", progress=False)
    scaled = Trainer(cfg, out_dir=tmp_path / "scaled", progress=False)
    scaled.recovery.lr_scale = 0.5
    start = params(scaled.model).clone()
    assert torch.equal(start, params(halved.model))
    for t in (halved, scaled):
        t.train_step()  # each from its run's own generators, seeded alike
    torch.testing.assert_close(params(scaled.model), params(halved.model), rtol=1e-6, atol=1e-7)
    assert not torch.equal(params(scaled.model), start)


def test_a_step_trains_the_network_in_training_mode_whatever_mode_it_was_left_in(tiny_config, tmp_path):
    """A network put in eval mode between steps (to look at its samples, say) still trains as one: batch norm
    normalises by the batch and updates its running statistics."""
    t = Trainer(tiny_config.replace(norm="batch"), out_dir=tmp_path, progress=False)
    t.model.eval()
    norms = [m for m in t.model.modules() if isinstance(m, torch.nn.BatchNorm2d)]
    before = [m.running_mean.clone() for m in norms]
    t.train_step()
    assert norms and all(not torch.equal(m.running_mean, b) for m, b in zip(norms, before))
    # the loss's forwards are three under batch norm, in the authors' order x_p, x_q, x_lab: the running statistics
    # that eval-mode sampling and evaluation read end on the real labelled batch, not on the samples
    import copy

    g = torch.Generator().manual_seed(0)
    x_p, x_q, x_lab = (torch.rand(16, *t.data.sample_shape, generator=g) * 2 - 1 for _ in range(3))
    alone = copy.deepcopy(t.model)
    t.loss(x_p, x_lab, torch.randint(0, 10, (16,), generator=g), x_q=x_q)
    with torch.no_grad():
        for x in (x_p, x_q, x_lab):
            alone(x)
    assert all(torch.equal(a, b) for a, b in zip(t.model.buffers(), alone.buffers()))


def test_the_graphed_sampler_is_captured_once_per_batch_shape_and_conditioning(tiny_config, tmp_path, monkeypatch):
    """Where the engine graphs SGLD (CUDA), run_sgld replays one captured graph per batch shape and per conditioning
    (E(x) or E(x, y)), built on first use and reused after; what it returns is the replay's output. Capture and replay
    faked here (a CPU has no CUDA graphs; the gpu tier replays real ones)."""
    import dataclasses

    t = Trainer(tiny_config, out_dir=tmp_path, progress=False)
    t.engine = dataclasses.replace(t.engine, cuda_graph=True)
    captured, replayed = [], []

    def graphed(sampler, x0, y, parts):
        captured.append((tuple(x0.shape), y is not None, parts))
        number = len(captured)

        def replay(x, y_now):
            replayed.append(number)
            return x + number

        return replay

    monkeypatch.setattr(t.nets, "graphed", graphed)
    x4, x8, y4 = torch.zeros(4, 1, 8, 8), torch.zeros(8, 1, 8, 8), torch.zeros(4, dtype=torch.long)
    for (x, y), graph in zip(((x4, None), (x4, None), (x8, None), (x4, y4), (x4, None), (x4, y4)), (1, 1, 2, 3, 1, 3)):
        assert torch.equal(t.run_sgld(x, y), x + graph)
    assert [c[:2] for c in captured] == [((4, 1, 8, 8), False), ((8, 1, 8, 8), False), ((4, 1, 8, 8), True)]
    assert replayed == [1, 1, 2, 3, 1, 3]


def test_graphed_samplers_are_captured_again_after_a_state_load_that_changes_the_chain(tiny_config, tmp_path,
                                                                                     monkeypatch):
    """A graph bakes in the number of SGLD steps: a state loaded (a resume, a rollback) whose recovery doubled the
    steps, or a remedy that doubles them, must not replay a graph captured for the old count (faked capture, as
    above)."""
    import dataclasses

    t = Trainer(tiny_config, out_dir=tmp_path, progress=False, log=lambda *a: None)
    t.engine = dataclasses.replace(t.engine, cuda_graph=True)
    steps = []

    def graphed(sampler, x0, y, parts):
        steps.append(sampler.n_steps)
        return lambda x, y_now: x

    monkeypatch.setattr(t.nets, "graphed", graphed)
    x = torch.zeros(4, 1, 8, 8)
    t.run_sgld(x, None)
    state = t.state_dict()
    state["recovery"]["sgld_steps"] = 2 * tiny_config.sgld_steps
    t.load_state(state)
    t.run_sgld(x, None)
    assert steps == [tiny_config.sgld_steps, 2 * tiny_config.sgld_steps]
    # the divergence guard's remedy: rolled back, then the steps doubled
    g = Trainer(tiny_config.replace(check_every=2, remedies=("sgld_steps",)), out_dir=tmp_path / "g", progress=False,
                log=lambda *a: None)
    g.engine = dataclasses.replace(g.engine, cuda_graph=True)
    monkeypatch.setattr(g.nets, "graphed", graphed)
    g.out_dir.mkdir()
    g.guard.take_snapshot()
    g.run_sgld(x, None)
    g.recover()
    g.run_sgld(x, None)
    assert steps[2:] == [tiny_config.sgld_steps, 2 * tiny_config.sgld_steps]


def test_short_run_has_finite_loss_and_gap(tiny_config, tmp_path):
    t = Trainer(tiny_config.replace(iters=20), out_dir=tmp_path, progress=False)
    summary = t.fit()
    lines = [__import__("json").loads(s) for s in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    train_lines = [r for r in lines if "loss" in r]
    assert len(train_lines) == 5
    assert all(math.isfinite(r["loss"]) and math.isfinite(r["gap"]) for r in train_lines)
    # the gap is the samples' energy minus the data's (positive: samples less likely than data)
    assert all(r["gap"] == pytest.approx(r["e_sample"] - r["e_data"], abs=1e-5) for r in train_lines)
    assert 0 <= summary["test_acc"] <= 1
    for name in ("checkpoint.pt", "metrics.jsonl", "samples.png", "summary.json", "config.json"):
        assert (tmp_path / name).exists(), name
    assert summary["samples"] == str(tmp_path / "samples.png")
    # a copy of the checkpoint kept by hand goes where the kept ones go, and says where
    kept = t.keep_checkpoint(tmp_path / "checkpoint.pt")
    assert kept == tmp_path / "checkpoints" / "iter_0000020.pt"
    assert kept.read_bytes() == (tmp_path / "checkpoint.pt").read_bytes()


def test_the_run_log_names_the_engine_and_its_notes(tiny_config, tmp_path):
    """What the run is computed with, in its log: the engine's description and each of its notes (why a fast path
    is off), once, under the line that names the data and the network."""
    said = []
    t = Trainer(tiny_config.replace(iters=2, log_every=1), out_dir=tmp_path, progress=False,
                log=lambda *a: said.append(" ".join(map(str, a))))
    t.fit()
    assert t.engine.notes
    expected = [f"engine: {note}" for note in t.engine.notes] + [f"engine: {t.engine.describe()}"]
    assert said[0].startswith("fastjem: digits") and said[1:1 + len(expected)] == expected
    assert sum(line.startswith("engine: ") for line in said) == len(expected)


def test_fit_gives_back_the_log_and_the_signal_handlers(tiny_config, tmp_path):
    """During fit, lines go above the live bar and SIGINT / SIGTERM stop at the next iteration; after it, the
    trainer logs with its own log again and the process has the handlers it had (a notebook's Ctrl-C interrupts
    again)."""
    import signal

    from fastjem.console import console

    def mine(signum, frame):
        pass

    # both set here: what a process inherits differs (a shell's background job ignores SIGINT)
    before = {sig: signal.signal(sig, mine) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        t = Trainer(tiny_config.replace(iters=2), out_dir=tmp_path, progress=True)
        t.fit()
        assert t.log is console
        assert signal.getsignal(signal.SIGINT) is mine and signal.getsignal(signal.SIGTERM) is mine
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)


def test_classifier_only_never_samples(tiny_config, tmp_path):
    t = Trainer(tiny_config.replace(px_weight=0.0), out_dir=tmp_path, progress=False)
    b0 = t.buffer.data.clone()
    p0 = params(t.model).clone()
    for _ in range(3):
        t.train_step()
    assert torch.equal(b0, t.buffer.data)
    assert not torch.equal(p0, params(t.model))
    # nor at its end: no sample grid
    summary = Trainer(tiny_config.replace(px_weight=0.0, iters=2), out_dir=tmp_path / "run", progress=False).fit()
    assert summary["samples"] is None and not (tmp_path / "run" / "samples.png").exists()


def test_class_conditional_and_pxy_terms_run(tiny_config, tmp_path):
    cfg = tiny_config.replace(class_cond_px=True, pxy_weight=1.0, buffer_size=100)
    t = Trainer(cfg, out_dir=tmp_path, progress=False)
    assert t.buffer.num_classes == 10
    asked = []
    real = t.sample
    t.sample = lambda b, y=None: asked.append((b, None if y is None else y.clone())) or real(b, y)
    parts = t.train_step()
    assert torch.isfinite(parts["loss"])
    # a batch of SGLD chains as large as the labelled batch for each term: p(x)'s from classes drawn uniformly, and
    # p(x, y)'s from the labelled batch's own classes
    (b_px, y_px), (b_pxy, y_pxy) = asked
    assert b_px == b_pxy == cfg.batch_size and t.last_samples.shape == (cfg.batch_size, *t.data.sample_shape)
    assert len(y_px.unique()) > 1 and not torch.equal(y_px, y_pxy)


@pytest.mark.parametrize("class_cond_px", [False, True])
def test_loss_is_the_jem_objective_with_every_term(tiny_config, tmp_path, class_cond_px):
    """The trainer's loss, by hand: px [mean E(x_p) - mean E(x_q)] + pyx CE(f(x_lab), y) + pxy [mean E(x_lab, y) -
    mean E(x_qy, y)] + energy_l2 [mean E(x_p)^2 + mean E(x_q)^2], where x_qy comes from chains of the labels'
    classes (and x_q from chains of random classes under --class-cond-px)."""
    cfg = tiny_config.replace(px_weight=0.8, pyx_weight=1.3, pxy_weight=0.6, energy_l2=0.05,
                              class_cond_px=class_cond_px)
    t = Trainer(cfg, out_dir=tmp_path, progress=False)
    g = torch.Generator().manual_seed(0)
    x_p, x_lab, x_q, x_qy = (torch.rand(16, *t.data.sample_shape, generator=g) * 2 - 1 for _ in range(4))
    y_lab = torch.randint(0, 10, (16,), generator=g)
    samples, drawn = [x_q, x_qy], []

    def sample(batch_size, y=None):  # the sampler's draws, fixed: the x_q draw, then the x_qy draw
        drawn.append(y)
        return samples.pop(0)

    t.sample = sample
    loss, _ = t.loss(x_p, x_lab, y_lab)
    assert len(drawn) == 2 and torch.equal(drawn[1], y_lab)
    assert (drawn[0] is not None) == class_cond_px
    with torch.no_grad():
        f = t.model
        e_p, e_q, logits, logits_qy = -f(x_p).logsumexp(1), -f(x_q).logsumexp(1), f(x_lab), f(x_qy)
        e_lab_y, e_qy_y = -logits.gather(1, y_lab[:, None]), -logits_qy.gather(1, y_lab[:, None])
        expected = (0.8 * (e_p.mean() - e_q.mean()) + 1.3 * torch.nn.functional.cross_entropy(logits, y_lab)
                    + 0.6 * (e_lab_y.mean() - e_qy_y.mean()) + 0.05 * ((e_p**2).mean() + (e_q**2).mean()))
    assert loss.item() == pytest.approx(expected.item(), rel=1e-5, abs=1e-6)
    if class_cond_px:
        # x_q's classes are uniform over all K (the authors' y_q = randint(0, K)): a draw that left out the last
        # class trained on chains of nine classes of ten, which no loss shows
        x, y = torch.cat([x_p] * 4), torch.cat([y_lab] * 4)
        drawn.clear()
        t.sample = lambda batch_size, y=None: drawn.append(y) or x
        with torch.no_grad():
            for _ in range(8):
                t.loss(x, x, y)
        counts = torch.bincount(torch.cat(drawn[::2]), minlength=10)  # (every other draw is x_qy's, of y_lab)
        # 512 draws, 51 of each class on average: one missing has probability 10 x 0.9^512, about 4e-23
        assert len(counts) == 10 and counts.min() >= 20 and counts.max() <= 90, counts.tolist()


@pytest.mark.parametrize("px_weight,pxy_weight", [(1.0, 0.0), (0.0, 1.0)], ids=["px", "pxy-alone"])
def test_the_logged_energies_are_the_data_batchs_and_the_sampled_batchs(tiny_config, tmp_path, px_weight, pxy_weight):
    """e_data and e_sample (the log's columns, the guard's bounds, gap = e_sample - e_data) are the mean energy of
    the data batch and of the sampled batch, in that order: with --px-weight E(x) of x_p and of x_q; with the
    p(x, y) term alone E(x, y) of x_lab and of x_qy."""
    t = Trainer(tiny_config.replace(px_weight=px_weight, pxy_weight=pxy_weight), out_dir=tmp_path, progress=False)
    g = torch.Generator().manual_seed(0)
    x_p, x_lab, x_s = (torch.rand(16, *t.data.sample_shape, generator=g) * 2 - 1 for _ in range(3))
    y_lab = torch.randint(0, 10, (16,), generator=g)
    t.sample = lambda batch_size, y=None: x_s  # the sampler's draw, fixed
    _, parts = t.loss(x_p, x_lab, y_lab)
    with torch.no_grad():
        f = t.model
        if px_weight:
            want = (-f(x_p).logsumexp(1).mean(), -f(x_s).logsumexp(1).mean())
        else:
            want = (-f(x_lab).gather(1, y_lab[:, None]).mean(), -f(x_s).gather(1, y_lab[:, None]).mean())
    torch.testing.assert_close((parts["e_data"], parts["e_sample"]), want)
    assert not torch.allclose(want[0], want[1])


def test_sample_is_sgld_on_the_networks_energy_in_eval_mode_from_the_classes_blocks(tiny_config, tmp_path):
    """Trainer.sample is Algorithm 1's steps 2-4: chains drawn from the buffer (from their classes' blocks when
    classes are given), SGLD on E(x) (on E(x, y) with classes) with the network in eval mode and frozen (no dropout,
    batch norm on its running statistics, which sampling leaves as they are), the chains written back. Each of these
    could be lost without a failing test: sampling in train mode, the p(x, y) term's chains run on E(x) or drawn from
    the whole buffer."""
    from fastjem.sampler import SGLD, model_energy

    cfg = tiny_config.replace(norm="batch", dropout=0.3, class_cond_px=True, reinit_prob=0.0, sgld_noise=0.0)
    t = Trainer(cfg, out_dir=tmp_path, progress=False, log=lambda *a: None)
    with torch.no_grad():
        t.model.train()(t.buffer.data[:32])  # running statistics of their own (not batch norm's initial 0 and 1)
    stats = [b.clone() for b in t.model.buffers()]
    drawn, draw = [], t.buffer.sample
    t.buffer.sample = lambda batch_size, y=None: drawn.append(draw(batch_size, y)) or drawn[-1]
    y = torch.arange(16) % 10
    chain = SGLD(cfg.sgld_steps, cfg.sgld_step_size, 0.0)
    for classes in (None, y):
        x = t.sample(16, classes)
        x0, idx = drawn.pop()
        if classes is not None:
            assert torch.equal(idx // t.buffer.class_block, y)  # each chain from its class's block
        want = chain.sample(model_energy(t.model, classes), x0, model=t.model)
        torch.testing.assert_close(x, want, rtol=0, atol=1e-6)
        assert torch.equal(t.buffer.data[idx], x)
        # not vacuous: the other energy's chains differ
        other = chain.sample(model_energy(t.model, y if classes is None else None), x0, model=t.model)
        assert (other - want).abs().max() > 1e-4
    assert all(torch.equal(a, b) for a, b in zip(stats, t.model.buffers()))
    assert t.model.training and all(p.requires_grad for p in t.model.parameters())


def test_conditional_buffer_size_must_divide(tiny_config, tmp_path):
    with pytest.raises(ConfigError, match="divisible"):
        Trainer(tiny_config.replace(class_cond_px=True, buffer_size=205), out_dir=tmp_path, progress=False)


def test_semi_supervised_draws_labels_from_the_subset(tiny_config, tmp_path):
    t = Trainer(tiny_config.replace(labels_per_class=3), out_dir=tmp_path, progress=False)
    assert len(t.data.labelled) == 30
    assert torch.equal(torch.bincount(t.data.train_y[t.data.labelled], minlength=10), torch.full((10,), 3))
    _, il = t.data.draw_indices(2000)
    assert set(il.tolist()) == set(t.data.labelled.tolist())


def test_learning_rate_schedule():
    cfg = TrainConfig(lr=1.0, warmup_iters=10, decay_epochs=(2, 4), decay_rate=0.5)
    assert learning_rate(cfg, 0, 100) == pytest.approx(0.1)
    assert learning_rate(cfg, 9, 100) == pytest.approx(1.0)
    assert learning_rate(cfg, 199, 100) == pytest.approx(1.0)
    assert learning_rate(cfg, 200, 100) == pytest.approx(0.5)
    assert learning_rate(cfg, 450, 100) == pytest.approx(0.25)


def test_a_decay_rate_of_0_is_refused_only_where_a_decay_falls_inside_the_run(tiny_config, tmp_path):
    """--decay-rate 0 makes the learning rate 0 from its first decay on: refused where that decay falls inside the
    run, before anything is written, and taken where every decay falls past the run's end, since then no decay
    happens; a resume that would reach one is refused too, with the advice a resume can take."""
    # digits at batch 16: 78 iterations an epoch (the training images left beside the validation set), so epoch 1
    # decays from iteration 78 on
    cfg = tiny_config.replace(decay_rate=0.0, decay_epochs=(1.0, 2.0), iters=78)
    run = Trainer(cfg, out_dir=tmp_path / "run", progress=False, log=lambda *a: None)
    assert run.iters_per_epoch == 78
    run.train_step()
    assert all(float(g["lr"]) > 0 for g in run.optimizer.param_groups)
    with pytest.raises(ConfigError, match=re.escape(
            "--decay-rate 0 sets the learning rate to 0 after iteration 78 (epoch 1 of --decay-epochs), inside this "
            "run of 79 iterations: give a rate > 0 (the paper's is 0.3), or, for no decay, --decay-epochs with no "
            "epoch after it, or --iters 78 at most")):
        Trainer(cfg.replace(iters=79), out_dir=tmp_path / "long", progress=False, log=lambda *a: None)
    assert not (tmp_path / "long").exists()
    with pytest.raises(ConfigError, match=re.escape("after iteration 0 (epoch 0 of --decay-epochs), inside this run "
                                                    "of 78 iterations: give a rate > 0 (the paper's is 0.3), or, for "
                                                    "no decay, --decay-epochs with no epoch after it")):
        Trainer(cfg.replace(decay_epochs=(0.0,)), out_dir=tmp_path / "zero", progress=False, log=lambda *a: None)
    short = Trainer(cfg.replace(iters=2), out_dir=tmp_path / "short", progress=False, log=lambda *a: None).fit()
    with pytest.raises(ConfigError, match=re.escape("inside this run of 79 iterations: give --iters 78 at most")):
        Trainer(resume_config(short["checkpoint"], {"iters": 79}), resume=short["checkpoint"], progress=False,
                log=lambda *a: None)


def test_a_run_of_epochs_ends_at_the_first_iteration_whose_epoch_reaches_them(tiny_config, tmp_path):
    """--epochs E trains ceil(E x iterations per epoch) iterations, reckoned as the schedule reckons epochs
    (iteration / iterations per epoch): 1.1 epochs of 50 iterations are 55 (the float product, 55.00000000000001,
    made them 56), 1.15 epochs 58."""
    from fastjem.train import epoch_iterations

    t = Trainer(tiny_config.replace(iters=-1, epochs=1.1, batch_size=25), out_dir=tmp_path, progress=False,
                log=lambda *a: None)
    assert t.iters_per_epoch == 50 and 1.1 * 50 > 55 and t.total_iters == 55
    assert (t.total_iters - 1) / t.iters_per_epoch < 1.1 <= t.total_iters / t.iters_per_epoch
    assert [epoch_iterations(e, n) for e, n in ((1.15, 50), (1.1, 100), (150.0, 703), (0.001, 19), (2.0, 1))] == \
        [58, 110, 105450, 1, 2]


@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_each_step_applies_the_scheduled_learning_rate(tiny_config, tmp_path, optimizer):
    """The schedule reaches the optimiser: during warm-up and after a decay, every step's learning rate is
    learning_rate(cfg, iteration); with plain SGD the update itself is -lr * gradient."""
    cfg = tiny_config.replace(optimizer=optimizer, momentum=0.0, lr=0.05, warmup_iters=4, decay_epochs=(0.05,),
                              decay_rate=0.1, iters=8)
    t = Trainer(cfg, out_dir=tmp_path, progress=False)
    seen = []
    for _ in range(cfg.iters):
        want = learning_rate(cfg, t.iteration, t.iters_per_epoch)
        before = [p.detach().clone() for p in t.model.parameters()]
        t.train_step()
        t.iteration += 1
        assert all(float(g["lr"]) == pytest.approx(want, rel=1e-6) for g in t.optimizer.param_groups)
        if optimizer == "sgd":
            step = torch.cat([(p.detach() - b).flatten() for p, b in zip(t.model.parameters(), before)])
            grad = torch.cat([p.grad.flatten() for p in t.model.parameters()])
            # the step's size along the gradient (fp32 differences of the weights are only good to ~1e-3 each)
            assert (-(step @ grad) / (grad @ grad)).item() == pytest.approx(want, rel=1e-3)
            assert torch.allclose(step, -want * grad, rtol=0.05, atol=1e-7)
        seen.append(want)
    assert seen[0] == pytest.approx(0.05 / 4) and min(seen) == pytest.approx(0.005)  # warm-up and a decay, both seen


def test_the_logged_learning_rate_is_the_one_the_logged_steps_used(tiny_config, tmp_path):
    """metrics.jsonl's lr at iteration n (1-based) is the rate the n-th step took, learning_rate(cfg, n - 1): during
    warm-up (where an off-by-one shows) 2/5, 4/5 of the rate, then all of it."""
    cfg = tiny_config.replace(lr=0.05, warmup_iters=5, log_every=2, iters=8)
    t = Trainer(cfg, out_dir=tmp_path, progress=False)
    t.fit()
    rows = [json.loads(s) for s in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    logged = {r["iter"]: r["lr"] for r in rows if "lr" in r}
    assert logged == pytest.approx({2: 0.02, 4: 0.04, 6: 0.05, 8: 0.05}, rel=1e-12)
    assert float(t.lr_t) == pytest.approx(logged[8], rel=1e-6)


def test_test_noise_reaches_every_evaluation(tiny_config, tmp_path, monkeypatch):
    """--test-noise (the authors' evaluation on noisy inputs) applies to the periodic validation that picks best.pt
    as to the end's validation and test: every evaluation of the run is called with it, on the split it names."""
    import fastjem.train as train_mod

    calls = []
    real = train_mod.evaluate
    monkeypatch.setattr(train_mod, "evaluate",
                        lambda model, x, y, **k: calls.append((len(y), k.get("noise"))) or real(model, x, y, **k))
    t = Trainer(tiny_config.replace(test_noise=0.3, eval_every=4, iters=8), out_dir=tmp_path, progress=False)
    t.fit()
    n_val, n_test = len(t.data.val_y), len(t.data.test_y)
    # iteration 4's validation, the end's, then the test (the last model's, and best.pt's for the summary)
    assert calls[:2] == [(n_val, 0.3), (n_val, 0.3)] and set(calls[2:]) == {(n_test, 0.3)}


@pytest.mark.parametrize("reinit_prob", [0.0, 1.0])
def test_sampler_buffer_and_data_options_reach_what_they_set(tiny_config, tmp_path, reinit_prob):
    """--sgld-steps/-step-size/-noise, --reinit-prob, --no-augment and --data-noise act in the trainer's sampler,
    buffer and data, not only in its config."""
    cfg = tiny_config.replace(sgld_steps=4, sgld_step_size=0.0, sgld_noise=0.5, reinit_prob=reinit_prob,
                              augment=False, data_noise=0.1)
    t = Trainer(cfg, out_dir=tmp_path, progress=False)
    x0, idx = t.buffer.sample(64)
    kept = (x0 == t.buffer.data[idx]).flatten(1).all(1)
    assert bool(kept.all()) if reinit_prob == 0.0 else not bool(kept.any())
    # a zero step size leaves a random walk: 4 steps of N(0, 0.5^2) move each pixel by N(0, 1)
    assert_gaussian_moments(t.run_sgld(x0) - x0, 1.0)
    # without noise, one step of size 7 is 7 times the gradient of log p~(x) = LSE f(x)
    t2 = Trainer(cfg.replace(sgld_steps=1, sgld_step_size=7.0, sgld_noise=0.0), out_dir=tmp_path / "t2",
                 progress=False)
    x = x0.clone().requires_grad_(True)
    t2.model.eval()
    (grad,) = torch.autograd.grad(t2.model(x).logsumexp(1).sum(), x)
    assert torch.allclose(t2.run_sgld(x0), x0 + 7.0 * grad, rtol=1e-4, atol=1e-6)
    # without augmentation the batch is the images plus N(0, 0.1^2), not shifted or flipped
    x_u8 = t.data.train_x[:64]
    assert_gaussian_moments(t.data.prepare(x_u8) - to_float(x_u8), 0.1)


@pytest.mark.parametrize("augment", [False, True])
def test_no_augment_turns_off_crops_and_flips(tiny_config, tmp_path, augment):
    """--no-augment on images that have crops and flips (digits has neither): the batch is the images plus the
    data noise; with augmentation, shifted and flipped."""
    from fastjem.data import arrays_from_tensors

    g = torch.Generator().manual_seed(0)
    x = torch.randint(0, 256, (200, 3, 16, 16), dtype=torch.uint8, generator=g)
    y = torch.arange(200) % 4
    data = arrays_from_tensors(x[:160], y[:160], x[160:], y[160:], pad=2, val_size=20)
    t = Trainer(tiny_config.replace(augment=augment, data_noise=0.0), out_dir=tmp_path, progress=False, data=data)
    x_u8 = t.data.train_x
    same = (t.data.prepare(x_u8) == to_float(x_u8)).flatten(1).all(1)
    if augment:
        assert same.float().mean() < 0.5  # identity crop (1 in 25) and no flip (1 in 2): about 2% unchanged
    else:
        assert bool(same.all())


@pytest.mark.parametrize("optimizer,norm", [("adam", "batch"), ("sgd", "instance"), ("adam", "layer")])
def test_model_and_optimiser_options_reach_the_network_and_the_optimiser(tiny_config, tmp_path, optimizer, norm):
    """--norm and --dropout build the network they name; --weight-decay acts in the optimiser's step."""
    kinds = {"batch": torch.nn.BatchNorm2d, "instance": torch.nn.InstanceNorm2d, "layer": torch.nn.GroupNorm}
    cfg = tiny_config.replace(norm=norm, dropout=0.5, optimizer=optimizer, momentum=0.0, weight_decay=0.1, lr=0.01)
    t = Trainer(cfg, out_dir=tmp_path, progress=False)
    assert any(isinstance(m, kinds[norm]) for m in t.model.modules())
    x = torch.rand(8, *t.data.sample_shape, generator=torch.Generator().manual_seed(0)) * 2 - 1
    t.model.train()
    assert not torch.equal(t.model(x), t.model(x))  # dropout draws another mask each forward
    t.model.eval()
    assert torch.equal(t.model(x), t.model(x))
    # a step with zero loss gradients moves the weights by the decay alone
    before = [p.detach().clone() for p in t.model.parameters()]
    for p in t.model.parameters():
        p.grad = torch.zeros_like(p)
    t.optimizer.step()
    after = [p.detach() for p in t.model.parameters()]
    if optimizer == "sgd":  # p <- p - lr * wd * p
        assert all(torch.allclose(a, b * (1 - 0.01 * 0.1), rtol=1e-6, atol=1e-9) for a, b in zip(after, before))
    else:  # Adam's first step moves every weight with a nonzero decay gradient by about lr
        moved = torch.cat([(a - b).abs().flatten() for a, b in zip(after, before)])
        weights = torch.cat([b.flatten() for b in before])
        assert torch.allclose(moved[weights.abs() > 1e-3], torch.tensor(0.01), rtol=0.01)


def test_evaluation_noise_is_gaussian_of_its_std_and_the_same_every_time():
    """Training's evaluation with --test-noise: the network sees the images plus N(0, noise^2) from the
    evaluation's own generator (the same noise at every evaluation), and the images themselves at 0."""
    seen = []

    class Record(torch.nn.Module):
        def forward(self, x):
            seen.append(x.clone())
            return torch.zeros(len(x), 3)

    x_u8 = torch.randint(0, 256, (600, 1, 8, 8), dtype=torch.uint8, generator=torch.Generator().manual_seed(0))
    y = torch.zeros(600, dtype=torch.long)
    clean = to_float(x_u8)

    def inputs(noise):
        seen.clear()
        evaluate(Record(), x_u8, y, batch_size=250, noise=noise)
        return torch.cat(seen)

    assert torch.equal(inputs(0.0), clean)
    noise = inputs(0.03) - clean
    assert torch.equal(inputs(0.03) - clean, noise)
    assert_gaussian_moments(noise, 0.03)


def test_checkpoint_round_trip(tiny_config, tmp_path):
    t = Trainer(tiny_config.replace(iters=4), out_dir=tmp_path, progress=False)
    t.fit()
    ckpt = load_checkpoint(tmp_path / "checkpoint.pt")
    assert ckpt["iteration"] == 4
    assert TrainConfig.from_dict(ckpt["config"]) == t.cfg
    for k, v in t.model.state_dict().items():
        assert torch.equal(ckpt["model"][k], v)
    assert torch.equal(ckpt["buffer"]["data"], t.buffer.data)
    assert ckpt["optimizer"]["state"]


@pytest.mark.parametrize("where", ["serialising", "writing"])
@pytest.mark.parametrize("error", [RuntimeError, KeyboardInterrupt])
def test_a_save_that_fails_midway_keeps_the_saved_checkpoint(tiny_config, tmp_path, monkeypatch, error, where):
    """Checkpoints are written atomically: a save that dies while serialising or after writing part of the file
    (a full disk, a kill, Ctrl-C) leaves the previous checkpoint whole and loadable, and no temporary file behind."""
    import fastjem.checkpoint as checkpoint

    # no guard: its rollback file, written first, would take the failure before checkpoint.pt is touched
    t = Trainer(tiny_config.replace(iters=2, guard=False), out_dir=tmp_path, progress=False)
    t.fit()
    path = tmp_path / "checkpoint.pt"
    before = path.read_bytes()
    files = sorted(p.name for p in tmp_path.iterdir())

    def dies_midway(obj, f):
        f.write(b"\x80\x02half a pickle")
        raise error("interrupted while writing")

    def dies_before_it_is_on_disk(fd):
        raise error("interrupted while writing")

    if where == "serialising":
        monkeypatch.setattr(checkpoint.torch, "save", dies_midway)
    else:  # the bytes went to the file; the flush to disk fails
        monkeypatch.setattr(checkpoint.os, "fsync", dies_before_it_is_on_disk)
    t.iteration += 1
    with pytest.raises(error):
        t.save_checkpoint()
    assert path.read_bytes() == before
    assert load_checkpoint(path)["iteration"] == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == files


@pytest.mark.parametrize("buffer_init,optimizer", [("uniform", "adam"), ("informative", "adam"), ("uniform", "sgd")])
def test_resume_continues_exactly(tiny_config, tmp_path, buffer_init, optimizer):
    tiny_config = tiny_config.replace(buffer_init=buffer_init, optimizer=optimizer,
                                      lr=0.05 if optimizer == "sgd" else tiny_config.lr)
    full = Trainer(tiny_config.replace(iters=10), out_dir=tmp_path / "full", progress=False)
    full.fit()
    half = Trainer(tiny_config.replace(iters=6), out_dir=tmp_path / "half", progress=False)
    half.fit()
    cfg = resume_config(tmp_path / "half" / "checkpoint.pt", {"iters": 10})
    resumed = Trainer(cfg, out_dir=tmp_path / "half", resume=tmp_path / "half" / "checkpoint.pt", progress=False)
    assert resumed.iteration == 6
    resumed.fit()
    assert torch.equal(params(full.model), params(resumed.model))
    assert torch.equal(full.buffer.data, resumed.buffer.data)


def test_a_resume_keeps_the_precision_auto_gave_the_run_when_it_started(tiny_config, tmp_path, monkeypatch):
    """Precision auto on a CPU follows a probe whose answer may change between runs (one timed beside other work
    is not cached): a run that started in bf16 continues in bf16, bit for bit as the uninterrupted run, whatever the
    probe says at the resume; the checkpoint records the precision and the device kind. A checkpoint without the
    record, or one written on another kind of device, is probed again."""
    probe = {"fast": True}
    monkeypatch.setattr("fastjem.engine.fast_bf16", lambda device: (probe["fast"], "the test's probe"))
    cfg = tiny_config.replace(precision="auto", sgld_steps=2)
    full = Trainer(cfg.replace(iters=6), out_dir=tmp_path / "full", progress=False, log=lambda *a: None)
    full.fit()
    half = Trainer(cfg.replace(iters=3), out_dir=tmp_path / "half", progress=False, log=lambda *a: None)
    assert half.engine.precision == "bf16"
    half.fit()
    ckpt = tmp_path / "half" / "checkpoint.pt"
    assert load_checkpoint(ckpt)["engine"] == {"precision": "bf16", "device": "cpu"}
    probe["fast"] = False  # the probe's answer at the resume
    said = []
    resumed = Trainer(resume_config(ckpt, {"iters": 6}), resume=ckpt, progress=False,
                      log=lambda *a: said.append(" ".join(map(str, a))))
    assert resumed.engine.precision == "bf16"
    resumed.fit()
    assert any("precision auto -> bf16 (as the run started: its checkpoint records it)" in line for line in said)
    assert torch.equal(params(full.model), params(resumed.model))
    # a checkpoint without the record (written before fastjem kept it), or from another kind of device: probed
    state = load_checkpoint(ckpt)
    for record in (None, {"precision": "bf16", "device": "cuda"}):
        if record is None:
            state.pop("engine")
        else:
            state["engine"] = record
        torch.save(state, tmp_path / "other.pt")
        again = Trainer(resume_config(tmp_path / "other.pt", {"iters": 6}), out_dir=tmp_path / "again",
                        resume=tmp_path / "other.pt", progress=False, log=lambda *a: None)
        assert again.engine.precision == "fp32", record


def test_the_informative_buffer_starts_from_the_class_gaussians(tiny_config, tmp_path):
    """--buffer-init informative fills the buffer (and restarts its chains) from a Gaussian per class fitted to the
    labelled training images, whose mean is the data's (digits: mostly dark background, far below 0); uniform
    keeps U(-1, 1), mean 0."""
    from fastjem.buffer import ClassGaussians

    said = []
    uniform = Trainer(tiny_config, out_dir=tmp_path / "u", progress=False, log=lambda *a: None)
    informative = Trainer(tiny_config.replace(buffer_init="informative"), out_dir=tmp_path / "i", progress=False,
                          log=lambda *a: said.append(" ".join(map(str, a))))
    assert uniform.buffer.init is None and isinstance(informative.buffer.init, ClassGaussians)
    assert any("informative initialisation" in line for line in said)
    labelled = informative.data.labelled
    data_mean = to_float(informative.data.train_x[labelled]).mean().item()
    assert data_mean < -0.3
    assert abs(uniform.buffer.data.mean().item()) < 0.02
    assert abs(informative.buffer.data.mean().item() - data_mean) < 0.05


def test_on_cpu_adam_with_the_device_lr_steps_bitwise_as_with_a_float_lr(tiny_config, tmp_path):
    """On a CPU the learning rate lives in an fp64 tensor read by the single-tensor Adam: bitwise the steps of
    torch's Adam given the same rate as a number (the fused CPU kernel, or the CUDA settings, differ)."""
    t = Trainer(tiny_config.replace(weight_decay=1e-4), out_dir=tmp_path, progress=False, log=lambda *a: None)
    mine = list(t.model.parameters())
    theirs = [p.detach().clone().requires_grad_(True) for p in mine]
    reference = torch.optim.Adam(theirs, lr=3e-4, weight_decay=1e-4)
    start = params(t.model)
    gen = torch.Generator().manual_seed(0)
    t._set_lr(3e-4)
    for _ in range(3):
        for p, q in zip(mine, theirs):
            p.grad = torch.randn(p.shape, generator=gen)
            q.grad = p.grad.clone()
        t.optimizer.step()
        reference.step()
    assert all(torch.equal(p, q) for p, q in zip(mine, theirs))
    assert not torch.equal(params(t.model), start)  # the steps moved the weights


def test_the_logged_metrics_are_the_means_over_the_iterations_since_the_last_read(tiny_config, tmp_path):
    """read_metrics: each metric's mean over the iterations since the last read (one host sync a window), then the
    window starts again: a window of one iteration is that iteration's values."""
    from fastjem.train import METRIC_NAMES

    t = Trainer(tiny_config, out_dir=tmp_path, progress=False, log=lambda *a: None)
    steps = [{k: float(v) for k, v in t.train_step().items()} for _ in range(3)]
    got = t.read_metrics()
    for name in ("loss", "ce", "acc", "e_data", "e_sample"):
        assert name in METRIC_NAMES
        assert got[name] == pytest.approx(sum(s[name] for s in steps) / 3, rel=1e-5, abs=1e-6), name
    assert got["gap"] == pytest.approx(got["e_sample"] - got["e_data"])
    one = {k: float(v) for k, v in t.train_step().items()}
    again = t.read_metrics()
    assert all(again[name] == pytest.approx(one[name], rel=1e-5, abs=1e-6) for name in ("loss", "ce", "e_data"))


def test_every_metrics_line_says_when_it_was_written(tiny_config, tmp_path):
    import time

    start = time.time()
    t = Trainer(tiny_config.replace(iters=6, eval_every=3), out_dir=tmp_path, progress=False, log=lambda *a: None)
    t.fit()
    records = [json.loads(s) for s in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    times = [r["time"] for r in records]
    assert len(records) >= 4 and start <= times[0] and times == sorted(times) and times[-1] <= time.time()


@pytest.mark.parametrize("iters", [1, 3])
def test_a_run_resumed_at_its_end_holds_the_state_the_finished_run_held(tiny_config, tmp_path, iters):
    """Resumed at its last iteration (no step left to set them), a run holds the learning rate its last step used,
    its metric window, its last samples and its validation history as the finished run held them; a checkpoint
    written before the world_size key existed loads as one process's."""
    done = Trainer(tiny_config.replace(iters=iters, log_every=2, eval_every=2), out_dir=tmp_path, progress=False,
                   log=lambda *a: None)
    done.fit()
    ckpt = tmp_path / "checkpoint.pt"
    resumed = Trainer(resume_config(ckpt), out_dir=tmp_path, resume=ckpt, progress=False, log=lambda *a: None)
    assert resumed.iteration == iters
    assert resumed.lr_t.item() == done.lr_t.item() != tiny_config.lr  # still in warm-up: below the peak rate
    assert resumed.optimizer.param_groups[0]["lr"] is resumed.lr_t
    assert torch.equal(resumed._acc, done._acc) and resumed._acc_n == done._acc_n
    assert torch.equal(resumed.last_samples, done.last_samples)
    assert resumed.history == done.history and [h["iter"] for h in done.history] == ([2] if iters == 3 else [])
    state = load_checkpoint(ckpt)
    del state["world_size"]
    resumed.load_state(state)
    assert resumed.iteration == iters


def test_resume_refuses_a_different_architecture(tiny_config, tmp_path):
    Trainer(tiny_config.replace(iters=2), out_dir=tmp_path, progress=False).fit()
    with pytest.raises(CheckpointError, match="width"):
        resume_config(tmp_path / "checkpoint.pt", {"width": 16})
    with pytest.raises(CheckpointError, match="width"):
        Trainer(tiny_config.replace(width=16), out_dir=tmp_path, resume=tmp_path / "checkpoint.pt", progress=False)
    # how, not what: graphs and the allocator may change on resume (e.g. a machine where capture fails)
    cfg = resume_config(tmp_path / "checkpoint.pt", {"iteration_graph": False, "cuda_graph": False,
                                                     "cpu_malloc": False})
    assert not cfg.iteration_graph and not cfg.cuda_graph and not cfg.cpu_malloc
    with pytest.raises(CheckpointError, match="precision"):
        resume_config(tmp_path / "checkpoint.pt", {"precision": "bf16"})


def test_unreadable_checkpoint_is_refused(tmp_path):
    bad = tmp_path / "checkpoint.pt"
    bad.write_bytes(b"not a checkpoint")
    with pytest.raises(CheckpointError, match="cannot read") as err:
        load_checkpoint(bad)
    # not taken for a file holding objects, nor passed torch's advice to read it with weights_only=False
    assert "holds more" not in str(err.value) and "weights_only" not in str(err.value)
    assert bad.read_bytes() == b"not a checkpoint"


def test_truncated_checkpoint_is_refused_as_truncated(tiny_config, tmp_path):
    """A checkpoint cut short (a copy or transfer that stopped) makes torch's zip reader fail with an OSError
    (EINVAL) for most lengths, which was reported as 'check the file's permissions and its disk'."""
    Trainer(tiny_config.replace(iters=1), out_dir=tmp_path, progress=False, log=lambda *a: None).fit()
    path = tmp_path / "checkpoint.pt"
    data = path.read_bytes()
    for kept in (0.1, 0.5, 0.99):
        path.write_bytes(data[: int(len(data) * kept)])
        with pytest.raises(CheckpointError) as err:
            load_checkpoint(path)
        assert "truncated" in str(err.value) and "permissions" not in str(err.value), kept


def test_a_checkpoint_whose_bytes_changed_is_refused(tiny_config, tmp_path):
    """Bytes overwritten in the middle of a tensor: torch.load reads it without a word (and a resumed run would
    diverge on the garbage); the members' CRC-32 says it, naming the damaged part."""
    Trainer(tiny_config.replace(iters=2), out_dir=tmp_path, progress=False).fit()
    path = tmp_path / "checkpoint.pt"
    assert load_checkpoint(path)["iteration"] == 2
    data = bytearray(path.read_bytes())
    (tmp_path / "unchanged.pt").write_bytes(bytes(data))
    import zipfile

    with zipfile.ZipFile(path) as z:
        largest = max(z.infolist(), key=lambda i: i.file_size)
    # the local header: 30 bytes, then the name and its own extra field (lengths at bytes 26 and 28)
    name_len, extra_len = (int.from_bytes(data[largest.header_offset + k:largest.header_offset + k + 2], "little")
                           for k in (26, 28))
    start = largest.header_offset + 30 + name_len + extra_len
    data[start + largest.file_size // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    torch.load(path, weights_only=False)  # no complaint from torch
    with pytest.raises(CheckpointError, match=f"damaged: its part {largest.filename} fails its checksum"):
        load_checkpoint(path)
    # a checkpoint in torch's legacy format (not a zip: no checksums to compare) still loads
    torch.save(torch.load(tmp_path / "unchanged.pt", weights_only=False), tmp_path / "legacy.pt",
               _use_new_zipfile_serialization=False)
    assert load_checkpoint(tmp_path / "legacy.pt")["iteration"] == 2
    # one saved with torch's CRC-32 turned off (every member's CRC 0, nothing to compare) is not taken for damaged
    crc = torch.serialization.get_crc32_options()
    torch.serialization.set_crc32_options(False)
    try:
        torch.save(torch.load(tmp_path / "unchanged.pt", weights_only=False), tmp_path / "no_crc.pt")
    finally:
        torch.serialization.set_crc32_options(crc)
    with zipfile.ZipFile(tmp_path / "no_crc.pt") as z:
        assert {i.CRC for i in z.infolist()} == {0}
    assert load_checkpoint(tmp_path / "no_crc.pt")["iteration"] == 2


def test_a_checkpoint_of_a_newer_fastjem_is_refused_naming_the_file(tiny_config, tmp_path):
    """A config option this fastjem does not know (a newer one wrote it, its format unchanged) is said of the file,
    for a resume and for --init-weights alike (it was a bare "unknown config keys" that named no file)."""
    quiet = {"progress": False, "log": lambda *a: None}
    Trainer(tiny_config.replace(iters=1), out_dir=tmp_path / "run", **quiet).fit()
    ckpt = torch.load(tmp_path / "run" / "checkpoint.pt", weights_only=False)
    ckpt["config"]["ema_decay"] = 0.999
    torch.save(ckpt, tmp_path / "newer.pt")
    said = r"newer\.pt was written by a newer fastjem: its config has options this one does not know \(ema_decay\)"
    with pytest.raises(CheckpointError, match=said):
        resume_config(tmp_path / "newer.pt")
    with pytest.raises(CheckpointError, match=said):
        Trainer(tiny_config.replace(init_weights=str(tmp_path / "newer.pt")), out_dir=tmp_path / "new", **quiet)


def test_a_checkpoint_holding_other_objects_is_refused_never_unpickled(tiny_config, tmp_path, capsys):
    """fastjem's checkpoints hold tensors and plain values, read with weights_only=True: one that also holds an object
    (a crafted file whose unpickling runs code, given to eval, resume, --init-weights or runs) is refused naming what it
    holds, and its code never runs (it was read with weights_only=False)."""
    from fastjem.cli import main

    quiet = {"progress": False, "log": lambda *a: None}
    Trainer(tiny_config.replace(iters=1), out_dir=tmp_path / "run", **quiet).fit()
    ckpt = torch.load(tmp_path / "run" / "checkpoint.pt", weights_only=True)
    marker = tmp_path / "ran"

    class Runs:
        def __reduce__(self):
            return open, (str(marker), "w")

    (tmp_path / "bad").mkdir()
    torch.save({**ckpt, "history": Runs()}, tmp_path / "bad" / "checkpoint.pt")
    (tmp_path / "bad" / "metrics.jsonl").write_text((tmp_path / "run" / "metrics.jsonl").read_text())
    said = r"holds more than tensors and plain values \([a-z_]+\.open\): not a checkpoint fastjem writes"
    with pytest.raises(CheckpointError, match=said):
        load_checkpoint(tmp_path / "bad" / "checkpoint.pt")
    with pytest.raises(CheckpointError, match=said):
        resume_config(tmp_path / "bad" / "checkpoint.pt")
    with pytest.raises(CheckpointError, match=said):
        Trainer(tiny_config.replace(init_weights=str(tmp_path / "bad")), out_dir=tmp_path / "new", **quiet)
    assert main(["eval", str(tmp_path / "bad" / "checkpoint.pt"), "accuracy"]) == 1
    assert "holds more than tensors" in capsys.readouterr().err
    assert main(["runs", str(tmp_path)]) == 0  # the table reads its iteration from the log, not the file
    assert not marker.exists()
    assert load_checkpoint(tmp_path / "run" / "checkpoint.pt")["iteration"] == 1  # fastjem's own load as before


def test_existing_run_is_not_overwritten(tiny_config, tmp_path):
    Trainer(tiny_config.replace(iters=2), out_dir=tmp_path, progress=False).fit()
    before = (tmp_path / "checkpoint.pt").read_bytes()
    with pytest.raises(ConfigError, match="already holds a run"):
        Trainer(tiny_config, out_dir=tmp_path, progress=False)
    assert (tmp_path / "checkpoint.pt").read_bytes() == before


@pytest.mark.parametrize("change,match", [
    ({"lr": float("nan")}, "finite"), ({"lr": -1.0}, "lr"), ({"sgld_steps": -1}, "sgld-steps"),
    ({"reinit_prob": 1.5}, "reinit-prob"), ({"depth": 12, "arch": "wrn"}, "6n\\+4"),
    ({"dataset": "mnist"}, "dataset"), ({"batch_size": 0}, "batch-size"), ({"sgld_noise": float("inf")}, "finite"),
    ({"energy_bound": 0.0}, "energy-bound must be > 0"), ({"gap_bound": 0.0}, "gap-bound must be > 0"),
    ({"momentum": 5.0}, r"momentum must be in \[0, 1\)"),
    ({"width": 0}, "width must be > 0"), ({"image_size": -1}, "image-size must be >= 0"),
    ({"dropout": 1.0}, "dropout must be < 1"), ({"epochs": 0.0, "iters": -1}, "set a training length"),
    ({"px_weight": 0.0, "pyx_weight": 0.0, "pxy_weight": 0.0}, "nothing to train"),
    ({"depth": 4, "arch": "wrn"}, "6n\\+4 with n >= 1"), ({"labels_per_class": 0}, "labels-per-class"),
    ({"labels_per_class": -2}, "labels-per-class"), ({"val_size": -2}, "val-size must be >= 0, or -1"),
    ({"snapshot_every": -1}, "snapshot-every must be >= 0"), ({"max_recoveries": -1}, "max-recoveries must be"),
    ({"buffer_margin": -1.0}, "buffer-margin must be"), ({"remedies": ()}, "remedies takes one or more"),
    ({"dataset": "imagefolder", "data_dir": ""}, "needs --data-dir"), ({"iters": 0}, "iters must be > 0"),
    ({"iters": -2}, "iters must be > 0"), ({"momentum": 1.0}, r"momentum must be in \[0, 1\)"),
    ({"decay_epochs": (50, -1)}, "decay-epochs must be finite numbers >= 0"),
    ({"decay_epochs": (float("inf"),)}, "decay-epochs must be finite numbers >= 0"),
    ({"decay_epochs": ("50",)}, r"decay-epochs must be tuple of numbers \(like \(50, 100\)\), got \('50',\)"),
    # a type that is not the option's, given in Python, is refused as a config file's is (it failed deep in setup)
    ({"lr": "0.1"}, re.escape("--lr must be float (like 0.0001), got '0.1' (str)")),
    ({"iters": 2.5}, "iters must be int"), ({"batch_size": True}, re.escape("--batch-size must be int (like 64), got "
                                                                              "True (bool)")),
    ({"augment": 0}, "augment must be bool"),
    ({"data_dir": None}, re.escape("--data-dir must be str (like ''), got None")),
    ({"decay_epochs": 50}, "decay-epochs must be tuple of numbers"),
    ({"remedies": "lr"}, "remedies must be tuple of names"),
    # a seed whose derived seeds overflow 64 bits (a traceback at the sampler's), a learning rate of a dropped minus
    ({"seed": 2**63 - 1}, "seed must be between -1099511627775 and 1099511627775"),
    ({"seed": -(2**40)}, "seed must be"),
    ({"lr": 1e3}, r"lr must be at most 10, got 1000: .*1e3 for 1e-3"), ({"lr": 1e308}, "lr must be at most 10"),
    # a JEM whose chains never move
    ({"sgld_steps": 0}, "sgld-steps 0 never moves the chains"),
    ({"sgld_steps": 0, "px_weight": 0.0, "pxy_weight": 1.0}, "sgld-steps 0 never moves the chains"),
])
def test_bad_hyperparameters_are_refused(change, match):
    with pytest.raises(ConfigError, match=match):
        TrainConfig(**change).validate()


@pytest.mark.parametrize("change", [
    {"batch_size": 1, "buffer_size": 1, "log_every": 1, "width": 1, "lr": 1e-12},
    {name: 0 for name in ("energy_l2", "sgld_steps", "sgld_step_size", "sgld_noise", "data_noise", "test_noise",
                          "px_weight", "pxy_weight", "weight_decay", "warmup_iters", "eval_every", "ckpt_every",
                          "sample_every", "ckpt_keep_every", "max_minutes", "momentum", "image_size", "sgld_parts",
                          "snapshot_every", "max_recoveries", "buffer_margin")},
    {"decay_rate": 0.0, "decay_epochs": ()}, {"decay_rate": 0.0}, {"epochs": 0.0, "iters": 1},
    {"epochs": 0.5, "iters": -1},
    {"reinit_prob": 0.0, "dropout": 0.0}, {"reinit_prob": 1.0, "dropout": 0.99}, {"momentum": 0.99},
    {"sgld_parts": 8, "batch_size": 8}, {"labels_per_class": 1, "val_size": 0}, {"labels_per_class": -1},
    {"val_size": -1}, {"check_every": 1, "energy_bound": 1e-6, "gap_bound": 1e-6}, {"decay_epochs": (0, 0.5)},
    {"depth": 10}, {"arch": "convnet", "depth": 12}, {"dataset": "imagefolder", "data_dir": "x"},
    {"px_weight": 0.0, "pxy_weight": 0.0}, {"pyx_weight": 0.0, "pxy_weight": 1.0, "px_weight": 0.0},
    {"remedies": ("lr",)}, {"seed": 2**40 - 1}, {"seed": -(2**40 - 1)}, {"lr": 10.0},
])
def test_options_at_the_edge_of_their_range_are_taken(change):
    """The other side of each refusal: every bound is where the help text puts it, not one step inside."""
    assert TrainConfig(**change).validate() == TrainConfig(**change)


def test_a_run_started_before_the_new_run_rules_is_resumed_under_them(tiny_config, tmp_path):
    """The learning rate's and the seed's bounds and a JEM's SGLD steps > 0 are rules for a run about to start: a run
    begun before them (its checkpoint holds --sgld-steps 0 or a seed of 2**41) resumes, on the command line, in
    Python and in a sweep's folder, since a resume may not change either; a new run with them is refused."""
    ckpt_path = tmp_path / "old" / "checkpoint.pt"
    Trainer(tiny_config.replace(iters=4), out_dir=ckpt_path.parent, progress=False, log=lambda *a: None).fit()
    ckpt = torch.load(ckpt_path, weights_only=True)
    ckpt["config"].update(sgld_steps=0, seed=2**41)
    torch.save(ckpt, ckpt_path)
    old = TrainConfig.from_dict(ckpt["config"])
    with pytest.raises(ConfigError, match="seed must be between"):
        old.validate()
    with pytest.raises(ConfigError, match="never moves the chains"):
        old.replace(seed=1).validate()
    assert old.validate(new_run=False) == old
    t = Trainer(old.replace(iters=6), resume=ckpt_path, progress=False, log=lambda *a: None)
    assert t.fit()["iteration"] == 6
    from fastjem.cli import main
    from fastjem.sweep import plan

    assert main(["train", "--resume", str(ckpt_path), "--iters", "8", "--no-progress"]) == 0

    # a sweep's run that exists continues; its new seeds are new runs
    folder = tmp_path / "sweep"
    (folder / "sgld_steps=0+seed=1").mkdir(parents=True)
    (folder / "sgld_steps=0+seed=1" / "checkpoint.pt").write_bytes(b"")
    assert len(plan(tiny_config, {"sgld_steps": [0]}, [1], folder)) == 1
    with pytest.raises(ConfigError, match=r"run sgld_steps=0\+seed=2: --sgld-steps 0 never moves the chains"):
        plan(tiny_config, {"sgld_steps": [0]}, [1, 2], folder)


def test_a_config_dict_with_an_unknown_key_is_refused():
    cfg = TrainConfig(preset="test").to_dict()
    assert TrainConfig.from_dict(cfg) == TrainConfig(preset="test")
    with pytest.raises(ConfigError, match="unknown config keys: sgld_step, typo"):
        TrainConfig.from_dict({**cfg, "typo": 1, "sgld_step": 2})


def test_a_config_dict_from_json_gets_tuples_and_stays_as_given():
    """A config read back from JSON holds lists: from_dict makes them the tuples a frozen config holds (equal to
    the config that was written, and hashable), without changing the caller's dict."""
    written = TrainConfig(decay_epochs=(30, 40), remedies=("lr",))
    d = json.loads(json.dumps(written.to_dict()))
    read = TrainConfig.from_dict(d)
    assert read == written and hash(read) == hash(written)
    assert d["decay_epochs"] == [30, 40] and d["remedies"] == ["lr"]


def test_python_spellings_of_an_option_become_the_types_a_config_file_holds(tmp_path):
    """1 for 1.0, NumPy numbers, a list for a tuple and a Path for a folder, as a Python caller writes them: taken as
    the types config.json records (a Path made config.json unwritable); any other type is refused (above)."""
    import numpy as np

    cfg = TrainConfig(lr=1, reinit_prob=np.float32(0.25), batch_size=np.int64(16), decay_epochs=[5, 7.5],
                      remedies=["lr"], data_dir=tmp_path).validate()
    assert [type(v) for v in (cfg.lr, cfg.reinit_prob, cfg.batch_size, cfg.decay_epochs, cfg.remedies,
                              cfg.data_dir)] == [float, float, int, tuple, tuple, str]
    assert (cfg.lr, cfg.reinit_prob, cfg.batch_size, cfg.decay_epochs, cfg.data_dir) == (
        1.0, 0.25, 16, (5, 7.5), str(tmp_path))
    assert TrainConfig.from_dict(json.loads(json.dumps(cfg.to_dict()))) == cfg
    # and inside a tuple: NumPy numbers as Python's (they were refused as "not a tuple of numbers")
    epochs = TrainConfig(decay_epochs=(np.int64(50), np.float64(75.5))).validate().decay_epochs
    assert epochs == (50, 75.5) and [type(e) for e in epochs] == [int, float]


def test_the_trainer_checks_its_config_before_any_work(tiny_config, tmp_path):
    with pytest.raises(ConfigError, match="Trainer takes a TrainConfig, got a dict: TrainConfig"):
        Trainer(tiny_config.to_dict(), out_dir=tmp_path / "a", progress=False)
    with pytest.raises(ConfigError, match="--data-dir must be str"):  # (a TypeError of pathlib's)
        Trainer(tiny_config.replace(data_dir=3), out_dir=tmp_path / "b", progress=False)
    assert list(tmp_path.iterdir()) == []


def test_a_warm_up_longer_than_the_run_is_said_at_its_start(tiny_config, tmp_path):
    """The learning rate never reaches --lr: the run trains at a fraction of it, which the log says."""
    lines = []
    Trainer(tiny_config.replace(iters=2, warmup_iters=8), out_dir=tmp_path / "long", progress=False,
            log=lines.append).fit()
    assert ("warning: --warmup-iters 8 is longer than the run (2 iterations): the learning rate reaches only 0.00025 "
            "of --lr 0.001; give --warmup-iters at most 2 (0 for none), or a longer run") in lines
    lines.clear()
    Trainer(tiny_config.replace(iters=2, warmup_iters=2), out_dir=tmp_path / "fits", progress=False,
            log=lines.append).fit()
    assert lines and not any("warmup" in line for line in lines)


def test_a_run_resumed_at_iteration_0_says_so_and_is_not_warned_again(tiny_config, tmp_path):
    """A checkpoint of iteration 0 (a run stopped, or rolled back, at its start) resumes as any other: the log says
    where, and the warm-up warning of its start (whose --warmup-iters a resume cannot change) is not said again."""
    cfg = tiny_config.replace(iters=2, warmup_iters=8)
    first = Trainer(cfg, out_dir=tmp_path, progress=False, log=lambda *a: None)
    ckpt = first.save_checkpoint()  # what a stop at the start leaves
    lines = []
    Trainer(resume_config(ckpt), resume=ckpt, progress=False, log=lines.append).fit()
    assert lines[0].endswith("2 iterations (78 per epoch), resuming at iteration 0"), lines[0]
    assert not any("warmup" in line for line in lines), lines


def test_the_start_of_a_run_states_its_schedule_in_iterations(tiny_config, tmp_path):
    """--decay-epochs count epochs, whose length follows the batch size and the dataset: the log's start gives the
    schedule in iterations and names the decays the run never reaches (a line, not a warning: short runs are
    common). What it says is what the run does: the rate logged after the stated iteration is decayed."""
    from fastjem.train import schedule_description

    quick = get_preset("quick")
    assert schedule_description(quick, 1257 // 64, 800) == (
        "schedule: learning rate 0.001, reached by a linear warm-up at iteration 100; x0.3 after iterations 570 "
        "(epoch 30) and 722 (epoch 38)")
    assert schedule_description(quick.replace(batch_size=48), 1257 // 48, 800).endswith(
        "; x0.3 after iteration 780 (epoch 30); x0.3 after iteration 988 (epoch 38) never reached: past the run's end "
        "(iteration 800; an epoch is 26 iterations at --batch-size 48)")
    assert schedule_description(quick.replace(decay_epochs=(), warmup_iters=0), 19, 800) == (
        "schedule: learning rate 0.001; no decay")
    lines = []
    cfg = tiny_config.replace(decay_epochs=(1, 0.1))  # 78 iterations an epoch: 8 and 78
    Trainer(cfg, out_dir=tmp_path, progress=False, log=lines.append).fit()
    [line] = [line for line in lines if line.startswith("schedule: ")]
    assert line == ("schedule: learning rate 0.001, reached by a linear warm-up at iteration 5; x0.3 after iteration 8 "
                    "(epoch 0.1); x0.3 after iteration 78 (epoch 1) never reached: past the run's end (iteration 12; "
                    "an epoch is 78 iterations at --batch-size 16)")
    assert not any(line.startswith("warning:") for line in lines)
    records = [json.loads(s) for s in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert {r["iter"]: r["lr"] for r in records if "lr" in r} == pytest.approx({4: 8e-4, 8: 1e-3, 12: 3e-4})
    # a run whose guard halved its rate (a resumed one keeps its remedies) says so too
    lines.clear()
    t = Trainer(cfg.replace(iters=2), out_dir=tmp_path / "halved", progress=False, log=lines.append)
    t.recovery.lr_scale = 0.5
    t.fit()
    assert any(line.startswith("schedule: ") and line.endswith("; x0.5 after the guard's recoveries") for line in lines)


@pytest.mark.filterwarnings("ignore:.*have no training images once")  # (most of digits held out)
def test_a_batch_larger_than_the_training_set_is_warned_of(tiny_config, tmp_path):
    """Batches are drawn with replacement: --batch-size 1000000 on digits ran, slowly and in gigabytes, each batch
    the same 1257 images over and over, an epoch 1 iteration. The start says so, naming the training set's size."""
    lines = []
    cfg = tiny_config.replace(iters=1, val_size=1430)  # 7 of the 1437 training images left, batch 16
    Trainer(cfg, out_dir=tmp_path / "a", progress=False, log=lines.append).fit()
    assert ("warning: --batch-size 16 is larger than the training set (7 images, 1430 held out for validation): "
            "batches are drawn with replacement, so a batch holds each image 2.29 times on average (and costs that "
            "many times the memory and time of a batch of 7), and an epoch (for --epochs and --decay-epochs) is 1 "
            "iteration; give --batch-size at most 7 (the paper's is 64)") in lines
    # a batch of the whole set (and the usual batch) is no warning
    for out, changes in (("b", {"val_size": 1421}), ("c", {"val_size": -1})):
        lines.clear()
        Trainer(cfg.replace(**changes), out_dir=tmp_path / out, progress=False, log=lines.append).fit()
        assert not any(line.startswith("warning: --batch-size") for line in lines), out


def test_compile_takes_a_boolean_from_python():
    assert TrainConfig(compile=True).validate().compile == "on"
    assert TrainConfig(compile=False).validate().compile == "off"


def test_presets_validate():
    for cfg in PRESETS.values():
        cfg.validate()
    paper = PRESETS["paper"]
    assert (paper.arch, paper.depth, paper.width, paper.lr, paper.sgld_steps, paper.buffer_size) == (
        "wrn", 28, 10, 1e-4, 20, 10000)
    assert get_preset("paper") is paper and paper.model_name == "WRN-28-10"
    assert PRESETS["quick"].model_name == "ConvNet(width 16)"
    with pytest.raises(ConfigError, match="unknown preset 'papers'; choose one of: quick, paper"):
        get_preset("papers")

    # the rest of the paper's Table 4: warm-up, decay, SGLD step size and noise, reinitialisation, epochs, batch
    assert (paper.warmup_iters, paper.decay_epochs, paper.decay_rate, paper.sgld_step_size, paper.sgld_noise,
            paper.reinit_prob, paper.epochs, paper.batch_size, paper.norm, paper.dropout) == (
        1000, (50, 100), 0.3, 1.0, 0.01, 0.05, 150.0, 64, "none", 0.0)
    # the quick preset and a bare TrainConfig take the same SGLD defaults
    for cfg in (PRESETS["quick"], TrainConfig()):
        assert (cfg.sgld_step_size, cfg.sgld_noise, cfg.reinit_prob) == (1.0, 0.01, 0.05)


@pytest.mark.parametrize("weights,generative", [((1.0, 0.0), True), ((0.0, 1.0), True), ((0.0, 0.0), False)])
def test_a_run_samples_when_a_generative_term_has_weight(weights, generative):
    px_weight, pxy_weight = weights
    assert TrainConfig(px_weight=px_weight, pxy_weight=pxy_weight).generative is generative


def test_a_bare_config_trains_jem_on_the_fast_paths_with_the_guard_on():
    """What a run gets for every option it does not set (a preset sets only some): JEM's objective and data
    handling, the engine's fast paths (graphs, fused forward, cast-once weights, automatic parts; the data-gradient
    overlap is opt-in), the guard on with the README's numbers (snapshots every 250 iterations, on the checkpoints
    every 500), and the run-level defaults `fastjem train --help` prints."""
    d = TrainConfig().to_dict()

    def of(*names):
        return tuple(d[n] for n in names)

    assert of("px_weight", "pyx_weight", "pxy_weight", "energy_l2", "class_cond_px", "buffer_init") == (
        1.0, 1.0, 0.0, 0.0, False, "uniform")
    assert of("optimizer", "momentum", "weight_decay", "iters", "arch", "norm", "dropout", "init_weights") == (
        "adam", 0.9, 0.0, -1, "wrn", "none", 0.0, "")
    assert of("dataset", "download", "image_size", "val_size", "labels_per_class", "augment", "data_noise",
              "test_noise") == ("digits", False, 0, -1, -1, True, 0.03, 0.0)
    assert of("precision", "compile", "kernels", "cuda_graph", "iteration_graph", "fused_forward", "overlap_data",
              "cast_weights_once", "sgld_parts", "cpu_malloc") == (
        "auto", "auto", "auto", True, True, True, False, True, 0, True)
    assert of("guard", "check_every", "snapshot_every", "max_recoveries", "energy_bound", "gap_bound",
              "buffer_margin", "remedies") == (True, 25, 250, 3, 1e4, 1e4, 100.0, ("sgld_steps", "lr", "energy_l2"))
    assert of("seed", "device", "log_every", "eval_every", "ckpt_every", "sample_every", "max_minutes",
              "ckpt_keep_every", "tensorboard", "keep_best", "preset") == (
        1, "auto", 25, 0, 500, 0, 0.0, 0, False, True, "custom")


def test_init_weights_starts_a_new_run_from_another_runs_network(tiny_config, tmp_path):
    base = Trainer(tiny_config.replace(iters=6, px_weight=0.0), out_dir=tmp_path / "base", progress=False)
    base.fit()
    cfg = tiny_config.replace(iters=2, init_weights=str(tmp_path / "base"))
    jem = Trainer(cfg, out_dir=tmp_path / "jem", progress=False)
    # the network starts where the baseline ended; optimiser and iteration start fresh
    assert torch.equal(params(jem.model), params(base.model))
    assert jem.iteration == 0 and not jem.optimizer.state
    fresh = Trainer(tiny_config.replace(iters=2), out_dir=tmp_path / "fresh", progress=False)
    assert not torch.equal(params(fresh.model), params(base.model))
    jem.fit()
    # resuming the fine-tuned run restores its own state, not the initial weights again
    resumed = Trainer(resume_config(tmp_path / "jem", {"iters": 3}), resume=tmp_path / "jem", progress=False)
    assert torch.equal(params(resumed.model), params(jem.model))


def test_init_weights_from_another_architecture_is_refused(tiny_config, tmp_path):
    Trainer(tiny_config.replace(iters=1), out_dir=tmp_path / "base", progress=False).fit()
    with pytest.raises(ConfigError, match="width differ"):
        Trainer(tiny_config.replace(width=16, init_weights=str(tmp_path / "base")), out_dir=tmp_path / "b",
                progress=False)
    with pytest.raises(CheckpointError, match="does not exist"):
        Trainer(tiny_config.replace(init_weights=str(tmp_path / "nothing.pt")), out_dir=tmp_path / "c",
                progress=False)


def test_init_weights_refusals_say_what_makes_them_fit_and_compare_images_as_loaded(tiny_config, tmp_path):
    """--init-weights of another network names the options that build it (following that advice works); the
    images it learnt are compared as loaded, not as the --image-size option: the same 8x8 folder given as
    --image-size 8 was refused ("image_size differ") and two folders of other sizes, both at --image-size 0, were
    accepted; a 1-channel network's weights on 3-channel images stopped at "Error(s) in loading state_dict for
    ConvNet:", which says nothing of why."""
    import numpy as np
    from PIL import Image

    quiet = {"progress": False, "log": lambda *a: None}
    Trainer(tiny_config.replace(iters=1), out_dir=tmp_path / "base", **quiet).fit()
    base = str(tmp_path / "base")
    with pytest.raises(ConfigError, match="width differ.*give --width 8 to build its network"):
        Trainer(tiny_config.replace(width=16, depth=10, init_weights=base), out_dir=tmp_path / "b", **quiet)
    # the advice followed (a ConvNet has no depth: the --depth given does not matter)
    Trainer(tiny_config.replace(width=8, depth=10, init_weights=base), out_dir=tmp_path / "b", **quiet)

    for c in ("a", "b"):
        (tmp_path / "imgs" / c).mkdir(parents=True)
        for i in range(6):
            Image.fromarray(np.full((8, 8, 3), 30 * i, np.uint8)).save(tmp_path / "imgs" / c / f"{i}.png")
    folder = tiny_config.replace(dataset="imagefolder", data_dir=str(tmp_path / "imgs"), buffer_size=48)
    with pytest.raises(ConfigError, match=r"trained on 1-channel 8x8 images of 10 classes, and this run's data holds "
                                          r"3-channel 8x8 images of 2 classes"):
        Trainer(folder.replace(init_weights=base), out_dir=tmp_path / "c", **quiet)
    Trainer(folder.replace(iters=1), out_dir=tmp_path / "native", **quiet).fit()
    native = str(tmp_path / "native")
    Trainer(folder.replace(image_size=8, init_weights=native), out_dir=tmp_path / "d", **quiet)  # the same images
    with pytest.raises(ConfigError, match=r"8x8 images of 2 classes, and this run's data holds 3-channel 6x6 "
                                          r"images of 2 classes: give data like its own \(--image-size 8 resizes"):
        Trainer(folder.replace(image_size=6, init_weights=native), out_dir=tmp_path / "e", **quiet)


def _records(folder):
    """metrics.jsonl without its timing fields (the only ones a resumed run may log differently)."""
    out = []
    for line in (folder / "metrics.jsonl").read_text().splitlines():
        r = json.loads(line)
        out.append({k: v for k, v in r.items() if k not in ("it_per_s", "time", "seconds")})
    return out


def test_a_stop_between_log_lines_resumes_the_same_records(tiny_config, tmp_path):
    """The metric sums of the window under way are in the checkpoint: a run stopped at 1 (its time limit; log every
    4) and resumed logs the line at 4 the uninterrupted run logs; records a dead attempt left past the checkpoint
    are dropped."""
    whole = Trainer(tiny_config, out_dir=tmp_path / "whole", progress=False, log=lambda *a: None)
    whole.fit()
    part = Trainer(tiny_config.replace(max_minutes=1e-9), out_dir=tmp_path / "part", progress=False,
                   log=lambda *a: None)
    assert part.fit()["iteration"] == 1
    with open(tmp_path / "part" / "metrics.jsonl", "a") as f:
        f.write(json.dumps({"iter": 3, "loss": 99.0}) + "\n")  # logged by an attempt that died at 3
        f.write('{"iter": 3, "lo')  # and cut short mid-write (a kill, a full disk): the next record would join it
    resumed = Trainer(resume_config(tmp_path / "part" / "checkpoint.pt", {"max_minutes": 0.0}),
                      resume=tmp_path / "part", progress=False, log=lambda *a: None)
    resumed.fit()
    train = [r for r in _records(tmp_path / "whole") if "loss" in r]
    assert [r["iter"] for r in train] == [4, 8, 12]
    assert [r for r in _records(tmp_path / "part") if "loss" in r] == train
    # a finished run resumed at its end finishes again: its end-of-run record is not doubled
    Trainer(resume_config(tmp_path / "part" / "checkpoint.pt"), resume=tmp_path / "part", progress=False,
            log=lambda *a: None).fit()
    ends = [r["iter"] for r in _records(tmp_path / "part") if "test_acc" in r]
    assert ends == [r["iter"] for r in _records(tmp_path / "whole") if "test_acc" in r] == [12]
    # a record cut short right after the checkpoint's last one (no record past the checkpoint before it) goes too
    cut = Trainer(tiny_config.replace(max_minutes=1e-9), out_dir=tmp_path / "cut", progress=False, log=lambda *a: None)
    assert cut.fit()["iteration"] == 1
    with open(tmp_path / "cut" / "metrics.jsonl", "a") as f:
        f.write('{"iter": 3, "lo')
    Trainer(resume_config(tmp_path / "cut" / "checkpoint.pt", {"max_minutes": 0.0}), resume=tmp_path / "cut",
            progress=False, log=lambda *a: None).fit()
    assert _records(tmp_path / "cut") == _records(tmp_path / "part")


def test_resume_is_refused_when_it_would_not_train_or_mix_runs(tiny_config, tmp_path):
    quiet = {"progress": False, "log": lambda *a: None}
    Trainer(tiny_config.replace(iters=4, ckpt_keep_every=2), out_dir=tmp_path / "run", **quiet).fit()
    ckpt = tmp_path / "run" / "checkpoint.pt"
    with pytest.raises(ConfigError, match="at iteration 4, and this run is 3 iterations long"):
        Trainer(resume_config(ckpt, {"iters": 3}), resume=ckpt, **quiet)
    # at its end exactly (a kill between the last checkpoint and summary.json): the run finishes again
    (tmp_path / "run" / "summary.json").unlink()
    assert Trainer(resume_config(ckpt), resume=ckpt, **quiet).fit()["iteration"] == 4
    assert (tmp_path / "run" / "summary.json").exists()
    with pytest.raises(CheckpointError, match="overrides --epochs"):
        resume_config(ckpt, {"epochs": 5.0})
    kept = tmp_path / "run" / "checkpoints" / "iter_0000002.pt"
    assert kept.exists()
    with pytest.raises(ConfigError, match="kept checkpoint of the run"):
        Trainer(resume_config(kept, {"iters": 6}), resume=kept, **quiet)
    # so it is when the run's checkpoint.pt is gone (a damaged one removed): it continued inside checkpoints/
    ckpt.rename(tmp_path / "latest.pt")
    with pytest.raises(ConfigError, match="kept checkpoint of the run"):
        Trainer(resume_config(kept, {"iters": 6}), resume=kept, **quiet)
    assert sorted(p.name for p in kept.parent.iterdir()) == ["iter_0000002.pt", "iter_0000004.pt"]
    (tmp_path / "latest.pt").rename(ckpt)
    Trainer(resume_config(kept, {"iters": 6}), out_dir=tmp_path / "branch", resume=kept, **quiet).fit()
    assert load_checkpoint(tmp_path / "branch")["iteration"] == 6
    # a run written by two processes (its buffer and RNG states are per rank) resumes only on two
    two = torch.load(ckpt, weights_only=False)
    two["world_size"] = 2
    torch.save(two, tmp_path / "two.pt")
    with pytest.raises(CheckpointError, match=r"written by 2 process\(es\); .*--nproc-per-node 2\), not 1"):
        Trainer(resume_config(tmp_path / "two.pt", {"iters": 6}), out_dir=tmp_path / "two", resume=tmp_path / "two.pt",
                **quiet)


def test_a_global_batch_or_buffer_that_the_processes_cannot_share_is_refused(tiny_config, tmp_path, monkeypatch):
    """Each of the world's processes takes batch / world rows and buffer / world chains: sizes that do not divide
    are refused before any work, naming both and the world size."""
    import fastjem.train as train_mod
    from fastjem.distributed import DistInfo

    monkeypatch.setattr(train_mod, "init_from_env", lambda device: DistInfo(0, 2, 0))
    for change in ({"batch_size": 5}, {"buffer_size": 33}):
        with pytest.raises(ConfigError, match=r"with 2 processes, --batch-size \(.*\) must be divisible by 2"):
            Trainer(tiny_config.replace(**change), out_dir=tmp_path / "run", progress=False)
        assert not (tmp_path / "run").exists()


def test_fault_injection_takes_only_the_faults_it_knows(tiny_config, tmp_path):
    with pytest.raises(ValueError, match="fault kind must be 'nan' or 'lr'"):
        Trainer(tiny_config, out_dir=tmp_path / "run", progress=False).inject_fault(3, "inf")
    assert not (tmp_path / "run" / "checkpoints" / "checkpoint.pt").exists()


def test_a_folder_in_use_by_another_run_is_refused(tiny_config, tmp_path):
    import fcntl

    (tmp_path / "run").mkdir()
    with open(tmp_path / "run" / ".lock", "a+") as held:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        held.write("pid 12345")
        held.flush()
        t = Trainer(tiny_config.replace(iters=2), out_dir=tmp_path / "run", progress=False, log=lambda *a: None)
        with pytest.raises(ConfigError, match=r"in use by another fastjem run \(pid 12345\)"):
            t.fit()
        assert sorted(p.name for p in (tmp_path / "run").iterdir()) == [".lock"]  # nothing written
    t.fit()  # released: the run goes ahead
    assert load_checkpoint(tmp_path / "run")["iteration"] == 2


@pytest.mark.parametrize("written", ["metrics.jsonl", "checkpoint.pt"])
def test_a_new_run_into_a_folder_whose_run_still_trains_says_it_is_in_use(tiny_config, tmp_path, written):
    """Not that its run stopped before its first checkpoint (remove the folder) or is one to --resume."""
    import fcntl

    (tmp_path / "run").mkdir()
    (tmp_path / "run" / written).write_text("")
    with open(tmp_path / "run" / ".lock", "a+") as held:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        held.write("pid 12345")
        held.flush()
        with pytest.raises(ConfigError, match=r"in use by another fastjem run \(pid 12345\)"):
            Trainer(tiny_config.replace(iters=2), out_dir=tmp_path / "run", progress=False, log=lambda *a: None)
    with pytest.raises(ConfigError, match="stopped before its first checkpoint|already holds a run"):
        Trainer(tiny_config.replace(iters=2), out_dir=tmp_path / "run", progress=False, log=lambda *a: None)


def test_the_logged_learning_rate_is_the_one_used_after_a_remedy(tiny_config, tmp_path):
    from fastjem.guard import RecoveryState

    t = Trainer(tiny_config.replace(iters=4, warmup_iters=0), out_dir=tmp_path, progress=False, log=lambda *a: None)
    t.recovery = RecoveryState(sgld_steps=t.cfg.sgld_steps, energy_l2=0.0, lr_scale=0.25)
    t.fit()
    assert [r["lr"] for r in _records(tmp_path) if "lr" in r] == [pytest.approx(0.25 * tiny_config.lr)]
    assert t.optimizer.param_groups[0]["lr"] == pytest.approx(0.25 * tiny_config.lr)


def test_a_checkpoint_from_another_kind_of_device_resumes_with_a_note(tiny_config, tmp_path):
    """A CUDA generator's state does not load into a CPU generator (nor back): the data is drawn from a new seed."""
    Trainer(tiny_config.replace(iters=2), out_dir=tmp_path / "run", progress=False, log=lambda *a: None).fit()
    ckpt = torch.load(tmp_path / "run" / "checkpoint.pt", weights_only=False)
    ckpt["data_rng"] = torch.zeros(16, dtype=torch.uint8)  # the size of a CUDA generator's state
    torch.save(ckpt, tmp_path / "run" / "checkpoint.pt")
    said = []
    t = Trainer(resume_config(tmp_path / "run", {"iters": 4}), resume=tmp_path / "run", progress=False,
                log=lambda *a: said.append(" ".join(map(str, a))))
    # the new seed is the same on every rank (iteration 2's): the ranks' batches still partition the data
    reseeded = torch.Generator().manual_seed(tiny_config.seed + 1_000_003 * 3)
    assert torch.equal(t.data_gen.get_state(), reseeded.get_state())
    t.fit()
    assert t.iteration == 4 and any("another kind of device" in line for line in said)


def test_the_energy_penalty_reaches_a_run_whose_only_generative_term_is_pxy(tiny_config, tmp_path):
    cfg = tiny_config.replace(px_weight=0.0, pxy_weight=1.0, iters=1)
    parts = {}
    for l2 in (0.0, 5.0):
        t = Trainer(cfg.replace(energy_l2=l2), out_dir=tmp_path / f"l2-{l2}", progress=False, log=lambda *a: None)
        torch.manual_seed(0)
        x_p, x_lab, y_lab = t.data.draw(cfg.batch_size, t.data_gen, t.shard)
        loss, parts[l2] = t.loss(x_p, x_lab, y_lab)
    # the energies the guard bounds are the p(x, y) term's, and the penalty is 5 (E_lab^2 + E_q^2) on top
    assert "e_data" in parts[0.0] and "e_sample" in parts[0.0]
    penalty = 5.0 * (parts[0.0]["e_data"] ** 2 + parts[0.0]["e_sample"] ** 2)
    assert float(parts[5.0]["loss"] - parts[0.0]["loss"]) >= float(penalty) * 0.999 > 0


def test_a_run_whose_only_generative_term_is_pxy_samples_as_a_jem(tiny_config, tmp_path):
    """p(x, y) alone still samples (class-conditional SGLD): the run keeps a replay buffer, draws its samples at the
    end and is listed as a JEM, not as the classifier-only baseline."""
    from fastjem.runs import run_row

    cfg = tiny_config.replace(px_weight=0.0, pxy_weight=1.0, iters=2)
    assert cfg.generative and not cfg.replace(pxy_weight=0.0).generative
    said = []
    t = Trainer(cfg, out_dir=tmp_path / "pxy", progress=False, log=said.append)
    t.fit()
    assert t.buffer is not None and (tmp_path / "pxy" / "samples.png").is_file()
    assert not any("classifier only" in line for line in said)
    assert run_row(tmp_path / "pxy")["kind"] == "JEM"


def test_files_written_whole_get_the_mode_an_ordinary_write_gives(tmp_path):
    """Checkpoints and reports go through a temporary file that mkstemp makes private (0600): the file it becomes
    takes the umask's mode, so a shared run folder stays readable as the user's umask says."""
    import os
    import stat

    from fastjem.checkpoint import atomic_save, atomic_write_text

    old = os.umask(0o027)
    try:
        atomic_write_text("{}", tmp_path / "config.json")
        atomic_save({"a": torch.zeros(2)}, tmp_path / "checkpoint.pt")
    finally:
        os.umask(old)
    for name in ("config.json", "checkpoint.pt"):
        assert stat.S_IMODE((tmp_path / name).stat().st_mode) == 0o640, name


def test_a_finished_run_extended_keeps_its_best_and_its_last_validation(tiny_config, tmp_path):
    """best.pt chosen at the last iteration is named by checkpoint.pt too (written before that validation), and a
    run extended from it (a larger --iters) keeps the end record of its first length, a validation point."""
    quiet = {"progress": False, "log": lambda *a: None}
    cfg = tiny_config.replace(iters=4, eval_every=1000)  # one validation: at the end, which makes best.pt
    Trainer(cfg, out_dir=tmp_path / "run", **quiet).fit()
    assert load_checkpoint(tmp_path / "run" / "best.pt")["iteration"] == 4
    assert load_checkpoint(tmp_path / "run" / "checkpoint.pt")["best"]["iter"] == 4
    ckpt = tmp_path / "run" / "checkpoint.pt"
    extended = Trainer(resume_config(ckpt, {"iters": 6}), resume=ckpt, **quiet)
    assert extended.best["iter"] == 4
    extended.fit()
    vals = [r["iter"] for r in _records(tmp_path / "run") if "val_acc" in r]
    assert vals == [4, 6]


def test_a_resume_on_renamed_classes_is_refused_and_the_data_folder_is_recorded_absolute(tmp_path, monkeypatch):
    """Resumed on a folder whose class folders have other names (as many), the run would go on with labels that
    mean other classes and write the new names into its checkpoint; it is refused. A relative --data-dir is
    recorded as an absolute path, so that eval or a resume from another folder reads the same data."""
    from fastjem.config import TrainConfig

    monkeypatch.setenv("FASTJEM_CACHE", str(tmp_path / "cache"))
    image_folder(tmp_path / "imgs", per_class=12, noise=True)
    monkeypatch.chdir(tmp_path)
    cfg = TrainConfig(dataset="imagefolder", data_dir="imgs", arch="convnet", width=4, batch_size=4, sgld_steps=1,
                      buffer_size=20, iters=2, device="cpu", compile="off", val_size=0)
    Trainer(cfg, out_dir=tmp_path / "run", progress=False, log=lambda *a: None).fit()
    saved = json.loads((tmp_path / "run" / "config.json").read_text())
    assert saved["data_dir"] == str(tmp_path / "imgs")
    (tmp_path / "imgs" / "cat").rename(tmp_path / "imgs" / "kitty")
    with pytest.raises(ConfigError, match="was trained on the classes cat, dog, but .* holds dog, kitty"):
        Trainer(cfg.replace(iters=4), resume=tmp_path / "run" / "checkpoint.pt", progress=False)


def test_a_resume_on_a_folder_whose_images_changed_is_refused(tmp_path, monkeypatch):
    """The validation split and the labelled subset are drawn over the folder's image list: resumed after an image
    was added, removed or swapped for another of the same class, the run redrew them without a word (images it had
    trained on became validation images). It is refused, saying what to do; the same folder moved elsewhere resumes,
    as does data given in Python only when it is the same."""
    import shutil

    from fastjem.config import TrainConfig
    from fastjem.data import load_arrays

    monkeypatch.setenv("FASTJEM_CACHE", str(tmp_path / "cache"))
    image_folder(tmp_path / "imgs", per_class=12, noise=True)
    quiet = {"progress": False, "log": lambda *a: None}
    cfg = TrainConfig(dataset="imagefolder", data_dir=str(tmp_path / "imgs"), arch="convnet", width=4, batch_size=4,
                      sgld_steps=1, buffer_size=20, iters=2, device="cpu", compile="off", val_size=4)
    Trainer(cfg, out_dir=tmp_path / "run", **quiet).fit()
    ckpt = tmp_path / "run" / "checkpoint.pt"
    shutil.copytree(tmp_path / "imgs", tmp_path / "moved")
    Trainer(cfg.replace(iters=3, data_dir=str(tmp_path / "moved")), resume=ckpt, **quiet).fit()  # the same images
    before = ckpt.read_bytes()
    shutil.copy(tmp_path / "imgs" / "cat" / "0.png", tmp_path / "imgs" / "cat" / "05.png")  # one added
    with pytest.raises(ConfigError, match=r"trained on 21 training and 3 test images; .* now holds 22 training and 3 "
                                          r"test images: .*\(--init-weights"):
        Trainer(cfg.replace(iters=4), resume=ckpt, **quiet)
    (tmp_path / "imgs" / "cat" / "7.png").unlink()  # and one removed: as many, in the same class
    with pytest.raises(ConfigError, match="now holds as many images, but other files or labels"):
        Trainer(cfg.replace(iters=4), resume=ckpt, **quiet)
    assert ckpt.read_bytes() == before  # nothing saved is lost
    # data given in Python: the same arrays resume, others are refused
    arrays = load_arrays("imagefolder", tmp_path / "moved", progress=False)
    Trainer(cfg.replace(dataset="digits", data_dir=""), data=arrays, out_dir=tmp_path / "py", **quiet).fit()
    py = tmp_path / "py" / "checkpoint.pt"
    Trainer(cfg.replace(dataset="digits", data_dir="", iters=3), data=arrays, resume=py, **quiet).fit()
    arrays.train_y = arrays.train_y.flip(0)
    with pytest.raises(ConfigError, match="data= now holds as many images, but other files or labels"):
        Trainer(cfg.replace(dataset="digits", data_dir="", iters=4), data=arrays, resume=py, **quiet)


def test_a_resume_after_only_the_test_images_changed_continues(tmp_path, monkeypatch):
    """The validation split and the labelled subset are drawn over the training images alone: a resume on a folder
    whose test/ gained, lost or renamed an image was refused as if they would be drawn anew ("mixing images it
    trained on into them", a false reason), and the run could only restart with --init-weights. It continues; a
    training image moved into test/ is still refused, and a checkpoint that recorded the digest of both splits
    (before this) is still checked against both."""
    import shutil

    import numpy as np
    from PIL import Image

    from fastjem.config import TrainConfig

    monkeypatch.setenv("FASTJEM_CACHE", str(tmp_path / "cache"))
    rng = np.random.default_rng(0)
    for split, n in (("train", 8), ("test", 3)):
        for c in ("cat", "dog"):
            (tmp_path / "imgs" / split / c).mkdir(parents=True)
            for i in range(n):
                Image.fromarray(rng.integers(0, 255, (8, 8, 3), dtype=np.uint8)).save(
                    tmp_path / "imgs" / split / c / f"{split}{i}.png")
    quiet = {"progress": False, "log": lambda *a: None}
    cfg = TrainConfig(dataset="imagefolder", data_dir=str(tmp_path / "imgs"), arch="convnet", width=4, batch_size=4,
                      sgld_steps=1, buffer_size=20, iters=1, device="cpu", compile="off", val_size=4)
    Trainer(cfg, out_dir=tmp_path / "run", **quiet).fit()
    ckpt = tmp_path / "run" / "checkpoint.pt"
    test = tmp_path / "imgs" / "test"
    shutil.copy(test / "cat" / "test0.png", test / "cat" / "new.png")  # a test image added, one renamed
    (test / "dog" / "test0.png").rename(test / "dog" / "renamed.png")
    Trainer(cfg.replace(iters=2), resume=ckpt, **quiet).fit()
    shutil.move(tmp_path / "imgs" / "train" / "cat" / "train0.png", test / "cat" / "train0.png")
    with pytest.raises(ConfigError, match=r"trained on 16 training and 7 test images; .* now holds 15 training and 8 "
                                          r"test images"):
        Trainer(cfg.replace(iters=3), resume=ckpt, **quiet)
    shutil.move(test / "cat" / "train0.png", tmp_path / "imgs" / "train" / "cat" / "train0.png")
    (tmp_path / "imgs" / "train" / "cat" / "train1.png").rename(tmp_path / "imgs" / "train" / "cat" / "renamed.png")
    with pytest.raises(ConfigError, match=r"now holds as many images, but other files or labels"):
        Trainer(cfg.replace(iters=3), resume=ckpt, **quiet)


def test_a_resume_refuses_every_option_that_changes_what_is_computed(tiny_config, tmp_path):
    from fastjem.errors import CheckpointError

    Trainer(tiny_config.replace(iters=1), out_dir=tmp_path / "run", progress=False, log=lambda *a: None).fit()
    ckpt = tmp_path / "run" / "checkpoint.pt"
    for option, value in (("lr", 5e-3), ("sgld_steps", 7), ("sgld_noise", 0.05), ("seed", 9), ("batch_size", 8),
                          ("px_weight", 0.5), ("decay_rate", 0.5), ("reinit_prob", 0.5),
                          ("buffer_init", "informative")):
        with pytest.raises(CheckpointError, match=f"cannot change --{option.replace('_', '-')} "):
            resume_config(ckpt, {option: value})
    assert resume_config(ckpt, {"log_every": 1, "iters": 5}).iters == 5  # how, not what: allowed


def test_a_resume_in_python_refuses_a_config_that_changes_what_is_computed(tiny_config, tmp_path):
    """Trainer(cfg, resume=...) checks the config given as resume_config checks the command line's options: a changed
    learning rate or SGLD length was taken silently (the sampler kept the saved steps while config.json recorded the
    new ones)."""
    quiet = {"progress": False, "log": lambda *a: None}
    Trainer(tiny_config.replace(iters=1), out_dir=tmp_path / "run", **quiet).fit()
    ckpt = tmp_path / "run" / "checkpoint.pt"
    for option, value in (("lr", 5e-3), ("sgld_steps", 7), ("seed", 9), ("preset", "quick")):
        with pytest.raises(CheckpointError, match=f"cannot change --{option.replace('_', '-')} .*resume_config"):
            Trainer(tiny_config.replace(iters=2, **{option: value}), resume=ckpt, **quiet)
    # how, not what: allowed, and the same config as resume_config gives
    t = Trainer(tiny_config.replace(iters=2, log_every=1), resume=ckpt, **quiet)
    assert t.cfg == resume_config(ckpt, {"iters": 2, "log_every": 1})


def test_a_resume_refuses_the_options_the_run_would_not_read(tiny_config, tmp_path):
    """Of the options a resume may change, those the run never reads are refused as a new run's are, with what a
    resume can do: --eval-every beside the run's --val-size 0 (the held-out split is fixed at the start) validated
    nothing, silently; --data-dir beside digits read nothing and was recorded in config.json."""
    quiet = {"progress": False, "log": lambda *a: None}
    Trainer(tiny_config.replace(iters=1, val_size=0), out_dir=tmp_path / "run", **quiet).fit()
    ckpt = tmp_path / "run" / "checkpoint.pt"
    said = "--eval-every 2: this run was started with --val-size 0, .* a resume cannot change; drop --eval-every"
    with pytest.raises(CheckpointError, match=f"when resuming {ckpt}: {said}"):
        resume_config(ckpt, {"iters": 2, "eval_every": 2})
    with pytest.raises(CheckpointError, match=said):  # in Python too
        Trainer(tiny_config.replace(iters=2, val_size=0, eval_every=2), resume=ckpt, **quiet)
    with pytest.raises(CheckpointError, match="--data-dir .*: --dataset digits .* reads no files; this run trains on "
                                              "it: drop it; nothing was changed"):
        resume_config(ckpt, {"data_dir": str(tmp_path)})
    assert resume_config(ckpt, {"iters": 2, "eval_every": 0}).iters == 2
    # a run with a validation set takes --eval-every on a resume
    Trainer(tiny_config.replace(iters=1), out_dir=tmp_path / "val", **quiet).fit()
    assert resume_config(tmp_path / "val" / "checkpoint.pt", {"iters": 2, "eval_every": 2}).eval_every == 2


def test_the_iteration_graph_check_compares_vectors_by_cosine_and_norm_ratio():
    """_agreement(a, b): the cosine and |b| / |a| of two flattened states; equal for two empty or two zero
    vectors, infinite where only a is zero, undefined (nan) where their sizes differ. _flat joins tensors as fp32."""
    import math

    from fastjem.train import _agreement, _flat

    assert _agreement(torch.tensor([3.0, 4.0]), torch.tensor([6.0, 8.0])) == pytest.approx((1.0, 2.0))
    assert _agreement(torch.tensor([1.0, 0.0]), torch.tensor([0.0, 0.5])) == pytest.approx((0.0, 0.5))
    assert _agreement(torch.tensor([1.0, 1.0]), torch.tensor([-1.0, -1.0])) == pytest.approx((-1.0, 1.0))
    assert _agreement(torch.zeros(0), torch.zeros(0)) == (1.0, 1.0)
    assert _agreement(torch.zeros(3), torch.zeros(3)) == (1.0, 1.0)
    assert _agreement(torch.zeros(2), torch.tensor([1.0, 0.0]))[1] == math.inf
    assert all(math.isnan(v) for v in _agreement(torch.ones(2), torch.ones(3)))
    flat = _flat([torch.ones(2, 2, dtype=torch.bfloat16), torch.tensor([5.0])])
    assert flat.dtype == torch.float32 and flat.tolist() == [1.0, 1.0, 1.0, 1.0, 5.0]
    assert _flat([]).numel() == 0


def test_evaluate_is_noiseless_unless_asked_and_batches_do_not_change_it():
    """evaluate(model, x, y): accuracy and mean NLL of the clean images, in any batch size; noise only when given."""
    import torch.nn.functional as F

    from fastjem.data import to_float

    g = torch.Generator().manual_seed(0)
    x = torch.randint(0, 256, (23, 1, 4, 4), generator=g, dtype=torch.uint8)
    y = torch.randint(0, 3, (23,), generator=g)
    model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(16, 3))
    with torch.no_grad():
        logits = model(to_float(x))
    want = {"acc": (logits.argmax(1) == y).float().mean().item(), "nll": F.cross_entropy(logits, y).item(), "n": 23}
    for batch in (500, 7):
        got = evaluate(model, x, y, batch_size=batch)
        assert got["n"] == 23 and got["acc"] == pytest.approx(want["acc"]) and got["nll"] == pytest.approx(want["nll"])
    assert evaluate(model, x, y, noise=1.0)["nll"] != pytest.approx(want["nll"])


def test_each_log_record_holds_its_windows_speed_and_the_bar_counts_iterations(tiny_config, tmp_path, monkeypatch,
                                                                               capsys):
    """A metrics record every log_every iterations: it_per_s is the window's iterations over its time, not the run's
    (a clock that moves 0.25 s a step for 4 steps, then 0.5 s: 4 it/s, then 2, over windows of 2), and the progress
    bar counts one per iteration up to the total and shows the metrics."""
    import fastjem.train as train_mod

    clock = [1000.0]
    monkeypatch.setattr(train_mod.time, "perf_counter", lambda: clock[0])
    t = Trainer(tiny_config.replace(iters=8, log_every=2, eval_every=4), out_dir=tmp_path, progress=True)
    step = t.train_step

    def timed_step():
        clock[0] += 0.25 if t.iteration < 4 else 0.5
        return step()

    t.train_step = timed_step
    t.fit()
    logged = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    logged = [r for r in logged if "loss" in r]
    assert [r["iter"] for r in logged] == [2, 4, 6, 8]
    assert [r["it_per_s"] for r in logged] == pytest.approx([4.0, 4.0, 2.0, 2.0], rel=1e-9)
    out, err = capsys.readouterr()
    # each rendering of the bar counts k/8, k <= 8 (tqdm draws a count past its total as "16it [...]"), the last 8/8
    shown = re.findall(r"(\d+)(/8|it) \[", err)
    assert shown and all(unit == "/8" and int(k) <= 8 for k, unit in shown) and shown[-1] == ("8", "/8"), shown
    # the bar shows the last record's loss, accuracy and energy gap; a validation prints its line above the bar
    last = logged[-1]
    assert f"loss={last['loss']:.3f}" in err and f"gap={last['gap']:.3f}" in err
    assert "iter 4: val acc " in out
