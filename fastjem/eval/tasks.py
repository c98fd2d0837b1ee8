"""The evaluation tasks: each checks one claim of the paper on a checkpoint and writes a JSON report beside its PNGs.

Every task takes a checkpoint (a path, a run folder, or an ``EvalModel`` from ``load_model``) and the common
keyword options of ``_Run`` (out_dir, batch_size, device, data_dir, download, progress, seed), and returns its
report as a dict (also written to ``<out_dir>/<task>.json``).
"""

from __future__ import annotations

import functools
import math
import os
import time
import warnings
from datetime import datetime, timezone
from pathlib import Path

import torch
import torch.nn.functional as F

from fastjem.checkpoint import atomic_write_text, make_folder, strict_json
from fastjem.data import class_names_differ, shown_classes
from fastjem.errors import ConfigError, FastJEMError, FastJEMWarning, error_line
from fastjem.eval import plots
from fastjem.eval.attacks import NORMS, pgd_attack
from fastjem.eval.core import (
    EvalModel,
    RefineThenClassify,
    batches,
    fixed_subset,
    load_model,
    predict_logits,
    refined_logits,
    run_chains,
    sgld_refine,
)
from fastjem.eval.draw import INITS, chain_starts, resolve_init
from fastjem.eval.metrics import (
    auroc,
    expected_calibration_error,
    feature_statistics,
    frechet_distance,
    inception_score_from_probs,
)
from fastjem.eval.ood import (
    DATASET_SETS,
    OOD_SETS,
    SCORE_TITLES,
    SCORES,
    SYNTHETIC_SETS,
    OODSetError,
    OODSetMissing,
    ood_scores,
    ood_set,
    unknown_set_message,
)
from fastjem.graphs import default_generator

TASKS = ("accuracy", "calibration", "ood", "samples", "robustness", "fid")
INCEPTION_WEIGHTS_URL = ("https://github.com/toshas/torch-fidelity/releases/download/v0.2.0/"
                         "weights-inception-2015-12-05-6726825d.pth")
# Epsilons on the [0, 1] pixel scale; L-inf ones are the usual k/255.
DEFAULT_LINF_EPS = (0.0, 2 / 255, 4 / 255, 8 / 255, 16 / 255, 32 / 255)
DEFAULT_L2_EPS = (0.0, 0.1, 0.25, 0.5, 1.0, 2.0)


class FIDUnavailableError(FastJEMError):
    """FID was asked for without a feature extractor that can run here."""


def _own_rng(task):
    """A task run with torch's generators forked (the CPU's, and the current GPU's where CUDA is in use): its seeded
    draws (``_Run`` seeds them with ``seed``) leave the caller's generators as they were."""

    @functools.wraps(task)
    def run(*args, **kwargs):
        cuda = torch.cuda.is_available() and torch.cuda.is_initialized()
        with torch.random.fork_rng(devices=[torch.cuda.current_device()] if cuda else []):
            return task(*args, **kwargs)

    return run


class _Run:
    """What every task shares: the loaded model, the output folder, options, timing and the report file."""

    def __init__(self, task: str, checkpoint, out_dir=None, batch_size: int = 500, device: str = "auto",
                 data_dir: str | os.PathLike = "", download: bool = False, progress: bool = True, seed: int = 0,
                 test_noise: float | None = None, n_test: int = 0):
        if batch_size <= 0:
            raise ConfigError(f"--batch-size must be > 0, got {batch_size}")
        if test_noise is not None and not 0 <= test_noise < math.inf:
            raise ConfigError(f"--test-noise must be a finite number >= 0, got {test_noise}")
        self.task = task
        self.em = load_model(checkpoint, device)
        if data_dir and task != "ood" and self.em.config.dataset == "digits":
            # said, as training refuses it: a mistyped or wrong folder was taken without a word (ood reads its OOD
            # datasets from it)
            warnings.warn(f"--data-dir {data_dir} is not read: {self.em.path} was trained on digits, scikit-learn's "
                          "built-in set, which reads no files", FastJEMWarning, stacklevel=2)
        self.out_dir = Path(out_dir) if out_dir else self.em.output_dir("eval")
        make_folder(self.out_dir)
        self.batch_size = batch_size
        self.data_dir = data_dir
        self.download = download
        self.progress = progress
        self.seed = seed
        self.test_noise = self.em.config.test_noise if test_noise is None else test_noise
        self.n_test = n_test
        self.test_total: int | None = None  # the size of the test set, once a task has read it
        self.start = time.perf_counter()
        self.files: list[str] = []
        self.not_written: list[str] = []  # figures a failed write lost
        # the generators the task draws from (the CPU's and its device's; forked by _own_rng), not every GPU's
        torch.default_generator.manual_seed(seed)
        default_generator(self.em.device).manual_seed(seed)

    def test_set(self) -> tuple[torch.Tensor, torch.Tensor]:
        x, y = self.em.test_set(self.data_dir, self.download, self.n_test, self.test_noise, self.seed, self.progress)
        self.test_total = len(self.em.arrays(self.data_dir, self.download, self.progress).test_y)
        return x, y

    def figure(self, name: str, draw) -> None:
        """``draw(path)`` writes the figure ``name``. One that cannot be written (a full disk) costs a warning and
        that figure, never the numbers the task computed: the report is written and lists it as not written."""
        p = self.out_dir / name
        try:
            draw(p)
        except OSError as err:
            self.not_written.append(str(p))
            warnings.warn(f"{p} not written ({err.strerror or err}); the report is written without it",
                          FastJEMWarning, stacklevel=2)
            return
        self.files.append(str(p))

    def finish(self, settings: dict, results: dict) -> dict:
        em = self.em
        data_dir = self.data_dir or em.config.data_dir
        # what reproduces the report besides the task's own options: the test images it read and how
        # an --n-test of at least the test set's size keeps all of it: the report says so, not that it drew a subset
        subset = 0 < self.n_test < (self.test_total or math.inf)
        common = {"split": "test", "n_test": self.n_test if subset else "all",
                  "test_subset": "fixed random subset (seed 0)" if subset else "whole test set",
                  "data_dir": str(Path(data_dir).expanduser().resolve()) if data_dir else None,
                  "seed": self.seed, "batch_size": self.batch_size}
        report = {
            "task": self.task, "checkpoint": str(em.path.resolve()), "model": em.label, "iteration": em.iteration,
            "dataset": em.info.name, "device": _device_name(em.device), "seconds": time.perf_counter() - self.start,
            "date": datetime.now(timezone.utc).isoformat(timespec="seconds"), "fastjem": _version(),
            "settings": {**common, **settings}, "results": results,
            "files": self.files + [str(self.out_dir / f"{self.task}.json")],
            **({"not_written": self.not_written} if self.not_written else {}),
        }
        atomic_write_text(strict_json(report, indent=2), self.out_dir / f"{self.task}.json")
        return report


def _version() -> str:
    from fastjem import __version__

    return __version__


def _device_name(device: torch.device) -> str:
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    from fastjem.engine import cpu_model

    return f"cpu ({cpu_model()}, {os.cpu_count()} cores, {torch.get_num_threads()} threads)"


def _model_name(em: EvalModel) -> str:
    """'JEM (jem)' for runs/jem/checkpoint.pt; 'JEM (jem/best)' for runs/jem/best.pt, or any other file by name."""
    path = em.path.resolve()
    where = path.parent.name if path.name == "checkpoint.pt" else f"{path.parent.name}/{path.stem}".lstrip("/")
    return f"{em.label} ({where})"


# ----------------------------------------------------------------------------------------------- accuracy
@_own_rng
def accuracy(checkpoint, n_steps: int = 0, step_size: float | None = None, noise: float | None = None,
             **common) -> dict:
    """Test accuracy and NLL of p(y|x); with ``n_steps`` > 0 also after n SGLD steps on E(x) seeded at each input
    (step size and noise default to the checkpoint's sampler settings)."""
    if n_steps < 0:
        raise ConfigError(f"--n-steps must be >= 0, got {n_steps}")
    run = _Run("accuracy", checkpoint, **common)
    em = run.em
    x, y = run.test_set()
    a, s = em.energy_params()
    step_size = a if step_size is None else step_size
    noise = s if noise is None else noise
    results = {"n": len(y)}
    steps = [0] + ([n_steps] if n_steps > 0 else [])
    for k in steps:
        logits = refined_logits(em.model, x, k, step_size, noise, run.batch_size, run.progress, f"accuracy ({k} steps)")
        key = "plain" if k == 0 else f"refined_{k}"
        results[key] = {"n_steps": k, "acc": (logits.argmax(1) == y).float().mean().item(),
                        "nll": F.cross_entropy(logits, y).item()}
    results["acc"], results["nll"] = results["plain"]["acc"], results["plain"]["nll"]
    settings = {"n_steps": n_steps, "step_size": step_size, "noise": noise, "test_noise": run.test_noise}
    return run.finish(settings, results)


# -------------------------------------------------------------------------------------------- calibration
def _other_test_set(other: EvalModel, em: EvalModel) -> tuple[str, str] | None:
    """What ``other`` was trained on and ``em`` was not, where one test set cannot serve both: another dataset, or
    (two image folders alike) other classes or another image shape, whose test labels or pixels ``other`` never
    learnt (its logits would index classes it does not have, or rate images of a size it never saw)."""
    if other.info.name != em.info.name:
        return other.info.name, em.info.name
    if other.num_classes != em.num_classes or class_names_differ(em.info.classes, other.info.classes):
        return f"the classes {shown_classes(other.info.classes)}", shown_classes(em.info.classes)
    if other.sample_shape != em.sample_shape:
        return (f"{'x'.join(map(str, other.sample_shape))} images",
                f"{'x'.join(map(str, em.sample_shape))} (--image-size of its run)")
    return None


def check_compare(compare) -> None:
    """``compare`` (--compare) checked before any model is loaded: a mistyped path was found once the evaluated
    model had loaded (under ``all``, after the accuracy task had run), and said as "checkpoint ... does not exist",
    without the option's name."""
    if compare is not None and not isinstance(compare, EvalModel) and not Path(compare).exists():
        raise ConfigError(f"--compare {compare} does not exist: give the folder or checkpoint file of the run to "
                          "compare with (e.g. the classifier-only baseline's)")


@_own_rng
def calibration(checkpoint, n_bins: int = 20, compare=None, **common) -> dict:
    """Expected calibration error over ``n_bins`` equal-width confidence bins and a reliability diagram
    (reliability.png); ``compare`` (another checkpoint) is drawn on the same figure."""
    if not 1 <= n_bins <= 1000:
        raise ConfigError(f"--bins must be between 1 and 1000, got {n_bins} (15 to 20 bins is usual)")
    check_compare(compare)
    run = _Run("calibration", checkpoint, **common)
    models = [run.em]
    if compare is not None:
        other = load_model(compare, run.em.device)
        differ = _other_test_set(other, run.em)
        if differ:
            raise ConfigError(f"--compare {other.path} was trained on {differ[0]}, not {differ[1]}: "
                              "calibration is compared on one test set")
        models.append(other)
    x, y = run.test_set()
    entries, named = [], []
    names = [_model_name(m) for m in models]
    for em, name in zip(models, names, strict=True):
        logits = predict_logits(em.model, x, run.batch_size, run.progress, f"calibration {name}")
        probs = torch.softmax(logits, 1)
        conf, pred = probs.max(1)
        r = expected_calibration_error(conf, pred == y, n_bins)
        entries.append({"name": name, "checkpoint": str(em.path.resolve()), "model": em.label,
                        "acc": (pred == y).float().mean().item(), "mean_confidence": conf.mean().item(),
                        "nll": F.cross_entropy(logits, y).item(), **r.to_dict()})
        named.append((name, r))
    run.figure("reliability.png", lambda p: plots.reliability_diagram(named, p))
    results = {"n": len(y), "ece": entries[0]["ece"], "models": entries}
    return run.finish({"n_bins": n_bins, "binning": "equal-width", "test_noise": run.test_noise}, results)


# --------------------------------------------------------------------------------------------------- ood
# the synthetic sets drawn as they are, without --test-noise (the authors' evaluation has neither)
NOISELESS_SETS = ("uniform", "constant")


def _ood_labels(sets, in_name: str) -> list[str]:
    """The name each OOD set's results go by: a folder's own name, or the path given where that name is another
    set's too (two folders called test/; a folder called uniform beside the built-in set) or the in-distribution
    set's; a set named twice is refused (one result would replace the other)."""
    own = [(Path(n).name or str(Path(n).resolve())) if Path(n).is_dir() else str(n) for n in sets]
    labels = [str(n) if Path(n).is_dir() and (own.count(o) > 1 or o == in_name) else o for n, o in zip(sets, own)]
    twice = sorted({label for label in labels if labels.count(label) > 1})
    if twice:
        raise ConfigError(f"OOD set(s) {', '.join(twice)} given twice: each set is scored once; list it once (a "
                          "folder that shares a built-in set's name: give its path, e.g. ./uniform)")
    return labels


@_own_rng
def ood(checkpoint, sets=SYNTHETIC_SETS, n_ood: int = 1000, ood_data_dir: str | os.PathLike | None = None,
        skip_missing: bool = False, **common) -> dict:
    """AUROC of the three OOD scores (log p(x), max p(y|x), -||d log p(x)/dx||) of in-distribution test data
    (positive) against each OOD set, and one histogram PNG per score. With ``skip_missing`` an OOD dataset that
    is not available is recorded as skipped instead of raising. The test noise (--test-noise) goes on the OOD
    images as on the test images, but for the synthetic uniform and constant sets."""
    if not sets:
        raise ConfigError("--ood needs at least one OOD set")
    if "" in sets:
        # Path("") is the current folder: its images would be scored as an OOD set
        raise ConfigError("an OOD set named '' (an unset variable?) names no set: give a set's name or a folder's "
                          "path ('.' for the current folder)")
    run = _Run("ood", checkpoint, **common)
    em = run.em
    x_in, _ = run.test_set()
    ood_dir = run.data_dir if ood_data_dir is None else ood_data_dir
    in_scores = ood_scores(em.model, x_in, run.batch_size, run.progress, f"scores {em.info.name}")
    out_scores: dict = {}
    skipped = {}
    for k, (name, label) in enumerate(zip(sets, _ood_labels(sets, em.info.name), strict=True)):
        try:
            x = ood_set(name, em, n_ood, ood_dir, run.download, run.seed, in_dist=x_in, progress=run.progress)
        except OODSetMissing as err:
            if not skip_missing:
                raise
            # the error's other lines say how to get the set: the summary's one line points at them
            skipped[name] = f"{str(err).splitlines()[0].rstrip('.')}; --ood {name} alone says how to get it"
            continue
        if run.test_noise > 0 and name not in NOISELESS_SETS:
            # scored as the test images are: the authors' evaluation adds its noise to every dataset it scores, and
            # to its interpolations of (noised) test images once more after mixing
            gen = torch.Generator().manual_seed(run.seed + 1 + k)
            x = x.cpu() + run.test_noise * torch.randn(x.shape, generator=gen)
        out_scores[label] = ood_scores(em.model, x.to(em.device), run.batch_size, run.progress, f"scores {label}")
    scores = {em.info.name: in_scores, **out_scores}
    table = {}
    for label, s in out_scores.items():
        try:
            table[label] = {k: auroc(in_scores[k], s[k]) for k in SCORES}
        except ValueError as err:
            raise ConfigError(f"OOD scores of {label} or of the test set are NaN ({err}): the network's outputs "
                              "are not finite") from err
        table[label]["n"] = len(s["logpx"])
    for k in SCORES:
        if table:
            per_set = {n: table[n][k] for n in table}
            run.figure(f"ood_{k}.png", lambda p, k=k, per_set=per_set: plots.score_histograms(
                scores, em.info.name, k, SCORE_TITLES[k], per_set, p))
    summary = {label: {k: {"mean": v.mean().item(), "std": v.std().item() if v.numel() > 1 else math.nan}
                       for k, v in s.items()}
               for label, s in scores.items()}
    results = {"auroc": table, "in_distribution": em.info.name, "n_in": len(x_in), "score_stats": summary,
               "skipped": skipped, "positive": "in-distribution"}
    settings = {"sets": list(sets), "n_ood": n_ood, "scores": {k: SCORE_TITLES[k] for k in SCORES},
                "test_noise": run.test_noise,
                "test_noise_on": f"the test images and every OOD set but {' and '.join(NOISELESS_SETS)}",
                "ood_data_dir": str(Path(ood_dir).expanduser().resolve()) if ood_dir else None}
    return run.finish(settings, results)


# ----------------------------------------------------------------------------------------------- samples
def _chains(em: EvalModel, x0: torch.Tensor, n_steps: int, y: torch.Tensor | None, batch_size: int,
            progress: bool, desc: str) -> torch.Tensor:
    a, s = em.energy_params()
    return run_chains(em.model, x0, n_steps, a, s, y, batch_size, progress, desc)


@_own_rng
def samples(checkpoint, n_steps: int = 100, n_samples: int = 100, per_class: int = 10, init: str = "auto",
            **common) -> dict:
    """Sample grids: the replay buffer (samples_buffer.png), fresh chains from U(-1, 1) for ``n_steps``
    (samples_fresh.png), class-conditional SGLD on E(x, y) (samples_conditional.png, a row per class) and the
    buffer sorted by predicted class keeping the most confident (samples_buffer_by_class.png).

    ``init`` seeds the conditional chains: 'buffer', 'noise', 'informative' (the class Gaussians of the training
    images), or 'auto' (the buffer when the checkpoint has one, else the run's own --buffer-init).
    """
    if n_steps < 0 or n_samples <= 0 or per_class <= 0:
        raise ConfigError("--n-steps must be >= 0 and --n-samples, --per-class > 0, got "
                          f"--n-steps {n_steps}, --n-samples {n_samples}, --per-class {per_class}")
    if init not in INITS:
        raise ConfigError(f"--init must be one of {', '.join(INITS)}, got {init!r}")
    run = _Run("samples", checkpoint, **common)
    em = run.em
    k = em.num_classes
    shape = em.sample_shape
    dev = em.device
    results: dict = {}
    start = resolve_init(em, init)

    def describe(x: torch.Tensor, target: torch.Tensor | None = None) -> dict:
        logits = predict_logits(em.model, x, run.batch_size)
        probs = torch.softmax(logits, 1)
        d = {"n": len(x), "mean_logpx": torch.logsumexp(logits, 1).mean().item(),
             "mean_max_prob": probs.max(1).values.mean().item(),
             "predicted_class_histogram": torch.bincount(probs.argmax(1), minlength=k).tolist()}
        if target is not None:
            d["fraction_classified_as_target"] = (probs.argmax(1) == target).float().mean().item()
            d["mean_p_target"] = probs.gather(1, target[:, None]).mean().item()
        return d

    x_test, _ = run.test_set()
    results["test_data"] = describe(x_test)
    if em.buffer is not None:
        buf = em.buffer
        run.figure("samples_buffer.png", lambda p: plots.image_grid(em.buffer_rows(n_samples), p))
        results["buffer"] = describe(buf)
        # The most confident buffer samples of each predicted class: one row per class.
        probs = torch.softmax(predict_logits(em.model, buf, run.batch_size, run.progress, "classify buffer"), 1)
        conf, pred = probs.max(1)
        rows, kept = [], []
        for c in range(k):
            members = torch.nonzero(pred == c).squeeze(1)
            top = members[conf[members].argsort(descending=True)[:per_class]]
            kept.append(len(top))
            row = buf[top]
            if len(row) < per_class:
                # Classes with too few samples are padded with blank (white) tiles.
                row = torch.cat([row, torch.ones(per_class - len(row), *shape, device=dev)])
            rows.append(row)
        run.figure("samples_buffer_by_class.png", lambda p: plots.image_grid(torch.cat(rows), p, nrow=per_class))
        results["buffer_by_class"] = {"kept_per_class": kept,
                                      "mean_confidence_kept": [conf[pred == c].sort(descending=True).values[
                                          :per_class].mean().item() if kept[c] else None for c in range(k)]}
    x0 = torch.rand((n_samples, *shape), device=dev) * 2 - 1
    fresh = _chains(em, x0, n_steps, None, run.batch_size, run.progress, "fresh chains")
    run.figure("samples_fresh.png", lambda p: plots.image_grid(fresh, p))
    results["fresh"] = {"n_steps": n_steps, **describe(fresh)}
    # Class-conditional: per_class chains per class, class c in row c.
    y = torch.arange(k, device=dev).repeat_interleave(per_class)
    x0 = chain_starts(em, start, len(y), y, run.data_dir, run.download)
    cond = _chains(em, x0, n_steps, y, run.batch_size, run.progress, "conditional chains")
    run.figure("samples_conditional.png", lambda p: plots.image_grid(cond, p, nrow=per_class))
    results["conditional"] = {"n_steps": n_steps, "init": start, **describe(cond, y)}
    a, s = em.energy_params()
    settings = {"n_steps": n_steps, "n_samples": n_samples, "per_class": per_class, "step_size": a, "noise": s,
                "init": init, "has_buffer": em.buffer is not None}
    return run.finish(settings, results)


# -------------------------------------------------------------------------------------------- robustness
def check_robustness_options(norms=NORMS, linf_eps=DEFAULT_LINF_EPS, l2_eps=DEFAULT_L2_EPS, refine_steps=(0, 1, 10),
                             pgd_steps: int = 10, n_attack: int = 500) -> None:
    """Refuse robustness's options that cannot be run (``all`` checks them before its first task, not after)."""
    for norm in norms:
        if norm not in NORMS:
            raise ConfigError(f"unknown norm {norm!r}; choose from {', '.join(NORMS)}")
    # each value refused, by its option: which of a dozen numbers was wrong is what the user needs to know
    bad = [f"--linf-eps {e * 255:.4g}/255" for e in linf_eps if not 0 <= e < math.inf]  # as the option gives it
    bad += [f"--l2-eps {e:g}" for e in l2_eps if not 0 <= e < math.inf]
    bad += [f"--refine-steps {n}" for n in refine_steps if n < 0]
    bad += [f"--pgd-steps {pgd_steps}"] if pgd_steps < 1 else []
    if bad:
        raise ConfigError("epsilons must be finite numbers >= 0, refinement steps >= 0 and --pgd-steps >= 1; got "
                          + ", ".join(bad))
    if n_attack < 0:
        # (a negative count attacked every test image, as 0 does, without a word)
        raise ConfigError(f"--n-attack must be >= 0 (the test images attacked; 0 for all of them), got {n_attack}")


@_own_rng
def robustness(checkpoint, norms=NORMS, linf_eps=DEFAULT_LINF_EPS, l2_eps=DEFAULT_L2_EPS, refine_steps=(0, 1, 10),
               pgd_steps: int = 10, n_attack: int = 500, **common) -> dict:
    """Accuracy under PGD (L-inf and L2) of the refine-then-classify pipeline f(SGLD_n(x)) for each n in
    ``refine_steps``; gradients go through the refinement. Epsilons are on the [0, 1] pixel scale (the images
    live in [-1, 1], where they are doubled). Writes robustness.json and robustness.png."""
    check_robustness_options(norms, linf_eps, l2_eps, refine_steps, pgd_steps, n_attack)
    run = _Run("robustness", checkpoint, **common)
    em = run.em
    x, y = run.test_set()
    if 0 < n_attack < len(y):
        keep = fixed_subset(len(y), n_attack).to(x.device)
        x, y = x[keep], y[keep]
    a, s = em.energy_params()
    moves = refinement_moves(em, x, refine_steps, a, s, run.batch_size)
    far = [n for n, m in moves.items() if m["mean_abs_change"] > FAR_MOVE]
    caution = None if not far else (
        f"the refinement ({', '.join(far)} steps) moves clean test images by more than {FAR_MOVE} per pixel on "
        "average (the [-1, 1] input): the chain leaves the image range, an epsilon-ball no longer matters, and "
        "accuracy after it is not robustness (a network not trained as an energy model does this)")
    eps_of = {"linf": list(linf_eps), "l2": list(l2_eps)}
    curves: dict = {}
    table: dict = {}
    gen = torch.Generator().manual_seed(run.seed)
    for norm in norms:
        curves[norm], table[norm] = {}, {}
        for n in refine_steps:
            pipeline = RefineThenClassify(em.model, n, a, s)
            label = f"{n} SGLD steps" if n else "no refinement"
            if str(n) in far:
                label += f" (inputs moved {moves[str(n)]['mean_abs_change']:.2g}/px: not robustness)"
            pts = []
            for eps in eps_of[norm]:
                correct = 0
                for sl in batches(len(x), run.batch_size, f"PGD {norm} eps={eps:.4g} refine={n}", run.progress):
                    # The [0, 1] pixel scale is half the [-1, 1] one.
                    x_adv = pgd_attack(pipeline, x[sl], y[sl], 2 * eps, norm, pgd_steps, generator=gen)
                    with torch.no_grad():
                        correct += (pipeline(x_adv).argmax(1) == y[sl]).sum().item()
                pts.append((eps, correct / len(y)))
            curves[norm][label] = pts
            table[norm][str(n)] = [{"eps": e, **({"eps_255": e * 255} if norm == "linf" else {}), "acc": acc}
                                   for e, acc in pts]
    title = f"{_model_name(em)}: PGD-{pgd_steps} through SGLD refinement, {len(y)} test images"
    run.figure("robustness.png", lambda p: plots.robustness_curves(curves, p, title))
    settings = {"norms": list(norms), "linf_eps": list(linf_eps), "l2_eps": list(l2_eps),
                "refine_steps": list(refine_steps), "pgd_steps": pgd_steps, "pgd_step_size": "2.5 eps / steps",
                "random_start": True, "eps_scale": "[0, 1] pixels (x2 in the model's [-1, 1] input)",
                "sgld_step_size": a, "sgld_noise": s, "n_attack": len(y)}
    return run.finish(settings, {"accuracy": table, "refinement_change": moves, "caution": caution})


# mean |change| per pixel (of the [-1, 1] input) past which a refinement has left the image range: a JEM's chains
# move test images by about 0.1, a classifier-only network's by several units
FAR_MOVE = 0.5


def refinement_moves(em: EvalModel, x: torch.Tensor, refine_steps, step_size: float, noise: float,
                     batch_size: int) -> dict:
    """{n: mean and max |SGLD_n(x) - x| per pixel} for each n > 0 of ``refine_steps``, on the clean images."""
    moves = {}
    for n in refine_steps:
        if n > 0 and str(n) not in moves:
            change = torch.cat([(sgld_refine(em.model, x[sl], n, step_size, noise) - x[sl]).abs().flatten()
                                for sl in batches(len(x), batch_size)])
            moves[str(n)] = {"mean_abs_change": change.mean().item(), "max_abs_change": change.max().item()}
    return moves


def _eps_text(norm: str, eps: float) -> str:
    """An epsilon as the options take it: L-inf in 1/255 units (8/255), L2 on the [0, 1] pixel scale."""
    return f"{eps * 255:.3g}/255" if norm == "linf" else f"{eps:.3g}"


# --------------------------------------------------------------------------------------------------- fid
def load_feature_model(spec: str, em: EvalModel):
    """A feature extractor from ``spec``: 'classifier' (this checkpoint's own penultimate features), a file saved by
    torch.export.save or torch.jit.save, or 'module.path:name' naming an nn.Module class, an nn.Module, or a
    function images -> [B, D]."""
    import importlib

    if spec == "classifier":
        if not hasattr(em.model, "features"):
            raise FIDUnavailableError("this network has no .features(); pass another --features-model")
        return em.model.features
    if Path(spec).is_file():
        if _is_exported_program(spec):
            return ExportedFeatures(spec, em.device)
        try:
            return torch.jit.load(spec, map_location=em.device).eval()
        except Exception as err:
            raise FIDUnavailableError(f"--features-model {spec} is neither a torch.export program nor a "
                                      f"TorchScript file ({err}); save one with torch.export.save("
                                      "torch.export.export(model, (images,)), PATH), or use module:name") from err
    if ":" in spec:
        module_name, attr = spec.split(":", 1)
        try:
            obj = getattr(importlib.import_module(module_name), attr)
        except (ImportError, AttributeError) as err:
            raise FIDUnavailableError(f"cannot import --features-model {spec}: {err} (the module must be importable: "
                                      "install it, or run with PYTHONPATH=FOLDER for a module file in FOLDER)") from err
        if isinstance(obj, type) and issubclass(obj, torch.nn.Module):
            obj = obj()
        if isinstance(obj, torch.nn.Module):
            return obj.to(em.device).eval()
        if callable(obj):
            return obj
    if ":" not in spec:  # meant as a file (neither 'classifier' nor module:name): say it is not there
        raise FIDUnavailableError(f"--features-model {spec}: no such file (expected 'classifier', a torch.export or "
                                  "TorchScript file, or 'module.path:name')")
    raise FIDUnavailableError(f"--features-model {spec!r}: expected 'classifier', a torch.export or TorchScript "
                              "file, or 'module.path:name'")


def _is_exported_program(path: str) -> bool:
    """Whether ``path`` is an archive written by torch.export.save (a zip holding an 'archive_format' record;
    TorchScript files are zips too, without one)."""
    import zipfile

    if not zipfile.is_zipfile(path):
        return False
    with zipfile.ZipFile(path) as archive:
        return any(name.rsplit("/", 1)[-1] == "archive_format" for name in archive.namelist())


class ExportedFeatures:
    """A feature extractor saved by torch.export.save, called in batches its batch dimension accepts.

    An exported program keeps the batch size it was traced at unless the export marked dimension 0 dynamic, and a
    dynamic one may still have bounds: images are fed in chunks of at most the upper bound, and a chunk under the
    lower bound is padded by repeating its last image, the padding's features dropped. The program is moved to
    ``device`` (torch.export.passes.move_to_device_pass).
    """

    def __init__(self, path: str, device: torch.device):
        from torch.export.passes import move_to_device_pass

        try:
            program = torch.export.load(path)
        except Exception as err:  # noqa: BLE001 - a damaged archive fails anywhere in deserialising
            raise FIDUnavailableError(f"--features-model {path} could not be loaded by torch.export.load "
                                      f"({error_line(err)}); "
                                      "export it again with this torch") from err
        inputs = [node for node in program.graph.nodes
                  if node.op == "placeholder" and node.name in program.graph_signature.user_inputs]
        if len(inputs) != 1 or len(inputs[0].meta["val"].shape) != 4:
            raise FIDUnavailableError(f"--features-model {path}: the exported program must take one input, images "
                                      "[B, C, H, W]; it takes " + ", ".join(
                                          str(list(node.meta["val"].shape)) for node in inputs))
        batch = inputs[0].meta["val"].shape[0]
        if isinstance(batch, torch.SymInt):
            bounds = program.range_constraints[batch.node.expr]
            self.min_batch = max(int(bounds.lower), 1)
            upper = float(bounds.upper)  # torch's int_oo says is_finite; as a float it is inf
            self.max_batch = int(upper) if math.isfinite(upper) else None
        else:
            self.min_batch = self.max_batch = int(batch)
        self.module = move_to_device_pass(program, device).module()

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        step = self.max_batch or len(x)
        features = []
        for start in range(0, len(x), step):
            chunk = x[start:start + step]
            n = len(chunk)
            if n < self.min_batch:
                chunk = torch.cat([chunk, chunk[-1:].expand(self.min_batch - n, *chunk.shape[1:])])
            features.append(torch.as_tensor(self.module(chunk))[:n])
        return torch.cat(features)


@torch.no_grad()
def extract_features(feature_fn, x: torch.Tensor, batch_size: int = 500, progress: bool = False,
                     desc: str = "features") -> torch.Tensor:
    """Features [N, D] of images [N, C, H, W] in [-1, 1] (fp64 on the CPU)."""
    return torch.cat([torch.as_tensor(feature_fn(x[s])).detach().flatten(1).double().cpu()
                      for s in batches(len(x), batch_size, desc, progress)])


def _inception_metrics(weights: str, device: torch.device):
    """torchmetrics' FID and Inception-score metrics with the Inception network read from ``weights``, on
    ``device``: built before any sampling, so a missing package or a wrong file fails first."""
    try:
        from torchmetrics.image.fid import FrechetInceptionDistance, NoTrainInceptionV3
        from torchmetrics.image.inception import InceptionScore
    except ImportError as err:
        raise FIDUnavailableError(
            "FID with Inception weights uses torchmetrics, which is not installed: pip install 'torchmetrics[image]' "
            "(or compute FID from any feature extractor with --features-model, which needs nothing extra)") from err
    try:
        fid_metric = FrechetInceptionDistance(feature=2048, normalize=True, feature_extractor_weights_path=weights)
        # InceptionScore takes no weights path: its network, built with them, is handed over instead
        logits = NoTrainInceptionV3(name="inception-v3-compat", features_list=["logits_unbiased"],
                                    feature_extractor_weights_path=weights)
        is_metric = InceptionScore(feature=logits, normalize=True)
    except TypeError as err:
        raise FIDUnavailableError(f"this torchmetrics cannot load local Inception weights ({err}); upgrade it: "
                                  "pip install -U 'torchmetrics[image]'") from err
    except Exception as err:  # noqa: BLE001 - a damaged or wrong file fails in torch.load or load_state_dict
        raise FIDUnavailableError(f"--inception-weights {weights} could not be read as the Inception v3 weights "
                                  f"({error_line(err)}); download "
                                  f"them again from {INCEPTION_WEIGHTS_URL}") from err
    return fid_metric.to(device), is_metric.to(device)


def _torchmetrics_inception(weights: str, real: torch.Tensor, fake: torch.Tensor, batch_size: int,
                            metrics=None) -> dict:
    """FID and Inception score of ``fake`` against ``real`` (images in [-1, 1]); ``metrics``: from
    ``_inception_metrics``, else built here."""
    fid_metric, is_metric = metrics or _inception_metrics(weights, real.device)
    to01 = lambda t: ((t.clamp(-1, 1) + 1) / 2).expand(-1, 3, -1, -1)
    for s in batches(len(real), batch_size):
        fid_metric.update(to01(real[s]), real=True)
    for s in batches(len(fake), batch_size):
        fid_metric.update(to01(fake[s]), real=False)
        is_metric.update(to01(fake[s]))
    is_mean, is_std = is_metric.compute()
    return {"fid": fid_metric.compute().item(), "inception_score": is_mean.item(), "inception_score_std": is_std.item(),
            "features": "Inception v3 (torchmetrics, local weights)"}


@_own_rng
def fid(checkpoint, inception_weights: str | None = None, features_model: str | None = None, source: str = "auto",
        n_fid: int = 10000, n_steps: int = 100, **common) -> dict:
    """FID between test images and the model's samples (the replay buffer, or fresh chains of ``n_steps``).

    Features: Inception v3 through torchmetrics with local weights (``inception_weights``; also reports the
    Inception score), or any extractor (``features_model``; FID computed here, no torchmetrics needed).
    """
    if inception_weights is None and features_model is None:
        raise FIDUnavailableError(
            "FID needs a feature extractor and none was given.\n"
            f"  - standard FID / Inception score: download the Inception weights ({INCEPTION_WEIGHTS_URL}) and pass "
            "--inception-weights PATH (needs: pip install 'torchmetrics[image]');\n"
            "  - any feature extractor: --features-model 'module.path:name', or a file saved by torch.export.save or "
            "torch.jit.save (images in [-1, 1] "
            "-> [B, D]); --features-model classifier uses this checkpoint's own network (not comparable across "
            "models)")
    if inception_weights is not None and not Path(inception_weights).is_file():
        raise FIDUnavailableError(f"--inception-weights {inception_weights} does not exist; download it from "
                                  f"{INCEPTION_WEIGHTS_URL}")
    if source not in ("auto", "buffer", "fresh"):
        raise ConfigError(f"--source must be auto, buffer or fresh, got {source!r}")
    if n_fid < 2 or n_steps < 0:
        raise ConfigError(f"--n-fid must be >= 2 and --n-steps >= 0, got {n_fid} and {n_steps}")
    run = _Run("fid", checkpoint, **common)
    em = run.em
    if source == "buffer" and em.buffer is None:
        raise ConfigError(f"{em.path} has no replay buffer ({em.label}): use --source fresh")
    use_buffer = em.buffer is not None and source != "fresh"
    # the feature extractors first: a wrong file or a missing package fails before minutes of sampling
    fn = load_feature_model(features_model, em) if features_model is not None else None
    metrics = _inception_metrics(inception_weights, em.device) if inception_weights is not None else None
    real, _ = run.test_set()
    if len(real) < 2:
        raise ConfigError(f"FID compares feature covariances: it needs 2 test images or more, --n-test gives "
                          f"{len(real)}")
    if use_buffer:
        fake = em.buffer_rows(n_fid)
    else:
        x0 = torch.rand((min(n_fid, len(real)), *em.sample_shape), device=em.device) * 2 - 1
        fake = _chains(em, x0, n_steps, None, run.batch_size, run.progress, "fresh chains")
    results = {"n_real": len(real), "n_fake": len(fake),
               "samples": "buffer" if use_buffer else f"fresh {n_steps} steps"}
    if features_model is not None:
        fr = extract_features(fn, real, run.batch_size, run.progress, "features real")
        ff = extract_features(fn, fake, run.batch_size, run.progress, "features samples")
        results["fid"] = frechet_distance(*feature_statistics(fr), *feature_statistics(ff))
        results["features"] = features_model
        results["feature_dim"] = fr.shape[1]
        # The classifier's own class probabilities give an Inception-score analogue (not comparable across models).
        probs = torch.softmax(predict_logits(em.model, fake, run.batch_size), 1)
        splits = min(10, len(probs))  # the usual 10, fewer for fewer samples (one a split at least)
        results["classifier_score"], results["classifier_score_std"] = inception_score_from_probs(probs, splits)
        results["classifier_score_splits"] = splits
    if inception_weights is not None:
        inc = _torchmetrics_inception(inception_weights, real, fake, run.batch_size, metrics)
        if features_model is not None:
            results["inception"] = inc
        else:
            results.update(inc)
    settings = {"inception_weights": inception_weights, "features_model": features_model, "source": source,
                "n_fid": n_fid, "n_steps": n_steps}
    return run.finish(settings, results)


# --------------------------------------------------------------------------------------------------- all
def run_all(checkpoint, ood_sets=None, compare=None, inception_weights=None, features_model=None,
            task_options: dict | None = None, log=print, **common) -> dict:
    """Every task the available data allows; returns {task: report or {'skipped': reason}} and writes all.json."""
    check_compare(compare)
    em = load_model(checkpoint, common.pop("device", "auto"))
    opts = task_options or {}
    reports: dict = {}
    every = SYNTHETIC_SETS + tuple(d for d in DATASET_SETS if d != em.config.dataset)
    # "all" among the sets: every built-in set, and the folders named beside it
    sets = tuple(ood_sets) if ood_sets else every
    if "all" in sets:
        sets = every + tuple(s for s in sets if s != "all" and s not in every)
    check_robustness_options(**opts.get("robustness", {}))  # before the other tasks run, not after
    unknown = [s for s in sets if s not in OOD_SETS and not Path(s).is_dir()]
    if unknown:  # before the other tasks run, not after
        raise OODSetError(unknown_set_message(unknown[0]))
    jobs = {
        "accuracy": lambda: accuracy(em, **opts.get("accuracy", {}), **common),
        "calibration": lambda: calibration(em, compare=compare, **opts.get("calibration", {}), **common),
        "ood": lambda: ood(em, sets=sets, skip_missing=True, **opts.get("ood", {}), **common),
        "samples": lambda: samples(em, **opts.get("samples", {}), **common),
        "robustness": lambda: robustness(em, **opts.get("robustness", {}), **common),
        "fid": lambda: fid(em, inception_weights=inception_weights, features_model=features_model,
                           **opts.get("fid", {}), **common),
    }
    for task, job in jobs.items():
        if task == "fid" and inception_weights is None and features_model is None:
            reports[task] = {"skipped": "no --inception-weights or --features-model given"}
            continue
        try:
            reports[task] = job()
        except FIDUnavailableError as err:
            reports[task] = {"skipped": str(err).splitlines()[0]}
        log(f"  {task}: done" if "skipped" not in reports[task] else f"  {task}: skipped")
    out_dir = Path(common.get("out_dir") or em.output_dir("eval"))
    atomic_write_text(strict_json({"checkpoint": str(em.path.resolve()), "summary": summary_rows(reports)}, indent=2),
                      out_dir / "all.json")
    atomic_write_text(markdown_report(em, reports, out_dir), out_dir / "report.md")
    return reports


def markdown_report(em, reports: dict, out_dir: Path) -> str:
    """report.md: the summary table, then each task's figures, linked relative to ``out_dir`` (renders where
    the folder is viewed: an editor, a Git host)."""
    def cell(text) -> str:
        return str(text).replace("|", "\\|")

    lines = [f"# {em.label} evaluation of `{em.path.name}`", "",
             f"{em.model_name} on {em.info.name}, iteration {em.iteration} (`{em.path}`).", "",
             "| task | metric | value |", "|---|---|---|"]
    lines += [f"| {cell(t)} | {cell(m)} | {cell(v)} |" for t, m, v in summary_rows(reports)]
    for task, rep in reports.items():
        figures = [Path(f) for f in rep.get("files", []) if f.endswith(".png")]
        if figures:
            lines += ["", f"## {task}", ""]
            lines += [f"![{f.stem}]({Path(os.path.relpath(f, out_dir)).as_posix()})" for f in figures]
    return "\n".join(lines) + "\n"


def summary_rows(reports: dict) -> list[tuple[str, str, str]]:
    """(task, metric, value) rows of the headline numbers of each report."""
    rows = []
    for task, rep in reports.items():
        if "skipped" in rep:
            rows.append((task, "skipped", rep["skipped"]))
            continue
        r = rep["results"]
        if task == "accuracy":
            for key, v in r.items():
                if isinstance(v, dict):
                    rows.append((task, f"{key} acc / NLL", f"{v['acc']:.4f} / {v['nll']:.4f}"))
        elif task == "calibration":
            for m in r["models"]:
                rows.append((task, f"ECE ({m['n_bins']} bins) {m['name']}", f"{100 * m['ece']:.2f}%"))
        elif task == "ood":
            for name, v in r["auroc"].items():
                rows.append((task, f"AUROC vs {name} (logpx / maxprob / grad)",
                             f"{v['logpx']:.3f} / {v['maxprob']:.3f} / {v['grad_norm']:.3f}"))
            for name, why in r["skipped"].items():
                rows.append((task, f"{name}", "skipped: " + why.removeprefix(f"OOD set {name}: ")))
        elif task == "samples":
            c = r["conditional"]
            rows.append((task, "conditional samples classified as their class",
                         f"{c['fraction_classified_as_target']:.3f}"))
            rows.append((task, "grids", ", ".join(Path(f).name for f in rep["files"] if f.endswith(".png"))))
        elif task == "robustness":
            if r.get("caution"):
                rows.append((task, "caution", r["caution"]))
            for norm, by_n in r["accuracy"].items():
                for n, pts in by_n.items():
                    # L-inf epsilons as they were given: k/255
                    rows.append((task, f"{norm} refine={n}: acc at eps", " ".join(
                        f"{_eps_text(norm, p['eps'])}:{p['acc']:.2f}" for p in pts)))
        elif task == "fid":
            # FID depends on how many samples it compares (fewer raise it): say how many, and of what
            src = str(r.get("samples", ""))
            drawn = "from the replay buffer" if src == "buffer" else f"from fresh {src.split()[-2]}-step SGLD chains"
            counts = f" ({r['n_fake']} samples {drawn} against {r['n_real']} test images)" if "n_fake" in r else ""
            rows.append((task, f"FID ({r.get('features')})", f"{r['fid']:.3f}{counts}"))
            if "inception_score" in r:
                rows.append((task, "Inception score", f"{r['inception_score']:.3f}"))
    return rows


def format_table(rows: list[tuple[str, str, str]]) -> str:
    w0 = max([len(r[0]) for r in rows] + [4])
    w1 = max([len(r[1]) for r in rows] + [6])
    lines = [f"{'task':{w0}s}  {'metric':{w1}s}  value", f"{'-' * w0}  {'-' * w1}  -----"]
    lines += [f"{t:{w0}s}  {m:{w1}s}  {v}" for t, m, v in rows]
    return "\n".join(lines)


__all__ = ["TASKS", "accuracy", "calibration", "fid", "format_table", "load_feature_model", "ood", "robustness",
           "run_all", "samples", "summary_rows"]
