"""Metrics computed from scores, predictions and features: AUROC, calibration error, FID.

Everything here works on plain tensors (CPU or GPU) and imports nothing beyond torch, so it can be
reused on any model's outputs.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


def _as_tensor(values) -> torch.Tensor:
    """``values`` as a tensor in their own precision: a tensor or an array as it is, a list of Python numbers in
    fp64 (what they are; ``torch.as_tensor`` would make them fp32, merging 1e8 + 1 with 1e8)."""
    if isinstance(values, torch.Tensor):
        return values.detach()
    if hasattr(values, "dtype"):  # a NumPy array or scalar
        return torch.as_tensor(values)
    return torch.as_tensor(values, dtype=torch.float64)


def _ranks_with_ties(values: torch.Tensor) -> torch.Tensor:
    """1-based ranks of ``values`` [N] (fp64), tied values sharing their average rank."""
    order = torch.argsort(values, stable=True)
    sorted_vals = values[order]
    n = len(values)
    # Start index of each run of equal values, and the run each sorted element belongs to.
    new_run = torch.ones(n, dtype=torch.bool, device=values.device)
    new_run[1:] = sorted_vals[1:] != sorted_vals[:-1]
    run_id = torch.cumsum(new_run.long(), 0) - 1
    starts = torch.nonzero(new_run).squeeze(1)
    ends = torch.cat([starts[1:], torch.tensor([n], device=values.device)])
    # Positions start..end-1 (0-based) have ranks start+1..end; their average is (start + 1 + end) / 2.
    avg_rank = (starts + 1 + ends).double() / 2.0
    ranks = torch.empty(n, dtype=torch.float64, device=values.device)
    ranks[order] = avg_rank[run_id]
    return ranks


def auroc(positive: torch.Tensor, negative: torch.Tensor) -> float:
    """Area under the ROC curve for "a higher score means positive".

    Computed exactly as the Mann-Whitney statistic P(s_pos > s_neg) + 0.5 P(s_pos = s_neg), from the
    ranks of the pooled scores (ties get their average rank), so it equals the trapezoidal ROC area.
    """
    pos = _as_tensor(positive).double().flatten().cpu()
    neg = _as_tensor(negative).double().flatten().cpu()
    if len(pos) == 0 or len(neg) == 0:
        raise ValueError("AUROC needs at least one positive and one negative score")
    if torch.isnan(pos).any() or torch.isnan(neg).any():
        raise ValueError("AUROC scores must not be NaN")  # +-inf rank fine
    ranks = _ranks_with_ties(torch.cat([pos, neg]))
    n_pos, n_neg = len(pos), len(neg)
    u = ranks[:n_pos].sum().item() - n_pos * (n_pos + 1) / 2.0
    return u / (n_pos * n_neg)


@dataclass
class CalibrationResult:
    """Expected calibration error over ``n_bins`` equal-width confidence bins, and the bins themselves.

    Bin b holds the predictions with confidence in (b/M, (b+1)/M] (the first bin also holds 0).
    ``accuracy`` and ``confidence`` are NaN for empty bins.
    """

    ece: float
    n_bins: int
    edges: list[float]
    count: list[int]
    accuracy: list[float]
    confidence: list[float]
    mce: float  # maximum calibration error over the non-empty bins

    def to_dict(self) -> dict:
        nan_to_none = lambda v: [None if x != x else x for x in v]
        return {"ece": self.ece, "mce": self.mce, "n_bins": self.n_bins, "binning": "equal-width confidence bins",
                "edges": self.edges, "count": self.count, "accuracy": nan_to_none(self.accuracy),
                "confidence": nan_to_none(self.confidence)}


def expected_calibration_error(confidence: torch.Tensor, correct: torch.Tensor, n_bins: int = 20) -> CalibrationResult:
    """ECE = sum_b (n_b / N) |acc_b - conf_b| over equal-width bins of the top-class confidence.

    confidence [N] in [0, 1] (max p(y|x)); correct [N] bool (argmax == label).
    """
    if n_bins < 1:
        raise ValueError("n_bins must be >= 1")
    raw = _as_tensor(confidence).flatten().cpu()
    if not raw.is_floating_point():
        raw = raw.double()
    conf = raw.double()
    hit = _as_tensor(correct).double().flatten().cpu()
    if len(conf) != len(hit) or len(conf) == 0:
        raise ValueError("confidence and correct must be non-empty and of equal length")
    if not (torch.isfinite(conf).all() and (conf >= 0).all() and (conf <= 1).all()):
        raise ValueError("confidences must be finite and in [0, 1]")
    # Bin (b/M, (b+1)/M], conf = 0 in bin 0; comparing against the edges themselves (not ceil(conf * M)) keeps a
    # confidence equal to an edge, such as 0.3 with M = 20, in the bin it closes despite round-off in conf * M.
    # ... in the confidences' own precision: fp32 0.3 is the fp32 edge 0.3, not above the fp64 one.
    inner_edges = torch.tensor([b / n_bins for b in range(1, n_bins)], dtype=torch.float64).to(raw.dtype)
    idx = torch.bucketize(raw, inner_edges, right=False)
    count = torch.bincount(idx, minlength=n_bins).double()
    sum_conf = torch.bincount(idx, weights=conf, minlength=n_bins)
    sum_hit = torch.bincount(idx, weights=hit, minlength=n_bins)
    nonempty = count > 0
    acc_b = torch.where(nonempty, sum_hit / count.clamp_min(1), torch.full_like(count, float("nan")))
    conf_b = torch.where(nonempty, sum_conf / count.clamp_min(1), torch.full_like(count, float("nan")))
    gap = (acc_b - conf_b).abs()
    ece = (count[nonempty] / len(conf) * gap[nonempty]).sum().item()
    mce = gap[nonempty].max().item()
    edges = [b / n_bins for b in range(n_bins + 1)]
    return CalibrationResult(ece, n_bins, edges, count.long().tolist(), acc_b.tolist(), conf_b.tolist(), mce)


def feature_statistics(features: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Mean [D] and unbiased covariance [D, D] of features [N, D], in fp64."""
    f = torch.as_tensor(features).detach().double().flatten(1)
    if len(f) < 2:
        raise ValueError("feature statistics need at least 2 samples")
    mu = f.mean(0)
    centred = f - mu
    return mu, centred.T @ centred / (len(f) - 1)


def _sqrtm_psd(a: torch.Tensor) -> torch.Tensor:
    """Symmetric square root of a positive semi-definite matrix via eigendecomposition (negative eigenvalues
    from round-off are clipped to 0)."""
    a = (a + a.T) / 2
    w, v = torch.linalg.eigh(a)
    return (v * w.clamp_min(0).sqrt()) @ v.T


def frechet_distance(mu1: torch.Tensor, cov1: torch.Tensor, mu2: torch.Tensor, cov2: torch.Tensor) -> float:
    """Frechet distance between N(mu1, cov1) and N(mu2, cov2):
    ||mu1 - mu2||^2 + tr(cov1) + tr(cov2) - 2 tr((cov1 cov2)^(1/2)).

    The trace term uses tr((C1 C2)^(1/2)) = tr((S C2 S)^(1/2)) with S = C1^(1/2); S C2 S is symmetric PSD, so
    one eigendecomposition gives it without a general (non-symmetric) matrix square root.
    """
    mu1, mu2, cov1, cov2 = (t.double() for t in (mu1, mu2, cov1, cov2))
    s1 = _sqrtm_psd(cov1)
    middle = s1 @ cov2 @ s1
    eig = torch.linalg.eigvalsh((middle + middle.T) / 2).clamp_min(0)
    trace_sqrt = eig.sqrt().sum()
    diff = mu1 - mu2
    value = diff.dot(diff) + torch.trace(cov1) + torch.trace(cov2) - 2 * trace_sqrt
    return max(0.0, value.item())


def fid_from_features(real: torch.Tensor, fake: torch.Tensor) -> float:
    """FID between two sets of features [N, D] and [M, D] (any feature extractor)."""
    return frechet_distance(*feature_statistics(real), *feature_statistics(fake))


def inception_score_from_probs(probs: torch.Tensor, splits: int = 10) -> tuple[float, float]:
    """Inception score exp(E_x KL(p(y|x) || p(y))) from class probabilities [N, K]: (mean, std) over ``splits``
    consecutive parts of N // splits or N // splits + 1 samples (rows k N // splits to (k + 1) N // splits, as the
    original code cuts them; exactly ``splits`` of them, 1 <= splits <= N)."""
    p = _as_tensor(probs).double().clamp_min(1e-12)
    n = len(p)
    if not 1 <= splits <= n:
        raise ValueError(f"the inception score needs 1 <= splits <= the number of samples ({n}), got {splits}")
    scores = []
    for k in range(splits):
        chunk = p[k * n // splits:(k + 1) * n // splits]
        marginal = chunk.mean(0, keepdim=True)
        kl = (chunk * (chunk.log() - marginal.log())).sum(1).mean()
        scores.append(kl.exp().item())
    t = torch.tensor(scores, dtype=torch.float64)
    return t.mean().item(), (t.std().item() if len(t) > 1 else 0.0)
