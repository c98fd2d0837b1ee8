"""The README's results section and the iterations/s plot, generated from the JSON files in bench/results/.

    python bench/report.py                 # rewrite README.md between the results markers (each measurement's
                                           # newest run), bench/results/HISTORY.md (every run) and the plot PNG
    python bench/report.py --print         # print the markdown instead of editing README.md
    python bench/report.py --results DIR --plot OUT.png --markdown OUT.md
    python bench/report.py --unpack gpu_suite.json   # a GPU suite's embedded results to bench/results/ first

Only measured rows appear: one per (results file, configuration), with the device and date in each; the README
keeps a row only where no newer run of the same measurement on the same device measured all it measured.
Smoke runs (``smoke-*.json``) are checks of the harness, not measurements, and are left out.
"""

from __future__ import annotations

import argparse
import io
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from interrupted import quiet_while_importing  # noqa: E402

quiet_while_importing(__name__)  # Ctrl-C while torch imports: run_script's line, not a traceback

from env_info import REPO, RESULTS, run_script, saved  # noqa: E402

from fastjem.checkpoint import atomic_write_bytes, atomic_write_text  # noqa: E402

BEGIN, END = "<!-- results:begin -->", "<!-- results:end -->"
ENGINES = ("reference-ieee", "reference-default", "fastjem-matched", "fastjem-sgld-graph-only",
           "fastjem-cast-each-step", "fastjem-one-part", "fastjem-default", "fastjem-parts2", "fastjem-parts4",
           "fastjem-overlap")
ENGINE_LABELS = {"reference-ieee": "reference fp32", "reference-default": "reference default (TF32 convs)",
                 "fastjem-matched": "fastjem fp32", "fastjem-sgld-graph-only": "fastjem default, SGLD graph only",
                 "fastjem-cast-each-step": "fastjem default, SGLD weights cast at each forward",
                 "fastjem-one-part": "fastjem default, SGLD batch as one block (--sgld-parts 1)",
                 "fastjem-default": "fastjem default", "fastjem-parts2": "fastjem default + --sgld-parts 2",
                 "fastjem-parts4": "fastjem default + --sgld-parts 4",
                 "fastjem-overlap": "fastjem default + --overlap-data"}
PLOT_NAME = "steps_per_sec.png"
# images a README shows
PLOT_SUFFIXES = (".png", ".svg", ".jpg", ".jpeg", ".webp")


def _git(rep: dict) -> str:
    """The commit a result was measured at; "+ changes" where the working tree differed from it."""
    git = rep.get("git") or {}
    if not git.get("sha"):
        return "-"  # measured outside a git checkout (the H200 runs)
    return str(git["sha"])[:8] + (" + changes" if git.get("dirty") else "")


def load_results(folder: Path, include_smoke: bool = False, skipped: list[str] | None = None) -> dict:
    """{"steps": [...], "cifar": [...], "kernels": [...]}: the parsed JSON files, oldest first. A file that parses
    but is no result its table can show (a JSON list, a field missing) is left out, and said in ``skipped``."""
    folder = Path(folder)
    skipped = [] if skipped is None else skipped
    out = {"steps": [], "cifar": [], "kernels": [], "quick": [], "precision-quality": [], "buffer-init": [],
           "sgld-study": [], "profile": []}
    if not folder.is_dir():
        return out
    for kind in out:
        for path in sorted(folder.glob(f"{kind}-*.json")) + (
                sorted(folder.glob(f"smoke-{kind}-*.json")) if include_smoke else []):
            try:
                data = json.loads(path.read_text())
            except (OSError, json.JSONDecodeError):
                continue
            if not isinstance(data, dict):
                skipped.append(f"{path.name}: not a {kind} result (a JSON {type(data).__name__}, not an object)")
                continue
            if data.get("smoke") and not include_smoke:
                continue
            data["_file"] = path.name
            try:
                # its rows drawn alone: a field missing was a traceback naming no file, and no README
                TABLES[kind]([data])
            except (KeyError, TypeError, ValueError, AttributeError, IndexError) as err:
                why = f"no {err}" if isinstance(err, KeyError) else f"{type(err).__name__}: {err}"
                skipped.append(f"{path.name}: not a {kind} result this report can show ({why})")
                continue
            out[kind].append(data)
        out[kind].sort(key=lambda d: d.get("date", ""))
    return out


def unreadable_results(folder: Path) -> list[str]:
    """The names of result files ``load_results`` skips because they do not parse (a damaged or truncated file)."""
    bad = []
    for path in sorted(Path(folder).glob("*.json")) if Path(folder).is_dir() else []:
        try:
            json.loads(path.read_text())
        except (OSError, ValueError):
            bad.append(path.name)
    return bad


def _device(rep: dict) -> str:
    """The device's name; a CPU's with the threads torch ran on, which set its speed as much as the CPU does (a
    1-thread run does not replace a 2-thread one)."""
    d = rep.get("device", {})
    if not isinstance(d, dict):
        # the kernel benchmark's: the name alone, a CPU run's threads beside it (a CUDA run records none)
        d = {"name": str(d), "type": "cpu" if rep.get("threads") else "cuda", "threads": rep.get("threads")}
    threads = d.get("threads") if d.get("type") == "cpu" else None
    flags = (set(d.get("bf16_flags") or ()) or _noted_bf16_flags(rep)) if d.get("type") == "cpu" else set()
    isa = " (AMX-BF16)" if "amx_bf16" in flags else " (AVX512-BF16)" if "avx512_bf16" in flags else ""
    cores = d.get("physical_cores") if threads else None
    shared = f" on {cores} core{'s' if cores > 1 else ''}" if cores and cores < threads else ""
    return d.get("name", "?") + isa + (f", {threads} thread{'s' if threads > 1 else ''}{shared}" if threads else "")


def _noted_bf16_flags(rep: dict) -> set:
    """The CPU's bf16 extensions as an engine's resolved notes name them (results written before the device
    recorded its bf16_flags): an Intel Xeon with AMX and one without share a name, not a speed."""
    notes = [note for cfg in rep.get("configs", []) if isinstance(cfg, dict)
             for eng in (cfg.get("engines") or {}).values() if isinstance(eng, dict)
             for note in (eng.get("resolved") or {}).get("notes", []) if isinstance(note, str)]
    return {flag for flag in ("amx_bf16", "avx512_bf16") for note in notes if f"({flag})" in note}


def _num(x, fmt: str = "{:.3g}", scale: float = 1.0) -> str:
    return "—" if x is None else fmt.format(x * scale)


def paired_ratio(engines: dict, engine: str) -> float | None:
    """Median over window pairs of ``engine``'s it/s over the reference's in the window timed next to it."""
    if engine not in engines or "reference-ieee" not in engines:
        return None
    pairs = [f / r for f, r in zip(engines[engine].get("window_it_per_s", []),
                                   engines["reference-ieee"].get("window_it_per_s", []))]
    return statistics.median(pairs) if pairs else None


Row = tuple  # (key, what its run measured under that key: a frozenset, the run's file, the row itself)
ONE = frozenset({"row"})  # a row that measures one thing: its key's newest row supersedes it


def newest(rows: list[Row]) -> list[Row]:
    """The rows no later run supersedes, in their order (oldest first): a row is superseded by a row of a later
    run with the same key that measured everything the row's run measured under it (for most tables: one row per
    key, its newest; where a run's rows compare with each other, as variants against its default, the run's rows
    share a key and go together)."""
    kept = []
    for i, (key, measures, run, row) in enumerate(rows):
        if not any(k == key and r != run and later >= measures for k, later, r, _ in rows[i + 1:]):
            kept.append((key, measures, run, row))
    return kept


def table(header: list[str], rows: list[Row], latest: bool) -> list[str]:
    return header + [line for *_, line in (newest(rows) if latest else rows)]


def steps_table(reports: list[dict], latest: bool = False) -> list[str]:
    """One row per (results file, configuration); ``latest``: only rows no newer run of the same configuration on
    the same device supersedes, and only the engine columns those rows fill."""
    rows = []
    for rep in reports:
        for c in rep.get("configs", []):
            if c.get("engines"):
                key = (_device(rep), c["name"], c["batch_size"], c["sgld_steps"])
                rows.append((key, frozenset(c["engines"]), rep.get("_file"), (rep, c)))
    if latest:
        rows = newest(rows)
    engines = [e for e in ENGINES if any(e in measured for _, measured, _, _ in rows)] if latest else list(ENGINES)
    engine_cols = " | ".join(ENGINE_LABELS[e] + " it/s" for e in engines)
    lines = ["| date | device | config | batch | SGLD steps | " + engine_cols
             + " | fastjem/ref matched | fastjem/ref default | same, median of window pairs (matched / default)"
             + " | MFU default | reference process | torch | git |",
             "|" + "---|" * (5 + len(engines) + 7)]
    for *_, (rep, c) in rows:
        found = c["engines"]
        its = [f"{found[e]['it_per_s_median']:.3g} ({found[e]['precision']})" if e in found else "—"
               for e in engines]
        ratios = c.get("ratios", {})
        default = found.get("fastjem-default", {})
        # a CPU's: the share of a dense matmul's FLOP/s at the engine's precision, measured in the run
        mfu = (_num(default.get("mfu"), "{:.1%}") if default.get("of_matmul") is None
               else f"{default['of_matmul']:.0%} of matmul")
        lines.append(
            f"| {rep['date'][:10]} | {_device(rep)} | {c['name'].upper()} | {c['batch_size']} | "
            f"{c['sgld_steps']} | "
            + " | ".join(its)
            + f" | {_num(ratios.get('matched'), 'x{:.2f}')} | {_num(ratios.get('default'), 'x{:.2f}')} | "
            f"{_num(paired_ratio(found, 'fastjem-matched'), 'x{:.2f}')} / "
            f"{_num(paired_ratio(found, 'fastjem-default'), 'x{:.2f}')} | "
            f"{mfu} | {'own' if rep.get('args', {}).get('reference_process') else 'shared'} | "
            f"{rep['versions']['torch']} | {_git(rep)} |")
    return lines


def cifar_table(reports: list[dict], latest: bool = False) -> list[str]:
    header = ["| date | device | model | batch | training minutes | iterations | it/s (steady) | test accuracy | "
              "samples |", "|---|---|---|---|---|---|---|---|---|"]
    rows = []
    for r in reports:
        if r.get("status") != "ok":
            continue
        rows.append(((_device(r), r["model"], r["batch_size"]), ONE, r.get("_file"),
                     f"| {r['date'][:10]} | {_device(r)} | {r['model']} | {r['batch_size']} | "
                     f"{r['train_seconds'] / 60:.1f} | {r['iterations']} | {_num(r['it_per_s_steady'], '{:.2f}')} | "
                     f"{r['test_acc']:.2%} | {r.get('samples_png') or '—'} |"))
    return table(header, rows, latest)


def kernels_table(reports: list[dict], latest: bool = False) -> list[str]:
    """Called from Python (launch cost included) and, where measured, replayed from a CUDA graph."""
    rows = []
    header = ["| date | device | op | fused µs | eager µs | speed-up | GB/s | of peak | graph: fused µs | "
             "eager µs | speed-up | GB/s | of peak | copy of its bytes µs |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in reports:
        for k in r.get("results", []):
            frac = k.get("fraction_of_peak_bandwidth")
            graph = "| — | — | — | — | — |"
            if "fused_graph_ms" in k:
                graph = (f"| {k['fused_graph_ms'] * 1e3:.2f} | {k['eager_graph_ms'] * 1e3:.2f} | "
                         f"x{k['graph_speedup_vs_eager']:.2f} | {k['fused_graph_GBps']:.3g} | "
                         f"{_num(k.get('graph_fraction_of_peak_bandwidth'), '{:.0%}')} |")
            rows.append(((_device(r), k["op"]), ONE, r.get("_file"),
                         f"| {r['date'][:10]} | {_device(r)} | `{k['op']}` | {k['fused_ms'] * 1e3:.1f} | "
                         f"{k['eager_ms'] * 1e3:.1f} | x{k['speedup_vs_eager']:.2f} | {k['fused_GBps']:.3g} | "
                         f"{_num(frac, '{:.0%}')} " + graph
                         # the floor: a plain copy of the op's bytes (graph-replayed on CUDA), where measured
                         + f" {_num(k.get('copy_graph_ms', k.get('copy_ms')), '{:.2f}', scale=1e3)} |"))
    return table(header, rows, latest)


def quick_table(reports: list[dict], latest: bool = False) -> list[str]:
    header = ["| date | device | preset | model | iterations | wall s | it/s (median) | test acc | engine |",
              "|---|---|---|---|---|---|---|---|---|"]
    rows = []
    for r in reports:
        c = r.get("config", {})
        name = "classifier only" if r.get("classifier_only") else "JEM"
        rows.append(((_device(r), r.get("preset"), name), ONE, r.get("_file"),
                     f"| {r['date'][:10]} | {_device(r)} | {r.get('preset')} ({name}) | {c.get('arch')} "
                     f"width {c.get('width')} | {r.get('iterations')} | {_num(r.get('wall_seconds'), '{:.0f}')} | "
                     f"{_num(r.get('it_per_s_median'), '{:.2f}')} | {_num(r.get('test_acc'), '{:.4f}')} | "
                     f"{r.get('engine', '')} |"))
    return table(header, rows, latest)


def precision_table(reports: list[dict], latest: bool = False) -> list[str]:
    header = ["| date | device | preset | seeds | fp32 test acc (mean) | bf16 test acc (mean) | bf16 - fp32 (points) |",
              "|---|---|---|---|---|---|---|"]
    rows = []
    for r in reports:
        mean = r.get("mean_test_acc", {})
        seeds = sorted({run["seed"] for run in r.get("runs", [])})
        rows.append(((_device(r), r.get("preset")), ONE, r.get("_file"),
                     f"| {r['date'][:10]} | {_device(r)} | {r.get('preset')} | {', '.join(map(str, seeds))} | "
                     f"{_num(mean.get('fp32'), '{:.4f}')} | {_num(mean.get('bf16'), '{:.4f}')} | "
                     f"{_num(r.get('mean_diff_points'), '{:+.2f}')} |"))
    return table(header, rows, latest)


def buffer_init_table(reports: list[dict], latest: bool = False) -> list[str]:
    header = ["| date | device | preset | iterations | seeds | init:SGLD steps | test acc (mean ± std) | wall s (mean) "
             "| recoveries |", "|---|---|---|---|---|---|---|---|---|"]
    rows = []
    for r in reports:
        seeds = ", ".join(map(str, sorted({run["seed"] for run in r.get("runs", [])})))
        iters = r.get("iters") or "the preset's"
        # the variants of one run compare with each other (same seeds): a run's rows go together
        variants = frozenset(r.get("means", {}))
        for variant, m in r.get("means", {}).items():
            rows.append(((_device(r), r.get("preset"), iters), variants, r.get("_file"),
                         f"| {r['date'][:10]} | {_device(r)} | {r.get('preset')} | {iters} | {seeds} | "
                         f"{variant} | {_num(m.get('test_acc'), '{:.4f}')} ± {_num(m.get('test_acc_std'), '{:.4f}')} "
                         f"| {_num(m.get('wall_seconds'), '{:.0f}')} | {m.get('recoveries')} |"))
    return table(header, rows, latest)


def sgld_study_table(reports: list[dict], latest: bool = False) -> list[str]:
    header = ["| date | device | model | batch | precision | variant | SGLD step ms | TFLOP/s | MFU | bf16 matmul "
             "TFLOP/s (same device) | samples vs first variant (max abs) |",
              "|---|---|---|---|---|---|---|---|---|---|---|"]
    rows = []
    for r in reports:
        a = r.get("args", {})
        # a variant compares with its own run's first variant: a run's rows go together
        key = (_device(r), a.get("depth"), a.get("width"), a.get("batch_size"), a.get("precision"))
        variants = frozenset(v["name"] for v in r.get("variants", []))
        for v in r.get("variants", []):
            model = f"WRN-{a.get('depth')}-{a.get('width')}"
            if "error" in v:
                rows.append((key, variants, r.get("_file"), f"| {r['date'][:10]} | {_device(r)} | {model} | "
                             f"{a.get('batch_size')} | {a.get('precision')} | {v['name']} | failed: {v['error'][:60]} "
                             "| — | — | — | — |"))
                continue
            rows.append((key, variants, r.get("_file"), f"| {r['date'][:10]} | {_device(r)} | {model} | "
                         f"{a.get('batch_size')} | {a.get('precision')} | {v['name']} | {v['sgld_step_ms']:.3f} | "
                         f"{_num(v.get('tflops_per_s'))} | {_num(v.get('mfu'), '{:.1%}')} | "
                         f"{_num(r.get('matmul_bf16_tflops'))} | "
                         f"{_num(v.get('samples_max_abs_diff_vs_first'), '{:.1e}')} |"))
    return table(header, rows, latest)


PROFILE_CATEGORIES = ("convolution forward", "conv input-gradient", "activation and elementwise",
                      "fused fastjem kernels", "copies and layout", "matmul (linear)", "other")


def profile_table(reports: list[dict], latest: bool = False) -> list[str]:
    """Shares of an SGLD step's profiled time by category (shares only: the basis is in the file)."""
    header = ["| date | device | model | batch | engine | time basis | " + " | ".join(PROFILE_CATEGORIES) + " |",
              "|---|---|---|---|---|---|" + "---|" * len(PROFILE_CATEGORIES)]
    rows = []
    for r in reports:
        for name, e in r.get("engines", {}).items():
            cats = e.get("categories", {})
            shares = " | ".join(_num(cats.get(c, {}).get("share", 0.0), "{:.1%}") for c in PROFILE_CATEGORIES)
            rows.append(((_device(r), r.get("model"), r.get("batch_size"), name), ONE, r.get("_file"),
                         f"| {r['date'][:10]} | {_device(r)} | {r.get('model')} | {r.get('batch_size')} | {name} | "
                         f"{e.get('time_basis', '?')} | {shares} |"))
    return table(header, rows, latest)


# each kind of result file and the table that shows it
TABLES = {"steps": steps_table, "cifar": cifar_table, "kernels": kernels_table, "quick": quick_table,
          "precision-quality": precision_table, "buffer-init": buffer_init_table, "sgld-study": sgld_study_table,
          "profile": profile_table}
HISTORY_NAME = "HISTORY.md"


def render(results: dict, plot_rel: str | None = "bench/results/" + PLOT_NAME, latest: bool = False,
           history_rel: str | None = None) -> str:
    """The markdown that goes between the README markers (``latest``: each measurement's newest run; a row of an
    older run stays where it measured an engine the newer runs did not) or, without ``latest``, every run."""
    if not any(results.values()):
        return "No benchmark results recorded yet."
    parts = ["_Generated by `python bench/report.py` from `bench/results/*.json`; do not edit by hand._"]
    if latest:
        parts[0] += (" The newest run of each measurement (device, configuration, variant) is shown; an older run "
                     "keeps its row where it measured something the newer ones did not"
                     + (f". Every run, with the superseded ones: [{history_rel}]({history_rel})." if history_rel
                        else "."))
    if results["steps"]:
        parts += ["", "JEM training iterations/s, `python bench/steps_per_sec.py` (median over alternated timed "
                  "windows, warm-up and compilation excluded; precision in brackets; ratios against the fp32 "
                  "reference, as the ratio of the medians and as the median over window pairs of fastjem's it/s "
                  "over the reference's in the window timed next to it (steadier where the machine's speed drifts); "
                  "MFU against the datasheet dense peak for the precision used):", "",
                  *steps_table(results["steps"], latest)]
        if plot_rel:
            parts += ["", f"![iterations per second]({plot_rel})"]
    cifar = cifar_table(results["cifar"], latest)
    if len(cifar) > 2:  # a row: a run that finished (a failed one has none)
        parts += ["", "Timed CIFAR-10 runs (`bench/cifar_run.py`, real data, a fixed number of minutes including "
                  "compilation):", "", *cifar]
    if results.get("quick"):
        parts += ["", "The README's main job (`python bench/quick_run.py`: `fastjem train` with the preset, wall "
                  "time from start to summary, data loading and evaluation included):", "",
                  *quick_table(results["quick"], latest)]
    if results.get("precision-quality"):
        parts += ["", "Does bf16 cost quality? (`python bench/precision_quality.py`: the preset trained by the fp32 "
                  "and the bf16 engine, same seeds):", "", *precision_table(results["precision-quality"], latest)]
    if results.get("buffer-init"):
        parts += ["", "Informative (JEM++) against uniform initialisation (`python bench/buffer_init_quality.py`: "
                  "every variant trained from the same seeds):", "", *buffer_init_table(results["buffer-init"], latest)]
    if results.get("sgld-study"):
        parts += ["", "One SGLD call under engine variants (`python bench/sgld_study.py`: the sampler as training runs "
                  "it, replayed from its CUDA graph on CUDA, one knob changed per variant; MFU against the datasheet "
                  "dense peak):", "", *sgld_study_table(results["sgld-study"], latest)]
    if results.get("profile"):
        parts += ["", "Where an SGLD step's time goes (`python bench/profile_step.py`, torch.profiler by category; "
                  "CUDA: kernel time without the graph; CPU: the operators' own time):", "",
                  *profile_table(results["profile"], latest)]
    if results["kernels"]:
        parts += ["", "Kernel microbenchmarks (`pytest bench/bench_kernels.py`; CUDA: the Triton kernels, do_bench "
                  "median called from Python, and do_bench_cudagraph median replayed from a CUDA graph, L2-warm below "
                  "~50 MB; CPU: the reference backend the library runs there, perf_counter median, at reduced "
                  "sizes):", "",
                  *kernels_table(results["kernels"], latest)]
    return "\n".join(parts)


def update_readme(readme: Path, markdown: str) -> None:
    text = Path(readme).read_text()
    if BEGIN not in text or END not in text or text.index(BEGIN) > text.index(END):
        raise SystemExit(f"{readme} has no {BEGIN} ... {END} section")
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    # a write cut short (Ctrl-C, a full disk) leaves the README as it was, not truncated
    atomic_write_text(f"{head}{BEGIN}\n{markdown.strip()}\n{END}{tail}", readme)
    saved(readme)


def plot(results: dict, path: Path) -> Path:
    """The figure of ``figure`` written to ``path`` (PNG)."""
    import matplotlib.pyplot as plt

    fig = figure(results)
    path = Path(path)
    png = io.BytesIO()
    fig.savefig(png, dpi=120, format=path.suffix[1:].lower() or "png")
    plt.close(fig)
    atomic_write_bytes(png.getvalue(), path)
    return saved(path)


def figure(results: dict):
    """Grouped bars: iterations/s per configuration and engine, one panel per device (its latest run)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    latest: dict[str, dict] = {}
    for rep in results["steps"]:
        if any(c.get("engines") for c in rep.get("configs", [])):
            latest[_device(rep)] = rep
    panels = list(latest.items()) or [("no results", {"configs": []})]
    fig, axes = plt.subplots(1, len(panels), figsize=(6 * len(panels), 5), squeeze=False)
    colors = {"reference-ieee": "#9e9e9e", "reference-default": "#616161", "fastjem-matched": "#64b5f6",
              "fastjem-sgld-graph-only": "#42a5f5",
              "fastjem-cast-each-step": "#1e88e5", "fastjem-one-part": "#1976d2", "fastjem-default": "#1565c0",
              "fastjem-parts2": "#283593",
              "fastjem-parts4": "#1a237e", "fastjem-overlap": "#0d47a1"}
    for ax, (name, rep) in zip(axes[0], panels, strict=True):
        configs = [c for c in rep.get("configs", []) if c.get("engines")]
        engines = [e for e in ENGINES if any(e in c["engines"] for c in configs)]  # no empty slots
        width = 0.8 / max(1, len(engines))
        values = []
        for j, engine in enumerate(engines):
            xs, ys = [], []
            for i, c in enumerate(configs):
                if engine in c["engines"]:
                    xs.append(i + (j - (len(engines) - 1) / 2) * width)
                    ys.append(c["engines"][engine]["it_per_s_median"])
                    values.append(ys[-1])
            if xs:
                bars = ax.bar(xs, ys, width, label=ENGINE_LABELS[engine], color=colors[engine])
                ax.bar_label(bars, fmt="%.3g", fontsize=7)
        ax.set_xticks(range(len(configs)), [f"{c['name'].upper()}\nB={c['batch_size']}" for c in configs])
        # log scale only when configurations span orders of magnitude; otherwise a linear axis from 0,
        # so bar heights compare honestly
        if values and max(values) / max(min(values), 1e-12) > 20:
            ax.set_yscale("log")
        else:
            ax.set_ylim(0, 1.15 * max(values or [1]))
        ax.set_ylabel("JEM iterations / s")
        ax.set_title(f"{name}\n{rep.get('date', '')[:10]}, torch {rep.get('versions', {}).get('torch', '')}",
                     fontsize=9)
        if configs:
            # below the axes: inside, it covers bars and their labels
            ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2, frameon=False)
    fig.tight_layout()
    return fig


def unpack_suite(suite_json: Path, results: Path) -> list[str]:
    """Write each result embedded in a gpu_suite JSON (with its "_file" name) into ``results``; existing files are
    left alone. Returns the names written."""
    suite = json.loads(Path(suite_json).read_text())
    written = []
    for key in ("steps", "kernels", "kernel_configs", "cifar", "sgld_study", "profile", "cpu_steps", "cpu_sgld_study",
                "cpu_profile"):
        data = suite.get(key)
        if not isinstance(data, dict) or not data.get("_file") or "error" in data:
            continue
        name = Path(data["_file"]).name  # a bare file name: nothing outside the results folder
        target = Path(results) / name
        if target.exists():
            continue
        body = {k: v for k, v in data.items() if k != "_file"}
        # whole or not at all: a file cut short here would never be unpacked again (it exists)
        atomic_write_text(json.dumps(body, indent=2) + "\n", target)
        saved(target)
        written.append(name)
    return written


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--results", default=str(RESULTS), help="folder of JSON results (default bench/results)")
    p.add_argument("--readme", default=str(REPO / "README.md"))
    p.add_argument("--plot", default="", help=f"plot path (default <results>/{PLOT_NAME})")
    p.add_argument("--markdown", default="", help="also write the markdown to this file")
    p.add_argument("--print", action="store_true", help="print the markdown; edit neither the README nor the plot "
                   "(unless --plot names one)")
    p.add_argument("--unpack", metavar="GPU_SUITE_JSON", default="",
                   help="first write the results a gpu_suite JSON embeds (steps, kernels, kernel configs, cifar, "
                        "SGLD study, profile, and the host CPU's bars under CPU_BARS=1) to the results folder as "
                        "their own files, where missing: a lent machine returns at most 8 files, so the suite "
                        "packs them into one")
    args = p.parse_args(argv)
    if args.unpack and not Path(args.unpack).is_file():
        p.error(f"--unpack {args.unpack}: no such file (the gpu_suite.json a GPU run returned)")
    if not Path(args.results).is_dir() and not args.unpack:
        # an empty table would replace the README's measured results
        what = "a file, not a folder" if Path(args.results).exists() else "no such folder"
        p.error(f"--results {args.results}: {what} (the folder of the benchmarks' JSON files)")
    # before any work: a folder or another suffix was a traceback once the tables were drawn (or, with no suffix, a
    # .png added to the file the README's image link did not name)
    if args.plot and Path(args.plot).suffix.lower() not in PLOT_SUFFIXES:
        p.error(f"--plot {args.plot}: name an image file ({', '.join(PLOT_SUFFIXES)}) for the README to show")
    if args.markdown and Path(args.markdown).is_dir():
        p.error(f"--markdown {args.markdown}: a folder; name the markdown file to write")
    if not args.print and not Path(args.readme).is_file():
        p.error(f"--readme {args.readme}: no such file (the README whose results section is rewritten; --print "
                "prints the tables instead)")
    if args.unpack:
        try:
            unpacked = unpack_suite(Path(args.unpack), Path(args.results))
        except (ValueError, AttributeError) as err:
            p.error(f"--unpack {args.unpack}: not a gpu_suite.json ({type(err).__name__}: {err})")
        for name in unpacked:
            print(f"unpacked {name}")
    for name in unreadable_results(Path(args.results)):
        print(f"report: skipped {name}: not a readable JSON result", file=sys.stderr)
    skipped: list[str] = []
    results = load_results(Path(args.results), skipped=skipped)
    for why in skipped:
        print(f"report: skipped {why}", file=sys.stderr)
    if not any(results.values()) and not args.print:
        p.error(f"--results {args.results} holds no results (steps-*.json, cifar-*.json, kernels-*.json, ...): the "
                "README's results section is left as it is")
    plot_path = Path(args.plot) if args.plot else Path(args.results) / PLOT_NAME
    # --print edits nothing: the plot is drawn only where asked for by --plot
    if results["steps"] and (not args.print or args.plot):
        plot(results, plot_path)
    try:
        plot_rel = plot_path.resolve().relative_to(Path(args.readme).resolve().parent).as_posix()
    except ValueError:
        plot_rel = plot_path.name
    history_path = Path(args.results) / HISTORY_NAME
    try:
        history_rel = history_path.resolve().relative_to(Path(args.readme).resolve().parent).as_posix()
    except ValueError:
        history_rel = history_path.name
    markdown = render(results, plot_rel if results["steps"] else None, latest=True, history_rel=history_rel)
    if args.markdown:
        atomic_write_text(markdown + "\n", args.markdown)
        saved(args.markdown)
    if args.print:
        print(markdown)
    else:
        update_readme(Path(args.readme), markdown)
        # every run, the superseded ones included; its plot link is relative to the results folder
        try:
            plot_in_history = plot_path.resolve().relative_to(history_path.resolve().parent).as_posix()
        except ValueError:
            plot_in_history = plot_path.resolve().as_posix()
        history = render(results, plot_in_history if results["steps"] else None)
        atomic_write_text("# Every measured run\n\n" + history.replace(
            "do not edit by hand._", "do not edit by hand. The README shows each measurement's newest run._", 1)
            + "\n", history_path)
        saved(history_path)
        print(f"updated {args.readme} and {history_path}" + (f" and {plot_path}" if results["steps"] else ""))
    return 0


if __name__ == "__main__":
    sys.exit(run_script(main))
