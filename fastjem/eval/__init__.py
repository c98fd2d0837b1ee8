"""Evaluation of a trained JEM: one function per claim of the paper, each writing a JSON report and its PNGs.

Tasks (``fastjem eval CHECKPOINT <task>`` on the command line):
``accuracy``, ``calibration``, ``ood``, ``samples``, ``robustness``, ``fid`` and ``run_all``.
The building blocks work on any classifier and plain tensors: ``auroc``, ``expected_calibration_error``,
``ood_scores``, ``grad_norm_score``, ``sgld_refine``, ``RefineThenClassify``, ``pgd_attack``,
``fid_from_features`` / ``frechet_distance``, and the synthetic OOD sets.
"""

from fastjem.eval.attacks import pgd_attack, project
from fastjem.eval.core import EvalModel, RefineThenClassify, load_model, predict_logits, refined_logits, sgld_refine
from fastjem.eval.metrics import (
    CalibrationResult,
    auroc,
    expected_calibration_error,
    feature_statistics,
    fid_from_features,
    frechet_distance,
    inception_score_from_probs,
)
from fastjem.eval.ood import (
    OOD_SETS,
    SCORES,
    constant_images,
    grad_norm_score,
    interpolate_pairs,
    match_shape,
    ood_scores,
    ood_set,
    uniform_noise,
)
from fastjem.eval.tasks import TASKS, accuracy, calibration, fid, ood, robustness, run_all, samples

__all__ = [
    "OOD_SETS", "SCORES", "TASKS", "CalibrationResult", "EvalModel", "RefineThenClassify", "accuracy", "auroc",
    "calibration", "constant_images", "expected_calibration_error", "feature_statistics", "fid", "fid_from_features",
    "frechet_distance", "grad_norm_score", "inception_score_from_probs", "interpolate_pairs", "load_model",
    "match_shape", "ood", "ood_scores", "ood_set", "pgd_attack", "predict_logits", "project", "refined_logits",
    "robustness", "run_all", "samples", "sgld_refine", "uniform_noise",
]
