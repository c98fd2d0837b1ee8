"""Figures of the evaluation: reliability diagrams, score histograms, robustness curves, image grids.

matplotlib runs with the Agg backend (no display needed); every function writes one PNG and returns its path.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

import torch
import torch.nn.functional as F

from fastjem.checkpoint import atomic_file
from fastjem.eval.metrics import CalibrationResult

COLOURS = ("tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple", "tab:brown")


class _Figures:
    """pyplot's ``subplots`` and ``get_cmap`` without pyplot: each figure a ``matplotlib.figure.Figure`` of its own,
    written by ``savefig`` whatever the backend. pyplot would register it in the caller's figure list, and choosing a
    backend for it (``matplotlib.use("Agg")``) switched a notebook's inline backend off for the rest of its session."""

    @staticmethod
    def subplots(nrows: int = 1, ncols: int = 1, *, sharex=False, sharey=False, squeeze: bool = True,
                 gridspec_kw: dict | None = None, **fig_kw):
        from matplotlib.figure import Figure

        fig = Figure(**fig_kw)
        return fig, fig.subplots(nrows, ncols, sharex=sharex, sharey=sharey, squeeze=squeeze, gridspec_kw=gridspec_kw)

    @staticmethod
    def get_cmap(name: str):
        import matplotlib

        return matplotlib.colormaps[name]


def _figures() -> _Figures:
    return _Figures()


def reliability_diagram(results: list[tuple[str, CalibrationResult]], path: str | os.PathLike) -> Path:
    """Accuracy per confidence bin against the diagonal (top) and the count per bin (bottom), one colour per
    model; the ECE of each model in the title."""
    plt = _figures()
    fig, (ax, axc) = plt.subplots(2, 1, figsize=(5.5, 6.5), sharex=True, gridspec_kw={"height_ratios": [3, 1]})
    n = len(results)
    ax.plot([0, 1], [0, 1], "k--", lw=1, label="perfect calibration")
    for k, (name, r) in enumerate(results):
        width = 1.0 / r.n_bins
        left = [e + width * k / n for e in r.edges[:-1]]
        acc = [a if a == a else 0.0 for a in r.accuracy]
        colour = COLOURS[k % len(COLOURS)]
        ax.bar(left, acc, width=width / n, align="edge", color=colour, alpha=0.75, edgecolor="k", lw=0.3,
               label=f"{name} (ECE {100 * r.ece:.2f}%)")
        axc.bar(left, r.count, width=width / n, align="edge", color=colour,
                alpha=0.75, edgecolor="k", lw=0.3)
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_ylabel("accuracy")
    title = ", ".join(f"{name} ECE = {100 * r.ece:.2f}%" for name, r in results)
    ax.set_title(f"{title}\n({results[0][1].n_bins} equal-width confidence bins)", fontsize=9)
    axc.set_yscale("log")
    axc.set_xlabel("confidence max p(y|x)")
    axc.set_ylabel("count")
    fig.tight_layout()
    # below the panels, not in a corner of the top one: an under-confident model's bars reach up to the left, an
    # over-confident one's to the right
    fig.legend(*ax.get_legend_handles_labels(), loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=2, fontsize=8)
    return _save(fig, path, tight=True)


def score_histograms(scores: dict[str, dict[str, torch.Tensor]], in_name: str, score_name: str, title: str,
                     aurocs: dict[str, float], path: str | os.PathLike) -> Path:
    """Histogram of one OOD score for the in-distribution set and each OOD set; AUROCs in the legend. Infinite
    scores (an overflowing gradient norm), which the AUROC ranks, are counted in the legend, not drawn: the bins
    span the finite ones."""
    plt = _figures()
    fig, ax = plt.subplots(figsize=(6, 4))
    values = torch.cat([s[score_name] for s in scores.values()]).double()
    finite = values[torch.isfinite(values)]
    lo, hi = (finite.min().item(), finite.max().item()) if len(finite) else (0.0, 0.0)
    if hi <= lo:  # every score the same: a unit-wide range around it (a 1e-6 one had bins of width 0 in fp32)
        lo, hi = lo - 0.5, hi + 0.5
    bins = torch.linspace(lo, hi, 51, dtype=torch.float64).tolist()
    for k, (name, s) in enumerate(scores.items()):
        label = f"{name} (in-distribution)" if name == in_name else f"{name} (AUROC {aurocs[name]:.3f})"
        v = s[score_name].double()
        kept = v[torch.isfinite(v)]
        if len(kept) < len(v):
            label += f", {len(v) - len(kept)} of {len(v)} infinite, not drawn"
        # an empty histogram still takes its legend entry and colour
        ax.hist(kept.numpy(), bins=bins, alpha=0.5, density=len(kept) > 0, label=label,
                color=COLOURS[k % len(COLOURS)])
    ax.set_xlabel(title)
    ax.set_ylabel("density")
    ax.set_title(f"OOD score {title}: higher = more in-distribution", fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return _save(fig, path)


def robustness_curves(curves: dict[str, dict[str, list]], path: str | os.PathLike, title: str) -> Path:
    """Accuracy against epsilon, one panel per norm, one line per refinement setting.

    curves: {norm: {label: [(eps, acc), ...]}}.
    """
    plt = _figures()
    fig, axes = plt.subplots(1, len(curves), figsize=(5 * len(curves), 4), squeeze=False)
    for ax, (norm, lines) in zip(axes[0], curves.items(), strict=True):
        for k, (label, pts) in enumerate(lines.items()):
            # L-inf in the 1/255 units --linf-eps takes
            eps = [p[0] * (255 if norm == "linf" else 1) for p in pts]
            acc = [p[1] for p in pts]
            ax.plot(eps, acc, "o-", color=COLOURS[k % len(COLOURS)], label=label)
        ax.set_xlabel("L-inf epsilon (k/255, [0, 1] pixel scale)" if norm == "linf"
                      else "L2 epsilon ([0, 1] pixel scale)")
        ax.set_ylabel("accuracy under PGD")
        ax.set_ylim(0, 1)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return _save(fig, path)


def grid_tensor(x: torch.Tensor, nrow: int | None = None) -> torch.Tensor:
    """Images in [-1, 1] as one [C, H, W] grid in [0, 1], ``nrow`` images per row (default: a square), white
    between them; small images are enlarged with nearest-neighbour upsampling so 8x8 digits can be read."""
    from torchvision.utils import make_grid

    x = x.detach().float().cpu().clamp(-1, 1)
    if x.shape[-1] < 32:
        x = F.interpolate(x, scale_factor=32 // x.shape[-1], mode="nearest")
    nrow = nrow or int(math.ceil(math.sqrt(len(x))))
    return make_grid(x, nrow=nrow, normalize=True, value_range=(-1, 1), pad_value=1.0)


def save_grid_image(grid: torch.Tensor, path: str | os.PathLike) -> Path:
    """Write a ``grid_tensor`` grid as the image ``path`` names, whole or not at all (a failed write, a full disk,
    leaves the picture that was there)."""
    from torchvision.utils import save_image

    path = Path(path)
    with atomic_file(path, "wb") as f:
        save_image(grid, f, format=pil_format(path))
    return path


def image_grid(x: torch.Tensor, path: str | os.PathLike, nrow: int | None = None) -> Path:
    """Save images in [-1, 1] as a grid (``grid_tensor``) with ``nrow`` images per row."""
    return save_grid_image(grid_tensor(x, nrow), path)


def pil_format(path: Path) -> str:
    """The Pillow format that ``path``'s suffix names (PNG without one), as a file object needs it said."""
    from PIL import Image

    if not path.suffix:
        return "PNG"
    try:
        return Image.registered_extensions()[path.suffix.lower()]
    except KeyError:
        raise ValueError(f"unknown image file extension {path.suffix!r} ({path}): use .png") from None


# written into every figure's metadata (PNG Software, PDF/SVG/PostScript Creator, JPEG/TIFF/WebP EXIF Software):
# `fastjem plot --out` replaces a file that holds it (its own figure, drawn again) and no other without --force
FIGURE_MARK = "fastjem figure"


def _marked(fmt: str) -> dict:
    """savefig's arguments that write FIGURE_MARK into a figure of format ``fmt`` (none where it has no metadata)."""
    if fmt == "png":
        return {"metadata": {"Software": FIGURE_MARK}}
    if fmt in ("pdf", "svg", "eps", "ps"):
        return {"metadata": {"Creator": FIGURE_MARK}}
    if fmt in ("jpg", "jpeg", "tif", "tiff", "webp"):
        from PIL import Image

        exif = Image.Exif()
        exif[0x0131] = FIGURE_MARK  # Software
        return {"pil_kwargs": {"exif": exif.tobytes()}}
    return {}


def drawn_by_fastjem(path: str | os.PathLike) -> bool:
    """Whether the file at ``path`` is a figure fastjem wrote (it holds FIGURE_MARK); False for anything else, a
    file of another program, a sample grid, one too large to be a figure (not read)."""
    path = Path(path)
    try:
        if path.stat().st_size > 64 << 20:
            return False
        return FIGURE_MARK.encode() in path.read_bytes()
    except OSError:
        return False


def _save(fig, path, tight: bool = False) -> Path:
    """``tight``: the image grows to hold what lies outside the figure (a legend beside the panels)."""
    path = Path(path)
    fmt = path.suffix.lstrip(".").lower() or "png"
    # written whole or not at all: a failed write (a full disk) leaves the picture that was there
    with atomic_file(path, "wb") as f:
        fig.savefig(f, format=fmt, dpi=110, bbox_inches="tight" if tight else None, **_marked(fmt))
    return path
