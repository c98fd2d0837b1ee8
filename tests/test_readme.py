import re
from pathlib import Path

import torch

from fastjem import kernels

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_library_example_runs(capsys):
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
    assert blocks
    # reference ops: under TRITON_INTERPRET=1 the interpreter would make this example take a minute
    scopes = []
    with kernels.backend("reference"):
        for code in blocks:
            scopes.append({})
            exec(compile(code, "README.md", "exec"), scopes[-1])
    # as written, the examples run without a warning (the Trainer's warned of a warm-up longer than its 20 iterations)
    said = capsys.readouterr()
    assert "warning" not in (said.out + said.err).lower()
    scope = next(s for s in scopes if "samples" in s)
    samples = scope["samples"]
    # the Gaussian example: unit variance, zero mean, within Monte Carlo and step-size error
    assert abs(samples.mean().item()) < 0.1 and abs(samples.var().item() - 1.0) < 0.15
    assert scope["x"].shape == (64, 3, 32, 32)
    # your own network and data: trained, then evaluated on that data's 100 test images
    # checkpointing the parts: the resumed loop's iteration is the uninterrupted one's
    parts = next(s for s in scopes if "resumed" in s)
    torch.manual_seed(0)
    buffer, sampler = parts["parts"]()
    with kernels.backend("reference"):
        whole = [parts["iteration"](buffer, sampler) for _ in range(4)]
    assert torch.equal(whole[3], parts["resumed"]) and not torch.equal(whole[2], parts["resumed"])
    own = next(s for s in scopes if "report" in s)
    assert own["run"]["iteration"] == 20 and own["report"]["results"]["n"] == 100


def test_readme_eval_example_prints_what_its_comments_say(capsys):
    """The eval parts' example is run above, but its comments are the output a reader is promised: AUROC 0.833...
    (the tied pair counted half), two predictions in bin 17 = (0.85, 0.9], and an FID near 16 for means 1 apart in
    16 dimensions. Its printed lines are read against them, so neither the code nor the comments drift."""
    block = next(b for b in re.findall(r"```python\n(.*?)```", README.read_text(), re.S) if "fid_from_features" in b)
    said_auroc = re.search(r"# ([\d.]+)\.\.\.: in-distribution", block).group(1)
    said_fid = int(re.search(r"# ~(\d+): the means differ", block).group(1))
    torch.manual_seed(0)
    exec(compile(block, "README.md", "exec"), {})
    auroc, ece_and_count, fid = capsys.readouterr().out.splitlines()
    assert auroc.startswith(said_auroc) and said_auroc == "0.833"
    assert ece_and_count.split()[1] == "2"  # the two confidences of 0.9
    assert abs(float(fid) - said_fid) < 1.0 and said_fid == 16


def test_readme_gives_the_two_commands():
    text = README.read_text()
    assert 'python -m pip install . && fastjem train' in text
    assert 'python -m pip install -e ".[test]" && TRITON_INTERPRET=1 python -m pytest' in text
    ci = (README.parent / ".ci" / "run").read_text()
    assert 'python -m pip install -e ".[test]"' in ci and "TRITON_INTERPRET=1" in ci and "python -m pytest" in ci


def _mutants():
    import importlib.util
    import sys

    spec = importlib.util.spec_from_file_location("fastjem_mutants", README.parent / "tests" / "mutants.py")
    mutants = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mutants  # dataclasses look their module up there
    spec.loader.exec_module(mutants)
    return mutants


def test_readme_counts_the_mutants_there_are():
    """README says how many mutants tests/mutants.py breaks the library with: the number of the list itself."""
    mutants = _mutants()
    said = re.search(r"\((\d+) mutants:", README.read_text())
    assert said and int(said.group(1)) == len(mutants.MUTANTS)


def test_every_mutant_applies_to_the_code_as_it_is():
    """Each mutant's text is found once in the file it breaks (a change of the code can leave one stale, which only a
    full run of mutants.py would report), and each name is its own."""
    mutants = _mutants()
    made_up = mutants.Mutant("made-up", "tests/test_cli.py", [("fastjem/cli.py", "text cli.py does not hold", "")])
    assert mutants.stale(made_up) == "fastjem/cli.py: the text to mutate is found 0 times, not once"
    stale = {m.name: why for m in mutants.MUTANTS if (why := mutants.stale(m))}
    assert not stale
    names = [m.name for m in mutants.MUTANTS]
    assert len(set(names)) == len(names), sorted(n for n in set(names) if names.count(n) > 1)


def test_the_quick_preset_is_the_one_its_figures_were_measured_with():
    """The README quotes the quick preset's wall time and accuracy from bench/results/quick-*.json: the newest of
    those ran the preset as it now is, in every option that sets what is trained (data, model, objective, sampler,
    optimiser). A change to the preset needs a new measurement."""
    import json
    from dataclasses import fields

    from fastjem.config import PRESETS, TrainConfig

    results = sorted((README.parent / "bench" / "results").glob("quick-*.json"))
    newest = json.loads(results[-1].read_text())
    assert newest["preset"] == "quick" and not newest["smoke"]
    quick = PRESETS["quick"].to_dict()
    trained = [f.name for f in fields(TrainConfig) if f.metadata["group"] in ("data", "model", "objective", "sampler",
                                                                              "optim")]
    assert len(trained) > 30
    measured = {name: newest["config"][name] for name in trained}
    assert measured == json.loads(json.dumps({name: quick[name] for name in trained}))  # tuples as JSON lists


def test_readme_results_are_what_the_benchmarks_wrote():
    """The measured figures are not typed: README's results section and bench/results/HISTORY.md are what
    bench/report.py renders from the JSON files the benchmarks wrote (edit a figure, or drop or change a results
    file, and they differ; `python bench/report.py` rewrites both)."""
    import sys

    sys.path.insert(0, str(README.parent / "bench"))
    import report

    text = README.read_text()
    section = text[text.index(report.BEGIN) + len(report.BEGIN) + 1:text.index(report.END)]
    results = report.load_results(report.RESULTS)
    assert section.rstrip("\n") == report.render(results, "bench/results/" + report.PLOT_NAME, latest=True,
                                                 history_rel="bench/results/" + report.HISTORY_NAME)
    history = (report.RESULTS / report.HISTORY_NAME).read_text()
    assert history == "# Every measured run\n\n" + report.render(results, report.PLOT_NAME).replace(
        "do not edit by hand._", "do not edit by hand. The README shows each measurement's newest run._", 1) + "\n"


def test_every_results_file_the_readme_cites_is_there():
    """The prose cites the results file each figure comes from: each one must be in bench/results/ (a renamed or
    dropped file leaves a figure with no measurement behind it)."""
    cited = set(re.findall(r"bench/results/[\w.:+-]+[\w]", README.read_text()))
    assert len(cited) > 10
    assert not [path for path in sorted(cited) if not (README.parent / path).exists()]


def test_readme_names_every_field_a_run_records(tiny_config, tmp_path):
    """The README's paragraph on metrics.jsonl and summary.json names each field a run writes there: training lines,
    validations, the end, a divergence recovery, and the summary."""
    import json

    from fastjem.train import Trainer

    text = README.read_text()
    start = text.index("`metrics.jsonl` holds one JSON object a line.")
    paragraph = text[start:text.index("\n\n", start)]
    t = Trainer(tiny_config.replace(iters=6, eval_every=2, log_every=2, check_every=2, snapshot_every=2),
                out_dir=tmp_path, progress=False, log=lambda *a: None)
    t.inject_fault(3, "nan")  # one recovery
    t.fit()
    records = [json.loads(s) for s in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    kinds = {("event" in r, "loss" in r, "val_nll" in r, "test_acc" in r) for r in records}
    assert len(kinds) == 4, kinds  # divergence, training, validation, end
    summary = json.loads((tmp_path / "summary.json").read_text())
    keys = {k for r in records for k in r} | set(summary) | set(summary["best"])
    assert not [k for k in sorted(keys) if f"`{k}`" not in paragraph]
