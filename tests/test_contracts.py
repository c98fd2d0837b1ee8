"""Contracts of eval, convert/export and bench that a test-gap hunt found unchecked: each test fails if its feature
is removed (tests/mutants.py names the mutant it kills)."""
import pytest
import torch
from test_convert import _authors_file
from test_eval import TINY

from fastjem.checkpoint import load_checkpoint
from fastjem.config import TrainConfig
from fastjem.convert import import_jem
from fastjem.errors import CheckpointError


@pytest.fixture(scope="module")
def jem_run(tmp_path_factory):
    from fastjem.train import Trainer

    root = tmp_path_factory.mktemp("probe_runs")
    Trainer(TrainConfig(**TINY), out_dir=root / "jem", progress=False, log=lambda *a: None).fit()
    return root / "jem"


def test_converted_config_records_the_buffer_size(tmp_path):
    """An imported authors' checkpoint records the size of the buffer it brought (not the default 10000)."""
    _authors_file(tmp_path / "jem.pt", buffer=24)
    r = import_jem(tmp_path / "jem.pt")
    assert load_checkpoint(r["path"])["config"]["buffer_size"] == 24


def test_buffer_of_other_images_is_refused(tmp_path):
    """A replay buffer of another image size is refused at import, not at the first use."""
    _authors_file(tmp_path / "jem.pt", buffer=0)
    obj = torch.load(tmp_path / "jem.pt", weights_only=True)
    obj["replay_buffer"] = torch.rand(8, 3, 28, 28) * 2 - 1
    torch.save(obj, tmp_path / "jem.pt")
    with pytest.raises(CheckpointError, match="replay buffer has shape"):
        import_jem(tmp_path / "jem.pt")


def test_buffer_by_class_keeps_the_most_confident(jem_run, tmp_path, monkeypatch):
    """The buffer-by-class grid shows each class's most confident samples."""
    from fastjem.eval import plots, tasks
    from fastjem.eval.core import load_model, predict_logits

    grids = {}
    real = plots.image_grid
    monkeypatch.setattr(plots, "image_grid", lambda x, p, nrow=None: (grids.__setitem__(p.name, x.clone()),
                                                                      real(x, p, nrow))[1])
    per = 2
    tasks.samples(jem_run, n_steps=0, n_samples=4, per_class=per, out_dir=tmp_path, device="cpu", progress=False,
                  n_test=16, batch_size=64)
    em = load_model(jem_run, "cpu")
    probs = torch.softmax(predict_logits(em.model, em.buffer), 1)
    conf, pred = probs.max(1)
    rows = grids["samples_buffer_by_class.png"].view(em.num_classes, per, *em.sample_shape)
    for c in range(em.num_classes):
        members = torch.nonzero(pred == c).squeeze(1)
        want = em.buffer[members[conf[members].argsort(descending=True)[:per]]]
        assert torch.equal(rows[c, :len(want)], want)


def test_fid_source_fresh_samples_fresh_chains(jem_run, tmp_path):
    """fid --source fresh scores fresh chains, not the replay buffer."""
    from fastjem.eval import tasks

    rep = tasks.fid(jem_run, features_model="classifier", source="fresh", n_fid=16, n_steps=1, out_dir=tmp_path,
                    device="cpu", progress=False, n_test=16, batch_size=64)
    assert rep["results"]["samples"] == "fresh 1 steps" and rep["results"]["n_fake"] == 16


def test_fid_scores_the_samples_it_is_asked_for(jem_run, tmp_path, monkeypatch):
    """fid: fresh chains are as many as the real images compared (--n-fid at most); the classifier score is the
    samples' (here the buffer's rows), not the test images'; with --inception-weights too, torchmetrics' numbers
    sit under "inception" beside the feature model's; --source buffer on a run without a buffer is refused, not
    answered with fresh chains."""
    from fastjem.errors import ConfigError
    from fastjem.eval import load_model, tasks
    from fastjem.eval.core import predict_logits
    from fastjem.eval.metrics import inception_score_from_probs
    from fastjem.train import Trainer

    common = dict(features_model="classifier", device="cpu", progress=False, n_test=16, batch_size=64)
    rep = tasks.fid(jem_run, source="fresh", n_fid=64, n_steps=1, out_dir=tmp_path / "fresh", **common)
    assert rep["results"]["n_real"] == rep["results"]["n_fake"] == 16
    rep = tasks.fid(jem_run, source="buffer", n_fid=32, out_dir=tmp_path / "buffer", **common)
    em = load_model(jem_run, "cpu")
    probs = torch.softmax(predict_logits(em.model, em.buffer_rows(32)), 1)
    assert rep["results"]["n_fake"] == 32
    assert rep["results"]["classifier_score"] == pytest.approx(inception_score_from_probs(probs)[0])
    weights = tmp_path / "pt_inception.pth"
    weights.write_bytes(b"a stand-in: the metrics are faked")
    inception = {"fid": 12.5, "inception_score": 2.0, "inception_score_std": 0.1, "features": "Inception v3"}
    monkeypatch.setattr(tasks, "_inception_metrics", lambda path, device: ("fid metric", "is metric"))
    monkeypatch.setattr(tasks, "_torchmetrics_inception", lambda path, real, fake, batch, metrics: dict(inception))
    both = tasks.fid(jem_run, inception_weights=str(weights), source="buffer", n_fid=32, out_dir=tmp_path / "both",
                     **common)["results"]
    assert both["inception"] == inception and both["features"] == "classifier"
    assert both["fid"] == pytest.approx(rep["results"]["fid"])
    Trainer(TrainConfig(**TINY, px_weight=0.0), out_dir=tmp_path / "clf", progress=False, log=lambda *a: None).fit()
    with pytest.raises(ConfigError, match="no replay buffer.*use --source fresh"):
        tasks.fid(tmp_path / "clf", source="buffer", n_fid=32, out_dir=tmp_path / "none", **common)


def test_torchmetrics_gets_images_in_0_1():
    """torchmetrics' FID and Inception score get images in [0, 1], grey expanded to RGB; a sample that SGLD took
    outside [-1, 1] is clipped to it first."""
    from fastjem.eval import tasks

    seen = {"real": [], "fake": []}

    class Fid:
        def update(self, x, real):
            seen["real" if real else "fake"].append(x)

        def compute(self):
            return torch.tensor(0.0)

    class IS:
        def update(self, x):
            pass

        def compute(self):
            return torch.tensor(1.0), torch.tensor(0.0)

    real = torch.rand(4, 3, 8, 8) * 2 - 1
    fake = torch.rand(4, 1, 8, 8) * 2 - 1
    fake[0, 0, :2, 0] = torch.tensor([-1.7, 1.4])
    tasks._torchmetrics_inception("unused", real, fake, 2, (Fid(), IS()))
    assert torch.allclose(torch.cat(seen["real"]), (real + 1) / 2)
    assert torch.allclose(torch.cat(seen["fake"]), ((fake.clamp(-1, 1) + 1) / 2).expand(-1, 3, -1, -1))


def test_export_of_a_data_parallel_run_keeps_every_ranks_buffer(jem_run, tmp_path, monkeypatch):
    """Exporting a data-parallel run to the authors' format keeps every rank's buffer."""
    import fastjem.convert as convert

    ckpt = load_checkpoint(jem_run)
    if ckpt["dataset"]["image_size"] != 32:
        ckpt = dict(ckpt)
    a, b = torch.rand(5, 1, 8, 8), torch.rand(7, 1, 8, 8)
    ckpt["ranks"] = [{"buffer": {"data": a}}, {"buffer": {"data": b}}]
    ckpt.pop("buffer", None)
    monkeypatch.setattr(convert, "load_checkpoint", lambda p: ckpt)
    # the authors' network is a 3-channel 32x32 WRN: describe the run as one
    ckpt["dataset"] = {**ckpt["dataset"], "channels": 3, "image_size": 32}
    from fastjem.models.wrn import WideResNet
    ckpt["config"] = {**ckpt["config"], "arch": "wrn", "depth": 10, "width": 1, "norm": "none"}
    ckpt["model"] = WideResNet(10, 1, 10, 3, "none").state_dict()
    ckpt["path"] = str(tmp_path / "ddp.pt")
    r = convert.export_jem(tmp_path / "ddp.pt", tmp_path / "out.pt")
    saved = torch.load(r["path"], weights_only=True)
    assert torch.equal(saved["replay_buffer"], torch.cat([a, b]))


def test_eval_takes_the_checkpoints_test_noise(jem_run, tmp_path):
    """Without --test-noise, eval uses the checkpoint's own test noise."""
    from fastjem.eval import tasks
    from fastjem.eval.core import load_model

    em = load_model(jem_run, "cpu")
    em.config = em.config.replace(test_noise=0.5)
    common = dict(out_dir=tmp_path, progress=False, n_test=32, batch_size=64)
    noisy = tasks.accuracy(em, **common)
    clean = tasks.accuracy(em, test_noise=0.0, **common)
    assert noisy["settings"]["test_noise"] == 0.5 and noisy["results"]["nll"] != clean["results"]["nll"]


def test_export_refuses_a_network_given_in_python(jem_run, tmp_path, monkeypatch):
    """A network given in Python is not exported as the config's Wide-ResNet."""
    import fastjem.convert as convert
    from fastjem.errors import ConfigError
    from fastjem.models.wrn import WideResNet

    ckpt = load_checkpoint(jem_run)
    ckpt["dataset"] = {**ckpt["dataset"], "channels": 3, "image_size": 32}
    ckpt["config"] = {**ckpt["config"], "arch": "wrn", "depth": 10, "width": 1, "norm": "none"}
    ckpt["model"] = WideResNet(10, 1, 10, 3, "none").state_dict()
    ckpt["custom"] = {"model": "mymodule.MyWRN", "data": False}
    ckpt["path"] = str(tmp_path / "custom.pt")
    monkeypatch.setattr(convert, "load_checkpoint", lambda p: ckpt)
    with pytest.raises(ConfigError, match="Wide-ResNet only"):
        convert.export_jem(tmp_path / "custom.pt", tmp_path / "out.pt")


def test_accuracy_takes_the_step_size_and_noise_given(jem_run, tmp_path):
    """eval accuracy's --step-size and --noise reach the refinement (0 and 0: refined is plain)."""
    from fastjem.eval import tasks

    rep = tasks.accuracy(jem_run, n_steps=2, step_size=0.0, noise=0.0, out_dir=tmp_path, device="cpu",
                         progress=False, n_test=32, batch_size=64)
    r = rep["results"]
    assert (rep["settings"]["step_size"], rep["settings"]["noise"]) == (0.0, 0.0)
    assert r["refined_2"]["nll"] == pytest.approx(r["plain"]["nll"], abs=1e-6)
    # refined far from the input (the tiny run's energy is nearly flat), the headline accuracy and NLL stay plain
    r = tasks.accuracy(jem_run, n_steps=2, step_size=1e3, noise=0.5, out_dir=tmp_path / "far", device="cpu",
                       progress=False, n_test=32, batch_size=64)["results"]
    assert r["refined_2"]["nll"] != pytest.approx(r["plain"]["nll"], abs=1e-3)
    assert (r["acc"], r["nll"]) == (r["plain"]["acc"], r["plain"]["nll"])


def test_bench_chains_per_second_counts_the_batch(tmp_path):
    """fastjem bench's chains/s is the batch over one SGLD call's time."""
    import json

    from fastjem.cli import main

    out = tmp_path / "bench.json"
    assert main(["bench", "--depth", "10", "--width", "1", "--batch-size", "4", "--sgld-steps", "2", "--image-size",
                 "8", "--seconds", "0.1", "--device", "cpu", "--out", str(out)]) == 0
    r = json.loads(out.read_text())
    assert r["chains_per_s"] == pytest.approx(4 / (r["sgld_call_ms"] / 1e3))


def test_calibration_refuses_a_comparison_on_another_dataset(jem_run, tmp_path):
    """calibration --compare refuses a model of another dataset."""
    from dataclasses import replace

    from fastjem.errors import ConfigError
    from fastjem.eval import tasks
    from fastjem.eval.core import load_model

    em, other = load_model(jem_run, "cpu"), load_model(jem_run, "cpu")
    other.info = replace(other.info, name="svhn")
    with pytest.raises(ConfigError, match="one test set"):
        tasks.calibration(em, compare=other, out_dir=tmp_path, progress=False, n_test=16, batch_size=64)


def test_fid_refuses_a_single_test_image(jem_run, tmp_path):
    """FID's covariances need two images or more: --n-test 1 is one clear error (it gave a NaN FID, null in the
    JSON)."""
    from fastjem.errors import ConfigError
    from fastjem.eval import tasks

    with pytest.raises(ConfigError, match="needs 2 test images or more"):
        tasks.fid(jem_run, features_model="classifier", source="fresh", n_fid=16, n_steps=1, out_dir=tmp_path,
                  device="cpu", progress=False, n_test=1, batch_size=64)


@pytest.mark.parametrize("change,match", [({"labels_per_class": 0}, "labels-per-class"), ({"val_size": -2}, "val-size"),
                                          ({"remedies": ("lr", "sgd")}, "remedies"),
                                          ({"dataset": "imagefolder"}, "imagefolder needs --data-dir")])
def test_more_bad_options_are_refused(change, match):
    """--labels-per-class 0, --val-size below -1, an unknown remedy, an image folder without --data-dir: each one
    clear error at validation, not a failure (or a silent default) later."""
    from fastjem.errors import ConfigError

    with pytest.raises(ConfigError, match=match):
        TrainConfig(**change).validate()


def test_a_config_file_keeps_no_out_dir_and_no_boolean_integers(tmp_path):
    """--config from an old run's config.json does not carry its out_dir over (the new run would write into the
    old one's folder); a JSON true is not the integer 1."""
    import json

    from fastjem.config import options_from_file
    from fastjem.errors import ConfigError

    (tmp_path / "config.json").write_text(json.dumps({"lr": 0.001, "out_dir": "runs/old"}))
    assert options_from_file(tmp_path / "config.json") == {"lr": 0.001}
    (tmp_path / "c.json").write_text(json.dumps({"iters": True}))
    with pytest.raises(ConfigError, match="iters must be int"):
        options_from_file(tmp_path / "c.json")
    (tmp_path / "c.json").write_text(json.dumps({"decay_epochs": [True, 50]}))  # nor in a list of epochs
    with pytest.raises(ConfigError, match="decay_epochs must be tuple"):
        options_from_file(tmp_path / "c.json")


# --- the fourth hunt (Session 20): attacks, OOD sets, drawing, metrics, checkpoints ---------------------------------


class _Recorder(torch.nn.Module):
    """A linear two-class classifier that records every input the attack gives it."""

    def __init__(self, shape):
        super().__init__()
        self.w = torch.linspace(-1, 1, int(torch.tensor(shape).prod())).view(1, *shape)
        self.seen = []

    def forward(self, x):
        self.seen.append(x.detach().clone())
        s = (x * self.w).flatten(1).sum(1)
        return torch.stack([s, -s], 1)


def test_pgd_steps_start_and_project_as_documented():
    from fastjem.eval.attacks import pgd_attack, project

    g = torch.Generator().manual_seed(0)
    u = torch.randn(3, 1, 4, 4, generator=g)
    u = u / u.flatten(1).norm(dim=1).view(-1, 1, 1, 1)
    assert torch.allclose(project(0.1 * u, 1.0, "l2"), 0.1 * u)  # inside the ball: left as it is
    assert torch.allclose(project(3 * u, 1.0, "l2").flatten(1).norm(dim=1), torch.ones(3))
    x, y, eps = torch.zeros(3, 1, 4, 4), torch.zeros(3, dtype=torch.long), 0.2
    f = _Recorder((1, 4, 4))
    pgd_attack(f, x, y, eps, "linf", steps=5, random_start=False)
    assert torch.equal(f.seen[0], x)  # no random start: the first step is at x
    assert torch.allclose(f.seen[1].abs(), torch.full_like(x, 2.5 * eps / 5))  # the default step 2.5 eps / steps
    f.seen.clear()
    pgd_attack(f, x, y, eps, "linf", steps=5, step_size=0.01, random_start=False)
    assert torch.allclose(f.seen[1].abs(), torch.full_like(x, 0.01))  # the step size given
    f.seen.clear()
    pgd_attack(f, x, y, eps, "linf", steps=1, generator=torch.Generator().manual_seed(1))
    start = f.seen[0]  # the random start: uniform in the ball, not x
    assert start.abs().max() <= eps and start.abs().min() < eps / 2 and start.std() > eps / 4
    f.seen.clear()
    many = torch.full((200, 1, 4, 4), 0.3)
    pgd_attack(f, many, torch.zeros(200, dtype=torch.long), eps, "linf", steps=1,
               generator=torch.Generator().manual_seed(3))
    start = f.seen[0] - many  # 3200 pixels of U(-eps, eps): centred (5 sd of the mean), almost none on the boundary
    assert abs(start.mean().item()) < eps / 20 and (start.abs() == eps).float().mean() < 0.01
    assert abs(start.std().item() - eps / 3 ** 0.5) < eps / 20
    # exactly: the generator's uniforms scaled to the ball, added to each image where it is
    drawn = torch.rand(many.shape, generator=torch.Generator().manual_seed(3)) * 2 - 1
    torch.testing.assert_close(start, drawn * eps, rtol=0, atol=1e-6)
    f.seen.clear()
    # no steps, or no budget: the images themselves, without a random start
    for no_attack in ({"steps": 0}, {"eps": 0.0}):
        kwargs = {"eps": eps, "steps": 5, **no_attack}
        assert torch.equal(pgd_attack(f, x + 0.3, y, kwargs.pop("eps"), "linf", **kwargs), x + 0.3)
    assert not f.seen
    x = torch.zeros(200, 1, 4, 4)
    pgd_attack(f, x, torch.zeros(200, dtype=torch.long), eps, "l2", steps=1, generator=torch.Generator().manual_seed(2))
    radii = f.seen[0].flatten(1).norm(dim=1)  # L2 starts: a radius uniform in [0, eps]
    assert radii.max() <= eps * (1 + 1e-6) and radii.min() < eps / 10 and abs(radii.mean().item() - eps / 2) < eps / 10
    with pytest.raises(ValueError, match="norm must be one of"):
        pgd_attack(f, x, y, eps, "l1")


def _fake_em(dataset="cifar10"):
    from types import SimpleNamespace

    return SimpleNamespace(config=SimpleNamespace(dataset=dataset), sample_shape=(1, 8, 8), loaded_arrays=lambda: [],
                           info=SimpleNamespace(name=dataset))


def test_ood_sets_follow_n_and_the_seed_and_refuse_the_in_distribution_set(tmp_path):
    from fastjem.data import load_arrays, to_float
    from fastjem.eval.ood import OODSetError, load_image_folder, ood_set

    em = _fake_em()
    a, b = ood_set("uniform", em, 8, seed=0), ood_set("uniform", em, 8, seed=1)
    assert torch.equal(a, ood_set("uniform", em, 8, seed=0)) and not torch.equal(a, b)
    raw = load_arrays("digits", "", False, progress=False).test_x
    digits = to_float(raw)
    x = ood_set("digits", em, 10, seed=0)
    assert len(x) == 10 and not torch.equal(x, digits[:10])  # a random subset of the test set, not its first 10
    assert torch.equal(x, digits[torch.randperm(len(digits), generator=torch.Generator().manual_seed(0))[:10]])
    with pytest.raises(OODSetError, match="in-distribution dataset of this checkpoint"):
        ood_set("digits", _fake_em("digits"), 10)
    # in-distribution test images of the same shape but other pixels are another set: taken, not refused as a copy
    from types import SimpleNamespace

    other = _fake_em()
    other.loaded_arrays = lambda: [SimpleNamespace(test_x=255 - raw)]
    assert torch.equal(ood_set("digits", other, 10, seed=0), x)
    other.loaded_arrays = lambda: [SimpleNamespace(test_x=raw.clone())]
    with pytest.raises(OODSetError, match="holds the same test images"):
        ood_set("digits", other, 10, seed=0)
    from PIL import Image

    for i in range(20):  # image i is all grey level 10 * i
        Image.new("L", (8, 8), 10 * i).save(tmp_path / f"{i:02d}.png")
    levels = (load_image_folder(tmp_path, 5, 1, 8, torch.Generator().manual_seed(0)) + 1) * 127.5
    assert len(levels) == 5 and levels.flatten(1)[:, 0].round().tolist() != [0, 10, 20, 30, 40]


def test_shrinking_an_ood_set_filters_before_it_samples():
    """A checkerboard of +-1 shrunk 3x averages to near grey (antialiased); bilinear sampling without the filter
    lands on pixel centres there and keeps +-1."""
    from fastjem.eval.ood import match_shape

    board = (torch.arange(12).view(1, 12) + torch.arange(12).view(12, 1)) % 2 * 2.0 - 1
    assert match_shape(board.view(1, 1, 12, 12), 1, 4).abs().max() < 0.5


def test_a_conditional_grid_has_a_row_per_class(monkeypatch):
    from fastjem.eval import draw, plots

    got = {}
    monkeypatch.setattr(plots, "image_grid", lambda x, path, nrow=None: got.update(x=x, nrow=nrow) or path)
    k, n = 10, 20
    x = torch.arange(k).repeat_interleave(n).float().view(-1, 1, 1, 1).expand(-1, 3, 2, 2)  # class c's images: c
    drawn = draw.Drawn(x, torch.arange(k).repeat_interleave(n), torch.zeros(k * n), torch.zeros(k * n),
                       {"n": n, "classes": list(range(k))})
    draw.save_grid(drawn, "grid.png", max_images=100)
    assert got["nrow"] == 10 and len(got["x"]) == 100
    assert got["x"][:, 0, 0, 0].view(10, 10).tolist() == [[c] * 10 for c in range(10)]
    # more classes than max_images: one image of each class still, in a column
    draw.save_grid(drawn, "grid.png", max_images=5)
    assert got["nrow"] == 1 and got["x"][:, 0, 0, 0].tolist() == list(range(10))
    unconditional = draw.Drawn(x[:150], None, torch.zeros(150), torch.zeros(150), {"n": 150, "classes": None})
    draw.save_grid(unconditional, "grid.png", max_images=100)
    assert len(got["x"]) == 100


def test_drawing_starts_where_the_run_did_and_names_all_classes(jem_run, tmp_path):
    from types import SimpleNamespace

    from fastjem.errors import ConfigError
    from fastjem.eval import draw, load_model

    no_buffer = SimpleNamespace(buffer=None, config=SimpleNamespace(buffer_init="informative"), path="x", label="x")
    assert draw.resolve_init(no_buffer, "auto") == "informative"
    em = load_model(jem_run)
    assert draw.default_output(em, list(range(em.num_classes))).name == "all-classes.npz"
    assert draw.default_output(em, [3, 7]).name == "class-3-7.npz"
    with pytest.raises(ConfigError, match="finite numbers >= 0"):
        draw.draw(em, 2, n_steps=1, step_size=-1.0)
    with pytest.raises(ConfigError):
        draw.draw(em, 2, n_steps=-1)


def test_fid_and_calibration_edge_cases():
    from fastjem.eval.metrics import (
        auroc,
        expected_calibration_error,
        feature_statistics,
        fid_from_features,
        frechet_distance,
    )

    g = torch.Generator().manual_seed(0)
    f = torch.randn(10, 64, generator=g, dtype=torch.float64)  # fewer samples than dimensions: rank-deficient
    assert fid_from_features(f, f) == pytest.approx(0.0, abs=1e-6)
    shifted = fid_from_features(f, f + 0.1)
    assert shifted == shifted and shifted == pytest.approx(64 * 0.01, rel=1e-3)  # finite: ||0.1||^2 over 64 dims
    mu, cov = torch.zeros(3, dtype=torch.float64), torch.eye(3, dtype=torch.float64)
    assert frechet_distance(mu, cov, mu, cov) >= 0.0
    # statistics given in fp32 are computed in fp64 all the same: near-equal sets' FID is a small difference of large
    # traces, which fp32 arithmetic would get wrong in its fifth digit
    a, b = torch.randn(400, 32, generator=g), torch.randn(400, 32, generator=g)
    stats32 = [t.float() for t in (*feature_statistics(a), *feature_statistics(b))]
    assert frechet_distance(*stats32) == frechet_distance(*(t.double() for t in stats32))
    r = expected_calibration_error(torch.rand(50, generator=g), torch.rand(50, generator=g) > 0.5, n_bins=20)
    assert r.edges == [b / 20 for b in range(21)]
    with pytest.raises(ValueError, match="at least one"):
        auroc(torch.tensor([]), torch.tensor([0.5]))


def test_checkpoint_refusals_and_the_lock_naming_its_process(tmp_path):
    import os

    from fastjem.checkpoint import FORMAT, folder_lock, lock_holder

    with pytest.raises(CheckpointError, match="folder without checkpoint.pt"):
        load_checkpoint(tmp_path)
    with pytest.raises(CheckpointError, match=r"checkpoint .*missing\.pt does not exist"):
        load_checkpoint(tmp_path / "missing.pt")
    # what the file holds, and what the two kinds of checkpoint hold
    for i, (stranger, holds) in enumerate((([1, 2], "a list"),
                                          ({"format": "other", "config": {}, "model": {}, "iteration": 1},
                                           "a dict of config, format, iteration, model"))):
        torch.save(stranger, tmp_path / f"stranger{i}.pt")
        with pytest.raises(CheckpointError, match=f"is not a fastjem checkpoint: it holds {holds}, where fastjem "
                                                  "train writes a dict with format 'fastjem-checkpoint' and the "
                                                  "authors' JEM code one with model_state_dict"):
            load_checkpoint(tmp_path / f"stranger{i}.pt")
    good = {"format": FORMAT, "config": {}, "model": {}, "iteration": 1, "version": 1}
    torch.save({**good, "version": 99}, tmp_path / "new.pt")
    with pytest.raises(CheckpointError, match="written by a newer fastjem"):
        load_checkpoint(tmp_path / "new.pt")
    torch.save({k: v for k, v in good.items() if k != "model"}, tmp_path / "part.pt")
    with pytest.raises(CheckpointError, match="lacks 'model'"):
        load_checkpoint(tmp_path / "part.pt")
    with folder_lock(tmp_path / ".lock", "busy"):
        assert lock_holder(tmp_path / ".lock") == f"pid {os.getpid()}"


def test_parts_built_without_options_take_jems_settings():
    """What a user imports and builds without options is JEM's setup (the paper's Table 4): SGLD of 20 steps of step
    size 1 and noise 0.01, no gradient clipping or clamping; a replay buffer restarting 5% of the chains it hands
    out; a WRN-28-10 for 10 classes of RGB images without norm or dropout (the small ConvNet: 10 classes of grey
    images, width 32). And the evaluation parts default to what `fastjem eval` uses: a 20-bin ECE, an inception
    score over 10 splits, a 10-step L-inf PGD from a random start in the model's pixel range [-1, 1]."""
    import inspect

    from torch import nn

    from fastjem import SGLD, ReplayBuffer
    from fastjem.eval import expected_calibration_error, inception_score_from_probs
    from fastjem.eval.attacks import pgd_attack
    from fastjem.models.convnet import ConvNet
    from fastjem.models.wrn import WideResNet

    s = SGLD()
    assert (s.n_steps, s.step_size, s.noise, s.grad_clip, s.clamp) == (20, 1.0, 0.01, None, None)
    assert s.compiled_update is False  # the kernels' op; a CPU engine that compiles its step asks for it
    assert ReplayBuffer(10, (1,)).reinit_prob == 0.05
    for net, stem, last, convs in ((WideResNet(), 3, 640, 1 + 3 * 4 * 2 + 3), (ConvNet(), 1, 128, 3)):
        conv = [m for m in net.modules() if isinstance(m, nn.Conv2d)]
        assert len(conv) == convs and conv[0].in_channels == stem and net.fc.in_features == last
        assert net.fc.out_features == 10
        assert not any(isinstance(m, (nn.Dropout, nn.BatchNorm2d, nn.GroupNorm, nn.InstanceNorm2d, nn.LayerNorm))
                       for m in net.modules())
    assert expected_calibration_error(torch.tensor([0.5]), torch.tensor([True])).n_bins == 20
    assert inspect.signature(inception_score_from_probs).parameters["splits"].default == 10
    pgd = inspect.signature(pgd_attack).parameters
    assert [pgd[k].default for k in ("norm", "steps", "random_start", "lo", "hi")] == ["linf", 10, True, -1.0, 1.0]
