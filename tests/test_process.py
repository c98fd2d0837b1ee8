"""fastjem as a library in one long-lived process (a notebook, a script training many models): a run's results do
not depend on what else the process did, and a run leaves the process's global state as it found it."""
import pytest
import torch

from fastjem.train import Trainer


def _quiet(*_parts):
    pass


def _params(trainer) -> list[torch.Tensor]:
    return [p.detach().clone() for p in trainer.model.parameters()] + [trainer.buffer.data.clone()]


def _same(a: list[torch.Tensor], b: list[torch.Tensor]) -> bool:
    return len(a) == len(b) and all(torch.equal(x, y) for x, y in zip(a, b))


def test_a_run_trains_the_same_whatever_the_process_drew_between_building_and_fitting(tiny_config, tmp_path):
    cfg = tiny_config.replace(iters=4)
    alone = Trainer(cfg, out_dir=tmp_path / "alone", progress=False, log=_quiet)
    alone.fit()
    # built, then another trainer built (another seed) and the user's own draws, then fit: the run must not change
    first = Trainer(cfg, out_dir=tmp_path / "first", progress=False, log=_quiet)
    Trainer(cfg.replace(seed=5), out_dir=tmp_path / "other", progress=False, log=_quiet)
    torch.rand(1000)
    first.fit()
    assert _same(_params(first), _params(alone))


def test_a_trainer_leaves_torchs_global_generator_as_it_found_it(tiny_config, tmp_path):
    torch.manual_seed(1234)
    before = torch.get_rng_state()
    trainer = Trainer(tiny_config.replace(iters=4), out_dir=tmp_path / "run", progress=False, log=_quiet)
    assert torch.equal(torch.get_rng_state(), before)
    trainer.fit()
    assert torch.equal(torch.get_rng_state(), before)
    trainer.sample(4)
    trainer.save_checkpoint()
    assert torch.equal(torch.get_rng_state(), before)


def test_steps_outside_fit_draw_from_the_runs_own_stream(tiny_config, tmp_path):
    """train_step called by hand, with the user's draws between steps, trains as fit() does; the checkpoint holds
    the run's RNG state, not the caller's. Class-conditional: the step draws the sampled classes itself, beyond
    the chain indices that sample() draws."""
    cfg = tiny_config.replace(iters=4, class_cond_px=True)
    by_fit = Trainer(cfg, out_dir=tmp_path / "fit", progress=False, log=_quiet)
    by_fit.fit()
    by_hand = Trainer(cfg, out_dir=tmp_path / "hand", progress=False, log=_quiet)
    for _ in range(4):
        torch.randn(100)
        by_hand.train_step()
    assert _same(_params(by_hand), _params(by_fit))
    assert torch.equal(by_hand.state_dict()["rng"]["torch"], by_fit.state_dict()["rng"]["torch"])


def test_draw_repeats_itself_and_leaves_torchs_global_generator_alone(tiny_config, tmp_path):
    from fastjem.eval import load_model
    from fastjem.eval.draw import draw

    run = Trainer(tiny_config.replace(iters=2), out_dir=tmp_path / "run", progress=False, log=_quiet).fit()
    em = load_model(run["checkpoint"], "cpu")
    torch.manual_seed(99)
    before = torch.get_rng_state()
    first = draw(em, n=4, n_steps=2, seed=7)
    assert torch.equal(torch.get_rng_state(), before)
    torch.rand(10)  # the caller's own draws between two calls change nothing of the second
    again = draw(em, n=4, n_steps=2, seed=7)
    assert torch.equal(first.x, again.x)
    assert not torch.equal(draw(em, n=4, n_steps=2, seed=8).x, first.x)


def test_eval_tasks_repeat_themselves_and_leave_torchs_global_generator_alone(tiny_config, tmp_path):
    """An eval task seeded torch's global generators with its --seed (torch.manual_seed) and left them so: a
    notebook's next draws depended on the evaluation it had run. Each task now draws inside a fork."""
    from fastjem.eval import tasks

    run = Trainer(tiny_config.replace(iters=2), out_dir=tmp_path / "run", progress=False, log=_quiet).fit()
    common = {"device": "cpu", "progress": False, "n_test": 32, "test_noise": 0.1, "seed": 3}
    torch.manual_seed(99)
    before = torch.get_rng_state()
    first = tasks.accuracy(run["checkpoint"], n_steps=2, out_dir=tmp_path / "a", **common)
    assert torch.equal(torch.get_rng_state(), before)
    torch.rand(10)
    again = tasks.accuracy(run["checkpoint"], n_steps=2, out_dir=tmp_path / "b", **common)
    assert first["results"] == again["results"]
    for task, opts in ((tasks.ood, {"n_ood": 16}), (tasks.samples, {"n_steps": 1, "n_samples": 4, "per_class": 1})):
        before = torch.get_rng_state()
        task(run["checkpoint"], out_dir=tmp_path / task.__name__, **opts, **common)
        assert torch.equal(torch.get_rng_state(), before), task.__name__


def test_a_trainer_keeps_its_engines_cuda_math_flags_to_its_own_calls(tiny_config, tmp_path):
    """The engine's TF32 and cuDNN autotuning settings are process-wide torch flags: set for good, they changed
    the numerics and speed of the caller's other CUDA code. The flags are plain settings, so a CPU run with a CUDA
    engine's flags shows where they hold."""
    import dataclasses

    from fastjem.engine import backend_flags, set_backend_flags

    trainer = Trainer(tiny_config.replace(iters=4), out_dir=tmp_path / "run", progress=False, log=_quiet)
    trainer.engine = dataclasses.replace(trainer.engine, device=torch.device("cuda"), precision="fp32")
    seen = []
    trainer.model.register_forward_pre_hook(lambda *_: seen.append(backend_flags()))
    outer = backend_flags()
    try:
        set_backend_flags((True, True, False))
        trainer.train_step()
        trainer.sample(4)
        assert seen and set(seen) == {(False, False, True)}
        assert backend_flags() == (True, True, False)
        # an error inside the run gives the caller's flags back too
        trainer.model.register_forward_pre_hook(lambda *_: 1 / 0)
        try:
            trainer.train_step()
        except ZeroDivisionError:
            pass
        assert backend_flags() == (True, True, False)
    finally:
        set_backend_flags(outer)


@pytest.mark.gpu
def test_building_and_training_on_cuda_leaves_the_callers_math_flags(tiny_config, tmp_path):
    from fastjem.engine import backend_flags, set_backend_flags

    outer = backend_flags()
    try:
        set_backend_flags((True, True, False))
        trainer = Trainer(tiny_config.replace(iters=2, device="cuda", compile="off"), out_dir=tmp_path / "run",
                          progress=False, log=_quiet)
        assert backend_flags() == (True, True, False)
        trainer.fit()
        assert backend_flags() == (True, True, False)
    finally:
        set_backend_flags(outer)
