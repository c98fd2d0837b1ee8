"""fastjem used as a library in one long-lived process (a notebook): what its objects print, and a Trainer used again
after a fit that was interrupted or failed."""

import pytest
import torch

from fastjem import SGLD, ReplayBuffer
from fastjem.buffer import ClassGaussians
from fastjem.curves import Metrics
from fastjem.data import arrays_from_tensors
from fastjem.errors import ConfigError
from fastjem.eval import load_model
from fastjem.eval.draw import Drawn
from fastjem.train import Trainer


def _one_line(text: str, most: int = 300) -> None:
    assert "\n" not in text and len(text) <= most and "tensor(" not in text, text[:2000]


@pytest.fixture(scope="module")
def fitted(tmp_path_factory, tiny_config_module):
    """A Trainer fitted for 2 iterations, and its checkpoint."""
    cfg = tiny_config_module.replace(iters=2, warmup_iters=0, log_every=1, eval_every=0)
    trainer = Trainer(cfg, out_dir=tmp_path_factory.mktemp("run"), progress=False, log=lambda *a: None)
    return trainer, trainer.fit()["checkpoint"]


def test_sampler_and_buffer_print_their_settings_as_their_constructors_take_them():
    """The default object repr (``<fastjem.sampler.SGLD object at 0x...>``) told a notebook nothing."""
    sampler = SGLD(5, 0.1, 0.2, seed=3, backend="reference", grad_clip=0.5, clamp=(-1, 1))
    again = eval(repr(sampler), {"SGLD": SGLD})
    assert vars(again) | {"_streams": None, "rng_state": None} == vars(sampler) | {"_streams": None, "rng_state": None}
    assert repr(SGLD(20, 1.0, 0.01)) == "SGLD(n_steps=20, step_size=1.0, noise=0.01)"
    buffer = ReplayBuffer(10000, (3, 32, 32), reinit_prob=0.1, num_classes=10)
    _one_line(repr(buffer), 120)
    again = eval(repr(buffer), {"ReplayBuffer": ReplayBuffer})
    assert (again.size, again.sample_shape, again.reinit_prob, again.num_classes, again.device) == \
        (10000, (3, 32, 32), 0.1, 10, torch.device("cpu"))
    images = torch.randint(0, 256, (40, 1, 4, 4), dtype=torch.uint8)
    init = ClassGaussians(images, torch.arange(40) % 4, 4)
    shown = repr(ReplayBuffer(8, (1, 4, 4), init=init))
    _one_line(shown)
    assert "init=ClassGaussians(num_classes=4, sample_shape=(1, 4, 4)" in shown


def test_a_config_prints_as_the_code_that_makes_it_from_its_preset():
    """The dataclass's repr listed every one of its 60 options, over a screen of a notebook cell, and what a run
    changed was lost among the defaults."""
    from fastjem import PRESETS, TrainConfig

    assert repr(PRESETS["quick"]) == "PRESETS['quick']"
    cfg = PRESETS["quick"].replace(iters=200, lr=2e-3, decay_epochs=(5,))
    assert repr(cfg) == "PRESETS['quick'].replace(lr=0.002, decay_epochs=(5,), iters=200)"
    assert repr(TrainConfig(sgld_steps=5, device="cpu")) == "TrainConfig(sgld_steps=5, device='cpu')"
    # a preset's name that is no preset (a config made in Python under a name of its own): from the defaults
    assert repr(TrainConfig(preset="mine", iters=3)) == "TrainConfig(iters=3, preset='mine')"
    for shown in (cfg, PRESETS["paper"].replace(dataset="cifar100", out_dir="runs/x"), TrainConfig(preset="mine")):
        assert eval(repr(shown), {"PRESETS": PRESETS, "TrainConfig": TrainConfig}) == shown


def test_trainer_and_what_it_holds_print_one_line_each(fitted):
    trainer, _ = fitted
    shown = repr(trainer)
    _one_line(shown)
    assert "digits 1x8x8" in shown and "iteration 2 of 2" in shown and str(trainer.out_dir) in shown
    _one_line(repr(trainer.data))
    assert "1257 train / 180 val / 360 test" in repr(trainer.data)
    assert repr(trainer.buffer).startswith("ReplayBuffer(size=200, sample_shape=(1, 8, 8)")
    assert repr(trainer.sampler).startswith("SGLD(n_steps=3, step_size=1.0, noise=0.01")


def test_an_evaluated_model_prints_no_tensor_nor_network(fitted):
    """EvalModel's dataclass repr printed the whole network and the replay buffer's tensor (10000 images for
    CIFAR-10) into the notebook."""
    _, checkpoint = fitted
    em = load_model(checkpoint)
    shown = repr(em)
    _one_line(shown)
    assert "JEM ConvNet(width 8), iteration 2" in shown and "buffer [200, 1, 8, 8]" in shown


def test_data_samples_and_records_print_sizes_not_contents():
    images, labels = torch.rand(600, 3, 16, 16), torch.randint(0, 4, (600,))
    data = arrays_from_tensors(images[:500], labels[:500], images[500:], labels[500:], classes=["a", "b", "c", "d"])
    _one_line(repr(data))
    assert "500 train / 100 test images of 3x16x16" in repr(data)
    drawn = Drawn(torch.rand(100, 3, 32, 32), None, torch.zeros(100, dtype=torch.long), torch.zeros(100))
    _one_line(repr(drawn))
    assert "x=[100, 3, 32, 32] float32, target=None" in repr(drawn)
    records = Metrics(train=[{"iter": i, "loss": 1.0} for i in range(1, 5001)])
    _one_line(repr(records))
    assert "5000 training records (iterations 1..5000)" in repr(records)


def _quiet(cfg, out, **kw):
    return Trainer(cfg, out_dir=out, progress=False, log=lambda *a: None, **kw)


def test_trainers_built_for_one_folder_before_either_fit_do_not_mix_their_runs(tmp_path, tiny_config):
    """Each was checked against the folder when built: the second to fit overwrote the first's checkpoint.pt and
    appended its records to the first's metrics.jsonl (a notebook building several Trainers, then fitting each)."""
    cfg = tiny_config.replace(iters=2, warmup_iters=0, log_every=1, eval_every=0)
    first, second = _quiet(cfg, tmp_path), _quiet(cfg.replace(seed=9), tmp_path)
    first.fit()
    records = (tmp_path / "metrics.jsonl").read_text()
    state = (tmp_path / "checkpoint.pt").read_bytes()
    with pytest.raises(ConfigError, match="already holds a run"):
        second.fit()
    assert (tmp_path / "metrics.jsonl").read_text() == records and (tmp_path / "checkpoint.pt").read_bytes() == state


def test_a_trainer_refuses_a_checkpoint_another_wrote_since_it_was_built(tmp_path, tiny_config):
    cfg = tiny_config.replace(iters=2, warmup_iters=0, log_every=1, eval_every=0)
    latest = _quiet(cfg, tmp_path).fit()["checkpoint"]
    longer = cfg.replace(iters=4)
    ahead, behind = _quiet(longer, tmp_path, resume=latest), _quiet(longer, tmp_path, resume=latest)
    assert ahead.fit()["iteration"] == 4
    state = (tmp_path / "checkpoint.pt").read_bytes()
    with pytest.raises(ConfigError, match="written by another run since this Trainer was built.*build the Trainer"):
        behind.fit()
    assert (tmp_path / "checkpoint.pt").read_bytes() == state
    # its own writes are no other run's: fitted again (finished), after a checkpoint saved by hand
    ahead.save_checkpoint()
    assert ahead.fit()["iteration"] == 4


def test_a_notebook_cell_gets_a_live_bar_not_a_log_files():
    """A notebook's stderr (ipykernel's OutStream) is not a TTY: the bar was drawn as into a log file, every 30 s,
    so a run of a minute showed no progress at all. Here one update a second for five seconds."""
    import io
    import re

    from fastjem.console import progress_bar

    class OutStream(io.StringIO):
        pass

    OutStream.__module__ = "ipykernel.iostream"
    out = OutStream()
    now = [0.0]
    bar = progress_bar(total=100, file=out, unit="it")
    bar._time = lambda: now[0]
    bar.start_t = bar.last_print_t = 0.0
    for _ in range(5):
        now[0] += 1.0
        bar.update(1)
    drawn = [int(n) for n in re.findall(r"(\d+)/100", out.getvalue())]
    bar.close()
    assert drawn == [0, 1, 2, 3, 4, 5], drawn
    # a log file still gets its copies 30 s apart
    log = io.StringIO()
    bar = progress_bar(total=100, file=log, unit="it")
    bar._time = lambda: now[0]
    bar.start_t = bar.last_print_t = now[0]
    for _ in range(5):
        now[0] += 1.0
        bar.update(1)
    assert re.findall(r"(\d+)/100", log.getvalue()) == ["0"]
    bar.close()


def test_fit_called_again_continues_a_stopped_run_and_says_a_finished_one_has_nothing_to_train(tmp_path, tiny_config):
    cfg = tiny_config.replace(iters=4, warmup_iters=0, log_every=1, eval_every=0)
    lines = []
    trainer = Trainer(cfg, out_dir=tmp_path, progress=False, log=lambda *a: lines.append(" ".join(map(str, a))))
    step = trainer.train_step

    def interrupted():
        if trainer.iteration == 2:
            raise KeyboardInterrupt  # Ctrl-C in the user's own code, between iterations
        return step()

    trainer.train_step = interrupted
    with pytest.raises(KeyboardInterrupt):
        trainer.fit()
    del trainer.train_step
    assert trainer.iteration == 2
    summary = trainer.fit()
    assert summary["iteration"] == 4 and not any("nothing to train" in line for line in lines)
    again = trainer.fit()
    assert again["iteration"] == 4
    said = [line for line in lines if "nothing to train" in line]
    assert len(said) == 1 and "trained its 4 iterations already" in said[0] and "resume_config(" in said[0], lines


@pytest.mark.parametrize("broken", ["float images", "labels past the classes", "channels last", "not Arrays"])
def test_data_built_or_edited_by_hand_is_refused_before_training(tmp_path, tiny_config, broken):
    """An Arrays made without arrays_from_tensors (or edited in a later cell: a plain dataclass) went unchecked: float
    images in [0, 1] trained as images all near -1 without a word, labels past the classes failed inside the
    loss mid-run, channels-last images inside the network's first convolution."""
    import dataclasses

    images, labels = torch.randint(0, 256, (120, 3, 8, 8), dtype=torch.uint8), torch.arange(120) % 4
    data = arrays_from_tensors(images[:100], labels[:100], images[100:], labels[100:], classes=list("abcd"))
    bad = {"float images": lambda: dataclasses.replace(data, train_x=data.train_x.float() / 255),
           "labels past the classes": lambda: dataclasses.replace(data, train_y=data.train_y + 2),
           "channels last": lambda: dataclasses.replace(data, test_x=data.test_x.permute(0, 2, 3, 1)),
           "not Arrays": lambda: {"train_x": data.train_x}}[broken]()
    net = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten())
    with pytest.raises(ConfigError, match="arrays_from_tensors"):
        Trainer(tiny_config, out_dir=tmp_path, model=net, data=bad, progress=False, log=lambda *a: None)
    assert not any(tmp_path.iterdir())
    if broken != "not Arrays":
        run = _quiet(tiny_config.replace(iters=1, warmup_iters=0, log_every=1, eval_every=0), tmp_path / "good",
                     model=net, data=data).fit()
        with pytest.raises(ConfigError, match="arrays_from_tensors"):
            load_model(run["checkpoint"], model=net, data=bad)


def test_a_second_ctrl_c_stops_a_fit_at_once(tmp_path, tiny_config, capsys):
    """The first Ctrl-C (a notebook's interrupt button) stops the run at the end of the iteration; a second did
    nothing at all, so an iteration of minutes could only be ended by restarting the kernel, losing its state."""
    import signal

    cfg = tiny_config.replace(iters=4, warmup_iters=0, log_every=1, eval_every=0)
    trainer = _quiet(cfg, tmp_path)
    step = trainer.train_step

    def slow_iteration():
        if trainer.iteration == 1:
            signal.raise_signal(signal.SIGINT)  # noted: the iteration goes on
            signal.raise_signal(signal.SIGINT)  # again: the user will not wait for it
        return step()

    trainer.train_step = slow_iteration
    before = signal.getsignal(signal.SIGINT)
    with pytest.raises(KeyboardInterrupt):
        trainer.fit()
    assert signal.getsignal(signal.SIGINT) is before
    assert trainer.iteration == 1 and not (tmp_path / "checkpoint.pt").exists()
    assert "Ctrl-C again to stop at once" in capsys.readouterr().err
    del trainer.train_step
    assert trainer.fit()["iteration"] == 4


def test_a_second_ctrl_c_during_the_update_stops_once_the_iteration_is_whole(tmp_path, tiny_config):
    """Raised inside the optimiser's update, KeyboardInterrupt left the parameters and Adam's step counters moved and
    the iteration uncounted: fit() again trained one update more than its iteration count says."""
    import signal

    cfg = tiny_config.replace(iters=4, warmup_iters=0, log_every=1, eval_every=0)
    trainer = _quiet(cfg, tmp_path)
    update = trainer.optimizer.step

    def interrupted_update(*args, **kwargs):
        out = update(*args, **kwargs)
        if trainer.iteration == 1:
            signal.raise_signal(signal.SIGINT)
            signal.raise_signal(signal.SIGINT)
        return out

    trainer.optimizer.step = interrupted_update
    with pytest.raises(KeyboardInterrupt):
        trainer.fit()
    steps = {float(state["step"]) for state in trainer.optimizer.state.values()}
    assert trainer.iteration == 2 and steps == {2.0} and trainer._acc_n == 1
    del trainer.optimizer.step
    assert trainer.fit()["iteration"] == 4
    assert {float(state["step"]) for state in trainer.optimizer.state.values()} == {4.0}


def _small_data_and_net():
    images, labels = torch.randint(0, 256, (120, 3, 8, 8), dtype=torch.uint8), torch.arange(120) % 4
    data = arrays_from_tensors(images[:100], labels[:100], images[100:], labels[100:], classes=list("abcd"))
    net = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(),
                              torch.nn.Linear(8, 4))
    return data, net


def test_the_readme_example_run_again_with_its_network_is_told_what_happened(tmp_path, tiny_config):
    """The README's cells (train net, then load_model(..., model=net) to evaluate) run again in a notebook: the
    second Trainer got the frozen network and failed at its first backward, "element 0 of tensors does not require
    grad"; one given a network another Trainer trained started from those weights without a word."""
    data, net = _small_data_and_net()
    cfg = tiny_config.replace(iters=1, warmup_iters=0, log_every=1, eval_every=0)
    lines = []
    log = lambda *a: lines.append(" ".join(map(str, a)))  # noqa: E731
    run = Trainer(cfg, out_dir=tmp_path / "one", model=net, data=data, progress=False, log=log).fit()
    assert not any("another Trainer" in line for line in lines)
    Trainer(cfg, out_dir=tmp_path / "two", model=net, data=data, progress=False, log=log)
    assert any(line.startswith("warning: model= was given to another Trainer") for line in lines), lines
    load_model(run["checkpoint"], model=net, data=data)
    with pytest.raises(ConfigError, match="no parameter to train.*copy.deepcopy"):
        Trainer(cfg, out_dir=tmp_path / "three", model=net, data=data, progress=False, log=log)
    assert not (tmp_path / "three").exists()
    # a fresh network of its own: no warning
    lines.clear()
    Trainer(cfg, out_dir=tmp_path / "four", model=_small_data_and_net()[1], data=data, progress=False, log=log)
    assert not any("another Trainer" in line for line in lines)
