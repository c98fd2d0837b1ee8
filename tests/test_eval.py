"""fastjem.eval: metrics against hand-computed and reference values, scores against finite differences, attacks,
differentiable refinement, FID, and the CLI end to end on a tiny checkpoint."""

import json
import math
import re
import shutil
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch
from helpers import image_folder
from kernel_utils import assert_gaussian_moments
from torch import nn
from torch.nn import functional as F

import fastjem
from fastjem.cli import main
from fastjem.config import TrainConfig
from fastjem.errors import ConfigError
from fastjem.eval import (
    RefineThenClassify,
    auroc,
    constant_images,
    expected_calibration_error,
    fid_from_features,
    frechet_distance,
    grad_norm_score,
    interpolate_pairs,
    pgd_attack,
    sgld_refine,
    uniform_noise,
)
from fastjem.models import ConvNet


# ------------------------------------------------------------------------------------------------ AUROC
def test_auroc_hand_computed_with_a_tie():
    # Pairs (pos > neg): 0.9 beats 3, 0.8 beats 3, 0.4 beats 0.1 and ties 0.4 (half): 7.5 of 9.
    assert auroc(torch.tensor([0.9, 0.8, 0.4]), torch.tensor([0.5, 0.4, 0.1])) == pytest.approx(7.5 / 9)
    assert auroc(torch.tensor([2.0, 3.0]), torch.tensor([0.0, 1.0])) == 1.0
    assert auroc(torch.tensor([0.0]), torch.tensor([1.0])) == 0.0
    assert auroc(torch.ones(5), torch.ones(7)) == 0.5


@pytest.mark.parametrize("n_pos,n_neg,levels", [(1, 1, 0), (50, 300, 0), (400, 37, 5), (1000, 1000, 20)],
                         ids=["1v1", "continuous", "heavy-ties", "large-ties"])
def test_auroc_matches_scikit_learn(n_pos, n_neg, levels):
    from sklearn.metrics import roc_auc_score

    g = torch.Generator().manual_seed(n_pos + n_neg)
    pos = torch.randn(n_pos, generator=g) + 0.7
    neg = torch.randn(n_neg, generator=g)
    if levels:
        pos, neg = (pos * levels).round(), (neg * levels).round()
    y = np.r_[np.ones(n_pos), np.zeros(n_neg)]
    ref = roc_auc_score(y, np.r_[pos.numpy(), neg.numpy()])
    assert auroc(pos, neg) == pytest.approx(ref, abs=1e-12)


# -------------------------------------------------------------------------------------------------- ECE
def test_ece_of_constructed_predictions():
    # Bin (0.85, 0.9]: 100 predictions at 0.9, 70 right -> gap 0.2. Bin (0.55, 0.6]: 100 at 0.6, 60 right -> 0.
    # Bin (0.25, 0.3]: 50 at 0.3, 25 right -> gap 0.2 (under-confident).
    # ECE = (100 * 0.2 + 100 * 0 + 50 * 0.2) / 250 = 0.12.
    full = lambda n, v: torch.full((n,), v, dtype=torch.float64)
    conf = torch.cat([full(100, 0.9), full(100, 0.6), full(50, 0.3)])
    correct = torch.cat([torch.arange(100) < 70, torch.arange(100) < 60, torch.arange(50) < 25])
    r = expected_calibration_error(conf, correct, n_bins=20)
    assert r.ece == pytest.approx(0.12, abs=1e-12)
    assert r.mce == pytest.approx(0.2, abs=1e-12)
    assert sum(r.count) == 250 and r.count[17] == 100 and r.count[11] == 100 and r.count[5] == 50
    assert r.accuracy[17] == pytest.approx(0.7) and r.confidence[11] == pytest.approx(0.6)
    assert np.isnan(r.accuracy[0])
    # in the report an empty bin's accuracy and confidence are null (strict JSON has no NaN), the others numbers
    d = json.loads(json.dumps(r.to_dict(), allow_nan=False))
    assert d["accuracy"][0] is None and d["confidence"][0] is None
    assert d["accuracy"][17] == pytest.approx(0.7) and d["confidence"][17] == pytest.approx(0.9)
    assert d["count"] == r.count and d["edges"] == r.edges and d["ece"] == r.ece
    # With 1 bin the over- and under-confidence cancel: |mean acc - mean conf| = |155 - 165| / 250 = 0.04.
    assert expected_calibration_error(conf, correct, n_bins=1).ece == pytest.approx(0.04, abs=1e-12)


def test_ece_bins_are_right_closed_and_perfect_calibration_is_zero():
    # 0.5 is the right edge of bin (0.45, 0.5] with 20 bins; 1.0 is in the last bin; 0 in the first.
    conf = torch.tensor([0.5, 1.0, 0.0], dtype=torch.float64)
    r = expected_calibration_error(conf, torch.tensor([True, True, False]), n_bins=20)
    assert r.count[9] == 1 and r.count[19] == 1 and r.count[0] == 1
    # a bin of one prediction: its accuracy is that prediction's hit, its confidence that prediction's confidence
    assert [r.accuracy[b] for b in (0, 9, 19)] == [0.0, 1.0, 1.0]
    assert [r.confidence[b] for b in (0, 9, 19)] == [0.0, 0.5, 1.0]
    assert r.ece == pytest.approx(1 / 3 * 0.5, abs=1e-12)
    g = torch.Generator().manual_seed(0)
    conf = torch.rand(200000, generator=g) * 0.5 + 0.5
    correct = torch.rand(200000, generator=g) < conf
    assert expected_calibration_error(conf, correct, 20).ece < 0.01
    # and an always-wrong confident model has ECE = its mean confidence
    assert expected_calibration_error(conf, torch.zeros_like(correct), 20).ece == pytest.approx(conf.double().mean()
                                                                                                  .item(), abs=1e-9)


# ------------------------------------------------------------------------------------------ OOD scores
def _net(seed=0, width=4, dtype=torch.float64):
    torch.manual_seed(seed)
    return ConvNet(10, 1, width).to(dtype).eval()


def test_ood_scores_are_log_p_x_the_top_class_probability_and_the_gradient_norm():
    """ood_scores, in batches, against the formulas: logpx = LSE f(x) (the unnormalised log-density, not the top
    logit), maxprob = max softmax f(x), grad_norm = -||d LSE f(x) / dx|| (grad_norm_score, checked on its own)."""
    from fastjem.eval.ood import ood_scores

    net = ConvNet(num_classes=10, in_channels=1, width=4).eval()
    x = torch.rand(7, 1, 8, 8, generator=torch.Generator().manual_seed(0)) * 2 - 1
    got = ood_scores(net, x, batch_size=3)
    with torch.no_grad():
        logits = net(x)
    torch.testing.assert_close(got["logpx"], torch.logsumexp(logits, 1))
    torch.testing.assert_close(got["maxprob"], torch.softmax(logits, 1).amax(1))
    torch.testing.assert_close(got["grad_norm"], grad_norm_score(net, x))


def test_grad_norm_score_matches_finite_differences():
    net = _net()
    x = torch.rand(3, 1, 8, 8, dtype=torch.float64, generator=torch.Generator().manual_seed(1)) * 2 - 1
    score = grad_norm_score(net, x)
    lse = lambda z: torch.logsumexp(net(z), 1)
    h = 1e-6
    grads = torch.zeros_like(x)
    with torch.no_grad():
        for p in range(64):
            e = torch.zeros(64, dtype=torch.float64)
            e[p] = h
            e = e.view(1, 1, 8, 8)
            grads.view(3, 64)[:, p] = (lse(x + e) - lse(x - e)) / (2 * h)
    expected = -grads.flatten(1).norm(dim=1)
    assert (expected < 0).all()
    torch.testing.assert_close(score, expected, rtol=1e-6, atol=1e-9)


def test_synthetic_ood_sets_are_what_they_claim():
    g = torch.Generator().manual_seed(0)
    x = torch.rand(10, 1, 8, 8, generator=g) * 2 - 1  # 10 distinct "test images"
    mixed, i, j = interpolate_pairs(x, 200, torch.Generator().manual_seed(1))
    assert mixed.shape == (200, 1, 8, 8)
    assert (i != j).all() and len(set(zip(i.tolist(), j.tolist(), strict=True))) > 50
    torch.testing.assert_close(mixed, 0.5 * x[i] + 0.5 * x[j])
    # every image is the midpoint of exactly one pair of distinct test images, and none is a test image
    mids = 0.5 * (x[:, None] + x[None, :]).flatten(2)  # [10, 10, 64]
    for k in range(len(mixed)):
        hits = ((mids - mixed[k].flatten()).abs().amax(-1) < 1e-6).nonzero().tolist()
        assert sorted(map(tuple, hits)) == sorted([(i[k].item(), j[k].item()), (j[k].item(), i[k].item())])
    assert ((x.flatten(1)[None] - mixed.flatten(1)[:, None]).abs().amax(-1) > 1e-3).all()
    u = uniform_noise(500, (3, 4, 4), g)
    assert u.min() >= -1 and u.max() <= 1 and abs(u.mean().item()) < 0.05 and abs(u.var().item() - 1 / 3) < 0.02
    c = constant_images(20, (3, 4, 4), g)
    assert (c == c[:, :, :1, :1]).all() and c.flatten(1).std(1).max() > 0.1
    colours = constant_images(500, (3, 2, 2), g)[:, :, 0, 0]  # per-channel values U(-1, 1)
    assert colours.min() >= -1 and colours.max() <= 1 and abs(colours.mean().item()) < 0.05
    assert abs(colours.var().item() - 1 / 3) < 0.02
    # two test images are enough: each mixture is of both, in either order, and both orders come up
    _, i2, j2 = interpolate_pairs(x[:2], 50, torch.Generator().manual_seed(2))
    assert set(zip(i2.tolist(), j2.tolist(), strict=True)) == {(0, 1), (1, 0)}


# ------------------------------------------------------------------------------------ attacks, refinement
@pytest.fixture(scope="module")
def digits_classifier():
    """A linear classifier of the 8x8 digits (about 95% test accuracy), trained in a second."""
    from fastjem.data import load_arrays, to_float

    a = load_arrays("digits")
    x, y = to_float(a.train_x), a.train_y
    torch.manual_seed(0)
    net = nn.Sequential(nn.Flatten(), nn.Linear(64, 10))
    opt = torch.optim.Adam(net.parameters(), lr=0.05)
    for _ in range(150):
        opt.zero_grad()
        nn.functional.cross_entropy(net(x), y).backward()
        opt.step()
    net.eval()
    for p in net.parameters():
        p.requires_grad_(False)
    return net, to_float(a.test_x), a.test_y


@pytest.mark.parametrize("norm,eps", [("linf", 0.25), ("l2", 3.0)])
def test_pgd_lowers_accuracy_and_respects_epsilon(digits_classifier, norm, eps):
    net, x, y = digits_classifier
    clean = (net(x).argmax(1) == y).float().mean().item()
    assert clean > 0.9
    x_adv = pgd_attack(net, x, y, eps, norm, steps=10, generator=torch.Generator().manual_seed(0))
    adv = (net(x_adv).argmax(1) == y).float().mean().item()
    assert adv < clean - 0.4, (clean, adv)
    delta = (x_adv - x).flatten(1)
    size = delta.abs().amax(1) if norm == "linf" else delta.norm(dim=1)
    assert (size <= eps * (1 + 1e-5)).all()
    assert size.max() > 0.9 * eps  # the attack uses its budget
    assert x_adv.min() >= -1 and x_adv.max() <= 1
    # a random perturbation of the same size does far less damage: the attack follows the gradient
    # (a classifier with zero gradient leaves only PGD's random start)
    rand = pgd_attack(lambda z: 0.0 * z.flatten(1)[:, :10], x, y, eps, norm, steps=1)
    assert (net(rand).argmax(1) == y).float().mean().item() > adv + 0.2


def test_refinement_is_differentiable_and_its_gradient_is_exact():
    net = _net(seed=2)
    x = torch.rand(2, 1, 8, 8, dtype=torch.float64, generator=torch.Generator().manual_seed(3)) * 2 - 1
    y = torch.tensor([1, 7])
    # noise 0 makes the pipeline deterministic so finite differences apply; a large step makes the
    # refinement move x far (the untrained net's input gradients are small)
    pipeline = RefineThenClassify(net, n_steps=3, step_size=200.0, noise=0.0)
    loss = lambda z: nn.functional.cross_entropy(pipeline(z), y, reduction="sum")
    xg = x.clone().requires_grad_(True)
    (grad,) = torch.autograd.grad(loss(xg), xg)
    assert grad.abs().sum() > 0
    # The gradient a detached refinement would give: the classifier's gradient at the refined point.
    x_ref = sgld_refine(net, x, 3, 200.0, 0.0).requires_grad_(True)
    assert (x_ref - x).abs().max() > 0.1
    assert torch.allclose(pipeline(x), net(x_ref.detach()))  # it classifies the refined images, not x
    (grad_detached,) = torch.autograd.grad(nn.functional.cross_entropy(net(x_ref), y, reduction="sum"), x_ref)
    h = 1e-6
    worst_detached = 0.0
    for p in (0, 9, 20, 27, 36, 45, 63):
        e = torch.zeros(64, dtype=torch.float64)
        e[p] = h
        e = e.view(1, 1, 8, 8)
        fd = (loss(x + e).item() - loss(x - e).item()) / (2 * h)
        assert grad.view(2, 64)[:, p].sum().item() == pytest.approx(fd, rel=1e-5, abs=1e-9)
        worst_detached = max(worst_detached, abs(grad_detached.view(2, 64)[:, p].sum().item() - fd) / abs(fd))
    assert worst_detached > 1e-3  # so the check above would catch a refinement cut out of the graph


# ---------------------------------------------------------------------------------------------------- FID
def test_fid_of_a_set_with_itself_is_zero_and_matches_the_diagonal_case():
    from fastjem.data import load_arrays, to_float

    feature_model = _net(seed=5, width=8, dtype=torch.float32)  # a small stand-in for Inception
    x = to_float(load_arrays("digits").test_x)
    with torch.no_grad():
        f = feature_model.features(x)  # [360, 32]
    assert fid_from_features(f, f) == pytest.approx(0.0, abs=1e-6)
    assert fid_from_features(f, f + 0.5) == pytest.approx(0.25 * f.shape[1], rel=1e-6)  # only the means differ
    assert fid_from_features(f[:180], f[180:]) > 1e-4
    # diagonal covariances: sum (m1 - m2)^2 + (s1 - s2)^2 over dimensions (s the standard deviations)
    mu1, mu2 = torch.tensor([0.0, 1.0, 2.0]), torch.tensor([1.0, 1.0, 0.0])
    v1, v2 = torch.tensor([1.0, 4.0, 9.0]), torch.tensor([4.0, 4.0, 1.0])
    expected = ((mu1 - mu2) ** 2).sum() + ((v1.sqrt() - v2.sqrt()) ** 2).sum()
    assert frechet_distance(mu1, torch.diag(v1), mu2, torch.diag(v2)) == pytest.approx(expected.item(), rel=1e-9)
    # full covariances: statistics in fp32, or one set's fp32 and the other's fp64, are reduced in fp64 (these
    # integer ones are exact in fp32), and a covariance asymmetric by round-off counts as its symmetric part
    g = torch.Generator().manual_seed(0)
    a, b = (torch.randint(-3, 4, (6, 6), generator=g).double() for _ in range(2))
    c1, c2 = a @ a.T + torch.eye(6, dtype=torch.float64), b @ b.T
    m1, m2 = torch.randint(-3, 4, (6,), generator=g).double(), torch.zeros(6, dtype=torch.float64)
    exact = frechet_distance(m1, c1, m2, c2)
    assert exact > 1.0
    assert frechet_distance(m1.float(), c1.float(), m2.float(), c2.float()) == pytest.approx(exact, rel=1e-12)
    assert frechet_distance(m1.float(), c1.float(), m2, c2) == pytest.approx(exact, rel=1e-12)
    skew = 1e-3 * torch.randn(6, 6, generator=g, dtype=torch.float64)
    assert frechet_distance(m1, c1 + skew - skew.T, m2, c2) == pytest.approx(exact, rel=1e-12)


# -------------------------------------------------------------------------------------- tiny checkpoints
TINY = dict(dataset="digits", arch="convnet", width=8, batch_size=16, sgld_steps=3, buffer_size=200, iters=12,
            warmup_iters=5, lr=1e-3, log_every=4, ckpt_every=0, device="cpu", seed=3, preset="test")


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    from fastjem.train import Trainer

    root = tmp_path_factory.mktemp("eval_runs")
    Trainer(TrainConfig(**TINY), out_dir=root / "jem", progress=False, log=lambda *a: None).fit()
    Trainer(TrainConfig(**TINY, px_weight=0.0), out_dir=root / "clf", progress=False, log=lambda *a: None).fit()
    return root


FAST = ["--no-progress", "--device", "cpu", "--n-test", "64", "--batch-size", "64"]


def _report(path):
    return json.loads(path.read_text())


def test_calibration_compared_with_a_run_of_another_dataset_is_refused(runs, tmp_path, capsys):
    """Reliability diagrams are compared on one test set: --compare with a run trained on other images is refused,
    naming both datasets, and no report is written."""
    from fastjem.train import Trainer

    image_folder(tmp_path / "imgs", classes=("a", "b"))
    Trainer(TrainConfig(**{**TINY, "iters": 2, "dataset": "imagefolder", "data_dir": str(tmp_path / "imgs")}),
            out_dir=tmp_path / "folder_run", progress=False, log=lambda *a: None).fit()
    other = tmp_path / "folder_run" / "checkpoint.pt"
    out = tmp_path / "cal"
    assert main(["eval", str(runs / "jem" / "checkpoint.pt"), "calibration", "--compare", str(other),
                 "--out-dir", str(out), *FAST]) == 1
    err = capsys.readouterr().err
    assert re.search(r"--compare \S*folder_run\S* was trained on \S+, not digits: calibration is compared on one "
                     r"test set", err), err
    assert not (out / "calibration.json").exists()


def test_calibration_compared_with_a_folder_run_of_other_classes_or_size_is_refused(tmp_path, capsys):
    """Two image-folder runs share the dataset name, not a test set: --compare with a run of other classes stopped
    at an IndexError traceback (3 test labels, 2 logits), and one of another image size was rated on images of a size
    it never saw, without a word. Both are refused, naming what differs."""
    from PIL import Image

    from fastjem.train import Trainer

    def folder(name, classes, size):
        for c in classes:
            (tmp_path / name / c).mkdir(parents=True)
            for i in range(6):
                Image.fromarray(np.full((size, size, 3), 40 * i, np.uint8)).save(tmp_path / name / c / f"{i}.png")
        return tmp_path / name

    def run(name, data, **cfg):
        Trainer(TrainConfig(**{**TINY, "iters": 1, "buffer_size": 48, "dataset": "imagefolder", "data_dir": str(data),
                               **cfg}), out_dir=tmp_path / name, progress=False, log=lambda *a: None).fit()
        return str(tmp_path / name / "checkpoint.pt")

    three, two = folder("abc", "abc", 8), folder("xy", "xy", 8)
    mine, other_classes = run("three", three), run("two", two)
    smaller = run("small", three, image_size=6)
    out = tmp_path / "cal"
    assert main(["eval", mine, "calibration", "--compare", other_classes, "--out-dir", str(out), *FAST]) == 1
    err = capsys.readouterr().err
    assert "was trained on the classes x, y, not a, b, c: calibration is compared on one test set" in err, err
    assert main(["eval", mine, "calibration", "--compare", smaller, "--out-dir", str(out), *FAST]) == 1
    err = capsys.readouterr().err
    assert "was trained on 3x6x6 images, not 3x8x8" in err, err
    assert not (out / "calibration.json").exists()
    # the same classes and image size (another run of that folder) compare as before
    assert main(["eval", mine, "calibration", "--compare", run("again", three, seed=4), "--out-dir", str(out),
                 *FAST]) == 0


def test_cli_accuracy_calibration_ood(runs, tmp_path, capsys):
    jem, clf = runs / "jem" / "checkpoint.pt", runs / "clf" / "checkpoint.pt"
    assert main(["eval", str(jem), "accuracy", "--n-steps", "2", *FAST]) == 0
    rep = _report(runs / "jem" / "eval" / "accuracy.json")  # the default out-dir
    r = rep["results"]
    assert r["n"] == 64 and 0 <= r["acc"] <= 1 and r["refined_2"]["n_steps"] == 2
    assert rep["checkpoint"] == str(jem.resolve()) and rep["model"] == "JEM"
    # what reproduces it: the test images read (a fixed subset of 64), the seed and the batch size
    assert {k: rep["settings"][k] for k in ("split", "n_test", "seed", "batch_size", "data_dir")} == {
        "split": "test", "n_test": 64, "seed": 0, "batch_size": 64, "data_dir": None}
    out = tmp_path / "out"
    assert main(["eval", str(jem), "calibration", "--compare", str(clf), "--bins", "10", "--out-dir", str(out),
                 *FAST]) == 0
    rep = _report(out / "calibration.json")
    assert [m["model"] for m in rep["results"]["models"]] == ["JEM", "classifier-only"]
    assert [m["name"] for m in rep["results"]["models"]] == ["JEM (jem)", "classifier-only (clf)"]
    assert all(m["n_bins"] == 10 and sum(m["count"]) == 64 for m in rep["results"]["models"])
    assert (out / "reliability.png").stat().st_size > 5000
    assert main(["eval", str(clf), "ood", "--ood", "uniform", "constant", "interp", "--n-ood", "50",
                 "--out-dir", str(out), *FAST]) == 0
    rep = _report(out / "ood.json")
    assert set(rep["results"]["auroc"]) == {"uniform", "constant", "interp"}
    assert all(0 <= v <= 1 for d in rep["results"]["auroc"].values() for k, v in d.items() if k != "n")
    for k in ("logpx", "maxprob", "grad_norm"):
        assert (out / f"ood_{k}.png").exists()
    printed = capsys.readouterr().out
    assert "AUROC vs uniform" in printed and "ood.json" in printed


def test_cli_samples_robustness_fid(runs, tmp_path, capsys):
    jem = runs / "jem" / "checkpoint.pt"
    out = tmp_path / "out"
    assert main(["eval", str(runs / "jem"), "samples", "--n-steps", "2", "--n-samples", "16", "--per-class", "3",
                 "--out-dir", str(out), *FAST]) == 0
    rep = _report(out / "samples.json")
    for name in ("samples_buffer.png", "samples_fresh.png", "samples_conditional.png", "samples_buffer_by_class.png"):
        assert (out / name).exists()
    from PIL import Image

    with Image.open(out / "samples_conditional.png") as im:  # 10 class rows of 3, 8x8 enlarged to 32x32
        assert im.size[1] > 10 * 32 and im.size[0] > 3 * 32 and im.size[0] < 4 * 34
    assert len(rep["results"]["buffer_by_class"]["kept_per_class"]) == 10
    assert rep["settings"]["n_steps"] == 2 and rep["settings"]["n_samples"] == 16
    assert main(["eval", str(jem), "robustness", "--refine-steps", "0", "1", "--linf-eps", "0", "16",
                 "--l2-eps", "0", "1", "--pgd-steps", "2", "--n-attack", "32", "--out-dir", str(out), *FAST]) == 0
    rep = _report(out / "robustness.json")
    acc = rep["results"]["accuracy"]
    assert set(acc) == {"linf", "l2"} and set(acc["linf"]) == {"0", "1"}
    assert acc["linf"]["0"][0]["eps"] == 0 and acc["linf"]["0"][1]["eps"] == pytest.approx(16 / 255)
    assert acc["linf"]["0"][1]["eps_255"] == pytest.approx(16)
    printed = capsys.readouterr().out
    assert "0/255:" in printed and "16/255:" in printed  # the summary shows L-inf epsilons as they were given
    assert (out / "robustness.png").exists()
    assert main(["eval", str(jem), "fid", "--features-model", "classifier", "--out-dir", str(out), *FAST]) == 0
    rep = _report(out / "fid.json")
    assert rep["results"]["fid"] > 0 and rep["results"]["n_real"] == 64
    # the classifier's inception-score analogue: between 1 and the 10 classes, over 10 splits of the samples
    r = rep["results"]
    assert r["classifier_score_splits"] == min(10, r["n_fake"]) and 1.0 <= r["classifier_score"] <= 10.0


def test_robustness_options_reach_the_attack_and_the_refinement(runs, tmp_path, monkeypatch):
    """--pgd-steps and the epsilons reach PGD (epsilons on the [0, 1] pixel scale: twice that on the [-1, 1]
    images), and the refinement runs --refine-steps steps with the checkpoint's SGLD step size and noise."""
    from fastjem.checkpoint import load_checkpoint
    from fastjem.eval import tasks

    attacks, refiners = [], []
    real_pgd, real_refine = tasks.pgd_attack, tasks.RefineThenClassify

    def pgd(pipeline, x, y, eps, norm, steps, **kw):
        attacks.append((norm, round(eps, 6), steps))
        return real_pgd(pipeline, x, y, eps, norm, steps, **kw)

    class Refine(real_refine):
        def __init__(self, model, n_steps, step_size, noise):
            refiners.append((n_steps, step_size, noise))
            super().__init__(model, n_steps, step_size, noise)

    monkeypatch.setattr(tasks, "pgd_attack", pgd)
    monkeypatch.setattr(tasks, "RefineThenClassify", Refine)
    ckpt = load_checkpoint(runs / "jem" / "checkpoint.pt")
    ckpt["config"].update(sgld_step_size=0.5, sgld_noise=0.02)  # not the defaults, so that they are seen passed on
    jem = tmp_path / "jem.pt"
    torch.save(ckpt, jem)
    assert main(["eval", str(jem), "robustness", "--refine-steps", "2", "--linf-eps", "8", "--l2-eps", "0.5",
                 "--pgd-steps", "3", "--n-attack", "8", "--out-dir", str(tmp_path), *FAST]) == 0
    assert set(attacks) == {("linf", round(2 * 8 / 255, 6), 3), ("l2", 1.0, 3)}
    assert set(refiners) == {(2, 0.5, 0.02)}


def test_robustness_cautions_when_the_refinement_leaves_the_image_range(runs, tmp_path, capsys, monkeypatch):
    """A refinement that throws clean images far out of [-1, 1] makes accuracy after it no measure of robustness:
    the report records how far each refinement moved them and says so, and so does its curve's label in the figure;
    a refinement that barely moves them does not get the caution. The figure's curves are the report's numbers."""
    from fastjem.checkpoint import load_checkpoint
    from fastjem.eval import plots

    drawn = {}
    monkeypatch.setattr(plots, "robustness_curves", lambda curves, path, title: drawn.update(curves))
    ckpt = load_checkpoint(runs / "clf" / "checkpoint.pt")
    for name, step, noise in (("far", 50.0, 0.5), ("near", 1e-6, 0.0)):
        ckpt["config"].update(sgld_step_size=step, sgld_noise=noise)
        torch.save(ckpt, tmp_path / f"{name}.pt")
        assert main(["eval", str(tmp_path / f"{name}.pt"), "robustness", "--refine-steps", "0", "3", "--norms",
                     "linf", "--linf-eps", "8", "--pgd-steps", "1", "--n-attack", "16",
                     "--out-dir", str(tmp_path / name), *FAST]) == 0
        r = _report(tmp_path / name / "robustness.json")["results"]
        printed = capsys.readouterr().out
        moved = r["refinement_change"]["3"]["mean_abs_change"]
        if name == "far":
            assert moved > 0.5 and "not robustness" in r["caution"] and "is not robustness" in printed
            label = f"3 SGLD steps (inputs moved {moved:.2g}/px: not robustness)"
        else:
            assert moved < 1e-3 and r["caution"] is None and "is not robustness" not in printed
            label = "3 SGLD steps"
        assert list(drawn["linf"]) == ["no refinement", label]
        for n, curve in zip(("0", "3"), drawn["linf"].values()):
            assert curve == [(p["eps"], p["acc"]) for p in r["accuracy"]["linf"][n]]


def test_cli_all_prints_a_summary_table(runs, tmp_path, capsys):
    out = tmp_path / "all"
    out.mkdir()
    (out / "fid.json").write_text("{}")  # an earlier fid report, which this `all` skips: said to be older
    assert main(["eval", str(runs / "jem"), "all", "--out-dir", str(out), "--n-steps", "1", "--n-samples", "8",
                 "--per-class", "2", "--refine-steps", "0", "--linf-eps", "0", "8", "--l2-eps", "0", "0.5",
                 "--pgd-steps", "1", "--n-attack", "16", "--n-ood", "20", *FAST]) == 0
    printed = capsys.readouterr().out
    for task in ("accuracy", "calibration", "ood", "samples", "robustness", "fid"):
        assert task in printed
    assert "skipped" in printed  # fid without a feature model, and the OOD datasets not available offline
    summary = _report(out / "all.json")["summary"]
    assert any(row[0] == "ood" and "uniform" in row[1] for row in summary)
    assert (out / "samples_fresh.png").exists() and (out / "reliability.png").exists()
    # report.md: the same rows as a table, and every figure linked where it lies
    report = (out / "report.md").read_text()
    assert "| task | metric | value |" in report and "| accuracy | plain acc / NLL |" in report
    links = re.findall(r"!\[[^]]*\]\(([^)]+)\)", report)
    assert "reliability.png" in links and "samples_fresh.png" in links
    assert all((out / link).exists() for link in links)
    # each task's figures under its own heading (accuracy has none)
    assert "\n## calibration\n\n![reliability](reliability.png)\n" in report and "## accuracy" not in report
    assert str(out / "report.md") in printed
    assert f"note: fid.json in {out} is from an earlier run: this `all` skipped fid," in printed
    assert "ood.json in" not in printed  # written by this run
    # one task again into that folder: its summaries are now stale, and the command says so
    assert main(["eval", str(runs / "jem"), "accuracy", "--out-dir", str(out), *FAST]) == 0
    assert "all.json and report.md in" in capsys.readouterr().out


@pytest.fixture(scope="module")
def inception_weights(tmp_path_factory):
    """An Inception v3 weights file in torch-fidelity's format, randomly initialised (the real one cannot be
    downloaded here): He-initialised convolutions keep the activations' scale through the 94 layers, so different
    image sets get different features (default init lets them vanish and every set looks alike)."""
    fx = pytest.importorskip("torch_fidelity.feature_extractor_inceptionv3")
    pytest.importorskip("torchmetrics")
    from unittest import mock

    torch.manual_seed(0)
    with mock.patch.object(fx, "load_state_dict_from_url", lambda *a, **k: None), \
            mock.patch.object(fx.FeatureExtractorInceptionV3, "load_state_dict", lambda *a, **k: None):
        net = fx.FeatureExtractorInceptionV3("inception-v3-compat", ["2048"])
    for m in net.modules():
        if isinstance(m, nn.Conv2d):
            nn.init.kaiming_normal_(m.weight, nonlinearity="relu")
    path = tmp_path_factory.mktemp("inception") / "pt_inception-test.pth"
    torch.save(net.state_dict(), path)
    return path


def test_inception_score_takes_each_splits_own_marginal():
    """exp(E KL(p(y|x) || p(y))) with p(y) the marginal of each split, then mean and (unbiased) std over splits:
    a split of ten one-hot classes scores 10, a split of one class 1 (two one-class splits of different classes
    score 1 each, where the pooled marginal would give 2); uniform predictions score 1; one split has std 0."""
    from fastjem.eval import inception_score_from_probs

    eye = torch.eye(10)
    assert inception_score_from_probs(torch.cat([eye[:1].repeat(10, 1), eye[1:2].repeat(10, 1)]), splits=2) == \
        pytest.approx((1.0, 0.0))
    mean, std = inception_score_from_probs(torch.cat([eye, eye[:1].repeat(10, 1)]), splits=2)
    assert mean == pytest.approx(5.5) and std == pytest.approx(4.5 * 2**0.5)
    assert inception_score_from_probs(eye.repeat(3, 1), splits=3) == pytest.approx((10.0, 0.0))
    assert inception_score_from_probs(torch.full((30, 10), 0.1), splits=3) == pytest.approx((1.0, 0.0))
    assert inception_score_from_probs(eye, splits=1) == pytest.approx((10.0, 0.0))  # one split has no spread
    # 11 samples in 10 splits: ten splits, rows k * 11 // 10 to (k + 1) * 11 // 10 (one of two rows), not
    # torch.chunk's six; one sample is too few for two splits
    probs = torch.softmax(torch.randn(11, 10, generator=torch.Generator().manual_seed(0), dtype=torch.float64), 1)
    bounds = [k * 11 // 10 for k in range(11)]
    parts = [probs[a:b] for a, b in zip(bounds[:-1], bounds[1:])]
    each = torch.tensor([(c * (c.log() - c.mean(0, keepdim=True).log())).sum(1).mean().exp().item() for c in parts],
                        dtype=torch.float64)
    assert [len(c) for c in parts].count(2) == 1 and len(parts) == 10
    assert inception_score_from_probs(probs, splits=10) == pytest.approx((each.mean().item(), each.std().item()),
                                                                          rel=1e-12)
    with pytest.raises(ValueError, match="1 <= splits <= the number of samples"):
        inception_score_from_probs(probs[:1], splits=2)


def test_scores_given_as_python_lists_keep_their_precision():
    """A list of Python floats is fp64, as an array of them is: 1e8 + 1 ranks above 1e8 (fp32, the default of
    torch.as_tensor, made them a tie: AUROC 0.625), and 0.30000001 lies above the edge 0.3 (bin 6 of 20)."""
    from fastjem.eval.metrics import auroc, expected_calibration_error

    assert auroc([1e8 + 1, 2.0], [1e8, 1.0]) == auroc(np.array([1e8 + 1, 2.0]), np.array([1e8, 1.0])) == 0.75
    assert expected_calibration_error([0.30000001], [True], 20).count[6] == 1
    assert expected_calibration_error(np.array([0.30000001]), np.array([True]), 20).count[6] == 1
    assert expected_calibration_error(torch.tensor([0.30000001]), torch.tensor([True]), 20).count[5] == 1  # fp32 0.3


def test_match_shape_converts_channels_by_luma_and_resizes():
    """RGB -> grey is ITU-R 601 luma (0.299, 0.587, 0.114); grey -> RGB copies the channel; other channel counts
    are refused; other sizes are resized to the model's; values stay in [-1, 1]."""
    from fastjem.eval import match_shape

    rgb = torch.tensor([0.5, -0.2, 0.9]).view(1, 3, 1, 1).expand(2, 3, 8, 8)
    grey = match_shape(rgb, 1, 8)
    assert grey.shape == (2, 1, 8, 8)
    torch.testing.assert_close(grey, torch.full((2, 1, 8, 8), 0.299 * 0.5 - 0.587 * 0.2 + 0.114 * 0.9))
    back = match_shape(grey, 3, 4)
    assert back.shape == (2, 3, 4, 4) and torch.equal(back[:, 0], back[:, 2])
    torch.testing.assert_close(back, torch.full((2, 3, 4, 4), 0.299 * 0.5 - 0.587 * 0.2 + 0.114 * 0.9))
    assert match_shape(torch.full((1, 1, 5, 5), 3.0), 1, 5).max() == 1.0
    assert match_shape(torch.full((1, 1, 5, 5), -3.0), 1, 5).min() == -1.0
    with pytest.raises(Exception, match="cannot convert 2-channel"):
        match_shape(torch.zeros(1, 2, 4, 4), 3, 4)
    with pytest.raises(Exception, match="cannot convert 4-channel"):
        match_shape(torch.zeros(1, 4, 4, 4), 1, 4)
    # resized bilinearly, pixel centres aligned, antialiased only when shrinking
    img = torch.rand(2, 1, 12, 12, generator=torch.Generator().manual_seed(0)) * 2 - 1
    for size, shrink in ((5, True), (20, False)):
        expected = F.interpolate(img, size=(size, size), mode="bilinear", align_corners=False, antialias=shrink)
        torch.testing.assert_close(match_shape(img, 1, size), expected.clamp(-1, 1))


def test_fid_and_inception_score_through_torchmetrics_with_local_weights(runs, tmp_path, inception_weights,
                                                                         monkeypatch):
    """--inception-weights: FID and the Inception score from torchmetrics, the weights read from the given file
    (the Inception score's network too: torchmetrics' InceptionScore takes no weights path)."""
    import torch_fidelity.feature_extractor_inceptionv3 as fx

    from fastjem.data import load_arrays, to_float
    from fastjem.eval.tasks import _torchmetrics_inception

    def no_download(*args, **kwargs):
        raise AssertionError("Inception weights downloaded instead of read from --inception-weights")

    monkeypatch.setattr(fx, "load_state_dict_from_url", no_download)

    x = to_float(load_arrays("digits").test_x)[:4]
    noise = torch.rand(4, 1, 8, 8, generator=torch.Generator().manual_seed(1)) * 2 - 1
    same = _torchmetrics_inception(str(inception_weights), x, x, batch_size=4)
    far = _torchmetrics_inception(str(inception_weights), x, noise, batch_size=4)
    assert abs(same["fid"]) < 1e-3 and far["fid"] > 1.0
    assert all(r["inception_score"] >= 1.0 - 1e-5 for r in (same, far))
    out = tmp_path / "out"
    assert main(["eval", str(runs / "jem"), "fid", "--inception-weights", str(inception_weights), "--n-fid", "4",
                 "--out-dir", str(out), *FAST, "--n-test", "4"]) == 0
    rep = _report(out / "fid.json")["results"]
    assert rep["n_real"] == 4 and rep["n_fake"] == 4 and rep["fid"] > 0 and rep["inception_score"] >= 1.0 - 1e-5
    assert rep["features"].startswith("Inception v3")


def test_fid_reads_its_inception_weights_before_it_samples(runs, tmp_path, capsys, monkeypatch):
    """A damaged --inception-weights file is one clear error that names it, given before any chain is run (it came
    after minutes of sampling)."""
    pytest.importorskip("torchmetrics")
    import fastjem.eval.tasks as tasks

    monkeypatch.setattr(tasks, "_chains", lambda *a, **k: (_ for _ in ()).throw(AssertionError("sampled first")))
    bad = tmp_path / "pt_inception.pth"
    bad.write_bytes(b"not the weights" * 100)
    assert main(["eval", str(runs / "jem"), "fid", "--inception-weights", str(bad), "--source", "fresh",
                 "--n-fid", "4", "--out-dir", str(tmp_path / "out"), *FAST]) == 1
    err = capsys.readouterr().err
    assert err.startswith("fastjem: error:") and "could not be read as the Inception v3 weights" in err, err
    assert str(bad) in err and "sampled first" not in err and "Traceback" not in err


def test_fid_without_torchmetrics_or_with_one_too_old_for_local_weights_says_what_to_install(
        runs, tmp_path, capsys, monkeypatch):
    """--inception-weights needs torchmetrics[image], and a torchmetrics whose metrics take a weights path: without
    either, one error says what to install (and that --features-model needs nothing extra), before any chain."""
    pytest.importorskip("torchmetrics")
    import sys

    import torchmetrics.image.fid

    import fastjem.eval.tasks as tasks

    monkeypatch.setattr(tasks, "_chains", lambda *a, **k: (_ for _ in ()).throw(AssertionError("sampled first")))
    weights = tmp_path / "pt_inception.pth"
    weights.write_bytes(b"unread")
    args = ["eval", str(runs / "jem"), "fid", "--inception-weights", str(weights), "--source", "fresh", "--n-fid",
            "4", "--out-dir", str(tmp_path / "out"), *FAST]
    with monkeypatch.context() as m:
        m.setitem(sys.modules, "torchmetrics.image.fid", None)  # import fails, as when it is not installed
        assert main(args) == 1
    err = capsys.readouterr().err
    assert "FID with Inception weights uses torchmetrics, which is not installed: pip install 'torchmetrics[image]'" \
        in err and "--features-model, which needs nothing extra" in err and "Traceback" not in err

    def old(*args, **kwargs):
        raise TypeError("__init__() got an unexpected keyword argument 'feature_extractor_weights_path'")

    monkeypatch.setattr(torchmetrics.image.fid, "FrechetInceptionDistance", old)
    assert main(args) == 1
    err = capsys.readouterr().err
    assert "this torchmetrics cannot load local Inception weights (__init__() got an unexpected keyword argument " \
           "'feature_extractor_weights_path'); upgrade it: pip install -U 'torchmetrics[image]'" in err, err
    assert "sampled first" not in err and "Traceback" not in err


class _Reached(Exception):
    """Raised by a stand-in task: the command got as far as calling it."""


def test_the_command_lines_defaults_are_the_librarys(monkeypatch, tmp_path):
    """`fastjem eval CKPT TASK` without options calls each task with the defaults its function in
    fastjem.eval.tasks has (one set of defaults for the command line and the library, the ones the help states),
    and `all` hands every task those same options."""
    import inspect

    from fastjem.eval import tasks

    def defaults(fn):
        return {k: p.default for k, p in inspect.signature(fn).parameters.items()
                if p.default is not inspect.Parameter.empty}

    common = defaults(tasks._Run.__init__)
    names = ("accuracy", "calibration", "ood", "samples", "robustness", "fid")
    library = {name: {**defaults(getattr(tasks, name)), **common} for name in names}
    library["ood"]["skip_missing"] = False
    seen = {}

    def stand_in(name):
        def call(checkpoint, **kwargs):
            seen[name] = kwargs
            raise _Reached
        return call

    for name in (*names, "run_all"):
        monkeypatch.setattr(tasks, name, stand_in(name))
    checkpoint = str(tmp_path / "c.pt")
    for name in names:
        with pytest.raises(_Reached):
            main(["eval", checkpoint, name])
        given = {k: tuple(v) if isinstance(v, list) else v for k, v in seen.pop(name).items()}
        assert given == {k: library[name][k] for k in given}, name
        assert set(given) >= set(library[name]) - {"step_size", "noise", "compare", "inception_weights",
                                                     "features_model"}, name
    with pytest.raises(_Reached):
        main(["eval", checkpoint, "all"])
    every = seen.pop("run_all")
    assert {k: every[k] for k in common} == common
    for name, opts in every["task_options"].items():
        assert opts == {k: library[name][k] for k in opts}, name
    assert set(every["task_options"]) == set(names)
    with pytest.raises(_Reached):  # the smallest valid counts
        main(["eval", checkpoint, "ood", "--n-ood", "1", "--n-test", "0"])


def test_sample_command_defaults_are_the_librarys(runs, monkeypatch, tmp_path):
    """`fastjem sample CKPT` draws with fastjem.eval.draw.draw's own defaults (100 samples, 100 steps, batches of
    500, seed 0, ...), with a progress bar."""
    import inspect

    from fastjem.eval import draw

    sig, seen = inspect.signature(draw.draw), {}

    def stand_in(*args, **kwargs):
        seen.update(sig.bind(*args, **kwargs).arguments)
        raise _Reached

    monkeypatch.setattr(draw, "draw", stand_in)
    with pytest.raises(_Reached):
        main(["sample", str(runs / "jem"), "--out", str(tmp_path / "s.npz")])
    library = {k: p.default for k, p in sig.parameters.items() if p.default is not inspect.Parameter.empty}
    assert seen.pop("progress") is True and library.pop("progress") is False
    assert {k: seen[k] for k in library} == library


@pytest.mark.parametrize("args,match", [
    (["accuracy", "--compare", "{clf}"], "--compare is for calibration: the accuracy task does not use it"),
    (["calibration", "--n-steps", "5"], "--n-steps is for accuracy and samples and fid"),
    (["ood", "--source", "fresh", "--pgd-steps", "3"], "--pgd-steps is for robustness; --source is for fid"),
    (["samples", "--ood", "uniform"], "--ood is for ood"),
])
def test_an_option_the_task_does_not_read_is_refused(runs, capsys, args, match):
    """An option of another task (it was silently ignored: `accuracy --compare` compared nothing) is one error that
    names the task it belongs to; the same options with `all`, or at their defaults, are accepted."""
    args = [a.replace("{clf}", str(runs / "clf")) for a in args]
    assert main(["eval", str(runs / "jem"), *args, *FAST]) == 1
    err = capsys.readouterr().err
    assert err.startswith("fastjem: error:") and match in err and "Traceback" not in err, err
    from fastjem.cli import build_parser
    from fastjem.eval.cli import refuse_ignored_options

    parser = build_parser()
    refuse_ignored_options(parser.parse_args(["eval", "ckpt", "all", *args[1:]]))
    refuse_ignored_options(parser.parse_args(["eval", "ckpt", "accuracy", "--bins", "20", "--n-fid", "10000"]))


def test_sample_refuses_a_class_given_twice_or_all_beside_classes():
    from fastjem.eval.draw import parse_classes

    assert parse_classes(["3", "1"], 10) == [3, 1] and parse_classes(["all"], 4) == [0, 1, 2, 3]
    with pytest.raises(ConfigError, match="--class 3 is given twice"):
        parse_classes(["3", "3"], 10)
    with pytest.raises(ConfigError, match="--class all stands alone"):
        parse_classes(["all", "3"], 10)


@pytest.mark.parametrize("args,match", [
    (["{tmp}/missing.pt", "accuracy"], "does not exist"),
    (["{jem}", "nonsense"], "unknown eval task"),
    (["{jem}", "ood", "--ood", "svhn", "--data-dir", "{tmp}/nothing"], "--download"),
    (["{jem}", "ood", "--ood", "mnist"], "unknown OOD set"),
    (["{jem}", "fid"], "--inception-weights"),
    (["{jem}", "fid", "--inception-weights", "{tmp}/none.pth"], "does not exist"),
    (["{clf}", "samples", "--init", "buffer"], "no replay buffer"),
    (["{clf}", "fid", "--source", "buffer", "--features-model", "classifier"], "no replay buffer (classifier-only"),
], ids=["missing-checkpoint", "unknown-task", "ood-offline", "unknown-ood", "fid-no-weights", "fid-bad-weights",
        "no-buffer", "fid-no-buffer"])
def test_bad_input_gets_one_clear_error(runs, tmp_path, capsys, args, match):
    subst = {"{tmp}": str(tmp_path), "{jem}": str(runs / "jem"), "{clf}": str(runs / "clf")}
    for k, v in subst.items():
        args = [a.replace(k, v) for a in args]
    assert main(["eval", *args, *FAST]) == 1
    err = capsys.readouterr().err
    assert err.startswith("fastjem: error:") and match in err, err
    assert "Traceback" not in err


# ------------------------------------------------------------------------------------------- fastjem sample
SAMPLE = ["--no-progress", "--device", "cpu", "--n-steps", "5"]


def test_cli_sample_unconditional_writes_arrays_grid_and_keeps_what_exists(runs, capsys):
    from fastjem.eval.core import load_model

    ckpt = runs / "jem" / "checkpoint.pt"
    assert main(["sample", str(runs / "jem"), "-n", "12", *SAMPLE]) == 0
    out = runs / "jem" / "sampled" / "unconditional.npz"  # the default place
    printed = capsys.readouterr().out
    assert str(out) in printed
    assert "12 samples, unconditional: 5 SGLD steps from the replay buffer, " in printed  # where the chains began
    with np.load(out) as f:
        arrays = {k: f[k] for k in f.files}
    # the summary: what the network says of the samples saved
    said = float(re.search(r"\n  mean log p~\(x\)  (\S+)\n", printed).group(1))
    assert said == pytest.approx(float(arrays["logpx"].mean()), abs=1e-3)
    counts = np.bincount(arrays["pred"], minlength=10).tolist()
    assert sum(counts) == 12
    said = ", ".join(f"{k}: {n}" for k, n in enumerate(counts))  # digits' classes are named 0..9
    assert f"\n  samples per predicted class  {said}\n" in printed
    assert set(arrays) == {"x", "images", "pred", "logpx"}
    x = torch.from_numpy(arrays["x"])
    assert x.shape == (12, 1, 8, 8) and x.dtype == torch.float32
    assert np.array_equal(arrays["images"], ((x.clamp(-1, 1) + 1) * 127.5).round().to(torch.uint8).numpy())
    logits = load_model(ckpt, "cpu").model(x)
    assert np.array_equal(arrays["pred"], logits.argmax(1).numpy())
    assert np.allclose(arrays["logpx"], torch.logsumexp(logits, 1).detach().numpy(), atol=1e-5)
    assert out.with_suffix(".png").stat().st_size > 500
    before = out.read_bytes()
    assert main(["sample", str(ckpt), "-n", "12", "--seed", "1", *SAMPLE]) == 1  # exists: refused, kept
    assert "--force" in capsys.readouterr().err
    assert out.read_bytes() == before
    assert main(["sample", str(ckpt), "-n", "12", "--seed", "1", "--force", *SAMPLE]) == 0
    assert out.read_bytes() != before
    # --force replaces earlier samples, never a training checkpoint (a run's only state)
    import shutil

    copy = out.parent / "copy.pt"
    shutil.copy(ckpt, copy)
    before = copy.read_bytes()
    assert main(["sample", str(ckpt), "-n", "4", "--out", str(copy), "--force", *SAMPLE]) == 1
    assert "is a training checkpoint, which --force does not replace" in capsys.readouterr().err
    # without --force too: said at once (it offered --force, which then refused it)
    assert main(["sample", str(ckpt), "-n", "4", "--out", str(copy), *SAMPLE]) == 1
    err = capsys.readouterr().err
    assert "is a training checkpoint, which --force does not replace" in err and "pass --force" not in err
    assert copy.read_bytes() == before
    pt = out.with_suffix(".pt")
    # the grid beside the .pt would be the .npz samples' grid: not replaced unasked either
    assert main(["sample", str(ckpt), "-n", "4", "--out", str(pt), *SAMPLE]) == 1
    assert f"{out.with_suffix('.png')} exists: pass --force" in capsys.readouterr().err
    assert main(["sample", str(ckpt), "-n", "4", "--out", str(pt), "--force", *SAMPLE]) == 0  # samples: replaced


def test_cli_sample_shows_its_progress_unless_told_not_to(runs, tmp_path, capsys):
    """The bar counts SGLD steps on stderr; --no-progress keeps stderr quiet."""
    args = ["sample", str(runs / "jem"), "-n", "4", "--n-steps", "3", "--device", "cpu"]
    assert main([*args, "--out", str(tmp_path / "a.npz")]) == 0
    assert "SGLD" in capsys.readouterr().err
    assert main([*args, "--out", str(tmp_path / "b.npz"), "--no-progress"]) == 0
    assert "SGLD" not in capsys.readouterr().err


def test_sample_refuses_a_bad_step_size_before_it_loads_or_minds_the_output(runs, tmp_path, capsys):
    kept = tmp_path / "kept.npz"
    kept.write_bytes(b"earlier samples")
    assert main(["sample", str(tmp_path / "missing"), "--step-size", "-0.5", "--out", str(kept), *SAMPLE]) == 1
    assert "got --step-size -0.5" in capsys.readouterr().err and kept.read_bytes() == b"earlier samples"
    # an --out that exists is refused before the checkpoint is looked for (and minutes of sampling)
    assert main(["sample", str(tmp_path / "missing"), "--out", str(kept), *SAMPLE]) == 1
    assert f"{kept} exists: pass --force" in capsys.readouterr().err and kept.read_bytes() == b"earlier samples"


def test_sample_says_when_its_chains_diverged(runs, tmp_path, capsys):
    """A step size or noise far too large fills the file with inf / NaN: saved as drawn, and said."""
    args = ["sample", str(runs / "jem"), "-n", "4", "--init", "noise", *SAMPLE]
    assert main([*args, "--noise", "1e308", "--out", str(tmp_path / "wild.npz")]) == 0
    assert re.search(r"warning: 4 of the 4 samples in .*wild.npz are not finite: the chains diverged \(step size 1, "
                     r"noise 1e\+308\); give a smaller --step-size or --noise", capsys.readouterr().err)
    assert not np.isfinite(np.load(tmp_path / "wild.npz")["x"]).any()
    assert main([*args, "--out", str(tmp_path / "calm.npz")]) == 0
    assert "not finite" not in capsys.readouterr().err


def test_sample_draws_one_chain_in_batches_of_one_and_starts_on_every_buffer_row(runs, tmp_path):
    from fastjem.eval import draw
    from fastjem.eval.core import load_model

    out = tmp_path / "one.npz"
    assert main(["sample", str(runs / "jem"), "-n", "1", "--batch-size", "1", "--out", str(out), *SAMPLE]) == 0
    with np.load(out) as f:
        assert f["x"].shape == (1, 1, 8, 8)
    # chain starts are drawn uniformly from all the buffer's rows, the first and last included
    em = load_model(runs / "jem", "cpu")
    em.buffer = torch.arange(4.0).view(4, 1, 1, 1).expand(4, 1, 8, 8).clone()
    starts = draw.draw(em, 200, n_steps=0, init="buffer").x[:, 0, 0, 0]
    assert torch.bincount(starts.long(), minlength=4).min() > 20  # 50 expected per row


def test_the_library_draw_checks_its_arguments_as_the_command_does(runs, tmp_path):
    """fastjem.eval.draw / save called from Python: a bad count or --init is refused before the checkpoint is
    loaded, a bad step size after (the checkpoint's own is the default), and an existing file is not replaced."""
    from fastjem.eval import draw
    from fastjem.eval.core import load_model

    for kwargs, match in (({"n": 0}, "--n and --batch-size must be > 0 and --n-steps >= 0, got --n 0, "),
                          ({"init": "zeros"}, "--init must be one")):
        with pytest.raises(ConfigError, match=match):
            draw.draw(tmp_path / "missing.pt", **kwargs)
    with pytest.raises(ConfigError, match=r"finite numbers >= 0, got --step-size -1\.0"):
        draw.draw(runs / "jem", step_size=-1.0, n_steps=1, device="cpu")
    em = load_model(runs / "jem", "cpu")
    with pytest.raises(ConfigError, match="--init must be one of"):
        draw.resolve_init(em, "zeros")
    assert draw.default_output(em, list(range(10))).name == "all-classes.npz"
    drawn = draw.draw(em, n=2, n_steps=0)
    out = draw.save(drawn, tmp_path / "two.npz")
    with pytest.raises(ConfigError, match="exists: pass --force"):
        draw.save(drawn, out)


def test_draw_defaults_are_fastjem_samples():
    """A library call draw(checkpoint) samples as the command does without options."""
    import inspect

    from fastjem.cli import build_parser
    from fastjem.eval import draw

    args = build_parser().parse_args(["sample", "ckpt"])
    for name, p in inspect.signature(draw.draw).parameters.items():
        if p.default is not inspect.Parameter.empty and name != "progress":  # the library is quiet by default
            assert p.default == getattr(args, name), name
    assert args.no_progress is False


def test_eval_help_lists_each_tasks_options_under_its_heading(capsys):
    """`fastjem eval --help`: the options in groups, each under the task(s) it serves."""
    with pytest.raises(SystemExit):
        main(["eval", "--help"])
    text = capsys.readouterr().out
    headings = ["common:", "accuracy and samples:", "calibration:", "ood:", "robustness:", "fid:", "tasks:"]
    at = [text.index(f"\n{h}\n") for h in headings]
    assert at == sorted(at)
    groups = dict(zip(headings, (text[a:b] for a, b in zip(at, at[1:]))))
    for heading, options in (("common:", ("--batch-size", "--seed")),
                             ("accuracy and samples:", ("--n-steps", "--init")),
                             ("calibration:", ("--bins", "--compare")), ("ood:", ("--ood-data-dir", "--n-ood")),
                             ("robustness:", ("--norms", "--n-attack")), ("fid:", ("--inception-weights", "--n-fid"))):
        assert all(f"  {o} " in groups[heading] for o in options), heading


@pytest.mark.parametrize("task", ["accuracy", "calibration", "ood", "samples", "robustness", "fid"])
def test_each_tasks_defaults_are_fastjem_evals(task):
    """A library call tasks.<task>(checkpoint) evaluates as `fastjem eval CHECKPOINT <task>` without options."""
    import inspect

    from fastjem.cli import build_parser
    from fastjem.eval import tasks
    from fastjem.eval.cli import _task_options

    args = build_parser().parse_args(["eval", "ckpt", task])
    params = inspect.signature(getattr(tasks, task)).parameters
    for name, value in _task_options(args)[task].items():
        assert params[name].default == value, name
    common = inspect.signature(tasks._Run).parameters
    for name in ("batch_size", "device", "data_dir", "download", "seed", "test_noise", "n_test", "out_dir"):
        assert common[name].default == getattr(args, name), name
    assert common["progress"].default is not args.no_progress
    if task == "ood":  # no --ood: the synthetic sets
        assert args.ood is None and params["sets"].default == tasks.SYNTHETIC_SETS


def _linear_network(em, scale: float = 1.0):
    """``em`` with its network replaced by a fixed linear one (8 x 8 images -> 10 logits), whose answers a test can
    work out; drawn from torch's generator, so seed it first."""
    em.model = nn.Sequential(nn.Flatten(), nn.Linear(64, 10)).requires_grad_(False)
    em.model[1].weight.mul_(scale)
    return em


def test_sample_is_seeded_and_starts_where_asked(runs):
    from fastjem.eval import draw
    from fastjem.eval.core import load_model

    em = load_model(runs / "jem", "cpu")
    a = draw.draw(em, 6, n_steps=3, seed=4)
    assert torch.equal(a.x, draw.draw(em, 6, n_steps=3, seed=4).x)
    assert not torch.equal(a.x, draw.draw(em, 6, n_steps=3, seed=5).x)
    # what repeats a draw besides the seed is recorded: each batch of chains draws its own noise
    assert (a.settings["batch_size"], a.settings["device"]) == (500, "cpu")
    halves = draw.draw(em, 6, n_steps=3, seed=4, batch_size=3)
    assert halves.settings["batch_size"] == 3 and not torch.equal(a.x, halves.x)
    assert torch.equal(halves.x, draw.draw(em, 6, n_steps=3, seed=4, batch_size=3).x)
    # zero step size and noise: the chains stay where they started
    still = draw.draw(em, 20, n_steps=3, step_size=0.0, noise=0.0, init="buffer").x
    assert all((em.buffer == row).flatten(1).all(1).any() for row in still)  # rows of the replay buffer
    fresh = draw.draw(em, 20, n_steps=3, step_size=0.0, noise=0.0, init="noise").x
    assert not any((em.buffer == row).flatten(1).all(1).any() for row in fresh)
    assert fresh.min() >= -1 and fresh.max() <= 1 and fresh.std() > 0.5  # U(-1, 1): std 0.577
    with pytest.raises(ConfigError, match="no replay buffer"):
        draw.draw(runs / "clf", 4, init="buffer", device="cpu")
    # informative: the class Gaussians of the training images; class-conditional chains start in their class
    from fastjem.data import load_arrays, to_float

    a = load_arrays("digits")
    y = torch.arange(10).repeat_interleave(200)
    start = draw.draw(em, 200, classes=list(range(10)), n_steps=0, init="informative")
    assert start.settings["init"] == "informative" and start.x.min() >= -1 and start.x.max() <= 1
    for k in (0, 3, 7):
        class_mean = to_float(a.train_x[a.train_y == k]).mean(0)
        others = to_float(a.train_x[a.train_y != k]).mean(0)
        got = start.x[y == k].mean(0)
        assert (got - class_mean).abs().mean() < 0.5 * (got - others).abs().mean(), k


def test_conditional_chains_reach_their_class(runs):
    # On a linear f(x) = Wx the conditional energy's gradient is W[y]: 20 steps of size 1 move x by 20 W[y],
    # which makes y the top logit (|W[y]|^2 ~ 64 against W[k].W[y] ~ +-8 for random rows). Unconditional chains
    # follow the softmax-weighted rows instead and pile into the classes the start favours.
    from fastjem.eval import draw
    from fastjem.eval.core import load_model

    em = load_model(runs / "jem", "cpu")
    torch.manual_seed(0)
    _linear_network(em)
    cond = draw.draw(em, 5, list(range(10)), n_steps=20, init="noise")
    assert torch.equal(cond.pred, cond.target)
    free = draw.draw(em, 50, None, n_steps=20, init="noise")
    assert torch.bincount(free.pred, minlength=10).max() > 10  # not spread evenly over the classes


def test_cli_sample_class_conditional_pt(runs, tmp_path, capsys):
    out = tmp_path / "cond.pt"
    assert main(["sample", str(runs / "jem"), "--class", "all", "-n", "4", "--init", "noise", "--out", str(out),
                 "--no-progress", "--device", "cpu", "--n-steps", "20"]) == 0
    saved = torch.load(out)
    hit = (saved["pred"] == saved["target"]).float().mean().item()
    assert f"\n  classified as their target class: {hit:.3f}\n" in capsys.readouterr().out
    assert saved["target"].tolist() == [c for c in range(10) for _ in range(4)]
    assert saved["settings"]["classes"] == list(range(10)) and saved["settings"]["init"] == "noise"
    assert saved["x"].shape == (40, 1, 8, 8) and saved["images"].dtype == torch.uint8
    assert (tmp_path / "cond.png").stat().st_size > 500
    assert main(["sample", str(runs / "jem"), "--class", "2", "7", "-n", "3", *SAMPLE]) == 0
    with np.load(runs / "jem" / "sampled" / "class-2-7.npz") as f:
        assert f["target"].tolist() == [2, 2, 2, 7, 7, 7]


@pytest.mark.parametrize("args, message", [
    (["--class", "10"], "no class is named '10', and the checkpoint's class indices are 0..9"),
    (["--class", "three"], "class indices, class names or 'all'"),
    (["--out", "samples.png"], ".npz or .pt"),
    (["-n", "0"], "must be > 0"),
    (["--batch-size", "0"], "--batch-size must be > 0"),
    (["--n-steps", "-1"], "--n-steps >= 0"),
    (["--step-size", "inf"], "--step-size and --noise must be finite numbers >= 0, got --step-size inf\n"),
    (["--noise", "inf", "--step-size", "-1"], "finite numbers >= 0, got --step-size -1.0, --noise inf\n"),
    (["--noise", "nan"], "finite numbers >= 0, got --noise nan\n"),
])
def test_cli_sample_bad_input_is_a_clear_error(runs, capsys, args, message):
    assert main(["sample", str(runs / "jem"), *SAMPLE, *args]) == 1
    assert message in capsys.readouterr().err


def test_sgld_refine_climbs_log_p_x_or_log_p_x_y_as_the_gradient_says():
    """One step without noise on logits W x: x + step * W^T softmax(W x) (up -log-sum-exp, i.e. down the energy),
    and with labels x + step * W[y]."""
    torch.manual_seed(0)
    net = nn.Sequential(nn.Flatten(), nn.Linear(12, 5, bias=False))
    w = net[1].weight.detach().double()
    x = torch.randn(4, 3, 2, 2)
    flat = x.flatten(1).double()
    got = sgld_refine(net, x, 1, 0.3, 0.0).flatten(1).double()
    assert torch.allclose(got, flat + 0.3 * torch.softmax(flat @ w.T, 1) @ w, atol=1e-5)
    y = torch.tensor([0, 3, 4, 1])
    assert torch.allclose(sgld_refine(net, x, 1, 0.3, 0.0, y=y).flatten(1).double(), flat + 0.3 * w[y], atol=1e-5)


def test_run_chains_is_sgld_refine_in_batches(counted_bars):
    """... and with progress its bar counts every step of every batch."""
    from fastjem.eval.core import run_chains, sgld_refine

    bars = counted_bars
    torch.manual_seed(0)
    model = nn.Sequential(nn.Flatten(), nn.Linear(12, 5), nn.Tanh(), nn.Linear(5, 3)).requires_grad_(False)
    x0 = torch.randn(7, 3, 2, 2)
    y = torch.randint(0, 3, (7,))
    torch.manual_seed(1)
    a = run_chains(model, x0, 4, 0.5, 0.1, y=y, batch_size=3)
    torch.manual_seed(1)
    b = torch.cat([sgld_refine(model, x0[i:i + 3], 4, 0.5, 0.1, y=y[i:i + 3]) for i in (0, 3, 6)])
    assert torch.equal(a, b) and not torch.equal(a, x0)
    assert torch.equal(run_chains(model, x0, 0, 0.5, 0.1), x0)
    assert bars == []
    run_chains(model, x0, 4, 0.5, 0.1, batch_size=3, progress=True, desc="chains")
    assert bars == [(12, 12, "chains")]  # 3 batches of 4 steps


def test_refined_logits_are_the_logits_of_the_refined_inputs(counted_bars):
    """... and with progress a bar counts the batches."""
    from fastjem.eval.core import predict_logits, refined_logits

    bars = counted_bars
    torch.manual_seed(0)
    model = nn.Sequential(nn.Flatten(), nn.Linear(12, 5), nn.Tanh(), nn.Linear(5, 3)).requires_grad_(False)
    x = torch.randn(7, 3, 2, 2)
    torch.manual_seed(1)
    got = refined_logits(model, x, 3, 0.5, 0.1, batch_size=3)
    torch.manual_seed(1)
    want = torch.cat([model(sgld_refine(model, x[i:i + 3], 3, 0.5, 0.1)) for i in (0, 3, 6)])
    assert torch.equal(got, want) and not torch.allclose(got, predict_logits(model, x), atol=1e-3)
    assert torch.equal(refined_logits(model, x, 0, 0.5, 0.1), predict_logits(model, x))
    assert bars == []
    refined_logits(model, x, 3, 0.5, 0.1, batch_size=3, progress=True, desc="refine")
    predict_logits(model, x, batch_size=4, progress=True, desc="predict")
    assert bars == [(3, 3, "refine"), (2, 2, "predict")]


def test_a_loaded_network_is_in_eval_mode_and_frozen(tmp_path):
    """load_model hands over the network in eval mode, its parameters frozen: batch norm uses its running statistics
    (an image's logits do not depend on its batch, and evaluating changes no statistic), and no gradient reaches a
    parameter when an evaluation differentiates through the network (attacks, refinement)."""
    from fastjem.eval import load_model
    from fastjem.eval.core import predict_logits
    from fastjem.train import Trainer

    Trainer(TrainConfig(**{**TINY, "norm": "batch"}), out_dir=tmp_path / "bn", progress=False,
            log=lambda *a: None).fit()
    em = load_model(tmp_path / "bn", device="cpu")
    assert not em.model.training and not any(p.requires_grad for p in em.model.parameters())
    x, _ = em.test_set(limit=64, progress=False)
    state = {k: v.clone() for k, v in em.model.state_dict().items()}
    torch.testing.assert_close(predict_logits(em.model, x[:5]), predict_logits(em.model, x)[:5])
    assert all(torch.equal(state[k], v) for k, v in em.model.state_dict().items())


def test_test_noise_is_gaussian_of_its_std_and_the_same_for_a_seed(runs):
    """--test-noise (the authors' evaluation adds N(0, 0.03^2) to test images): the test set is the images plus
    that noise, the same for a seed, another for another seed, none at 0."""
    from fastjem.data import to_float
    from fastjem.eval import load_model

    em = load_model(runs / "jem", "cpu")
    clean, y = em.test_set()
    assert torch.equal(clean, to_float(em.arrays().test_x))
    noisy = em.test_set(noise=0.03, seed=1)[0] - clean
    assert torch.equal(em.test_set(noise=0.03, seed=1)[0] - clean, noisy)
    assert not torch.equal(em.test_set(noise=0.03, seed=2)[0] - clean, noisy)
    assert_gaussian_moments(noisy, 0.03)


def test_n_test_and_n_attack_take_a_fixed_random_subset_not_the_first_images(runs, tmp_path):
    """Image folders (and the CIFAR-10 JPEG copy) store their test images class by class: the first N are then one
    class. --n-test and --n-attack take the same random subset every time instead."""
    from fastjem.data import arrays_from_tensors, load_arrays
    from fastjem.eval import load_model
    from fastjem.eval.core import fixed_subset

    a = load_arrays("digits")
    order = torch.argsort(a.test_y, stable=True)  # a test set stored class by class
    sorted_data = arrays_from_tensors(a.train_x, a.train_y, a.test_x[order], a.test_y[order])
    em = load_model(runs / "jem", "cpu", data=sorted_data)
    x, y = em.test_set(limit=40)
    assert len(y) == 40 and len(set(y.tolist())) >= 8  # the first 40 are two classes
    x2, y2 = em.test_set(limit=40)
    assert torch.equal(x, x2) and torch.equal(y, y2)
    keep = fixed_subset(len(order), 40)
    assert torch.equal(keep, keep.unique()) and torch.equal(y, a.test_y[order][keep])
    assert torch.equal(fixed_subset(10, 20), torch.arange(10))
    from fastjem.eval.tasks import robustness

    rep = robustness(em, norms=("linf",), linf_eps=(0.0,), refine_steps=(0,), pgd_steps=1, n_attack=30,
                     out_dir=tmp_path / "rob", progress=False, n_test=100)
    x100, y100 = em.test_set(limit=100)
    subset = y100[fixed_subset(100, 30)]
    want = (em.model(x100[fixed_subset(100, 30)]).argmax(1) == subset).float().mean().item()
    assert len(set(subset.tolist())) >= 8
    assert rep["results"]["accuracy"]["linf"]["0"][0]["acc"] == pytest.approx(want)


def test_buffer_rows_and_the_buffer_grid_span_the_whole_buffer(runs, tmp_path):
    """A class-conditional buffer is K blocks, one per class: its first chains are the first classes only (FID of
    the buffer takes its chains through buffer_rows too)."""
    from PIL import Image

    from fastjem.eval import load_model
    from fastjem.eval.tasks import samples

    em = load_model(runs / "jem", "cpu")
    n = len(em.buffer)
    em.buffer = torch.cat([-torch.ones(n // 2, *em.sample_shape), torch.ones(n - n // 2, *em.sample_shape)])
    rows = em.buffer_rows(16)
    assert len(rows) == 16 and 4 <= int((rows[:, 0, 0, 0] > 0).sum()) <= 12
    assert torch.equal(rows, em.buffer_rows(16))
    samples(em, n_steps=1, n_samples=16, per_class=1, out_dir=tmp_path, progress=False, n_test=16)
    with Image.open(tmp_path / "samples_buffer.png") as im:
        white = (np.asarray(im.convert("L")) == 255).mean()
    assert 0.35 < white < 0.8  # white tiles and the padding; the first 16 chains (all -1) leave only the padding


def test_samples_task_starts_conditional_chains_where_asked(runs, tmp_path):
    from fastjem.eval.tasks import samples

    rep = samples(runs / "jem", n_steps=0, n_samples=4, per_class=20, init="informative", out_dir=tmp_path / "a",
                  progress=False, n_test=16, device="cpu")
    cond = rep["results"]["conditional"]
    assert cond["init"] == "informative" and cond["n"] == 200 and (tmp_path / "a" / "samples_conditional.png").exists()
    rep = samples(runs / "clf", n_steps=0, n_samples=4, per_class=2, out_dir=tmp_path / "b", progress=False,
                  n_test=16, device="cpu")
    assert rep["results"]["conditional"]["init"] == "noise"  # auto without a buffer, run started from U(-1, 1)
    with pytest.raises(ConfigError, match="no replay buffer"):
        samples(runs / "clf", init="buffer", out_dir=tmp_path / "c", progress=False, device="cpu")


def test_informative_chains_at_evaluation_are_the_runs_own_class_gaussians(tmp_path):
    """`--init informative` starts chains "the same way" training did: from the Gaussians fitted to the run's
    labelled training images. Evaluation fitted them to every training image with its label instead, the
    validation images and, in a semi-supervised run, the labels it never had included."""
    from fastjem.eval.core import load_model
    from fastjem.eval.draw import class_gaussians
    from fastjem.train import Trainer

    run = Trainer(TrainConfig(**{**TINY, "iters": 1, "labels_per_class": 3, "buffer_init": "informative"}),
                  out_dir=tmp_path / "semi", progress=False, log=lambda *a: None)
    run.fit()
    trained = run.buffer.init
    got = class_gaussians(load_model(tmp_path / "semi", "cpu"))
    assert torch.equal(got.mean, trained.mean) and torch.equal(got.factor, trained.factor)


def test_informative_chains_read_the_data_dir_given_when_the_run_folder_moved(tmp_path, capsys):
    """A run's image folder moved since training: the error says to pass --data-dir, and following it works for
    both commands that start chains from the class Gaussians (eval samples took --data-dir and read the old
    folder anyway; fastjem sample had no --data-dir to give)."""
    from PIL import Image

    from fastjem.train import Trainer

    for k, c in enumerate("ab"):
        (tmp_path / "imgs" / c).mkdir(parents=True)
        for i in range(8):
            Image.fromarray(np.full((8, 8, 3), 30 + 150 * k + i, np.uint8)).save(tmp_path / "imgs" / c / f"{i}.png")
    Trainer(TrainConfig(**{**TINY, "iters": 1, "buffer_size": 48, "dataset": "imagefolder",
                           "data_dir": str(tmp_path / "imgs")}),
            out_dir=tmp_path / "run", progress=False, log=lambda *a: None).fit()
    (tmp_path / "imgs").rename(tmp_path / "moved")
    run, moved = str(tmp_path / "run"), str(tmp_path / "moved")
    opts = ["--init", "informative", "--n-steps", "0", "--no-progress", "--device", "cpu"]
    assert main(["sample", run, "-n", "3", "--class", "all", *opts, "--out", str(tmp_path / "a.pt")]) == 1
    assert "pass --data-dir" in capsys.readouterr().err
    assert main(["sample", run, "-n", "3", "--class", "all", *opts, "--out", str(tmp_path / "a.pt"),
                 "--data-dir", moved]) == 0
    x = torch.load(tmp_path / "a.pt")["x"]
    # each class's chains start at its images' level: dark a (about -0.7), light b (about +0.5)
    assert x[:3].mean() < -0.4 and x[3:].mean() > 0.3
    assert main(["eval", run, "samples", *opts, "--per-class", "2", "--n-samples", "2", "--n-test", "4",
                 "--data-dir", moved, "--out-dir", str(tmp_path / "ev")]) == 0
    assert _report(tmp_path / "ev" / "samples.json")["results"]["conditional"]["init"] == "informative"


def test_samples_task_reports_what_the_network_says_of_each_grid(runs, tmp_path, monkeypatch):
    """On a network whose class c claims images of mean level c/10 - 0.45, and a buffer of known levels: the
    buffer-by-class grid keeps each class's most confident rows first and pads short rows white; the fresh chains
    start on U(-1, 1); each grid's numbers are what the network says of that grid's images."""
    from fastjem.eval import plots, tasks
    from fastjem.eval.core import load_model

    class Levels(nn.Module):
        def forward(self, x):
            return -200 * (x.flatten(1).mean(1, keepdim=True) - (torch.arange(10.0) / 10 - 0.45)) ** 2

    em = load_model(runs / "jem", "cpu")
    em.model = Levels()
    em.buffer = torch.tensor([-0.44, -0.45, -0.42, -0.47, -0.43, -0.15]).view(-1, 1, 1, 1).expand(-1, 1, 8, 8).clone()
    grids = {}
    monkeypatch.setattr(plots, "image_grid", lambda x, path, nrow=None: grids.update({Path(path).name: x}) or path)
    rep = tasks.samples(em, n_steps=0, n_samples=50, per_class=3, init="noise", out_dir=tmp_path, progress=False,
                        n_test=16)
    res = rep["results"]
    conf, pred = torch.softmax(Levels()(em.buffer), 1).max(1)
    assert pred.tolist() == [0, 0, 0, 0, 0, 3]
    top = conf[:5].argsort(descending=True)[:3]
    assert res["buffer_by_class"]["kept_per_class"] == [3, 0, 0, 1, 0, 0, 0, 0, 0, 0]
    assert res["buffer_by_class"]["mean_confidence_kept"][0] == pytest.approx(conf[top].mean().item())
    assert res["buffer_by_class"]["mean_confidence_kept"][3] == pytest.approx(conf[5].item())
    assert res["buffer_by_class"]["mean_confidence_kept"][1] is None
    by_class = grids["samples_buffer_by_class.png"]
    assert by_class.shape == (30, 1, 8, 8) and torch.equal(by_class[:3], em.buffer[top])
    assert (by_class[3:9] == 1).all() and torch.equal(by_class[9], em.buffer[5]) and (by_class[10:12] == 1).all()
    fresh = grids["samples_fresh.png"]  # no steps: the starts themselves
    assert fresh.min() >= -1 and fresh.max() <= 1
    assert abs(fresh.mean().item()) < 0.05 and abs(fresh.std().item() - 3 ** -0.5) < 0.03  # 3200 draws of U(-1, 1)
    x_test, _ = em.test_set(limit=16, noise=em.config.test_noise, progress=False)  # what the grids compare with
    for key, images in (("fresh", fresh), ("buffer", em.buffer), ("test_data", x_test)):  # the buffer's: all of it
        logits = Levels()(images)
        probs = torch.softmax(logits, 1)
        assert res[key]["mean_max_prob"] == pytest.approx(probs.max(1).values.mean().item())
        assert res[key]["mean_logpx"] == pytest.approx(torch.logsumexp(logits, 1).mean().item())
        assert res[key]["predicted_class_histogram"] == torch.bincount(probs.argmax(1), minlength=10).tolist()
    y = torch.arange(10).repeat_interleave(3)
    probs = torch.softmax(Levels()(grids["samples_conditional.png"]), 1)
    fraction = (probs.argmax(1) == y).float().mean().item()
    assert res["conditional"]["fraction_classified_as_target"] == pytest.approx(fraction) and fraction != 0.5
    assert res["conditional"]["mean_p_target"] == pytest.approx(probs[torch.arange(30), y].mean().item())
    assert rep["settings"]["has_buffer"] is True
    # one sample of each kind is enough
    one = tasks.samples(em, n_steps=0, n_samples=1, per_class=1, init="noise", out_dir=tmp_path, progress=False,
                        n_test=16)
    assert one["results"]["fresh"]["n"] == 1 and one["results"]["conditional"]["n"] == 10
    # the fresh chains' starts follow --seed (the global generator reseeded), whatever drew from it before
    fresh_of = {}
    for seed in (5, 5, 6):
        torch.rand(7)
        tasks.samples(em, n_steps=0, n_samples=8, per_class=1, init="noise", out_dir=tmp_path, progress=False,
                      n_test=16, seed=seed)
        fresh_of.setdefault(seed, []).append(grids["samples_fresh.png"])
    assert torch.equal(*fresh_of[5]) and not torch.equal(fresh_of[5][0], fresh_of[6][0])


def test_a_task_leaves_the_callers_generator_where_it_was(runs, tmp_path):
    """A task seeds torch's generator with its seed (its draws are reproducible) in a fork of it: the caller's own
    seeded draws go on as if no task had run (a notebook that draws around an evaluation)."""
    from fastjem.eval import tasks

    torch.manual_seed(7)
    expected = torch.rand(5)
    torch.manual_seed(7)
    tasks.accuracy(runs / "jem", n_steps=1, n_test=16, test_noise=0.03, out_dir=tmp_path / "a", progress=False)
    assert torch.equal(torch.rand(5), expected)


def test_accuracy_and_calibration_report_what_the_network_says_of_the_test_images(runs, tmp_path):
    """On two fixed linear networks: accuracy and NLL of p(y|x) (refinement with step size and noise 0 changes
    nothing), and each model's calibration entry; with one bin, ECE is |accuracy - mean confidence|."""
    from fastjem.eval import tasks
    from fastjem.eval.core import load_model

    torch.manual_seed(0)
    ems = [load_model(runs / "jem", "cpu"), load_model(runs / "jem", "cpu")]
    ems = [_linear_network(em, scale) for em, scale in zip(ems, (1.0, 0.2))]
    x, y = ems[0].test_set("", False, 64, 0.0, 0, False)
    common = {"n_test": 64, "test_noise": 0.0, "progress": False}
    rep = tasks.accuracy(ems[0], n_steps=1, step_size=0.0, noise=0.0, out_dir=tmp_path / "a", **common)["results"]
    logits = ems[0].model(x)
    acc, nll = (logits.argmax(1) == y).float().mean().item(), F.cross_entropy(logits, y).item()
    assert 0.05 < acc < 0.95 and rep["acc"] == pytest.approx(acc) and rep["nll"] == pytest.approx(nll)
    assert rep["refined_1"] == pytest.approx({"n_steps": 1, "acc": acc, "nll": nll})
    for bins in (1, 1000):
        rep = tasks.calibration(ems[0], n_bins=bins, compare=ems[1], out_dir=tmp_path / "c", **common)["results"]
        assert [m["ece"] for m in rep["models"]][0] == rep["ece"]
        for em, entry in zip(ems, rep["models"]):
            probs = torch.softmax(em.model(x), 1)
            conf, pred = probs.max(1)
            assert entry["acc"] == pytest.approx((pred == y).float().mean().item())
            assert entry["mean_confidence"] == pytest.approx(conf.mean().item())
            assert entry["nll"] == pytest.approx(F.cross_entropy(em.model(x), y).item())
            if bins == 1:
                assert entry["ece"] == pytest.approx(abs(entry["acc"] - entry["mean_confidence"]))
        assert rep["models"][0]["ece"] != pytest.approx(rep["models"][1]["ece"])


def test_an_n_test_past_the_test_set_is_reported_as_the_whole_set(runs, tmp_path):
    """--n-test of at least the test set's size (360 digits) keeps every test image: the report's settings say the
    whole set, not a subset of 100000 images it never had."""
    from fastjem.eval import tasks

    for n_test, recorded, subset in ((100000, "all", "whole test set"), (360, "all", "whole test set"),
                                     (359, 359, "fixed random subset (seed 0)")):
        rep = tasks.accuracy(runs / "jem", out_dir=tmp_path / str(n_test), n_test=n_test, test_noise=0.0,
                             progress=False, device="cpu")
        assert rep["results"]["n"] == min(n_test, 360)
        assert (rep["settings"]["n_test"], rep["settings"]["test_subset"]) == (recorded, subset)


def test_the_ood_task_raises_for_a_missing_set_unless_told_to_skip_it(runs, tmp_path):
    """The library's ood() raises for a dataset OOD set that is not here (only ``--ood all`` skips them); told to
    skip, it records the error's first line as the reason, with where the rest of it is, and scores the rest, each
    score's spread over its images."""
    from fastjem.eval import tasks
    from fastjem.eval.ood import OODSetMissing

    common = {"n_test": 64, "n_ood": 2, "ood_data_dir": tmp_path / "none", "device": "cpu", "progress": False,
              "batch_size": 64}
    with pytest.raises(OODSetMissing) as err:
        tasks.ood(runs / "jem", sets=("uniform", "cifar100"), out_dir=tmp_path / "a", **common)
    assert not (tmp_path / "a" / "ood.json").exists()
    rep = tasks.ood(runs / "jem", sets=("uniform", "cifar100"), skip_missing=True, out_dir=tmp_path / "b",
                    **common)["results"]
    first = str(err.value).splitlines()[0].rstrip(".")
    assert "\n" in str(err.value) and rep["skipped"] == {"cifar100": f"{first}; --ood cifar100 alone says how to get "
                                                                      "it"}
    assert list(rep["auroc"]) == ["uniform"] and rep["auroc"]["uniform"]["n"] == 2
    stats = rep["score_stats"]["uniform"]
    assert set(stats) == set(tasks.SCORES) and all(math.isfinite(v["std"]) and v["std"] > 0 for v in stats.values())


def test_the_robustness_task_reports_what_the_attacked_network_says(runs, tmp_path):
    """On a fixed linear network: at epsilon 0 the accuracy is the clean accuracy (no refinement), a large L-inf
    ball lowers it, --n-attack takes that many test images (0: all of them), and the refinement's change is
    measured once per refinement length > 0, its largest per-pixel change above the mean."""
    from fastjem.eval import tasks
    from fastjem.eval.core import load_model

    torch.manual_seed(0)
    em = _linear_network(load_model(runs / "jem", "cpu"))
    x, y = em.test_set("", False, 64, 0.0, 0, False)
    clean = (em.model(x).argmax(1) == y).float().mean().item()
    common = {"n_test": 64, "test_noise": 0.0, "progress": False, "batch_size": 64}
    rep = tasks.robustness(em, norms=("linf", "l2"), linf_eps=(0.0, 0.5), l2_eps=(0.0,), refine_steps=(0, 1, 1),
                           pgd_steps=2, n_attack=0, out_dir=tmp_path / "a", **common)
    acc, settings = rep["results"]["accuracy"], rep["settings"]
    assert settings["n_attack"] == 64 and settings["random_start"] is True
    assert 0.05 < clean < 0.95 and acc["linf"]["0"][0] == {"eps": 0.0, "eps_255": 0.0, "acc": pytest.approx(clean)}
    assert acc["l2"]["0"] == [{"eps": 0.0, "acc": pytest.approx(clean)}]
    assert acc["linf"]["0"][1]["acc"] < clean - 0.05 and 0 <= acc["linf"]["1"][0]["acc"] <= 1
    moves = rep["results"]["refinement_change"]
    assert list(moves) == ["1"] and 0 < moves["1"]["mean_abs_change"] < moves["1"]["max_abs_change"]
    one = tasks.robustness(em, norms=("l2",), l2_eps=(0.0,), refine_steps=(0,), pgd_steps=1, n_attack=1,
                           out_dir=tmp_path / "b", **common)
    assert one["settings"]["n_attack"] == 1 and one["results"]["accuracy"]["l2"]["0"][0]["acc"] in (0.0, 1.0)
    assert one["results"]["refinement_change"] == {}


FEATURE_MODULE = """
import torch


class EveryFourth(torch.nn.Module):
    def forward(self, x):  # a network in training mode (dropout, batch norm) computes other features
        return x.flatten(1)[:, ::4] if not self.training else x.flatten(1)


every_fourth = EveryFourth()


def first_rows(x):
    return x.flatten(1)[:, :12]


RESOLUTION = 3
seen = []


def recorded(x):
    seen.append(x.clone())
    return x.flatten(1)[:, :12]
"""


@pytest.mark.filterwarnings("ignore:`torch.jit:FutureWarning")  # torch 2.14 deprecates TorchScript
def test_fid_features_from_a_module_class_instance_function_or_torchscript_file(runs, tmp_path, monkeypatch):
    """--features-model 'module:name' takes an nn.Module class (built with no arguments), an nn.Module (put in eval
    mode) or a function, and a path a TorchScript file: FID is then the Frechet distance of those features of the
    test images and of the buffer rows; what is none of these is refused, saying what is expected."""
    from fastjem.eval import tasks
    from fastjem.eval.core import load_model
    from fastjem.eval.metrics import feature_statistics, frechet_distance

    (tmp_path / "fjfeatures.py").write_text(FEATURE_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    scripted = tmp_path / "every_fourth.pt"
    torch.jit.save(torch.jit.script(nn.Sequential(nn.Flatten(), nn.Identity())), scripted)
    em = load_model(runs / "jem", "cpu")
    real, _ = em.test_set("", False, 32, 0.0, 0, False)
    fake = em.buffer_rows(24)
    common = {"n_test": 32, "test_noise": 0.0, "progress": False, "batch_size": 16, "device": "cpu",
              "source": "buffer", "n_fid": 24}

    def expected(fn):
        return frechet_distance(*feature_statistics(fn(real)), *feature_statistics(fn(fake)))

    for spec, fn, dim in (("fjfeatures:EveryFourth", lambda x: x.flatten(1)[:, ::4], 16),
                          ("fjfeatures:every_fourth", lambda x: x.flatten(1)[:, ::4], 16),
                          ("fjfeatures:first_rows", lambda x: x.flatten(1)[:, :12], 12),
                          (str(scripted), lambda x: x.flatten(1), 64)):
        rep = tasks.fid(runs / "jem", features_model=spec, out_dir=tmp_path / "out", **common)["results"]
        assert rep["features"] == spec and rep["feature_dim"] == dim and rep["n_fake"] == 24
        assert rep["fid"] == pytest.approx(expected(fn), rel=1e-6)
    # fresh chains of no steps: the features see the test images, then the chains' U(-1, 1) starts
    import fjfeatures

    rep = tasks.fid(runs / "jem", features_model="fjfeatures:recorded", out_dir=tmp_path / "out",
                    **{**common, "source": "fresh", "n_steps": 0})["results"]
    starts = torch.cat(fjfeatures.seen[2:4])
    assert rep["samples"] == "fresh 0 steps" and torch.equal(torch.cat(fjfeatures.seen[:2]), real)
    assert starts.shape == (24, *real.shape[1:]) and -1 <= starts.min() < -0.99 and 0.99 < starts.max() <= 1
    # two images each: the fewest a covariance needs
    two = tasks.fid(runs / "jem", features_model="fjfeatures:first_rows", out_dir=tmp_path / "out",
                    **{**common, "n_test": 2, "n_fid": 2})["results"]
    assert two["n_real"] == two["n_fake"] == 2 and math.isfinite(two["fid"])
    for fewer, match in (({"n_fid": 1, "n_steps": 0}, "--n-fid must be >= 2"),
                         ({"n_test": 1}, "it needs 2 test images or more, --n-test gives 1")):
        with pytest.raises(ConfigError, match=re.escape(match)):
            tasks.fid(runs / "jem", features_model="fjfeatures:first_rows", out_dir=tmp_path / "few",
                      **{**common, **fewer})
    (tmp_path / "notes.txt").write_text("not a network")
    for spec, match in (("fjfeatures:missing", "cannot import --features-model fjfeatures:missing"),
                        ("fjfeatures:first_rows:x", "cannot import --features-model fjfeatures:first_rows:x"),
                        ("fjfeatures:RESOLUTION", "expected 'classifier', a torch.export or TorchScript file, or"),
                        ("every_fourth", "expected 'classifier', a torch.export or TorchScript file, or"),
                        (str(tmp_path / "notes.txt"), "notes.txt is neither a torch.export program nor a"),
                        (str(tmp_path / "moved.pt2"), "moved.pt2: no such file (expected 'classifier'")):
        with pytest.raises(tasks.FIDUnavailableError, match=re.escape(match)):
            tasks.fid(runs / "jem", features_model=spec, out_dir=tmp_path / "bad", **common)
    # 'classifier' is the network's .features(); a network of your own without one is told to pass another
    import dataclasses

    assert tasks.load_feature_model("classifier", em) == em.model.features
    with pytest.raises(tasks.FIDUnavailableError, match=r"has no \.features\(\); pass another --features-model"):
        tasks.load_feature_model("classifier", dataclasses.replace(em, model=nn.Linear(2, 2)))


class _EveryFourth(nn.Module):
    def forward(self, x):
        return x.flatten(1)[:, ::4]


def test_fid_features_from_a_torch_export_file_of_fixed_dynamic_or_bounded_batch(runs, tmp_path):
    """--features-model FILE (torch.export.save) with its batch dimension fixed, dynamic, or dynamic within
    bounds: the images go in chunks the program accepts (a short chunk padded, the padding's features dropped), so
    the features and FID equal those of the same network called directly; a program that does not take one image
    tensor, or a damaged archive, is refused saying why."""
    import zipfile

    from fastjem.eval import tasks
    from fastjem.eval.core import load_model
    from fastjem.eval.metrics import feature_statistics, frechet_distance

    em = load_model(runs / "jem", "cpu")
    real, _ = em.test_set("", False, 30, 0.0, 0, False)
    net = _EveryFourth()
    expected = frechet_distance(*feature_statistics(net(real)), *feature_statistics(net(em.buffer_rows(22))))
    image = torch.zeros(8, *real.shape[1:])
    dim = torch.export.Dim
    # 30 images in batches of 16 (16 + 14), each cut to what the program takes: 8s (the last padded from 6);
    # whole; at most 12, at least 5 (16 = 12 + 4 -> 5, 14 = 12 + 2 -> 5)
    for name, dynamic, fed in (("fixed", None, [8, 8, 8, 8]), ("dynamic", {"x": {0: dim("b")}}, [16, 14]),
                               ("bounded", {"x": {0: dim("b", min=5, max=12)}}, [12, 5, 12, 5])):
        path = tmp_path / f"{name}.pt2"
        torch.export.save(torch.export.export(net, (image,), dynamic_shapes=dynamic), path)
        extractor = tasks.load_feature_model(str(path), em)
        sizes = []
        extractor.module.register_forward_pre_hook(lambda _, args, sizes=sizes: sizes.append(len(args[0])))
        features = tasks.extract_features(extractor, real, 16)
        assert sizes == fed and torch.equal(features, net(real).double()), name
        rep = tasks.fid(runs / "jem", features_model=str(path), out_dir=tmp_path / "out", n_test=30, n_fid=22,
                        test_noise=0.0, progress=False, batch_size=16, device="cpu", source="buffer")["results"]
        assert rep["feature_dim"] == 16 and rep["fid"] == pytest.approx(expected, rel=1e-6), name

    class TwoInputs(nn.Module):
        def forward(self, x, y):
            return x.flatten(1) + y.flatten(1)

    two = tmp_path / "two.pt2"
    torch.export.save(torch.export.export(TwoInputs(), (image, image)), two)
    damaged = tmp_path / "damaged.pt2"
    with zipfile.ZipFile(tmp_path / "fixed.pt2") as src, zipfile.ZipFile(damaged, "w") as dst:
        for item in src.namelist():
            if not item.endswith(".json"):
                dst.writestr(item, src.read(item))
    for path, match in ((two, "the exported program must take one input, images [B, C, H, W]; it takes "
                              f"{list(image.shape)}, {list(image.shape)}"),
                        (damaged, "damaged.pt2 could not be loaded by torch.export.load")):
        with pytest.raises(tasks.FIDUnavailableError, match=re.escape(match)):
            tasks.load_feature_model(str(path), em)
    em.model = nn.Sequential(nn.Flatten(), nn.Linear(64, 10))  # a classifier given in Python, without .features
    with pytest.raises(tasks.FIDUnavailableError, match=r"no \.features\(\); pass another --features-model"):
        tasks.load_feature_model("classifier", em)


@pytest.mark.gpu
def test_a_torch_export_feature_file_saved_on_the_cpu_runs_on_cuda(runs, tmp_path):
    """CUDA: a program exported on the CPU is moved to the checkpoint's device; its features of CUDA images match
    the network's on the CPU."""
    if not torch.cuda.is_available():
        pytest.skip("needs CUDA")
    from fastjem.eval import tasks
    from fastjem.eval.core import load_model

    em = load_model(runs / "jem", "cuda")
    real, _ = em.test_set("", False, 30, 0.0, 0, False)
    path = tmp_path / "fixed.pt2"
    torch.export.save(torch.export.export(_EveryFourth(), (torch.zeros(8, *real.shape[1:]),)), path)
    features = tasks.extract_features(tasks.load_feature_model(str(path), em), real, 16)
    assert real.is_cuda and torch.equal(features, _EveryFourth()(real.cpu()).double())


def test_run_all_runs_each_task_with_its_options_on_the_ood_sets_asked_for(runs, tmp_path, monkeypatch):
    """eval all (tasks.run_all, each task stubbed): every task gets the common options and its own; the OOD sets
    are every built-in set but the run's own dataset, 'all' among them adds the folders named beside it, missing
    sets skipped; FID is skipped with no extractor, or with the first line of why it cannot run; one line per task;
    all.json names the checkpoint."""
    from fastjem.eval import tasks

    calls: dict = {}

    def stub(task):
        def job(em, **kw):
            calls[task] = kw
            return {"results": {}}
        return job

    for task in ("accuracy", "calibration", "ood", "samples", "robustness"):
        monkeypatch.setattr(tasks, task, stub(task))

    def fid(em, **kw):
        calls["fid"] = kw
        raise tasks.FIDUnavailableError("no torchmetrics here\n  - pip install it")

    monkeypatch.setattr(tasks, "fid", fid)
    monkeypatch.setattr(tasks, "summary_rows", lambda reports: [["task", "metric", "value"]])
    monkeypatch.setattr(tasks, "markdown_report", lambda em, reports, out_dir: "# report\n")
    folder = tmp_path / "mine"
    folder.mkdir()
    every = tasks.SYNTHETIC_SETS + tuple(d for d in tasks.DATASET_SETS if d != "digits")
    assert len(every) > len(tasks.SYNTHETIC_SETS)
    out, lines = tmp_path / "out", []
    reports = tasks.run_all(runs / "jem", ood_sets=("uniform", "all", str(folder)), features_model="classifier",
                            task_options={"accuracy": {"n_steps": 3}}, log=lines.append, device="cpu", out_dir=out,
                            n_test=8)
    common = {"out_dir": out, "n_test": 8}
    assert calls["accuracy"] == {"n_steps": 3, **common} and calls["samples"] == common
    assert calls["ood"] == {"sets": every + (str(folder),), "skip_missing": True, **common}
    assert calls["fid"] == {"inception_weights": None, "features_model": "classifier", **common}
    assert reports["fid"] == {"skipped": "no torchmetrics here"}
    assert lines == [f"  {t}: done" for t in ("accuracy", "calibration", "ood", "samples", "robustness")] + [
        "  fid: skipped"]
    assert json.loads((out / "all.json").read_text()) == {"checkpoint": str((runs / "jem" / "checkpoint.pt").resolve()),
                                                          "summary": [["task", "metric", "value"]]}
    assert (out / "report.md").read_text() == "# report\n"
    calls.clear()
    reports = tasks.run_all(runs / "jem", log=lines.append, device="cpu", out_dir=out)
    assert calls["ood"]["sets"] == every and "fid" not in calls
    assert reports["fid"] == {"skipped": "no --inception-weights or --features-model given"}


def test_the_summary_table_has_each_tasks_headline_numbers():
    from fastjem.eval.tasks import format_table, summary_rows

    reports = {
        "accuracy": {"results": {"n": 10, "plain": {"n_steps": 0, "acc": 0.9, "nll": 0.31234},
                                 "refined_5": {"n_steps": 5, "acc": 0.85, "nll": 0.4}, "acc": 0.9, "nll": 0.31234}},
        "calibration": {"results": {"models": [{"n_bins": 20, "name": "jem", "ece": 0.01234},
                                               {"n_bins": 20, "name": "base", "ece": 0.05}]}},
        "ood": {"results": {"auroc": {"uniform": {"logpx": 0.99, "maxprob": 0.8, "grad_norm": 0.7}},
                            "skipped": {"svhn": "OOD set svhn: not found in /data"}}},
        "samples": {"results": {"conditional": {"fraction_classified_as_target": 0.95}},
                    "files": ["/e/samples_fresh.png", "/e/samples_conditional.png", "/e/samples.json"]},
        "robustness": {"results": {"caution": "moved far", "accuracy": {
            "linf": {"0": [{"eps": 0.0, "acc": 0.9}, {"eps": 8 / 255, "acc": 0.5}]}, "l2": {"10": [{"eps": 0.5,
                                                                                                 "acc": 0.6}]}}}},
        "fid": {"results": {"features": "inception", "fid": 35.12345, "inception_score": 7.5, "n_real": 360,
                            "n_fake": 1000, "samples": "buffer"}},
    }
    assert summary_rows(reports) == [
        ("accuracy", "plain acc / NLL", "0.9000 / 0.3123"), ("accuracy", "refined_5 acc / NLL", "0.8500 / 0.4000"),
        ("calibration", "ECE (20 bins) jem", "1.23%"), ("calibration", "ECE (20 bins) base", "5.00%"),
        ("ood", "AUROC vs uniform (logpx / maxprob / grad)", "0.990 / 0.800 / 0.700"),
        ("ood", "svhn", "skipped: not found in /data"),
        ("samples", "conditional samples classified as their class", "0.950"),
        ("samples", "grids", "samples_fresh.png, samples_conditional.png"),
        ("robustness", "caution", "moved far"), ("robustness", "linf refine=0: acc at eps", "0/255:0.90 8/255:0.50"),
        ("robustness", "l2 refine=10: acc at eps", "0.5:0.60"),
        ("fid", "FID (inception)", "35.123 (1000 samples from the replay buffer against 360 test images)"),
        ("fid", "Inception score", "7.500")]
    fresh = {"fid": {"results": {"features": "m:f", "fid": 2.0, "n_real": 50, "n_fake": 50,
                                 "samples": "fresh 100 steps"}}}
    assert summary_rows(fresh) == [
        ("fid", "FID (m:f)", "2.000 (50 samples from fresh 100-step SGLD chains against 50 test images)")]
    rows = summary_rows({"fid": {"skipped": "no feature extractor"}, "robustness": {"results": {
        "caution": None, "accuracy": {}}}})
    assert rows == [("fid", "skipped", "no feature extractor")]
    assert format_table([("ood", "AUROC vs svhn", "0.9"), ("accuracy", "acc", "0.5")]).splitlines() == [
        "task      metric         value", "--------  -------------  -----", "ood       AUROC vs svhn  0.9",
        "accuracy  acc            0.5"]
    assert format_table([]).splitlines() == ["task  metric  value", "----  ------  -----"]


def test_eval_on_a_folder_of_runs_compares_them(runs, tmp_path, capsys):
    out = tmp_path / "cmp"
    assert main(["eval", str(runs), "ood", "--ood", "uniform", "--n-ood", "20", "--out-dir", str(out), *FAST]) == 0
    printed = capsys.readouterr().out
    cmp = _report(out / "ood_runs.json")
    assert [r["run"] for r in cmp["rows"]] == ["clf", "jem"] and cmp["groups"] is None
    for row in cmp["rows"]:  # each run's own report, in --out-dir/<run>/
        assert row["AUROC uniform logpx"] == _report(out / row["run"] / "ood.json")["results"]["auroc"]["uniform"][
            "logpx"]
    assert "[1/2] clf" in printed and "[2/2] jem" in printed  # each run as it starts, then the comparison's table
    assert re.search(r"\n *run .*AUROC uniform logpx", printed)
    assert f"per run: {out / '<run>' / 'ood.json'}" in printed  # where --out-dir put them
    assert all(r["dataset"] == "digits" for r in cmp["rows"]) and "dataset" not in printed  # one dataset: no column
    from fastjem.eval.history import format_comparison

    rows = [{"run": "a", "dataset": "digits", "acc": 0.9}, {"run": "b", "dataset": "cifar10", "acc": 0.5}]
    mixed = format_comparison({"rows": rows, "keys": ["acc"], "groups": None})
    assert "dataset" in mixed and "cifar10" in mixed  # runs of several datasets: a column says which is which
    assert main(["eval", str(runs), "all", *FAST]) == 1
    assert "one task at a time" in capsys.readouterr().err


def test_all_refuses_robustness_options_before_its_first_task(runs, tmp_path, capsys):
    """`eval all --n-attack -1` ran accuracy, calibration, ood and samples (minutes on a real model), then failed."""
    out = tmp_path / "all"
    for bad in (["--n-attack", "-1"], ["--pgd-steps", "0"]):
        assert main(["eval", str(runs / "jem"), "all", "--out-dir", str(out), *bad, *FAST]) == 1
        assert "must be" in capsys.readouterr().err
        assert not out.exists() or not any(out.iterdir())


def test_a_sweep_with_one_run_per_combination_reports_it_without_a_spread(runs, tmp_path, capsys):
    import shutil

    sweep = tmp_path / "sweep"
    shutil.copytree(runs / "jem", sweep / "lr_0.001-seed_0", ignore=shutil.ignore_patterns("eval"))
    lr = json.loads((runs / "jem" / "config.json").read_text())["lr"]
    (sweep / "sweep.json").write_text(json.dumps({"grid": {"lr": [lr]}, "seeds": [0]}))
    out = tmp_path / "cmp"
    assert main(["eval", str(sweep), "accuracy", "--out-dir", str(out), *FAST]) == 0
    cmp = _report(out / "accuracy_runs.json")
    acc = _report(out / "lr_0.001-seed_0" / "accuracy.json")["results"]["plain"]["acc"]
    assert [r["plain acc"] for r in cmp["rows"]] == [acc]
    assert cmp["groups"] == [{"lr": lr, "runs": 1, "plain acc": [acc, None],
                              "plain NLL": [cmp["rows"][0]["plain NLL"], None]}]
    assert "±" not in capsys.readouterr().out


def test_a_run_that_cannot_be_evaluated_does_not_stop_the_others(runs, tmp_path, capsys):
    """A folder of runs with one unreadable checkpoint: the others are evaluated and compared, the bad one is named
    with its error, and the command fails (status 1). It stopped at the bad run, the runs after it not evaluated."""
    import shutil

    folder = tmp_path / "runs"
    for name in ("a", "c"):
        shutil.copytree(runs / "jem", folder / name, ignore=shutil.ignore_patterns("eval*"))
    (folder / "b").mkdir()
    (folder / "b" / "checkpoint.pt").write_bytes(b"not a checkpoint")
    out = tmp_path / "cmp"
    assert main(["eval", str(folder), "accuracy", "--out-dir", str(out), *FAST]) == 1
    err = capsys.readouterr().err
    assert "  b: not evaluated: " in err and "1 of 3 runs not evaluated (b)" in err
    assert [r["run"] for r in _report(out / "accuracy_runs.json")["rows"]] == ["a", "c"]
    for name in ("a", "c"):
        (folder / name / "checkpoint.pt").write_bytes(b"not a checkpoint")
    assert main(["eval", str(folder), "accuracy", "--out-dir", str(tmp_path / "none"), *FAST]) == 1
    assert "none of the 3 runs of" in capsys.readouterr().err


def test_the_comparison_table_shows_each_runs_numbers_and_says_how_many_more_the_json_holds():
    from fastjem.eval.history import format_comparison

    keys = ["k1", "k2", "k3", "k4", "k5"]
    rows = [{"run": "a", "dataset": "d", **{k: 0.5 + i / 10 for i, k in enumerate(keys)}},
            {"run": "b", "dataset": "d", "k1": 0.25}]
    text = format_comparison({"rows": rows, "keys": keys, "groups": None}).splitlines()
    assert text[-1] == "(+1 more in the JSON)"
    a, b = (next(line.split() for line in text if line.startswith(r)) for r in "ab")
    assert a == ["a", "0.5000", "0.6000", "0.7000", "0.8000"] and b == ["b", "0.2500", "-", "-", "-"]
    assert "more in the JSON" not in format_comparison({"rows": rows, "keys": keys[:4], "groups": None})


# ------------------------------------------------------------------------------------------ review fixes
def test_ece_bins_fp32_confidences_on_their_own_edges_and_refuses_nonsense():
    """fp32 0.3 is the fp32 edge 0.3 (it closes bin 5 of 20), though it lies above the fp64 0.3."""
    conf = torch.tensor([0.3, 0.35, 0.6, 0.1], dtype=torch.float32)
    r = expected_calibration_error(conf, torch.ones(4, dtype=torch.bool), n_bins=20)
    assert [b for b in range(20) if r.count[b]] == [1, 5, 6, 11]
    # integer or bool confidences (0 or 1, a hard classifier's) bin as the same numbers in floating point do
    hits = torch.tensor([True, False, False, True])
    as_float = expected_calibration_error(torch.tensor([1.0, 1.0, 0.0, 1.0]), hits, 4)
    assert as_float.count == [1, 0, 0, 3] and as_float.ece == pytest.approx(1 / 4)
    for dtype in (torch.int64, torch.bool):
        hard = expected_calibration_error(torch.tensor([1, 1, 0, 1], dtype=dtype), hits, 4)
        assert (hard.count, hard.ece) == (as_float.count, as_float.ece), dtype
    for bad in (1.5, -0.2, float("nan")):
        with pytest.raises(ValueError, match=r"finite and in \[0, 1\]"):
            expected_calibration_error(torch.tensor([0.5, bad]), torch.tensor([True, False]))


def test_auroc_ranks_infinite_scores_and_refuses_nan():
    assert auroc(torch.tensor([float("inf"), 1.0]), torch.tensor([float("-inf"), 0.0])) == 1.0
    with pytest.raises(ValueError, match="NaN"):
        auroc(torch.tensor([float("nan"), 1.0]), torch.tensor([0.0]))


@pytest.mark.parametrize("norm,eps", [("linf", 0.05), ("l2", 0.5)])
def test_pgd_stays_in_the_ball_for_inputs_outside_the_pixel_range(digits_classifier, norm, eps):
    """Noisy test images lie outside [-1, 1]: the range clamp must not pull them further than eps."""
    net, x, y = digits_classifier
    x = x + 0.5 * torch.randn(x.shape, generator=torch.Generator().manual_seed(1))
    assert (x.abs() > 1).any()
    x_adv = pgd_attack(net, x, y, eps, norm, steps=5, generator=torch.Generator().manual_seed(0))
    delta = (x_adv - x).flatten(1)
    size = delta.abs().amax(1) if norm == "linf" else delta.norm(dim=1)
    assert (size <= eps * (1 + 1e-5)).all()
    # never further outside [-1, 1] than the input itself
    assert (x_adv >= x.clamp(max=-1.0)).all() and (x_adv <= x.clamp(min=1.0)).all()


@pytest.mark.parametrize("norm", ["linf", "l2"])
def test_pgd_shows_the_classifier_valid_images_only_and_returns_them_detached(digits_classifier, norm):
    """Every image the attacked classifier sees, the random start's included, is in the pixel range (a JEM's
    refinement must not start from an impossible image), and what comes back holds no graph to the input, also when
    there is nothing to attack (eps 0)."""
    net, x, y = digits_classifier
    x = x.clamp(-0.9, 0.9)  # near the range's ends, so that an L-inf start of eps 0.5 crosses them
    seen = []

    def watched(z):
        seen.append((z.min().item(), z.max().item()))
        return net(z)

    x_adv = pgd_attack(watched, x, y, 0.5, norm, steps=2, generator=torch.Generator().manual_seed(0))
    assert len(seen) == 2 and all(lo >= -1 and hi <= 1 for lo, hi in seen), seen
    assert x_adv.min() >= -1 and x_adv.max() <= 1
    xg = x.clone().requires_grad_(True)
    for eps in (0.0, 0.1):
        out = pgd_attack(net, xg, y, eps, norm, steps=1)
        assert not out.requires_grad and out.grad_fn is None


def _strict_json(path):
    def refuse(name):
        raise ValueError(f"{name} is not JSON")

    return json.loads(path.read_text(), parse_constant=refuse)


def test_ood_folder_named_like_the_dataset_keeps_the_test_set_and_reports_are_strict_json(runs, tmp_path):
    from PIL import Image

    folder = tmp_path / "x" / "digits"  # the in-distribution set's own name
    folder.mkdir(parents=True)
    for i in range(5):
        Image.fromarray(np.full((8, 8), 40 * i, dtype=np.uint8)).save(folder / f"{i}.png")
    out = tmp_path / "out"
    assert main(["eval", str(runs / "jem"), "ood", "--ood", str(folder), "uniform", "--n-ood", "1",
                 "--out-dir", str(out), *FAST]) == 0
    rep = _strict_json(out / "ood.json")  # --n-ood 1: a std of one score is NaN, written as null
    auc = rep["results"]["auroc"]
    assert set(auc) == {str(folder), "uniform"} and auc[str(folder)]["n"] == auc["uniform"]["n"] == 1
    alone = tmp_path / "alone"
    assert main(["eval", str(runs / "jem"), "ood", "--ood", "uniform", "--n-ood", "1", "--out-dir", str(alone),
                 *FAST]) == 0
    assert _strict_json(alone / "ood.json")["results"]["auroc"]["uniform"] == auc["uniform"]  # same positives
    # a folder called like a built-in set beside it: both results kept (the set's used to replace the folder's)
    named = tmp_path / "y" / "uniform"
    shutil.copytree(folder, named)
    both = tmp_path / "both"
    assert main(["eval", str(runs / "jem"), "ood", "--ood", str(named), "uniform", "--n-ood", "1", "--out-dir",
                 str(both), *FAST]) == 0
    auc2 = _strict_json(both / "ood.json")["results"]["auroc"]
    assert set(auc2) == {str(named), "uniform"} and auc2[str(named)] == auc[str(folder)]  # the same five images
    # what made the report: this fastjem, on this machine's CPU
    assert rep["fastjem"] == fastjem.__version__ and re.fullmatch(r"cpu \(.+, \d+ cores, \d+ threads\)", rep["device"])


def test_the_test_noise_goes_on_the_ood_sets_as_on_the_test_images_but_the_synthetic_ones(runs, tmp_path,
                                                                                          monkeypatch):
    """--test-noise (the authors' 0.03) on the dataset and folder sets as on the test images, and once more on interp
    after it mixes noised test images (as the authors' evaluation does); uniform and constant drawn as they are.
    The scored images, compared with a run without the noise: the difference has the noise's std where it goes on,
    and is nothing where it does not."""
    from PIL import Image

    from fastjem.eval import tasks

    folder = tmp_path / "imgs" / "x"
    folder.mkdir(parents=True)
    for i in range(40):
        Image.fromarray(np.full((8, 8), 6 * i, dtype=np.uint8)).save(folder / f"{i}.png")
    scored = {}
    real = tasks.ood_scores

    def recording(model, x, batch_size, progress, desc):
        scored.setdefault(desc, []).append(x.detach().cpu().clone())
        return real(model, x, batch_size, progress, desc)

    monkeypatch.setattr(tasks, "ood_scores", recording)
    sets = ("uniform", "constant", "interp", str(folder))
    for noise in (0.0, 0.5):
        rep = tasks.ood(runs / "jem" / "checkpoint.pt", sets=sets, n_ood=400, test_noise=noise, n_test=64,
                        device="cpu", progress=False, out_dir=tmp_path / f"out{noise}")
    assert rep["settings"]["test_noise"] == 0.5 and "but uniform and constant" in rep["settings"]["test_noise_on"]
    std = {desc.removeprefix("scores "): (xs[1] - xs[0]).std().item() for desc, xs in scored.items()}
    assert std["uniform"] == std["constant"] == 0.0
    assert std["digits"] == pytest.approx(0.5, rel=0.05) and std["x"] == pytest.approx(0.5, rel=0.05)
    # the mix of two noised images carries 0.5 / sqrt(2), and the noise added after it 0.5: sqrt(1.5) * 0.5 in all
    assert std["interp"] == pytest.approx(0.5 * 1.5**0.5, rel=0.05)


def test_an_ood_set_named_by_an_empty_string_is_refused_before_the_checkpoint_is_read(tmp_path):
    """fastjem.eval.ood(sets=["uniform", ""]) read the current folder as an OOD set of images (Path("") is ".")."""
    from fastjem.eval import ood

    with pytest.raises(ConfigError, match=re.escape("an OOD set named '' (an unset variable?) names no set: give a "
                                                    "set's name or a folder's path ('.' for the current folder)")):
        ood(tmp_path / "missing.pt", sets=["uniform", ""])


def test_ood_sets_go_by_their_own_names_unless_shared_and_a_set_given_twice_is_refused(tmp_path):
    from fastjem.errors import ConfigError
    from fastjem.eval.tasks import _ood_labels

    for d in ("a/test", "b/test", "c/uniform", "d/svhn"):
        (tmp_path / d).mkdir(parents=True)
    a, b, c, d = (str(tmp_path / p) for p in ("a/test", "b/test", "c/uniform", "d/svhn"))
    assert _ood_labels(("uniform", d, "constant"), "cifar10") == ["uniform", "svhn", "constant"]
    assert _ood_labels((a, b, "uniform"), "cifar10") == [a, b, "uniform"]  # two folders called test/
    assert _ood_labels((c, "uniform"), "cifar10") == [c, "uniform"]  # a folder called like a built-in set
    assert _ood_labels((d,), "svhn") == [d]  # called like the in-distribution set
    for sets in (("uniform", "uniform"), (a, a)):
        with pytest.raises(ConfigError, match="given twice: each set is scored once"):
            _ood_labels(sets, "cifar10")


def test_reports_hold_what_json_can():
    """Tensors become their values, paths text, NaN and infinities null (strict JSON has none); what JSON cannot
    hold is refused, not written as null."""
    from fastjem.checkpoint import finite_json

    held = finite_json({"auc": torch.tensor([0.5, math.nan]), "where": Path("runs/x"), "inf": (math.inf, 1)})
    assert held == {"auc": [0.5, None], "where": "runs/x", "inf": [None, 1]}
    with pytest.raises(TypeError):
        json.dumps(finite_json({"fn": print}))


def test_models_are_named_by_run_folder_or_file_also_when_given_relative(tmp_path, monkeypatch):
    """A bare file in the working directory gave 'JEM ()' (the name of Path('.'))."""
    from types import SimpleNamespace

    from fastjem.eval.tasks import _model_name

    monkeypatch.chdir(tmp_path)
    name = lambda p: _model_name(SimpleNamespace(label="JEM", path=Path(p)))  # noqa: E731
    assert name("CIFAR10_MODEL-fastjem.pt") == f"JEM ({tmp_path.name}/CIFAR10_MODEL-fastjem)"
    assert name("checkpoint.pt") == f"JEM ({tmp_path.name})"
    assert name("runs/jem/checkpoint.pt") == "JEM (jem)" and name("runs/jem/best.pt") == "JEM (jem/best)"


def test_calibration_over_runs_keys_each_runs_own_ece_alike():
    from fastjem.eval.history import headline

    def report(run):
        return {"checkpoint": f"/runs/{run}/checkpoint.pt", "results": {"models": [
            {"name": f"JEM ({run})", "checkpoint": f"/runs/{run}/checkpoint.pt", "ece": 0.1},
            {"name": "classifier-only (base)", "checkpoint": "/runs/base/checkpoint.pt", "ece": 0.2}]}}

    assert headline("calibration", report("a")) == headline("calibration", report("b")) == {
        "ECE": 0.1, "ECE classifier-only (base)": 0.2}


def test_more_bad_eval_input_gets_one_clear_error(runs, tmp_path, capsys):
    folder = tmp_path / "ckpts"
    folder.mkdir()
    (folder / "iter_1.pt").write_bytes((runs / "jem" / "checkpoint.pt").read_bytes())
    torch.save(torch.zeros(3), folder / "stray.pt")
    ckpt = torch.load(runs / "jem" / "checkpoint.pt", weights_only=False)
    del ckpt["dataset"]
    torch.save(ckpt, tmp_path / "no_dataset.pt")
    ckpt = torch.load(runs / "jem" / "checkpoint.pt", weights_only=False)
    ckpt["config"]["width"] *= 2  # a config edited by hand: the weights are of the narrower network
    torch.save(ckpt, tmp_path / "wider.pt")
    cases = [
        ([str(tmp_path / "no_dataset.pt"), "accuracy", *FAST], "lacks the dataset description"),
        ([str(tmp_path / "wider.pt"), "accuracy", *FAST], "wider.pt does not fit its own network description: "
                                                          "Error(s) in loading state_dict"),
        ([str(folder), "accuracy", *FAST], "not a fastjem checkpoint"),
        ([str(runs / "jem"), "fid", "--features-model", "classifier", *FAST, "--n-fid", "1"], "--n-fid must be >= 2"),
        ([str(runs / "jem"), "ood", "--ood", "interp", *FAST, "--n-test", "1"], "at least two test images"),
    ]
    for args, match in cases:
        assert main(["eval", *args]) == 1, args
        err = capsys.readouterr().err
        assert err.startswith("fastjem: error:") and match in err, err
        assert "Traceback" not in err


def test_ood_all_keeps_the_folders_named_beside_it_and_a_typo_is_an_error(runs, tmp_path, capsys):
    from PIL import Image

    folder = tmp_path / "mine"
    folder.mkdir()
    for i in range(4):
        Image.fromarray(np.full((8, 8), 60 * i, dtype=np.uint8)).save(folder / f"{i}.png")
    # what a notebook or a macOS archive leaves beside the images: skipped, as the training loader skips it
    for junk in (folder / ".ipynb_checkpoints" / "0-checkpoint.png", folder / "__MACOSX" / "._0.png",
                 folder / "._1.png"):
        junk.parent.mkdir(exist_ok=True)
        junk.write_bytes(b"not an image")
    out = tmp_path / "out"
    assert main(["eval", str(runs / "jem"), "ood", "--ood", "all", str(folder), "--n-ood", "8", "--out-dir", str(out),
                 *FAST]) == 0
    rep = _report(out / "ood.json")["results"]
    assert {"uniform", "constant", "interp", "mine"} <= set(rep["auroc"]) and "svhn" in rep["skipped"]
    assert rep["auroc"]["mine"]["n"] == 4
    # a file that is not an image, where an image should be: one clear error naming it
    (folder / "4.png").write_bytes(b"not an image either")
    assert main(["eval", str(runs / "jem"), "ood", "--ood", str(folder), "--out-dir", str(out), *FAST]) == 1
    err = capsys.readouterr().err
    assert re.search(r"1 file\(s\) in the OOD folder .*mine are not readable images: remove them, or give a folder "
                     r"of images only:\n  .*4\.png is not an image that Pillow or torchvision can decode", err)
    assert "Traceback" not in err
    capsys.readouterr()
    assert main(["eval", str(runs / "jem"), "all", "--ood", "unifrom", "--out-dir", str(tmp_path / "typo"), *FAST]) == 1
    err = capsys.readouterr().err
    assert "unknown OOD set 'unifrom'" in err and "Traceback" not in err
    assert not list(tmp_path.glob("typo/*.json"))  # refused before any task ran, not after minutes of them


def test_an_ood_folder_that_is_not_there_is_said_to_be_missing_not_unknown(runs, tmp_path, capsys):
    """--ood with a path that is no folder (moved, misspelt, a file): the error says so, for ood and for all (which
    checks its sets before its first task), not that a set of that name is unknown."""
    for task in ("ood", "all"):
        for given, what in ((tmp_path / "gone", "no such folder"),
                            (runs / "jem" / "config.json", "a file, not a folder")):
            assert main(["eval", str(runs / "jem"), task, "--ood", str(given), "--out-dir", str(tmp_path / "o"),
                         *FAST]) == 1
            err = capsys.readouterr().err
            assert f"OOD set {given}: {what}; give a folder of images" in err and "unknown OOD set" not in err


def test_an_ood_set_read_from_the_in_distribution_folder_is_refused(tmp_path, capsys):
    """An image folder passes for any dataset, so an OOD set looked for in the in-distribution data folder can be
    that same data (AUROC 0.5, reported as if meaningful): refused, naming --ood-data-dir; and a missing OOD set's
    advice names --ood-data-dir, not --data-dir (which would move the in-distribution set too)."""
    from test_data import _write_folder

    from fastjem.train import Trainer

    classes = [f"c{i}" for i in range(10)]
    _write_folder(tmp_path / "cifar" / "train", classes, n=4, size=32)
    _write_folder(tmp_path / "cifar" / "test", classes, n=2, size=32)
    cfg = TrainConfig(**{**TINY, "dataset": "cifar10", "data_dir": str(tmp_path / "cifar"), "iters": 2, "val_size": 8})
    Trainer(cfg, out_dir=tmp_path / "run", progress=False, log=lambda *a: None).fit()
    fast = ["--no-progress", "--device", "cpu", "--batch-size", "64"]
    assert main(["eval", str(tmp_path / "run"), "ood", "--ood", "svhn", "--data-dir", str(tmp_path / "cifar"),
                 "--out-dir", str(tmp_path / "o1"), *fast]) == 1
    err = capsys.readouterr().err
    assert "same test images as the in-distribution set cifar10" in err and "--ood-data-dir" in err
    assert not (tmp_path / "o1" / "ood.json").exists()
    assert main(["eval", str(tmp_path / "run"), "ood", "--ood", "cifar100", "--ood-data-dir", str(tmp_path / "none"),
                 "--out-dir", str(tmp_path / "o2"), *fast]) == 1
    err = capsys.readouterr().err
    assert "OOD set cifar100: cifar100 was not found" in err and "--ood-data-dir FOLDER" in err
    assert " --data-dir" not in err
    # a folder holding another dataset: the advice names the OOD folder, not a --dataset eval does not have
    assert main(["eval", str(tmp_path / "run"), "ood", "--ood", "cifar100", "--ood-data-dir", str(tmp_path / "cifar"),
                 "--out-dir", str(tmp_path / "o2"), *fast]) == 1
    err = capsys.readouterr().err
    assert "holds 10 (c0, c1" in err and "point --ood-data-dir at the cifar100 data" in err and "--dataset" not in err
    # the test set from a folder of other classes than the checkpoint learnt: refused, not scored as if labelled alike
    others = [f"d{i}" for i in range(10)]
    _write_folder(tmp_path / "other" / "train", others, n=1, size=32)
    _write_folder(tmp_path / "other" / "test", others, n=1, size=32)
    assert main(["eval", str(tmp_path / "run"), "accuracy", "--data-dir", str(tmp_path / "other"),
                 "--out-dir", str(tmp_path / "o4"), *fast]) == 1
    err = capsys.readouterr().err
    assert "holds the classes d0, d1" in err and "trained on c0, c1" in err and "Traceback" not in err
    # the OOD set from a folder of its own is scored
    _write_folder(tmp_path / "svhn" / "train", classes, n=1, size=32)
    _write_folder(tmp_path / "svhn" / "test", classes, n=3, size=32)
    assert main(["eval", str(tmp_path / "run"), "ood", "--ood", "svhn", "--ood-data-dir", str(tmp_path / "svhn"),
                 "--out-dir", str(tmp_path / "o3"), *fast]) == 0
    rep = _report(tmp_path / "o3" / "ood.json")
    assert rep["results"]["auroc"]["svhn"]["n"] == 30
    # the report names the folders its sets came from
    assert rep["settings"]["ood_data_dir"] == str((tmp_path / "svhn").resolve())
    assert rep["settings"]["data_dir"] == str((tmp_path / "cifar").resolve())


def test_an_ood_image_folder_is_decoded_and_resized_as_training_data_is(tmp_path):
    """An OOD folder's images: the shorter side scaled and the centre cropped, as training's --image-size does (they
    were stretched to a square), EXIF orientation and 16-bit images as the training loader reads them, and grey
    for a one-channel model by Pillow's luma."""
    import numpy as np
    from PIL import Image

    from fastjem.data import fit_size, to_float
    from fastjem.eval.ood import OODSetError, load_image_folder

    wide = np.zeros((8, 16, 3), np.uint8)
    wide[:, 4:12] = (200, 100, 50)  # the centre 8 x 8 is one colour; the sides are black
    Image.fromarray(wide).save(tmp_path / "wide.png")
    Image.fromarray(np.full((8, 8), 32896, dtype=np.uint16)).save(tmp_path / "deep.tif")
    x = load_image_folder(tmp_path, 10, 3, 8)
    assert x.shape == (2, 3, 8, 8)
    assert torch.equal(x[1], to_float(fit_size(torch.from_numpy(wide).permute(2, 0, 1), 8)))
    assert torch.allclose(x[1, :, 0, 0], to_float(torch.tensor([200, 100, 50], dtype=torch.uint8)))
    assert torch.equal(x[0], to_float(torch.full((3, 8, 8), 128, dtype=torch.uint8)))
    grey = load_image_folder(tmp_path, 10, 1, 8)
    luma = (200 * 19595 + 100 * 38470 + 50 * 7471 + 0x8000) >> 16
    assert grey.shape == (2, 1, 8, 8) and torch.equal(grey[1], to_float(torch.full((1, 8, 8), luma, dtype=torch.uint8)))
    assert luma == np.asarray(Image.fromarray(wide).convert("L"))[0, 8]
    # and for every colour: 4096 random pixels, each Pillow's grey level exactly
    noisy = np.random.default_rng(0).integers(0, 256, (64, 64, 3), dtype=np.uint8)
    (tmp_path / "many").mkdir()
    Image.fromarray(noisy).save(tmp_path / "many" / "noise.png")
    pillow = torch.from_numpy(np.asarray(Image.fromarray(noisy).convert("L")).copy())[None]
    assert torch.equal(load_image_folder(tmp_path / "many", 1, 1, 64)[0], to_float(pillow))
    # a folder without images (a note, a hidden image) says so, naming the suffixes it looks for
    (tmp_path / "none").mkdir()
    (tmp_path / "none" / "notes.txt").write_text("not an image")
    Image.fromarray(wide).save(tmp_path / "none" / ".hidden.png")
    with pytest.raises(OODSetError, match=r"no images \(.*\.png.*\) found under .*none"):
        load_image_folder(str(tmp_path / "none"), 10, 3, 8)


def test_an_ood_folders_images_past_pillows_bomb_threshold_are_named_in_one_warning(tmp_path, monkeypatch):
    """An OOD folder is decoded as training data is: an image past Pillow's decompression-bomb threshold is named in
    fastjem's one warning, not in Pillow's, which names no file. (The threshold lowered here.)"""
    import numpy as np
    from PIL import Image

    from fastjem.errors import FastJEMWarning
    from fastjem.eval.ood import load_image_folder

    for name in ("scan.tif", "big.png"):
        Image.fromarray(np.full((12, 12, 3), 9, np.uint8)).save(tmp_path / name)
    Image.fromarray(np.full((8, 8, 3), 9, np.uint8)).save(tmp_path / "small.png")
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 100)  # 144 pixels pass it, under twice it
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert load_image_folder(tmp_path, 10, 3, 8).shape == (3, 3, 8, 8)
    assert not [w for w in caught if issubclass(w.category, Image.DecompressionBombWarning)]
    said = [str(w.message) for w in caught if issubclass(w.category, FastJEMWarning)]
    assert len(said) == 1 and re.search(r"2 image\(s\) of the OOD folder .* have more than 100 pixels, Pillow's "
                                        r"decompression-bomb threshold: .*big\.png \(144 pixels\), .*scan\.tif "
                                        r"\(144 pixels\)", said[0]), said


def test_a_figure_that_cannot_be_written_costs_the_figure_not_the_report(runs, tmp_path, capsys, monkeypatch):
    """A full disk at the reliability diagram threw the computed calibration away (the report is written after
    the figures). Now a one-line warning, and the report, which names the figure as not written."""
    import errno

    import fastjem.eval.plots

    def full_disk(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(fastjem.eval.plots, "reliability_diagram", full_disk)
    monkeypatch.setattr(fastjem.eval.plots, "image_grid", full_disk)
    out = tmp_path / "out"
    jem = runs / "jem" / "checkpoint.pt"
    assert main(["eval", str(jem), "calibration", "--out-dir", str(out), *FAST]) == 0
    err = capsys.readouterr().err
    assert f"fastjem: warning: {out / 'reliability.png'} not written (No space left on device)" in err
    rep = _report(out / "calibration.json")
    assert rep["not_written"] == [str(out / "reliability.png")] and rep["results"]["n"] == 64
    assert str(out / "reliability.png") not in rep["files"]
    assert main(["sample", str(jem), "--n", "4", "--n-steps", "2", "--out", str(tmp_path / "s.npz"), "--device",
                 "cpu", "--no-progress"]) == 0
    captured = capsys.readouterr()
    assert f"{tmp_path / 's.png'} not written (No space left on device); the samples are in" in captured.err
    assert (tmp_path / "s.npz").exists() and "grid            not written" in captured.out


def test_score_and_statistic_definitions_against_their_formulas():
    """Each was only range-checked: FID's covariance is the unbiased one (torch.cov), OOD max-prob is the largest
    softmax probability (not the largest logit), a Markdown table escapes '|' in a cell."""
    from fastjem.eval.metrics import feature_statistics
    from fastjem.eval.ood import ood_scores
    from fastjem.runs import render_table

    f = torch.randn(50, 4, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    mu, cov = feature_statistics(f)
    assert torch.allclose(mu, f.mean(0)) and torch.allclose(cov, torch.cov(f.T))
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(3 * 4 * 4, 5))
    x = torch.rand(6, 3, 4, 4) * 2 - 1
    scores = ood_scores(net, x, batch_size=4)
    with torch.no_grad():
        logits = net(x)
    assert torch.allclose(scores["maxprob"], torch.softmax(logits, 1).amax(1))
    assert torch.allclose(scores["logpx"], torch.logsumexp(logits, 1))
    # {name: [N] fp32 on the CPU}, as the docstring says, whatever the network's dtype (a float64 one gave a fp64
    # gradient-norm score beside two fp32 ones)
    scores = ood_scores(net.double(), x.double(), batch_size=4)
    assert {k: (v.dtype, v.device.type, tuple(v.shape)) for k, v in scores.items()} == {
        k: (torch.float32, "cpu", (6,)) for k in ("logpx", "maxprob", "grad_norm")}
    torch.testing.assert_close(scores["grad_norm"], grad_norm_score(net, x.double()).float())
    assert render_table(["run"], [["a|b"]], "md").splitlines()[-1] == "| a\\|b |"


def test_sample_takes_the_step_size_and_noise_given_else_the_checkpoints(runs, tmp_path):
    """fastjem sample --step-size/--noise reach the sampler, and without them the checkpoint's own SGLD settings
    (here changed from the default 1.0, so a fallback to 1.0 would show)."""
    from fastjem.eval import draw
    from fastjem.eval.core import load_model

    out = tmp_path / "still.pt"
    assert main(["sample", str(runs / "jem"), "-n", "4", "--init", "buffer", "--step-size", "0.25", "--noise", "0",
                 "--out", str(out), *SAMPLE]) == 0
    saved = torch.load(out, weights_only=False)["settings"]
    assert (saved["step_size"], saved["noise"]) == (0.25, 0.0)
    em = load_model(runs / "jem", "cpu")
    em.config = em.config.replace(sgld_step_size=0.5, sgld_noise=0.002)
    drawn = draw.draw(em, 2, n_steps=1)
    assert (drawn.settings["step_size"], drawn.settings["noise"]) == (0.5, 0.002)


@pytest.mark.parametrize("task,kwargs,match", [
    ("accuracy", {"batch_size": 0}, "--batch-size must be > 0"),
    ("accuracy", {"test_noise": -0.1}, "--test-noise must be a finite number >= 0"),
    ("accuracy", {"test_noise": float("inf")}, "--test-noise must be a finite number >= 0"),
    ("accuracy", {"n_steps": -1}, "--n-steps must be >= 0"),
    ("calibration", {"n_bins": 0}, "--bins must be between 1 and 1000"),
    ("calibration", {"n_bins": 1001}, "--bins must be between 1 and 1000"),
    ("calibration", {"compare": "no-such-run"}, "--compare no-such-run does not exist: give the folder or"),
    ("run_all", {"compare": "no-such-run"}, "--compare no-such-run does not exist"),
    ("ood", {"sets": ()}, "--ood needs at least one OOD set"),
    ("samples", {"n_steps": -1}, "--n-steps must be >= 0 and --n-samples, --per-class > 0, got --n-steps -1,"),
    ("samples", {"n_samples": 0}, "--n-steps must be >= 0 and --n-samples, --per-class > 0, got "),
    ("samples", {"per_class": 0}, ", --per-class 0"),
    ("samples", {"init": "zeros"}, "--init must be one of"),
    ("robustness", {"norms": ("l1",)}, "unknown norm 'l1'"),
    ("robustness", {"linf_eps": (-0.1,)},
     "epsilons must be finite numbers >= 0, refinement steps >= 0 and --pgd-steps >= 1; got --linf-eps -25.5/255"),
    ("robustness", {"l2_eps": (0.5, math.inf)}, "; got --l2-eps inf"),
    ("robustness", {"refine_steps": (0, -1), "pgd_steps": 0}, "; got --refine-steps -1, --pgd-steps 0"),
    ("robustness", {"pgd_steps": 0}, "--pgd-steps >= 1; got --pgd-steps 0"),
    ("robustness", {"n_attack": -5}, "--n-attack must be >= 0 (the test images attacked; 0 for all of them), got -5"),
    ("fid", {"features_model": "classifier", "source": "train"}, "--source must be auto, buffer or fresh"),
])
def test_eval_tasks_refuse_bad_options_before_loading_anything(task, kwargs, match, tmp_path):
    """Each task checks its options first: the error names the option, not the (here missing) checkpoint."""
    from fastjem.eval import tasks

    with pytest.raises(ConfigError, match=re.escape(match)):
        getattr(tasks, task)(tmp_path / "missing.pt", **kwargs)
    assert list(tmp_path.iterdir()) == []


def test_nan_ood_scores_and_a_one_image_fid_are_said_not_crashed(runs, tmp_path, monkeypatch):
    """Scores that came out NaN (a network whose outputs are not finite) are an error naming the OOD set and the
    cause, not a ValueError from the AUROC; FID with one test image (no covariance) says it needs two."""
    from fastjem.eval import tasks

    real = tasks.ood_scores

    def nan_for_the_ood_set(model, x, batch_size, progress, desc):
        s = real(model, x, batch_size, progress, desc)
        return s if desc == "scores digits" else {k: torch.full_like(v, float("nan")) for k, v in s.items()}

    monkeypatch.setattr(tasks, "ood_scores", nan_for_the_ood_set)
    common = dict(device="cpu", progress=False, n_test=32, batch_size=64)
    with pytest.raises(ConfigError, match=re.escape("OOD scores of uniform or of the test set are NaN (AUROC scores "
                                                    "must not be NaN): the network's outputs are not finite")):
        tasks.ood(runs / "jem" / "checkpoint.pt", sets=("uniform",), n_ood=20, out_dir=tmp_path / "ood", **common)
    assert not (tmp_path / "ood" / "ood.json").exists()
    with pytest.raises(ConfigError, match=re.escape("FID compares feature covariances: it needs 2 test images or "
                                                    "more, --n-test gives 1")):
        tasks.fid(runs / "jem" / "checkpoint.pt", features_model="classifier", out_dir=tmp_path / "fid",
                  **{**common, "n_test": 1})
    assert not (tmp_path / "fid" / "fid.json").exists()


def test_eval_ood_refuses_no_ood_images_or_a_negative_test_count(tmp_path, capsys):
    for flag, value, got in (("--n-ood", "0", "--n-ood 0, --n-test 0"),
                             ("--n-test", "-1", "--n-ood 1000, --n-test -1")):
        assert main(["eval", str(tmp_path / "missing.pt"), "ood", flag, value]) == 1
        assert f"--n-ood must be > 0 and --n-test >= 0, got {got}" in capsys.readouterr().err


def test_metrics_refuse_inputs_they_cannot_score():
    from types import SimpleNamespace

    from fastjem.eval.metrics import feature_statistics
    from fastjem.eval.ood import ood_set

    with pytest.raises(ValueError, match="at least one positive and one negative"):
        auroc(torch.tensor([]), torch.tensor([1.0]))
    with pytest.raises(ValueError, match="at least one positive and one negative"):
        auroc(torch.tensor([1.0]), torch.tensor([]))
    for pos, neg in (([0.1, float("nan")], [0.2]), ([0.1], [float("nan")])):
        with pytest.raises(ValueError, match="AUROC scores must not be NaN"):
            auroc(torch.tensor(pos), torch.tensor(neg))
    assert auroc(torch.tensor([float("inf")]), torch.tensor([float("-inf"), 0.0])) == 1.0  # infinities rank
    for conf in ([0.5, 1.5], [-0.1, 0.5], [0.5, float("nan")], [float("inf"), 0.5]):
        with pytest.raises(ValueError, match=r"confidences must be finite and in \[0, 1\]"):
            expected_calibration_error(torch.tensor(conf), torch.tensor([True, False]))
    with pytest.raises(ValueError, match="n_bins must be >= 1"):
        expected_calibration_error(torch.tensor([0.5]), torch.tensor([True]), n_bins=0)
    with pytest.raises(ValueError, match="non-empty and of equal length"):
        expected_calibration_error(torch.tensor([0.5, 0.6]), torch.tensor([True]))
    with pytest.raises(ValueError, match="non-empty and of equal length"):
        expected_calibration_error(torch.tensor([]), torch.tensor([]))
    with pytest.raises(ValueError, match="at least 2 samples"):
        feature_statistics(torch.ones(1, 4))
    mu, cov = feature_statistics(torch.tensor([[0.0, 1.0], [2.0, 5.0]]))  # two are enough (--n-fid 2)
    assert mu.tolist() == [1.0, 3.0] and cov.tolist() == [[2.0, 4.0], [4.0, 8.0]]
    with pytest.raises(ValueError, match="interpolations need at least two images"):
        interpolate_pairs(torch.zeros(1, 1, 8, 8), 4)
    with pytest.raises(ValueError, match="the interp set needs the in-distribution test images"):
        ood_set("interp", SimpleNamespace(sample_shape=(1, 8, 8)), 4)


def test_figures_grid_layout_robustness_axis_and_image_formats(tmp_path, monkeypatch):
    """A grid is square by default (9 images: 3 x 3) with small images enlarged to 32 px; the robustness figure's
    L-inf axis is in the k/255 units --linf-eps takes (L2 as given); an image path with a suffix Pillow does not know
    is refused, saying to use .png."""
    from fastjem.eval import plots

    grid = plots.grid_tensor(torch.zeros(9, 1, 8, 8))
    assert grid.shape == (3, 3 * 32 + 4 * 2, 3 * 32 + 4 * 2)  # make_grid's 2 px of padding around each image
    assert plots.grid_tensor(torch.zeros(9, 1, 8, 8), nrow=9).shape[2] == 9 * 32 + 10 * 2
    # [-1, 1] to [0, 1], beyond it clamped, white between the images; 16 px enlarged twice
    grid = plots.grid_tensor(torch.tensor([-3.0, -1.0, 0.0, 3.0]).reshape(4, 1, 1, 1).expand(4, 1, 16, 16), nrow=4)
    assert grid.shape == (3, 32 + 2 * 2, 4 * 32 + 5 * 2)
    assert [grid[0, 2, 2 + 34 * k].item() for k in range(4)] == [0.0, 0.0, 0.5, 1.0] and grid[:, 0].eq(1).all()
    figures = []
    monkeypatch.setattr(plots, "_save", lambda fig, path, tight=False: figures.append(fig) or path)
    plots.robustness_curves({"linf": {"no refinement": [(0.0, 0.9), (2 / 255, 0.5), (8 / 255, 0.1)]},
                             "l2": {"no refinement": [(0.0, 0.9), (0.5, 0.4)]}}, tmp_path / "r.png", "t")
    linf, l2 = figures[0].axes
    assert list(linf.lines[0].get_xdata()) == pytest.approx([0.0, 2.0, 8.0])
    assert list(l2.lines[0].get_xdata()) == pytest.approx([0.0, 0.5])
    assert "k/255" in linf.get_xlabel() and l2.get_xlabel() == "L2 epsilon ([0, 1] pixel scale)"
    assert figures[0]._suptitle.get_text() == "t"
    for ax in (linf, l2):
        assert ax.get_ylabel() == "accuracy under PGD" and ax.get_ylim() == (0, 1)
        assert [t.get_text() for t in ax.get_legend().get_texts()] == ["no refinement"]
    monkeypatch.undo()
    with pytest.raises(ValueError, match=r"unknown image file extension '\.xyz'.*use \.png"):
        plots.image_grid(torch.zeros(4, 1, 8, 8), tmp_path / "grid.xyz")
    assert not (tmp_path / "grid.xyz").exists()
    assert plots.pil_format(tmp_path / "grid") == "PNG" and plots.pil_format(tmp_path / "g.JPG") == "JPEG"


def test_figures_take_text_paths_return_the_file_and_close_what_they_drew(tmp_path):
    """Each figure function writes its PNG to a path given as text, returns it as a Path, and leaves no figure
    open (a report draws dozens); a grid of images that still require grad saves too."""
    import matplotlib.pyplot as plt

    from fastjem.eval import plots
    from fastjem.eval.metrics import CalibrationResult

    open_before = plt.get_fignums()
    r = CalibrationResult(0.1, 2, [0.0, 0.5, 1.0], [1, 1], [0.0, 1.0], [0.4, 0.9], 0.1)
    scores = {"a": {"s": torch.tensor([0.0, 1.0])}, "b": {"s": torch.tensor([2.0])}}
    written = [plots.reliability_diagram([("jem", r)], str(tmp_path / "rel.png")),
               plots.score_histograms(scores, "a", "s", "s", {"b": 0.0}, str(tmp_path / "h.png")),
               plots.robustness_curves({"l2": {"x": [(0.0, 1.0)]}}, str(tmp_path / "r.png"), "t"),
               plots.image_grid(torch.zeros(4, 1, 8, 8, requires_grad=True), str(tmp_path / "g.png"))]
    assert written == [tmp_path / name for name in ("rel.png", "h.png", "r.png", "g.png")]
    assert all(p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in written)
    assert plt.get_fignums() == open_before


def test_figures_leave_the_callers_matplotlib_backend_and_figures_alone(tmp_path):
    """A notebook (inline backend) that trains or evaluates in-process: fastjem's figures switched matplotlib to Agg
    for the rest of the session (its own plt.show() then drew nothing) and went through pyplot's figure list. Now the
    caller's backend and open figures are as they were."""
    import matplotlib
    import matplotlib.pyplot as plt

    from fastjem.curves import plot_curves, read_metrics
    from fastjem.eval import plots
    from fastjem.eval.metrics import CalibrationResult

    before = matplotlib.get_backend()
    try:
        matplotlib.use("pdf")  # the caller's choice
        mine = plt.figure()
        r = CalibrationResult(0.1, 2, [0.0, 0.5, 1.0], [1, 1], [0.0, 1.0], [0.4, 0.9], 0.1)
        plots.reliability_diagram([("jem", r)], tmp_path / "rel.png")
        log = tmp_path / "metrics.jsonl"
        records = [{"iter": i, "loss": 2 / i, "ce": 2 / i, "acc": 0.5, "it_per_s": 10.0, "lr": 1e-3} for i in (1, 2)]
        log.write_text("".join(json.dumps(r) + "\n" for r in records))
        plot_curves(read_metrics(log), tmp_path / "curves.png")
        assert (tmp_path / "rel.png").read_bytes()[:4] == (tmp_path / "curves.png").read_bytes()[:4] == b"\x89PNG"
        assert matplotlib.get_backend() == "pdf" and plt.get_fignums() == [mine.number]
        plt.close(mine)
    finally:
        matplotlib.use(before)


def test_reliability_diagram_and_score_histograms_draw_the_numbers(tmp_path, monkeypatch):
    """The reliability diagram: per model, a bar per bin side by side within the bin (the first model at the bin's
    left edge), as high as the bin's accuracy (an empty bin, NaN, drawn as 0) and, below, its count. The score
    histograms: 50 bins spanning every set's scores, AUROCs in the legend; scores that are all equal draw in a
    unit-wide range around them."""
    from fastjem.eval import plots
    from fastjem.eval.metrics import CalibrationResult

    figures = []
    monkeypatch.setattr(plots, "_save", lambda fig, path, tight=False: figures.append(fig) or path)
    edges = [0.0, 0.25, 0.5, 0.75, 1.0]
    a = CalibrationResult(0.1, 4, edges, [0, 3, 5, 2], [float("nan"), 0.3, 0.6, 1.0], [float("nan")] * 4, 0.2)
    b = CalibrationResult(0.05, 4, edges, [1, 1, 4, 4], [0.0, 0.5, 0.5, 0.75], [float("nan")] * 4, 0.1)
    plots.reliability_diagram([("jem", a), ("baseline", b)], tmp_path / "rel.png")
    top, bottom = figures[0].axes
    assert [p.get_x() for p in top.patches] == pytest.approx([0.0, 0.25, 0.5, 0.75, 0.125, 0.375, 0.625, 0.875])
    assert [p.get_width() for p in top.patches] == pytest.approx([0.125] * 8)
    assert [p.get_height() for p in top.patches] == pytest.approx([0.0, 0.3, 0.6, 1.0, 0.0, 0.5, 0.5, 0.75])
    assert [p.get_height() for p in bottom.patches] == [0, 3, 5, 2, 1, 1, 4, 4]
    assert "jem ECE = 10.00%, baseline ECE = 5.00%" in top.get_title()
    # the legend below the panels, where no bar reaches (in the top panel's upper left, an under-confident model's
    # bars were under it)
    legend, = figures[0].legends
    assert [t.get_text() for t in legend.get_texts()] == ["perfect calibration", "jem (ECE 10.00%)",
                                                          "baseline (ECE 5.00%)"]
    figures[0].canvas.draw()
    box = legend.get_window_extent()
    assert box.y1 <= min(bottom.get_tightbbox().y0, top.get_tightbbox().y0) and top.get_legend() is None
    assert list(top.lines[0].get_xdata()) == [0, 1] and list(top.lines[0].get_ydata()) == [0, 1]  # the diagonal
    assert top.get_xlim() == (0, 1) and top.get_ylim() == (0, 1) and top.get_ylabel() == "accuracy"
    assert (bottom.get_yscale(), bottom.get_xlabel(), bottom.get_ylabel()) == ("log", "confidence max p(y|x)", "count")

    scores = {"digits": {"logp": torch.tensor([1.0, 2.0, 3.0])}, "noise": {"logp": torch.tensor([-4.0, 0.0])}}
    plots.score_histograms(scores, "digits", "logp", "log p(x)", {"noise": 0.875}, tmp_path / "h.png")
    ax = figures[1].axes[0]
    assert len(ax.patches) == 2 * 50 and min(p.get_x() for p in ax.patches) == pytest.approx(-4.0)
    assert max(p.get_x() + p.get_width() for p in ax.patches) == pytest.approx(3.0)
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["digits (in-distribution)", "noise (AUROC 0.875)"]
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("log p(x)", "density")
    assert ax.get_title() == "OOD score log p(x): higher = more in-distribution"
    flat = {"digits": {"logp": torch.full((3,), 2.0)}, "noise": {"logp": torch.full((2,), 2.0)}}
    with warnings.catch_warnings():
        # no bins of width 0 (numpy's density divides by them); the figures left open are another warning
        warnings.filterwarnings("error", message="invalid value", category=RuntimeWarning)
        plots.score_histograms(flat, "digits", "logp", "log p(x)", {"noise": 0.5}, tmp_path / "flat.png")
    drawn = figures[2].axes[0].patches
    assert min(p.get_x() for p in drawn) == pytest.approx(1.5)
    assert max(p.get_x() + p.get_width() for p in drawn) == pytest.approx(2.5)
    # an infinite score (an overflowing gradient norm) is counted in the legend; the bins span the finite ones,
    # which are drawn (edges from an infinite minimum used to leave every histogram empty)
    inf = {"digits": {"logp": torch.tensor([1.0, 2.0, 3.0])},
           "noise": {"logp": torch.tensor([-float("inf"), 0.0, 1.0])}}
    plots.score_histograms(inf, "digits", "logp", "log p(x)", {"noise": 0.722}, tmp_path / "inf.png")
    ax = figures[3].axes[0]
    assert min(p.get_x() for p in ax.patches) == pytest.approx(0.0)
    assert max(p.get_x() + p.get_width() for p in ax.patches) == pytest.approx(3.0)
    assert sum(p.get_height() > 0 for p in ax.patches) == 5  # 3 + 2 finite scores, each in a bin of its own
    assert [t.get_text() for t in ax.get_legend().get_texts()] == [
        "digits (in-distribution)", "noise (AUROC 0.722), 1 of 3 infinite, not drawn"]


def test_sample_takes_class_names_beside_indices():
    """--class cat (CIFAR-10's or an image folder's class name) was refused as no index; numbers stay indices, and a
    name the checkpoint does not have lists the ones it does."""
    from fastjem.eval.draw import parse_classes

    names = ("cat", "dog", "fox")
    assert parse_classes(["fox", "0"], 3, names) == [2, 0] and parse_classes(["dog"], 3, names) == [1]
    with pytest.raises(ConfigError, match=r"got 'cow'; its classes are cat, dog, fox"):
        parse_classes(["cow"], 3, names)
    with pytest.raises(ConfigError, match="--class 1 is given twice"):
        parse_classes(["dog", "1"], 3, names)
    with pytest.raises(ConfigError, match=r"class indices, class names or 'all', got 'cat'$"):
        parse_classes(["cat"], 3, ())  # names not known (or not one per class): indices only
    # classes named by numbers other than their indices (folders numbered from 1, or 0..10 sorted as text by an
    # older checkpoint): a name wins (--class 3 drew the folder named 4); a number no class is named stays an index
    assert parse_classes(["3", "1"], 4, ("1", "2", "3", "4")) == [2, 0]
    assert parse_classes(["0", "4"], 4, ("1", "2", "3", "4")) == [0, 3]
    assert parse_classes(["2", "10"], 11, ("0", "1", "10", *(str(i) for i in range(2, 10)))) == [3, 2]
    with pytest.raises(ConfigError, match=r'--class 0 is given twice \(class 0 \(named "1"\)\)'):
        parse_classes(["1", "0"], 4, ("1", "2", "3", "4"))
    with pytest.raises(ConfigError, match=r"--class 5: no class is named '5', and the checkpoint's class indices are "
                                          "0..3; its classes are 1, 2, 3, 4"):
        parse_classes(["5"], 4, ("1", "2", "3", "4"))


def test_sample_cli_draws_a_named_class(tmp_path, capsys):
    """fastjem sample --class dog on a run of an image folder's cat/dog classes draws class 1, as --class 1 does."""
    from fastjem.train import Trainer

    image_folder(tmp_path / "imgs")
    Trainer(TrainConfig(**{**TINY, "iters": 2, "dataset": "imagefolder", "data_dir": str(tmp_path / "imgs")}),
            out_dir=tmp_path / "run", progress=False, log=lambda *a: None).fit()
    ckpt = str(tmp_path / "run" / "checkpoint.pt")
    common = ["-n", "2", "--n-steps", "1", "--device", "cpu", "--no-progress", "--seed", "3"]
    targets = []
    for given in ("dog", "1"):
        out = tmp_path / f"{given}.pt"
        assert main(["sample", ckpt, "--class", given, "--out", str(out), *common]) == 0, capsys.readouterr().err
        targets.append(torch.load(out, weights_only=False))
    assert targets[0]["target"].tolist() == [1, 1] and torch.equal(targets[0]["x"], targets[1]["x"])
    assert main(["sample", ckpt, "--class", "cow", "--out", str(tmp_path / "cow.pt"), *common]) == 1
    assert "got 'cow'; its classes are cat, dog" in capsys.readouterr().err


def test_sample_cli_takes_a_number_as_the_class_of_that_name(tmp_path, capsys):
    """An image folder's classes numbered 1..3 (labels 0..2): --class 3 was index 3 (the folder named 4 where there
    is one; refused here); now it is the folder named 3, and the classes drawn are printed and saved by index and
    name. A number no class is named (0) is an index."""
    from PIL import Image

    from fastjem.train import Trainer

    for c in ("1", "2", "3"):
        (tmp_path / "imgs" / c).mkdir(parents=True)
        for i in range(6):
            Image.fromarray(np.full((8, 8, 3), 20 * i + int(c), np.uint8)).save(tmp_path / "imgs" / c / f"{i}.png")
    Trainer(TrainConfig(**{**TINY, "iters": 2, "dataset": "imagefolder", "data_dir": str(tmp_path / "imgs")}),
            out_dir=tmp_path / "run", progress=False, log=lambda *a: None).fit()
    ckpt = str(tmp_path / "run" / "checkpoint.pt")
    common = ["-n", "2", "--n-steps", "1", "--device", "cpu", "--no-progress", "--seed", "3"]
    out = tmp_path / "three.pt"
    assert main(["sample", ckpt, "--class", "3", "0", "--out", str(out), *common]) == 0, capsys.readouterr().err
    assert '\n  classes         2 (named "3"), 0 (named "1")\n' in capsys.readouterr().out
    drawn = torch.load(out, weights_only=False)
    assert drawn["target"].tolist() == [2, 2, 0, 0]
    assert drawn["settings"]["classes"] == [2, 0] and drawn["settings"]["class_names"] == ["3", "1"]
    # the default file is named by the class's name, as --class gave it: class-3 (it was class-2, by the index)
    assert main(["sample", ckpt, "--class", "3", *common]) == 0, capsys.readouterr().err
    assert [p.name for p in (tmp_path / "run" / "sampled").glob("*.npz")] == ["class-3.npz"]
    with np.load(tmp_path / "run" / "sampled" / "class-3.npz") as f:
        assert f["target"].tolist() == [2, 2]


def test_the_default_sample_file_names_classes_by_a_file_names_characters(tmp_path):
    """Class names become part of the default file's name: other characters than letters, digits, ".", "+" and "-"
    are replaced (a "/" would name a folder), and a long list is cut to a file name the system takes, with a digest
    that keeps two lists apart; without names (not one per class) the indices name the classes."""
    from types import SimpleNamespace

    from fastjem.eval.draw import default_output

    def fake(names, k):
        return SimpleNamespace(info=SimpleNamespace(classes=names), num_classes=k, output_dir=lambda kind: tmp_path)

    em = fake(("maple tree", "a/b", "émeu", "x+y.z"), 4)
    assert default_output(em, [0, 1, 3]).name == "class-maple_tree-a_b-x+y.z.npz"
    assert default_output(em, [2]).name == "class-émeu.npz"
    assert default_output(fake(("a", "b"), 3), [2, 0]).name == "class-2-0.npz"
    many = fake(tuple(f"class_with_a_long_name_{i}" for i in range(100)), 100)
    a, b = (default_output(many, list(range(first, 60))) for first in (0, 1))
    assert a != b and all(len(p.name.encode()) <= 255 for p in (a, b)) and a.name.startswith("class-class_with_a")
    a.write_bytes(b"")  # a name the file system takes


def test_class_lists_whose_names_a_file_name_makes_alike_get_files_of_their_own(tmp_path):
    """Two class names made the same part of a file name ("a b", "a/b" and "a_b"), alike but for case (one file on
    macOS and Windows), or a name holding the "-" that joins names ("a-b" against "a" and "b"): each list of
    classes still gets a default file of its own, the same one at each call; names that cannot be confused keep the
    plain name."""
    from types import SimpleNamespace

    from fastjem.eval.draw import default_output

    def fake(names):
        return SimpleNamespace(info=SimpleNamespace(classes=names), num_classes=len(names),
                               output_dir=lambda kind: tmp_path)

    for names, lists in [(("a b", "a/b", "a_b", "c"), [[0], [1], [2], [0, 3], [2, 3]]),
                         (("Cat", "cat", "dog"), [[0], [1], [0, 2], [1, 2]]),
                         (("a-b", "a", "b"), [[0], [1, 2], [2, 1]])]:
        em = fake(names)
        got = [default_output(em, c) for c in lists]
        assert len({p.name.lower() for p in got}) == len(lists), got
        assert got == [default_output(em, c) for c in lists]  # deterministic
        assert all(p.name.startswith("class-") for p in got)
    # a digest where needed, the plain name where the names cannot be confused
    assert default_output(fake(("a b", "a_b", "c")), [0]).name.startswith("class-a_b-")
    assert default_output(fake(("cat", "dog", "x y")), [0, 2]).name == "class-cat-x_y.npz"


def test_sample_refuses_a_data_dir_its_chains_would_not_read(runs, tmp_path, capsys):
    """--data-dir / --download feed only informative chain starts: beside chains from the buffer or from noise they
    were ignored without a word."""
    ckpt = str(runs / "jem" / "checkpoint.pt")
    common = ["-n", "2", "--n-steps", "1", "--device", "cpu", "--no-progress", "--out", str(tmp_path / "s.pt")]
    for extra, said in ((["--data-dir", str(tmp_path)], "--data-dir is read only by chains that start informative"
                         r".*these start from the replay buffer: drop it, or add --init informative"),
                        (["--init", "noise", "--download"], "--download is read only by .*these start from noise")):
        assert main(["sample", ckpt, *extra, *common]) == 1
        assert re.search(said, capsys.readouterr().err)
    assert not (tmp_path / "s.pt").exists()


def _small_net():
    torch.manual_seed(0)
    return nn.Sequential(nn.Flatten(), nn.Linear(12, 5), nn.Tanh(), nn.Linear(5, 3)).requires_grad_(False)


def test_a_refinement_that_keeps_its_graph_leaves_the_callers_tensor_alone():
    """With create_graph (an attack on refine-then-classify) the refinement makes its own leaf of an input that
    needs no grad: the caller's tensor (the test images) does not start requiring grad."""
    x = torch.randn(4, 3, 2, 2)
    out = sgld_refine(_small_net(), x, 2, 0.5, 0.0, create_graph=True)
    assert out.requires_grad and not x.requires_grad


def test_predictions_are_fp32_from_a_low_precision_network_and_chains_may_be_empty():
    """Logits of a bf16 network come back fp32, refined or not (the metrics reduce them in fp32); run_chains over
    no images gives no images, of their shape."""
    from fastjem.eval.core import predict_logits, refined_logits, run_chains

    net = _small_net().to(torch.bfloat16)
    x = torch.randn(5, 3, 2, 2, dtype=torch.bfloat16)
    assert predict_logits(net, x, batch_size=2).dtype == torch.float32
    assert refined_logits(net, x, 1, 0.1, 0.0, batch_size=2).dtype == torch.float32
    empty = run_chains(_small_net(), torch.zeros(0, 3, 2, 2), 2, 0.1, 0.0)
    assert empty.shape == (0, 3, 2, 2)


def test_a_data_dir_given_for_a_digits_run_is_said_not_to_be_read(runs, tmp_path, capsys):
    """Digits is scikit-learn's built-in set: a --data-dir given to evaluate a digits run is read by nothing, and
    says so (training refuses it), where a mistyped folder was taken without a word."""
    assert main(["eval", str(runs / "jem"), "accuracy", "--data-dir", "no-such-folder", "--out-dir",
                 str(tmp_path / "eval"), *FAST]) == 0
    err = capsys.readouterr().err
    assert "--data-dir no-such-folder is not read:" in err and "trained on digits" in err
    assert main(["eval", str(runs / "jem"), "accuracy", "--out-dir", str(tmp_path / "eval"), *FAST]) == 0
    assert "is not read" not in capsys.readouterr().err
    # ood reads its OOD datasets from --data-dir (where --ood-data-dir is not given): not said there
    assert main(["eval", str(runs / "jem"), "ood", "--ood", "uniform", "--n-ood", "20", "--data-dir", "elsewhere",
                 "--out-dir", str(tmp_path / "eval"), *FAST]) == 0
    assert "is not read" not in capsys.readouterr().err


def test_the_dataset_is_loaded_once_per_folder_and_given_data_is_what_was_loaded(monkeypatch):
    """EvalModel.arrays loads a data folder once however many tasks ask for it; loaded_arrays lists each folder's,
    or the data given to load_model."""
    from types import SimpleNamespace

    from fastjem.data import DatasetInfo
    from fastjem.eval import core

    loads = []

    def load_arrays(dataset, data_dir, *args, **kwargs):
        loads.append(data_dir)
        return SimpleNamespace(info=SimpleNamespace(classes=(), channels=1, image_size=8), folder=data_dir)

    monkeypatch.setattr(core, "load_arrays", load_arrays)
    em = core.EvalModel(nn.Identity(), TrainConfig(), DatasetInfo("digits", 10, 1, 8, 0, False, 0), None, 0,
                        Path("run/checkpoint.pt"), torch.device("cpu"))
    a = em.arrays("d1")
    assert em.arrays("d1") is a and em.arrays("d2").folder == "d2" and loads == ["d1", "d2"]
    assert [b.folder for b in em.loaded_arrays()] == ["d1", "d2"]
    em.data = SimpleNamespace(folder="given")
    assert em.arrays("d1") is em.data and em.loaded_arrays() == [em.data]


def test_sample_says_a_data_dir_given_for_a_digits_run_is_not_read(runs, tmp_path, capsys):
    """Digits is scikit-learn's built-in set: informative chains of a digits run read no --data-dir (nor download),
    and say so, as eval does, where a mistyped folder was taken without a word."""
    ckpt = str(runs / "jem" / "checkpoint.pt")
    common = ["-n", "2", "--n-steps", "1", "--init", "informative", *SAMPLE]
    for extra, said in ((["--data-dir", "no-such-folder"], "--data-dir no-such-folder is not read:"),
                        (["--download"], "--download is not read:"),
                        (["--data-dir", "x", "--download"], "--data-dir x and --download are not read:")):
        out = tmp_path / f"s{len(extra)}{extra[0]}.npz"
        assert main(["sample", ckpt, *extra, *common, "--out", str(out)]) == 0
        err = capsys.readouterr().err
        assert said in err and "trained on digits" in err and out.exists()
    assert main(["sample", ckpt, *common, "--out", str(tmp_path / "plain.npz")]) == 0
    assert "is not read" not in capsys.readouterr().err


def test_sample_writes_the_format_its_suffix_names_in_any_case(runs, tmp_path):
    """--out x.PT is taken as .pt, case aside: it is written as torch's file (NumPy's .npz was written under that
    name, which torch.load could not read); X.NPZ as NumPy's."""
    ckpt = str(runs / "jem" / "checkpoint.pt")
    common = ["-n", "2", "--n-steps", "1", *SAMPLE]
    assert main(["sample", ckpt, *common, "--out", str(tmp_path / "x.PT")]) == 0
    saved = torch.load(tmp_path / "x.PT", weights_only=True)
    assert saved["x"].shape == (2, 1, 8, 8) and saved["settings"]["n"] == 2
    assert main(["sample", ckpt, *common, "--out", str(tmp_path / "y.NPZ")]) == 0
    assert np.load(tmp_path / "y.NPZ")["x"].shape == (2, 1, 8, 8)


def test_a_data_dir_of_images_of_another_size_than_the_runs_is_refused(tmp_path, capsys):
    """A network that pools globally takes images of any size: a --data-dir of 16x16 images for a run trained on
    8x8 ones was tested on, and its informative chains drawn at, 16x16 without a word. Refused, naming both sizes,
    nothing written; the run's own folder is read as before."""
    from PIL import Image

    from fastjem.train import Trainer

    image_folder(tmp_path / "imgs", classes=("a", "b"))
    Trainer(TrainConfig(**{**TINY, "iters": 2, "dataset": "imagefolder", "data_dir": str(tmp_path / "imgs")}),
            out_dir=tmp_path / "run", progress=False, log=lambda *a: None).fit()
    for p in (tmp_path / "imgs").rglob("*.png"):
        big = tmp_path / "big" / p.relative_to(tmp_path / "imgs")
        big.parent.mkdir(parents=True, exist_ok=True)
        Image.open(p).resize((16, 16)).save(big)
    said = (f"{tmp_path / 'big'} holds 3 x 16 x 16 images, but {tmp_path / 'run' / 'checkpoint.pt'} was trained on "
            "3 x 8 x 8: point --data-dir at the data it was trained on (or a copy resized to 8 x 8)")
    out = tmp_path / "s.npz"
    sample = ["sample", str(tmp_path / "run"), "-n", "2", "--init", "informative", "--out", str(out), *SAMPLE]
    assert main([*sample, "--data-dir", str(tmp_path / "big")]) == 1
    assert said in capsys.readouterr().err and not out.exists()
    assert main(["eval", str(tmp_path / "run"), "accuracy", "--data-dir", str(tmp_path / "big"), "--out-dir",
                 str(tmp_path / "eval"), *FAST]) == 1
    assert said in capsys.readouterr().err and not (tmp_path / "eval" / "accuracy.json").exists()
    assert main(sample) == 0 and np.load(out)["x"].shape == (2, 3, 8, 8)


def test_sample_refuses_an_output_folder_it_cannot_make_before_it_samples(runs, tmp_path, capsys, monkeypatch):
    """--out below a file (cond.pt/x.npz): said before the chains run, not after minutes of sampling."""
    from fastjem.eval import draw

    monkeypatch.setattr(draw, "draw", lambda *a, **k: pytest.fail("sampled before its output folder was made"))
    (tmp_path / "cond.pt").write_bytes(b"kept")
    out = tmp_path / "cond.pt" / "x.npz"
    assert main(["sample", str(runs / "jem"), "-n", "2", "--out", str(out), *SAMPLE]) == 1
    err = capsys.readouterr().err
    assert f"{tmp_path / 'cond.pt'}: a file stands where a folder is needed: choose another --out-dir / --out" in err
    assert (tmp_path / "cond.pt").read_bytes() == b"kept"
