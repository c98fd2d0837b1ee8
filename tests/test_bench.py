"""The benchmark harness: the reference computes fastjem's loss, the gate bites, the smoke run and the report work."""

import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
import torch

BENCH = Path(__file__).resolve().parents[1] / "bench"
sys.path.insert(0, str(BENCH))

import reference_eager  # noqa: E402
import report  # noqa: E402
import steps_per_sec  # noqa: E402

from fastjem.models import WideResNet  # noqa: E402
from fastjem.train import Trainer  # noqa: E402


@pytest.fixture(autouse=True)
def _one_thread():
    # Tiny networks on a shared machine: oversubscribed OpenMP threads slow them down 10x; restored after.
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def _trainer(tiny_config, tmp_path, **kw):
    # WRN-10-2 on 8x8 digits: the reference's network, fastjem's eager path (no compile, reference kernels, fp32)
    cfg = tiny_config.replace(arch="wrn", depth=10, width=2, batch_size=6, sgld_steps=3, buffer_size=30,
                              precision="fp32", compile=False, kernels="reference", **kw)
    trainer = Trainer(cfg, out_dir=tmp_path / "run", progress=False, log=lambda *a: None)
    trainer.model.train()
    ref = WideResNet(10, 2, trainer.num_classes, trainer.data.sample_shape[0])
    ref.load_state_dict(trainer.model.state_dict())
    return trainer, ref


@pytest.mark.parametrize("fused_forward", [False, True], ids=["three-forwards", "fused-forward"])
def test_reference_loss_equals_fastjem_eager_loss(tiny_config, tmp_path, fused_forward):
    trainer, ref = _trainer(tiny_config, tmp_path, fused_forward=fused_forward)
    torch.manual_seed(0)
    x_p, x_lab, y_lab = trainer.data.draw(6)
    x_q = torch.rand_like(x_p) * 2 - 1
    loss_ref = reference_eager.jem_loss(ref, x_p, x_lab, y_lab, x_q)
    loss_fast = steps_per_sec._fastjem_loss(trainer, x_p, x_lab, y_lab, x_q)
    # the check would be vacuous if the two terms cancelled or the network were constant
    assert loss_ref.item() != pytest.approx(reference_eager.jem_loss(ref, x_p, x_lab, y_lab, x_p).item(), abs=1e-4)
    torch.testing.assert_close(loss_fast, loss_ref, atol=1e-6, rtol=1e-6)
    loss_ref.backward()
    loss_fast.backward()
    for (name, p_fast), p_ref in zip(trainer.model.named_parameters(), ref.parameters(), strict=True):
        torch.testing.assert_close(p_fast.grad, p_ref.grad, atol=1e-6, rtol=1e-4, msg=name)


def test_reference_sgld_equals_fastjem_sampler(tiny_config, tmp_path):
    # noise off: fastjem draws its noise in-kernel (Philox), the reference with torch.randn_like
    trainer, ref = _trainer(tiny_config, tmp_path, sgld_noise=0.0)
    x0 = torch.rand(6, *trainer.data.sample_shape) * 2 - 1
    x_ref = reference_eager.sgld(ref, x0, 3, 1.0, 0.0)
    from fastjem.sampler import model_energy

    x_fast = trainer.sampler.sample(model_energy(trainer.model), x0, model=trainer.model)
    assert (x_ref - x0).abs().max() > 1e-3
    torch.testing.assert_close(x_fast, x_ref, atol=1e-6, rtol=1e-5)
    assert all(p.requires_grad for p in ref.parameters()), "the reference keeps its weights trainable while sampling"


def test_equivalence_gate_refuses_a_wrong_loss(tiny_config, tmp_path, monkeypatch):
    from env_info import write_synthetic_imagefolder

    data = write_synthetic_imagefolder(tmp_path / "data", per_class=3, size=8)
    base = tiny_config.replace(dataset="imagefolder", data_dir=str(data), arch="wrn", compile=False)
    good = steps_per_sec.equivalence_check(base, tmp_path / "good", 4, torch.device("cpu"))
    assert good["passed"], good
    original = Trainer.loss

    def off_by_a_percent(self, *args, **kw):
        loss, parts = original(self, *args, **kw)
        return loss * 1.01, parts

    monkeypatch.setattr(Trainer, "loss", off_by_a_percent)
    bad = steps_per_sec.equivalence_check(base, tmp_path / "bad", 4, torch.device("cpu"))
    assert not bad["passed"] and "losses differ" in bad["detail"]


def test_equivalence_gate_refuses_other_chains_other_gradients_and_a_vacuous_check(tiny_config, tmp_path,
                                                                                     monkeypatch):
    """The gate's other two checks bite too: chains 1e-3 off the reference's, and a gradient off with the loss's value
    unchanged; and a gate whose chains did not move (no step size) checks nothing, so it does not pass."""
    from env_info import write_synthetic_imagefolder

    data = write_synthetic_imagefolder(tmp_path / "data", per_class=3, size=8)
    base = tiny_config.replace(dataset="imagefolder", data_dir=str(data), arch="wrn", compile=False)
    still = steps_per_sec.equivalence_check(base.replace(sgld_step_size=0.0), tmp_path / "still", 4,
                                            torch.device("cpu"))
    assert not still["passed"] and "did not move the chains" in still["detail"], still
    sample, loss = Trainer.sample, Trainer.loss
    with monkeypatch.context() as m:
        m.setattr(Trainer, "sample", lambda self, *a, **kw: sample(self, *a, **kw) + 1e-3)
        off = steps_per_sec.equivalence_check(base, tmp_path / "chains", 4, torch.device("cpu"))
    assert not off["passed"] and "SGLD chains differ" in off["detail"], off

    def same_value_other_gradient(self, *args, **kw):
        value, parts = loss(self, *args, **kw)
        w = next(self.model.parameters())
        return value + 0.1 * (w.sum() - w.sum().detach()), parts

    monkeypatch.setattr(Trainer, "loss", same_value_other_gradient)
    grad = steps_per_sec.equivalence_check(base, tmp_path / "grad", 4, torch.device("cpu"))
    assert not grad["passed"] and "gradients differ" in grad["detail"] and "losses differ" not in grad["detail"], grad

    def one_weight_left_out(self, *args, **kw):  # a frozen or detached parameter: no gradient at all
        next(self.model.parameters()).requires_grad_(False)
        return loss(self, *args, **kw)

    monkeypatch.setattr(Trainer, "loss", one_weight_left_out)
    none = steps_per_sec.equivalence_check(base, tmp_path / "none", 4, torch.device("cpu"))
    assert not none["passed"] and "fastjem's loss gave no gradient for" in none["detail"], none


@pytest.mark.parametrize("wrong", ["no-noise", "noise-frozen-across-steps"])
def test_equivalence_gate_refuses_a_sampler_whose_noise_is_not_the_references(tiny_config, tmp_path, monkeypatch,
                                                                              wrong):
    """The gate's chains and loss run without noise (fastjem's is Philox in its kernels, the reference's randn_like:
    they agree in law only), so a fastjem that dropped the SGLD noise, or drew the same noise at every step, passed
    it; the moves' standard deviation with noise alone tells them apart."""
    import fastjem.kernels
    from env_info import write_synthetic_imagefolder

    data = write_synthetic_imagefolder(tmp_path / "data", per_class=3, size=8)
    base = tiny_config.replace(dataset="imagefolder", data_dir=str(data), arch="wrn", compile=False)
    step = fastjem.kernels.sgld_step_
    if wrong == "no-noise":
        monkeypatch.setattr(fastjem.kernels, "sgld_step_", lambda x, g, a, s, rng, **kw: step(x, g, a, 0.0, rng, **kw))
    else:
        monkeypatch.setattr(fastjem.kernels, "sgld_step_",
                            lambda x, g, a, s, rng, base=0, **kw: step(x, g, a, s, rng, base=0, **kw))
    bad = steps_per_sec.equivalence_check(base, tmp_path / "bad", 4, torch.device("cpu"))
    assert not bad["passed"] and "SGLD noise of fastjem" in bad["detail"], bad
    assert "reference" not in bad["detail"].replace("of fastjem", ""), bad  # the reference's noise is right
    expected = bad["sgld_noise_std"]["expected"]
    assert bad["sgld_noise_std"]["reference"] == pytest.approx(expected, rel=0.15)


def test_the_table_sets_each_engine_against_the_fp32_reference():
    def engine(ips, precision):
        return {"precision": precision, "it_per_s_median": ips, "it_per_s_min": ips, "it_per_s_max": ips, "mfu": None,
                "components_ms": {"iteration": 1e3 / ips, "sgld_step": 1.0, "buffer": 1.0, "data": 1.0}}

    rep = {"device": {"name": "CPU", "type": "cpu"}, "versions": {"torch": "2"}, "date": "today", "git": {"sha": "a"},
           "configs": [{"name": "wrn-10-2", "batch_size": 16, "engines": {
               "reference-ieee": engine(0.5, "fp32"), "fastjem-matched": engine(0.75, "fp32"),
               "fastjem-default": engine(2.0, "bf16")}}]}
    rows = [ln for ln in steps_per_sec.markdown_table(rep).splitlines() if ln.startswith("| wrn-10-2 ")]
    assert [row.split(" | ")[-2] for row in rows] == ["x1.00", "x1.50", "x4.00"]


def test_the_reference_is_the_papers_algorithm_in_its_parts():
    """The eager reference the speed-ups are measured against does all the work fastjem does (the equivalence gate
    runs it with no noise and no resets): SGLD adds noise of its std, ~reinit_prob of the drawn chains restart
    from U(-1, 1) and the others are the buffer's rows, the advanced chains are written back, the network is
    left in the mode it was in, pixels map to [-1, 1], warm-up starts at lr / warmup_iters, and the IEEE mode
    turns TF32 off (and back)."""
    torch.manual_seed(0)
    model = WideResNet(10, 1, num_classes=10)
    images = torch.randint(0, 256, (20, 3, 8, 8), dtype=torch.uint8)
    cfg = reference_eager.ReferenceConfig(buffer_size=4000, reinit_prob=0.05, sgld_steps=1, sgld_step_size=0.0,
                                          sgld_noise=0.1, warmup_iters=10, lr=1e-3, pad=0, flip=False,
                                          data_noise=0.0)
    ref = reference_eager.ReferenceJEM(model, images, torch.randint(0, 10, (20,)), cfg, "cpu")
    x0 = torch.zeros(64, 3, 8, 8)
    moved = reference_eager.sgld(model.train(), x0, 1, 0.0, 0.1) - x0
    assert model.training and abs(moved.std().item() - 0.1) < 0.01 and abs(moved.mean().item()) < 0.01
    before = ref.buffer.clone()
    x0, idx = ref.buffer_draw(4000)
    reset = (x0 != before[idx]).flatten(1).any(1)
    assert 4000 * 0.05 - 4 * 14 < reset.sum() < 4000 * 0.05 + 4 * 14  # binomial(4000, 0.05): sd 13.8
    assert x0[reset].abs().max() <= 1 and torch.equal(x0[~reset], before[idx][~reset])
    ref.buffer = before.clone()
    x = ref.sample(32)
    drawn = (ref.buffer != before).flatten(1).any(1).nonzero().squeeze(1)
    assert len(drawn) > 0 and all(any(torch.equal(ref.buffer[i], row) for row in x) for i in drawn)
    pixels = ref._augment(torch.tensor([0, 255], dtype=torch.uint8).view(2, 1, 1, 1).expand(2, 3, 8, 8))
    assert pixels[0].eq(-1).all() and pixels[1].eq(1).all()
    assert ref.learning_rate() == pytest.approx(1e-4)
    saved = torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32
    with reference_eager.fp32_mode("ieee"):
        assert not torch.backends.cudnn.allow_tf32 and not torch.backends.cuda.matmul.allow_tf32
    assert (torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32) == saved


def test_flops_are_counted_not_typed():
    flops = steps_per_sec.count_flops(28, 10, 64, 20)
    # DESIGN.md section 5: 37.3 TFLOP per WRN-28-10 iteration at B = 64; an SGLD step is 2x a forward
    assert flops["per_iter"] == pytest.approx(37.3e12, rel=0.01)
    assert flops["train_step"] / flops["sgld_step"] == pytest.approx(4.5, rel=0.01)
    assert steps_per_sec.count_flops(10, 2, 16, 20)["per_iter"] == pytest.approx(0.456e12 / 4, rel=0.01)


def test_steps_per_sec_times_the_parts_auto_did_not_choose():
    """Each CUDA config times the SGLD parts auto passed over beside the default, so the suite checks auto's choice
    per size: one block beside WRN-28-10's two at batch 64, two beside WRN-16-8's one (not twice where --sgld-parts
    2 already times them)."""
    cuda = torch.device("cuda")
    assert steps_per_sec.parts_ablation(28, 10, 64, cuda, sms=132) == ("fastjem-one-part", {"sgld_parts": 1},
                                                                         "one-part")
    assert steps_per_sec.parts_ablation(16, 8, 64, cuda, sms=132) == ("fastjem-parts2", {"sgld_parts": 2}, "parts2")
    assert steps_per_sec.parts_ablation(16, 8, 64, cuda, candidate=2, sms=132) is None
    assert steps_per_sec.parts_ablation(28, 10, 64, cuda, candidate=2, sms=132)[0] == "fastjem-one-part"


def test_steps_per_sec_times_the_ablations_and_the_asked_candidates_on_cuda_only():
    """fp32 and the default everywhere; on CUDA also SGLD-graph-only, cast-at-each-step, the parts auto passed over,
    and --sgld-parts N / --overlap when asked for (a CPU run has no graphs, no bf16 weight casts to ablate)."""
    def names(device, **kw):
        return [engine for engine, _, _ in steps_per_sec.fastjem_candidates(28, 10, 64, torch.device(device),
                                                                              sms=132, **kw)]

    assert names("cpu") == names("cpu", sgld_parts=4, overlap=True) == ["fastjem-matched", "fastjem-default"]
    ablations = ["fastjem-matched", "fastjem-default", "fastjem-sgld-graph-only", "fastjem-cast-each-step",
                 "fastjem-one-part"]
    assert names("cuda") == ablations
    assert names("cuda", sgld_parts=4, overlap=True) == [*ablations, "fastjem-parts4", "fastjem-overlap"]
    overrides = dict((e, o) for e, o, _ in steps_per_sec.fastjem_candidates(28, 10, 64, torch.device("cuda"), 4,
                                                                           True, sms=132))
    assert overrides == {"fastjem-matched": {"precision": "fp32"}, "fastjem-default": {},
                         "fastjem-sgld-graph-only": {"iteration_graph": False},
                         "fastjem-cast-each-step": {"cast_weights_once": False}, "fastjem-one-part": {"sgld_parts": 1},
                         "fastjem-parts4": {"sgld_parts": 4}, "fastjem-overlap": {"overlap_data": True}}
    assert set(overrides) <= {"fastjem-matched", "fastjem-default", *report.ENGINES, *steps_per_sec.OPTIONAL_ENGINES}


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    out = tmp_path_factory.mktemp("smoke")
    proc = subprocess.run([sys.executable, str(BENCH / "steps_per_sec.py"), "--device", "cpu", "--smoke", "--out",
                           str(out)], capture_output=True, text=True, timeout=120)
    return proc, out


def test_skip_leaves_out_an_engine_and_its_ratios(tmp_path, capsys):
    """--skip shortens a run (a GPU lease is minutes): the skipped engine is not built, the ratios it enters are
    left out and the summary says so; the bar's engines cannot be skipped (refused by the parser main runs first,
    called here: a process of its own took 2-4 s to import torch for a parser's error)."""
    proc = subprocess.run([sys.executable, str(BENCH / "steps_per_sec.py"), "--device", "cpu", "--smoke", "--skip",
                           "fastjem-matched", "--out", str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "ratio_matched: not measured (--skip)" in proc.stdout
    assert "equivalence check: passed (SGLD chains and noise, loss and gradients match)" in proc.stdout
    (cfg,) = json.loads(next(tmp_path.glob("smoke-steps-*.json")).read_text())["configs"]
    assert set(cfg["engines"]) == {"reference-ieee", "fastjem-default"}
    assert set(cfg["ratios"]) == {"default"} and set(cfg["paired_ratios"]) == {"default"}
    capsys.readouterr()
    with pytest.raises(SystemExit) as refused:
        steps_per_sec.parse_args(["--skip", "fastjem-default"])
    assert refused.value.code == 2 and "--skip takes" in capsys.readouterr().err


def test_smoke_run_reports_ratios_and_json(smoke):
    proc, out = smoke
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    lines = proc.stdout.splitlines()
    matched = [ln for ln in lines if ln.startswith("ratio_matched: ")]
    default = [ln for ln in lines if ln.startswith("ratio_default: ")]
    assert len(matched) == 1 and float(matched[0].split()[1]) > 0
    assert len(default) == 1 and float(default[0].split()[1]) > 0
    assert "| wrn-10-2 | 4 | reference-ieee |" in proc.stdout
    (path,) = out.glob("smoke-steps-*.json")
    rep = json.loads(path.read_text())
    assert rep["smoke"] and rep["gate"]["passed"]
    assert rep["versions"]["torch"] == torch.__version__ and "sha" in rep["git"] and rep["device"]["name"]
    (cfg,) = rep["configs"]
    assert set(cfg["engines"]) == {"reference-ieee", "fastjem-matched", "fastjem-default"}
    for e in cfg["engines"].values():
        assert len(e["window_it_per_s"]) == 2 and e["it_per_s_median"] > 0 and e["warmup_iter_s"]
        assert {"sgld_step", "buffer", "data", "train_step_rest"} <= set(e["components_ms"])
    assert cfg["engines"]["fastjem-matched"]["requested"]["precision"] == "fp32"
    # what the CPU engine resolved --compile to for the SGLD step is recorded (the smoke runs --no-compile: eager)
    assert rep["args"]["no_compile"]
    assert all(cfg["engines"][e]["resolved"]["compile_sgld"] is False for e in ("fastjem-matched", "fastjem-default"))
    assert cfg["ratios"]["matched"] == pytest.approx(float(matched[0].split()[1]), rel=1e-3)
    # the per-window-pair ratios: fastjem's window over the reference's window timed next to it
    fj, ref = (cfg["engines"][k]["window_it_per_s"] for k in ("fastjem-matched", "reference-ieee"))
    pairs = sorted(f / r for f, r in zip(fj, ref))
    paired = cfg["paired_ratios"]["matched"]
    assert paired["pairs"] == 2 and paired["min"] == pairs[0] and paired["max"] == pairs[1]
    assert paired["median"] == pytest.approx(sum(pairs) / 2)
    assert any(ln.startswith("ratio_matched_paired[wrn-10-2,b4]: ") for ln in lines)
    assert cfg["flops"]["per_iter"] > 0
    # a CPU's ceiling: a matmul at each engine's precision, measured in the run
    matmul = cfg["matmul"]
    assert matmul["n"] == 256 and matmul["flops_per_s"]["fp32"] > 0
    for e in cfg["engines"].values():
        assert e["matmul_flops_per_s"] == matmul["flops_per_s"][e["precision"]]
        assert e["of_matmul"] == pytest.approx(e["achieved_flops_per_s"] / e["matmul_flops_per_s"])
    ref = cfg["engines"]["reference-ieee"]["achieved_flops_per_s"]
    assert matmul["ceilings"]["matched"] == pytest.approx(matmul["flops_per_s"]["fp32"] / ref)
    (ceiling,) = [ln for ln in lines if ln.startswith("ceiling_matched: x")]
    assert float(ceiling.split()[1][1:]) == pytest.approx(matmul["ceilings"]["matched"], abs=0.006)
    assert "of matmul |" in proc.stdout


def test_cpu_ceiling_sets_each_engine_against_a_matmul_at_its_precision(monkeypatch):
    rates = {"fp32": 100e9, "bf16": 400e9}
    monkeypatch.setattr(steps_per_sec, "matmul_flops", lambda device, precision, n: rates[precision])
    engines = {"reference-ieee": {"precision": "fp32", "achieved_flops_per_s": 50e9},
               "fastjem-matched": {"precision": "fp32", "achieved_flops_per_s": 60e9},
               "fastjem-default": {"precision": "bf16", "achieved_flops_per_s": 200e9}}
    out = steps_per_sec.cpu_matmul_ceiling(engines, torch.device("cpu"), 64)
    assert out["flops_per_s"] == rates and out["n"] == 64
    assert out["ceilings"] == {"matched": pytest.approx(2.0), "default": pytest.approx(8.0)}
    assert [e["of_matmul"] for e in engines.values()] == [pytest.approx(0.5), pytest.approx(0.6), pytest.approx(0.5)]
    lines = steps_per_sec.ratio_lines({"device": {"type": "cpu"}, "gate": {"passed": True}, "configs": [
        {"name": "wrn-10-2", "batch_size": 16, "sgld_steps": 20, "engines": engines, "matmul": out,
         "ratios": {"matched": 1.2, "default": 4.0}}]})
    assert ("ceiling_default: x8.00 (a 64^3 bf16 matmul 400 GFLOP/s over the reference's 50; fastjem reaches 50% "
            "of it, the reference 50% of the fp32 one)") in lines


def test_compile_options_reach_the_fastjem_engines():
    assert steps_per_sec.parse_args(["--compile", "on"]).fastjem_overrides == {"compile": "on"}
    assert steps_per_sec.parse_args(["--compile", "on", "--no-compile"]).fastjem_overrides == {"compile": "off"}
    assert steps_per_sec.parse_args([]).fastjem_overrides == {}


def test_ratio_lines_give_every_configs_ratios_then_the_bars_and_their_mfu():
    """The lines the GPU suite's log keeps: each config's ratios and window-pair ratios, then the bar's (WRN-28-10
    b64 on CUDA, wherever it ran in the list) with the MFU of the engines that have one; a failed gate says the
    bars were refused, not measured."""
    small = {"name": "wrn-10-2", "batch_size": 64, "sgld_steps": 20, "engines": {"fastjem-default": {"mfu": 0.05}},
             "ratios": {"default": 7.13}}
    bar = {"name": "wrn-28-10", "batch_size": 64, "sgld_steps": 20,
           "engines": {"reference-ieee": {"mfu": 0.02}, "fastjem-matched": {"mfu": None},
                       "fastjem-default": {"mfu": 0.39412}},
           "ratios": {"matched": 1.35, "default": 16.99},
           "paired_ratios": {"default": {"median": 17.0, "min": 16.5, "max": 17.25, "pairs": 5}}}
    lines = steps_per_sec.ratio_lines({"device": {"type": "cuda"}, "gate": {"passed": True},
                                       "configs": [bar, small, {"name": "wrn-16-8", "batch_size": 64,
                                                                "status": "skipped: time budget"}]})
    assert lines == ["ratio_matched[wrn-28-10,b64]: 1.350", "ratio_default[wrn-28-10,b64]: 16.990",
                     "ratio_default_paired[wrn-28-10,b64]: 17.000 (window pairs 16.500-17.250, n=5)",
                     "ratio_default[wrn-10-2,b64]: 7.130",
                     "bar_config: wrn-28-10 batch 64 sgld_steps 20", "ratio_matched: 1.350", "ratio_default: 16.990",
                     "mfu_default: 0.3941"]
    assert steps_per_sec.ratio_lines({"device": {"type": "cuda"}, "gate": {"passed": False}, "configs": [
        {"name": "wrn-28-10", "batch_size": 64, "sgld_steps": 20, "engines": {"reference-ieee": {}}}]}) == [
        "ratio_matched: refused (equivalence check failed)", "ratio_default: refused (equivalence check failed)"]


def test_ratio_lines_name_the_config_they_give_where_the_bars_was_not_measured():
    """Where the run did not measure the bar's configuration (a smoke run, --configs without it, its config skipped
    by the time budget), the summary's ratio_/mfu_ lines gave the last measured config's figures as the bar's, that
    config named on the bar_config line alone: each line names it now."""
    small = {"name": "wrn-10-2", "batch_size": 64, "sgld_steps": 20,
             "engines": {"reference-ieee": {}, "fastjem-default": {"mfu": 0.05}}, "ratios": {"default": 7.13}}
    skipped = {"name": "wrn-28-10", "batch_size": 64, "status": "skipped: time budget"}
    lines = steps_per_sec.ratio_lines({"device": {"type": "cuda"}, "gate": {"passed": True},
                                       "configs": [small, skipped]})
    assert lines == ["ratio_default[wrn-10-2,b64]: 7.130",
                     "bar_config: wrn-10-2 batch 64 sgld_steps 20 (the bar's wrn-28-10 batch 64 not measured in this "
                     "run)", "ratio_matched: not measured (--skip)",
                     "ratio_default: 7.130 (wrn-10-2 batch 64, not the bar's)",
                     "mfu_default: 0.0500 (wrn-10-2 batch 64, not the bar's)"]
    # a CPU's bar is WRN-10-2 at batch 16: the same config at batch 4 is not it, its ceiling named too
    engines = {"reference-ieee": {"precision": "fp32", "achieved_flops_per_s": 50e9, "matmul_flops_per_s": 100e9,
                                  "of_matmul": 0.5},
               "fastjem-matched": {"precision": "fp32", "achieved_flops_per_s": 60e9, "matmul_flops_per_s": 100e9,
                                   "of_matmul": 0.6}}
    smoke = {"name": "wrn-10-2", "batch_size": 4, "sgld_steps": 2, "engines": engines, "ratios": {"matched": 1.2},
             "matmul": {"n": 64, "ceilings": {"matched": 2.0}}}
    lines = steps_per_sec.ratio_lines({"device": {"type": "cpu"}, "gate": {"passed": True}, "configs": [smoke]})
    assert lines[1:] == ["bar_config: wrn-10-2 batch 4 sgld_steps 2 (the bar's wrn-10-2 batch 16 not measured in "
                         "this run)", "ratio_matched: 1.200 (wrn-10-2 batch 4, not the bar's)",
                         "ratio_default: not measured (--skip)",
                         "ceiling_matched: x2.00 (a 64^3 fp32 matmul 100 GFLOP/s over the reference's 50; fastjem "
                         "reaches 60% of it, the reference 50% of the fp32 one) (wrn-10-2 batch 4, not the bar's)"]
    assert steps_per_sec.ratio_lines({"device": {"type": "cpu"}, "gate": {"passed": True}, "configs": [
        {**smoke, "batch_size": 16}]})[2] == "ratio_matched: 1.200"


def test_a_config_starts_only_with_the_time_the_slowest_so_far_took():
    """The GPU suite's stage once started WRN-16-8 with 71 s of its budget left after WRN-28-10 took 163 s, and
    its timeout killed it: the estimate is the slowest config so far, the first always starts."""
    assert steps_per_sec.fits_budget(5.0, 0.0, 10**6)  # no budget
    assert steps_per_sec.fits_budget(0.0, 170.0, 0.0)  # the first config
    assert not steps_per_sec.fits_budget(171.0, 170.0, 0.0)  # past the budget
    assert not steps_per_sec.fits_budget(163.0, 234.0, 163.0)  # 71 s left, the slowest took 163
    assert steps_per_sec.fits_budget(163.0, 400.0, 163.0)
    assert steps_per_sec.fits_budget(100.0, 200.0, 100.0)  # exactly as long as the slowest


def test_report_names_a_cpus_bf16_extensions_apart():
    """Two Intel Xeons of one name, one with AMX: their rows must not supersede each other. Newer results record
    the extensions; older ones are read from the default engine's resolved notes."""
    cpu = {"type": "cpu", "name": "Intel(R) Xeon(R) Processor", "threads": 2}
    assert report._device({"device": cpu}) == "Intel(R) Xeon(R) Processor, 2 threads"
    assert report._device({"device": {**cpu, "bf16_flags": ["amx_bf16", "avx512_bf16"]}}) == \
        "Intel(R) Xeon(R) Processor (AMX-BF16), 2 threads"
    assert report._device({"device": {**cpu, "bf16_flags": ["avx512_bf16"]}}) == \
        "Intel(R) Xeon(R) Processor (AVX512-BF16), 2 threads"
    noted = {"device": cpu, "configs": [{"engines": {"fastjem-default": {"resolved": {
        "notes": ["precision auto -> bf16 (CPU has AMX-BF16 (amx_bf16))"]}}}}]}
    assert report._device(noted) == "Intel(R) Xeon(R) Processor (AMX-BF16), 2 threads"
    gpu = {"type": "cuda", "name": "NVIDIA H100 80GB HBM3", "bf16_flags": ["amx_bf16"]}
    assert report._device({"device": gpu}) == "NVIDIA H100 80GB HBM3"
    from env_info import device_info

    from fastjem.engine import cpu_bf16_flags
    assert device_info(torch.device("cpu"))["bf16_flags"] == cpu_bf16_flags()


def test_a_cpu_kernel_runs_rows_name_its_threads():
    """The kernel benchmark records a CPU run's threads beside the device's name: its rows name them as every other
    CPU row does, so a 1-thread run does not take the README row of a 2-thread one (it did, unnamed)."""
    assert report._device({"device": "AMD EPYC", "threads": 2}) == "AMD EPYC, 2 threads"
    assert report._device({"device": "NVIDIA H200", "peak_bandwidth_Bps": 4.8e12}) == "NVIDIA H200"
    assert report._device({"device": "AMD EPYC", "threads": 1}) == "AMD EPYC, 1 thread"
    op = {"op": "sgld_step_", "fused_ms": 0.1, "eager_ms": 0.2, "speedup_vs_eager": 2.0, "fused_GBps": 1.0,
          "fraction_of_peak_bandwidth": None, "copy_ms": 0.05}
    runs = [{"device": "AMD EPYC", "threads": threads, "date": date, "results": [op], "_file": f"k{threads}"}
            for threads, date in ((2, "2026-12-01"), (1, "2026-12-02"))]
    rows = report.kernels_table(runs, latest=True)[2:]
    assert [row.split(" | ")[1] for row in rows] == ["AMD EPYC, 2 threads", "AMD EPYC, 1 thread"]


def test_cpu_results_record_the_physical_cores_their_threads_ran_on(tmp_path):
    """Two hardware threads of one core (a VM's CPUs 0 and 1 may be) share its AMX unit: the record counts the
    physical cores of the CPUs the process may use, and the report says when threads share cores."""

    from env_info import cpu_cores

    cpus = sorted(os.sched_getaffinity(0))
    for pairs in (False, True):  # every CPU the process may use a thread of core 0; then two to a core
        fake_topology(tmp_path / str(pairs), cpus, 2 if pairs else len(cpus))
    assert cpu_cores(tmp_path / "False") == {"affinity_cpus": cpus, "physical_cores": 1}
    assert cpu_cores(tmp_path / "True") == {"affinity_cpus": cpus, "physical_cores": (len(cpus) + 1) // 2}
    assert cpu_cores(tmp_path / "missing") == {}
    cpu = {"type": "cpu", "name": "Intel(R) Xeon(R) Processor", "threads": 2}
    assert report._device({"device": {**cpu, "physical_cores": 1}}) == "Intel(R) Xeon(R) Processor, 2 threads on 1 core"
    assert report._device({"device": {**cpu, "physical_cores": 2}}) == "Intel(R) Xeon(R) Processor, 2 threads"
    assert report._device({"device": {**cpu, "threads": 4, "physical_cores": 2}}).endswith("4 threads on 2 cores")
    assert report._device({"device": {**cpu, "threads": 1}}) == "Intel(R) Xeon(R) Processor, 1 thread"


def test_exit_status_counts_skipped_configs_as_recorded_not_failed():
    def rep(*statuses, gate=True):
        return {"gate": {"passed": gate}, "configs": [{"status": s} for s in statuses]}

    assert steps_per_sec.exit_status(rep("ok", "skipped: time budget")) == 0
    assert steps_per_sec.exit_status(rep("ok", "failed: RuntimeError: x", "skipped: time budget")) == 1
    assert steps_per_sec.exit_status(rep("skipped: time budget")) == 1  # nothing measured
    assert steps_per_sec.exit_status(rep("ok", gate=False)) == 2


def test_report_renders_table_plot_and_readme(smoke, tmp_path):
    _, out = smoke
    results = report.load_results(out, include_smoke=True)
    assert len(results["steps"]) == 1
    table = report.render(results, plot_rel=None)
    rep = results["steps"][0]
    assert rep["device"]["name"] in table and rep["date"][:10] in table and "WRN-10-2" in table
    of_matmul = rep["configs"][0]["engines"]["fastjem-default"]["of_matmul"]
    assert f"| {of_matmul:.0%} of matmul | own |" in table  # a CPU's MFU: against the matmul measured in the run
    assert report.load_results(out)["steps"] == [], "smoke runs never reach the README"
    # nor one saved under a measurement's name: the file says it is a smoke run
    shutil.copy(next(out.glob("smoke-steps-*.json")), tmp_path / "steps-2026-01-01T000000-renamed.json")
    assert report.load_results(tmp_path)["steps"] == []
    assert len(report.load_results(tmp_path, include_smoke=True)["steps"]) == 1
    readme = tmp_path / "README.md"
    readme.write_text("intro\n<!-- results:begin -->\nold\n<!-- results:end -->\noutro\n")
    report.update_readme(readme, table)
    text = readme.read_text()
    assert text.startswith("intro\n<!-- results:begin -->\n") and text.endswith("<!-- results:end -->\noutro\n")
    assert "old" not in text and "WRN-10-2" in text
    png = report.plot(results, tmp_path / "plot.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    empty = report.render(report.load_results(tmp_path / "nothing"), plot_rel=None)
    assert "No benchmark results recorded yet" in empty


def test_report_renders_sgld_study_and_profile_tables(tmp_path):
    """Rows from the study's and the profile's JSON; a failed variant shows as failed, not as a number."""
    study = {"schema": "fastjem-bench-sgld-study/1", "date": "2026-01-02T00:00:00", "device": {"name": "GPU X"},
             "args": {"depth": 28, "width": 10, "batch_size": 64, "precision": "bf16"}, "matmul_bf16_tflops": 700.0,
             "variants": [{"name": "default", "sgld_step_ms": 4.2, "tflops_per_s": 363.0, "mfu": 0.367,
                           "samples_max_abs_diff_vs_first": 0.0},
                          {"name": "max-autotune", "error": "RuntimeError: out of time"}]}
    prof = {"date": "2026-01-02T00:00:00", "device": {"name": "GPU X"}, "model": "WRN-28-10", "batch_size": 64,
            "engines": {"default": {"time_basis": "device (kernel) time",
                                    "categories": {"convolution forward": {"share": 0.46},
                                                   "conv input-gradient": {"share": 0.45},
                                                   "activation and elementwise": {"share": 0.09}}}}}
    (tmp_path / "sgld-study-2026-01-02T000000-GPU-X.json").write_text(json.dumps(study))
    (tmp_path / "profile-2026-01-02T000000-GPU-X.json").write_text(json.dumps(prof))
    text = report.render(report.load_results(tmp_path), plot_rel=None)
    assert "| 2026-01-02 | GPU X | WRN-28-10 | 64 | bf16 | default | 4.200 | 363 | 36.7% | 700 | 0.0e+00 |" in text
    assert "| max-autotune | failed: RuntimeError: out of time |" in text
    assert "| default | device (kernel) time | 46.0% | 45.0% | 9.0% | 0.0% | 0.0% | 0.0% | 0.0% |" in text


def _steps_run(path, stamp, engines):
    found = {e: {"it_per_s_median": its, "precision": "bf16"} for e, its in engines.items()}
    rep = {"date": f"2026-01-0{stamp}T00:00:00", "device": {"name": "GPU X"}, "versions": {"torch": "2.11"},
           "configs": [{"name": "wrn-28-10", "batch_size": 64, "sgld_steps": 20, "engines": found, "ratios": {}}]}
    (path / f"steps-2026-01-0{stamp}T000000-GPU-X.json").write_text(json.dumps(rep))


def test_report_rows_show_each_results_numbers(tmp_path):
    """Each table's row, cell by cell: the steps table's ratios, its window-pair ratios (the median over pairs of
    fastjem's it/s over the reference's), whether the reference ran in its own process and the commit (marked where
    the tree had changes); the quick, precision and buffer-init tables' numbers; the files read oldest first."""
    windows = {"reference-ieee": [1.0, 2.0, 1.0], "fastjem-matched": [1.5, 3.5, 1.8], "fastjem-default": [16, 44, 18]}
    engines = {e: {"it_per_s_median": its, "precision": p, "window_it_per_s": windows[e]}
               for e, its, p in (("reference-ieee", 1.0, "fp32"), ("fastjem-matched", 1.5, "fp32"),
                                 ("fastjem-default", 17.0, "bf16"))}
    engines["fastjem-default"]["mfu"] = 0.394
    steps = {"date": "2026-01-05T00:00:00", "device": {"name": "GPU X"}, "versions": {"torch": "2.11"},
             "git": {"sha": "0123456789abcdef", "dirty": True}, "args": {"reference_process": True},
             "configs": [{"name": "wrn-28-10", "batch_size": 64, "sgld_steps": 20, "engines": engines,
                          "ratios": {"matched": 1.5, "default": 17.0}}]}
    # pairs matched 1.5, 1.75, 1.8 (median 1.75), default 16, 22, 18 (median 18)
    assert report.steps_table([steps])[2] == (
        "| 2026-01-05 | GPU X | WRN-28-10 | 64 | 20 | 1 (fp32) | — | 1.5 (fp32) | — | — | — | 17 (bf16) | — | — | — | "
        "x1.50 | x17.00 | x1.75 / x18.00 | 39.4% | own | 2.11 | 01234567 + changes |")
    shared = {**steps, "git": {"sha": "0123456789abcdef"}, "args": {}}
    assert report.steps_table([shared])[2].endswith("| 39.4% | shared | 2.11 | 01234567 |")
    device = {"name": "GPU X"}
    quick = {"date": "2026-01-03T00:00:00", "device": device, "preset": "quick", "config": {"arch": "wrn", "width": 2},
             "iterations": 2000, "wall_seconds": 612.4, "it_per_s_median": 3.456, "test_acc": 0.81234,
             "engine": "precision bf16"}
    assert report.quick_table([quick])[2] == \
        "| 2026-01-03 | GPU X | quick (JEM) | wrn width 2 | 2000 | 612 | 3.46 | 0.8123 | precision bf16 |"
    precision = {"date": "2026-01-03T00:00:00", "device": device, "preset": "quick",
                 "runs": [{"seed": s} for s in (2, 1, 2, 1)], "mean_test_acc": {"fp32": 0.8123, "bf16": 0.8138},
                 "mean_diff_points": 0.15}
    assert report.precision_table([precision])[2] == "| 2026-01-03 | GPU X | quick | 1, 2 | 0.8123 | 0.8138 | +0.15 |"
    buffer_init = {"date": "2026-01-03T00:00:00", "device": device, "preset": "quick", "iters": 500,
                   "runs": [{"seed": 2}, {"seed": 1}],
                   "means": {"uniform:20": {"test_acc": 0.8, "test_acc_std": 0.01, "wall_seconds": 300.4,
                                            "recoveries": 0}}}
    assert report.buffer_init_table([buffer_init])[2] == \
        "| 2026-01-03 | GPU X | quick | 500 | 1, 2 | uniform:20 | 0.8000 ± 0.0100 | 300 | 0 |"
    # files are read oldest first by the date they hold, whatever their names
    for name, date in (("quick-a.json", "2026-01-04T00:00:00"), ("quick-b.json", "2026-01-03T00:00:00")):
        (tmp_path / name).write_text(json.dumps({**quick, "date": date}))
    assert [r["date"][:10] for r in report.load_results(tmp_path)["quick"]] == ["2026-01-03", "2026-01-04"]


def test_report_kernels_table_shows_the_copy_of_each_ops_bytes():
    """The floor beside each op: a plain copy of its bytes (graph-replayed on CUDA, called on a CPU)."""
    base = {"op": "sgld_step_[64]", "fused_ms": 0.01, "eager_ms": 0.02, "speedup_vs_eager": 2.0, "fused_GBps": 78.6}
    graph = {"fused_graph_ms": 0.00331, "eager_graph_ms": 0.0104, "graph_speedup_vs_eager": 3.14,
             "fused_graph_GBps": 712.0, "graph_fraction_of_peak_bandwidth": 0.21}
    reports = [{"date": "2026-01-01T00:00:00", "device": {"name": "GPU X"},
                "results": [{**base, **graph, "copy_graph_ms": 0.00242}]},
               {"date": "2026-01-01T00:00:00", "device": {"name": "CPU Y"}, "results": [{**base, "copy_ms": 0.5}]},
               {"date": "2026-01-01T00:00:00", "device": {"name": "GPU Z"}, "results": [{**base, **graph}]}]
    rows = report.kernels_table(reports)
    assert "copy of its bytes µs |" in rows[0] and rows[1].count("|") == rows[0].count("|")
    assert rows[2].endswith("| 3.31 | 10.40 | x3.14 | 712 | 21% | 2.42 |")
    assert rows[3].endswith("| — | — | — | — | — | 500.00 |")
    assert rows[4].endswith("| 21% | — |")  # an older file, measured before the floor
    assert all(row.count("|") == rows[0].count("|") for row in rows)


def test_report_readme_keeps_each_measurements_newest_run_and_history_every_run(tmp_path):
    """The README shows a run's row unless a newer run of the same measurement measured all it did; HISTORY.md
    (the same tables, every run) keeps them all."""
    _steps_run(tmp_path, 1, {"reference-ieee": 1.01, "fastjem-default": 9.01})
    _steps_run(tmp_path, 2, {"reference-ieee": 1.02, "fastjem-default": 9.02, "fastjem-overlap": 8.02})
    _steps_run(tmp_path, 3, {"reference-ieee": 1.03, "fastjem-default": 9.03})  # supersedes run 1, not run 2
    kernels = [{"date": f"2026-01-0{d}T00:00:00", "device": {"name": "GPU X"},
                "results": [{"op": "sgld_step_[64]", "fused_ms": 0.001 * d, "eager_ms": 0.002,
                             "speedup_vs_eager": 2.0 / d, "fused_GBps": 100.0 * d}]} for d in (1, 2)]
    studies = [{"date": f"2026-01-0{d}T00:00:00", "device": {"name": "GPU X"},
                "args": {"depth": 28, "width": 10, "batch_size": 64, "precision": "bf16"},
                "variants": [{"name": name, "sgld_step_ms": ms} for name, ms in variants]}
               for d, variants in ((1, [("default", 4.1), ("nchw", 4.3)]), (2, [("default", 4.01), ("split-2", 3.7)]),
                                   (3, [("default", 4.001)]))]
    for d, rep in enumerate(kernels, 1):
        (tmp_path / f"kernels-2026-01-0{d}-GPU-X.json").write_text(json.dumps(rep))
    for d, rep in enumerate(studies, 1):
        (tmp_path / f"sgld-study-2026-01-0{d}T000000-GPU-X.json").write_text(json.dumps(rep))
    results = report.load_results(tmp_path)
    readme = report.render(results, plot_rel=None, latest=True, history_rel="HISTORY.md")
    history = report.render(results, plot_rel=None)
    assert "[HISTORY.md](HISTORY.md)" in readme
    assert "9.01" not in readme and "9.02" in readme and "9.03" in readme and "8.02" in readme
    assert all(f"9.0{d}" in history for d in (1, 2, 3))
    # the README's steps table leaves out engine columns none of its rows measured; the history keeps them all
    assert "--sgld-parts 4" not in readme and "--sgld-parts 4" in history
    assert "| 2026-01-02 | GPU X | `sgld_step_[64]` | 2.0 |" in readme and "| 1.0 |" not in readme
    assert "| 2026-01-01 | GPU X | `sgld_step_[64]` | 1.0 |" in history
    # a study's variants go with their run: run 1 (nchw) and run 2 (split-2) stay whole beside run 3
    for row in ("| nchw | 4.300 |", "| default | 4.100 |", "| split-2 | 3.700 |", "| default | 4.010 |",
                "| default | 4.001 |"):
        assert row in readme and row in history
    (tmp_path / "sgld-study-2026-01-04T000000-GPU-X.json").write_text(json.dumps(
        {**studies[0], "date": "2026-01-04T00:00:00", "variants": [{"name": "default", "sgld_step_ms": 3.9},
                                                                    {"name": "nchw", "sgld_step_ms": 4.2},
                                                                    {"name": "split-2", "sgld_step_ms": 3.6}]}))
    readme = report.render(report.load_results(tmp_path), plot_rel=None, latest=True)
    assert "| nchw | 4.200 |" in readme and "| nchw | 4.300 |" not in readme and "| default | 4.010 |" not in readme
    assert "| default | 4.001 |" not in readme  # run 4 measured all that run 3 did


def test_report_writes_readme_history_and_plot(tmp_path):
    _steps_run(tmp_path, 1, {"reference-ieee": 1.01, "fastjem-default": 9.01})
    _steps_run(tmp_path, 2, {"reference-ieee": 1.02, "fastjem-default": 9.02})
    readme = tmp_path / "README.md"
    readme.write_text("intro\n<!-- results:begin -->\nold\n<!-- results:end -->\noutro\n")
    assert report.main(["--results", str(tmp_path), "--readme", str(readme)]) == 0
    text, history = readme.read_text(), (tmp_path / "HISTORY.md").read_text()
    assert "9.02" in text and "9.01" not in text and "[HISTORY.md](HISTORY.md)" in text
    assert history.startswith("# Every measured run") and "9.01" in history and "9.02" in history
    assert "![iterations per second](steps_per_sec.png)" in history and (tmp_path / "steps_per_sec.png").is_file()
    # --markdown: the README's section also as a file of its own
    assert report.main(["--results", str(tmp_path), "--readme", str(readme), "--markdown", str(tmp_path / "m.md")]) == 0
    section = readme.read_text().split(report.BEGIN + "\n")[1].split(report.END)[0]
    assert (tmp_path / "m.md").read_text() == section


def test_report_unpacks_a_gpu_suite_json(tmp_path, capsys):
    suite = {"suite": "bench/gpu_suite.sh", "stages": [],
             "steps": {"schema": "s", "date": "2026-01-02", "_file": "steps-2026-01-02T000000-GPU-X.json"},
             "kernel_configs": {"date": "2026-01-02", "_file": "kernel-configs-2026-01-02-GPU-X.json"},
             "profile": {"date": "2026-01-02", "_file": "profile-2026-01-02T000000-GPU-X.json"},
             "cifar": {"error": "no file"}, "kernels": None}
    path = tmp_path / "gpu_suite.json"
    path.write_text(json.dumps(suite))
    results = tmp_path / "results"
    assert sorted(report.unpack_suite(path, results)) == ["kernel-configs-2026-01-02-GPU-X.json",
                                                          "profile-2026-01-02T000000-GPU-X.json",
                                                          "steps-2026-01-02T000000-GPU-X.json"]
    assert json.loads((results / "steps-2026-01-02T000000-GPU-X.json").read_text()) == {"schema": "s",
                                                                                         "date": "2026-01-02"}
    assert report.unpack_suite(path, results) == []  # already there: left alone
    # the command line says what it unpacked
    for name in ("steps-2026-01-02T000000-GPU-X.json", "profile-2026-01-02T000000-GPU-X.json"):
        (results / name).unlink()
    assert report.main(["--results", str(results), "--unpack", str(path), "--print"]) == 0
    assert sorted(capsys.readouterr().out.splitlines()[:2]) == ["unpacked profile-2026-01-02T000000-GPU-X.json",
                                                               "unpacked steps-2026-01-02T000000-GPU-X.json"]


def test_sgld_study_smoke(tmp_path):
    """The SGLD variant study runs end to end and writes its JSON (the GPU suite runs it at full size). On a CPU its
    default compiles each SGLD step as the CPU engine does (here forced, --cpu-compile on: the smoke network is
    under auto's 1 GFLOP), and eager-step does not; both draw the same chains."""
    proc = subprocess.run([sys.executable, str(BENCH / "sgld_study.py"), "--device", "cpu", "--smoke", "--out",
                           str(tmp_path), "--batch-size", "6", "--cpu-compile", "on"], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    (path,) = tmp_path.glob("smoke-sgld-study-*.json")
    report = json.loads(path.read_text())
    # --smoke sets the sizes left at their defaults: a size given is the size run (and recorded)
    assert report["args"]["batch_size"] == 6 and report["args"]["depth"] == 10 and report["args"]["sgld_steps"] == 2
    # what a CPU runs by default, recorded as resolved
    assert report["args"]["precision"] == "fp32" and report["args"]["kernels"] == "reference"
    rows = {r["name"]: r for r in report["variants"]}
    assert set(rows) == {"default", "cudnn-try-all", "nchw", "split-2", "eager-step"}
    assert all(r["sgld_step_ms"] > 0 for r in rows.values())
    assert rows["default"]["compiled_step"] and not rows["eager-step"]["compiled_step"]
    # the input gradient and the update each compiled; nothing in the eager step
    assert rows["default"]["compiled_frames"] >= 2 and rows["eager-step"]["compiled_frames"] == 0, rows
    from fastjem.engine import cpu_malloc_available

    assert report["cpu_malloc_tuned"] == cpu_malloc_available()[0]  # the allocator a CPU engine runs with
    assert "No CUDA runtime is found" not in proc.stderr
    # the same chains, computed another way (split-2: in two blocks of rows, drawing the whole batch's noise)
    assert all(r["samples_max_abs_diff_vs_first"] < 1e-4 for r in rows.values())


def test_cpu_compile_study_smoke(tmp_path):
    """The CPU compile study runs end to end: every formulation's gradient is eager's, and its JSON is written.
    --smoke sets the sizes left at their defaults; a size given is the size run."""
    proc = subprocess.run([sys.executable, str(BENCH / "cpu_compile_study.py"), "--smoke", "--batch-size", "3",
                           "--out", str(tmp_path)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    (path,) = tmp_path.glob("smoke-cpu-compile-*.json")
    report = json.loads(path.read_text())
    assert report["model"] == "WRN-10-1" and report["batch_size"] == 3 and report["smoke"]
    for what in ("sgld", "train"):
        rows = report["gradients_ms"][what]
        assert set(rows) == {"eager", "compiled-network", "compiled-func-grad"}
        scale = rows["eager"]["max_abs"]
        assert scale > 0 and all(r["ms"] > 0 and r["max_abs_diff"] <= 1e-4 * scale for r in rows.values()), rows
    assert set(report["elementwise_ms"]) == {"leaky_relu", "leaky_relu + bool mask", "select on a bool mask"}
    # the whole iteration with the compiled SGLD gradient patched in trains the same network
    it = report["iteration_ms"]
    assert it["eager"]["ms"] > 0 and it["compiled-sgld-gradient"]["ms"] > 0
    # the same draws for both (each trainer's own generator states): the same samples and parameters to rounding
    assert it["iterations_each"] == 3 and it["params_max_abs_diff"] < 1e-6 and it["buffer_max_abs_diff"] < 1e-5
    assert it["iterations_run"] == {"eager": 3, "compiled-sgld-gradient": 3} and it["compiled_sgld_steps"] == 3 * 2
    out = proc.stdout
    assert out.startswith(f"WRN-10-1, batch 3, {report['device']['name']}, ")
    for what, rows in report["gradients_ms"].items():
        for name, r in rows.items():
            assert f"  {what:6s} {name:19s} {r['ms']:8.2f} ms" in out, (what, name)
    assert "  select on a bool mask    eager" in out and "  iteration (2 SGLD steps): eager" in out
    assert out.endswith(f"wrote {path}\n")


def test_profile_step_smoke(tmp_path):
    """The profile of an SGLD step runs end to end; its categories account for all the profiled time. --smoke runs
    the smallest sizes left at their defaults, marks the file as a smoke check (smoke-profile-..., which report.py
    leaves out), and keeps a size given."""
    proc = subprocess.run([sys.executable, str(BENCH / "profile_step.py"), "--device", "cpu", "--smoke",
                           "--batch-size", "4", "--steps", "2", "--out", str(tmp_path)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    (path,) = tmp_path.glob("*.json")
    assert path.name.startswith("smoke-profile-")
    report = json.loads(path.read_text())
    assert report["smoke"] and report["model"] == "WRN-10-1" and report["batch_size"] == 4
    assert report["sgld_steps_per_call"] == 2
    assert set(report["engines"]) == {"default", "matched", "reference"}
    for engine in report["engines"].values():
        shares = [c["share"] for c in engine["categories"].values()]
        assert abs(sum(shares) - 1) < 1e-6
        # the convolutions are found in their categories (their share of a one-rep smoke profile is load-dependent:
        # 4% on a busy 2-core machine)
        for category in ("convolution forward", "conv input-gradient"):
            assert engine["categories"][category]["ms_per_call"] > 0, (category, engine["categories"])


def test_profile_step_sees_the_compiled_gradients_convolutions(tmp_path, monkeypatch):
    """Where a CPU engine compiles its SGLD gradient, the profile calls the graph from inductor's Python wrapper:
    called from the C++ one the engine uses, the convolutions' input gradients were missing from the profile."""
    import profile_step

    import fastjem.engine as engine_mod

    monkeypatch.setattr(engine_mod, "SGLD_COMPILE_FLOPS", 0)  # WRN-10-1 compiled as WRN-10-2 is
    assert profile_step.main(["--device", "cpu", "--smoke", "--engines", "matched", "--out", str(tmp_path)]) == 0
    (path,) = tmp_path.glob("*.json")
    matched = json.loads(path.read_text())["engines"]["matched"]
    assert "compile SGLD step" in matched["engine"] and "called from Python, to be profiled" in matched["engine"]
    assert matched["categories"]["conv input-gradient"]["ms_per_call"] > 0, matched["categories"]


def test_report_refuses_what_would_empty_the_readmes_results(tmp_path, capsys):
    """A --results folder that does not exist or holds no results was an empty table written over the README's
    measured results; a missing --readme or an --unpack file that is not a gpu_suite JSON was a traceback; a
    damaged result file was skipped without a word. The README is left as it was."""
    readme = tmp_path / "README.md"
    readme.write_text(f"# x\n{report.BEGIN}\nthe measured tables\n{report.END}\n")
    before = readme.read_text()
    (tmp_path / "empty").mkdir()
    (tmp_path / "suite.json").write_text("[1, 2]")
    for args, message in ((["--results", str(tmp_path / "typo")], "no such folder"),
                          (["--results", str(tmp_path / "empty")], "holds no results"),
                          (["--results", str(report.RESULTS), "--readme", str(tmp_path / "none.md")], "--readme"),
                          (["--results", str(tmp_path / "empty"), "--unpack", str(tmp_path / "suite.json")],
                           "not a gpu_suite.json")):
        with pytest.raises(SystemExit) as exc:
            report.main([*args, "--readme", str(readme)] if "--readme" not in args else args)
        assert exc.value.code == 2 and message in capsys.readouterr().err, args
        assert readme.read_text() == before
    results = tmp_path / "results"
    shutil.copytree(report.RESULTS, results, ignore=shutil.ignore_patterns("*.png", "*.log", "*.md"))
    (results / "steps-2099-01-01T000000-Damaged.json").write_text('{"schema": "fastjem-bench-steps/1", "da')
    assert report.main(["--results", str(results), "--readme", str(readme), "--plot", str(tmp_path / "p.png")]) == 0
    assert "skipped steps-2099-01-01T000000-Damaged.json: not a readable JSON result" in capsys.readouterr().err
    assert "the measured tables" not in readme.read_text() and "| WRN-28-10 |" in readme.read_text()
    # a README without the section (or its markers the wrong way round): said, and nothing written
    for text in ("# x\nno section\n", f"# x\n{report.END}\nold\n{report.BEGIN}\n"):
        readme.write_text(text)
        with pytest.raises(SystemExit, match="has no <!-- results:begin --> ... <!-- results:end --> section"):
            report.update_readme(readme, "| new |")
        assert readme.read_text() == text


def test_a_report_write_that_fails_leaves_the_readme_and_history_whole(tmp_path, monkeypatch):
    """README.md and HISTORY.md are replaced whole or not at all: a write that failed part-way (here a name that
    cannot be encoded; Ctrl-C or a full disk alike) truncated the README, its hand-written text and all."""
    readme = tmp_path / "README.md"
    readme.write_text(f"# x\nprose\n{report.BEGIN}\nthe measured tables\n{report.END}\nmore prose\n")
    before = readme.read_text()
    results = tmp_path / "results"
    results.mkdir()
    (results / report.HISTORY_NAME).write_text("# Every measured run\n\nthe old history\n")
    # a lone surrogate: what a name read from bytes that are not UTF-8 (os.fsdecode) carries
    (results / "quick-2026-12-01T000000-GPU.json").write_text(json.dumps(
        {"date": "2026-12-01T00:00:00", "device": {"type": "cuda", "name": "GPU \udcff"}, "preset": "quick",
         "config": {"arch": "convnet", "width": 16}, "iterations": 800, "wall_seconds": 60.0}))
    for args in ([], ["--markdown", str(tmp_path / "out.md")]):
        with pytest.raises(UnicodeEncodeError):
            report.main(["--results", str(results), "--readme", str(readme), *args])
        assert readme.read_text() == before
    with pytest.raises(UnicodeEncodeError):
        report.main(["--results", str(results), "--print", "--markdown", str(tmp_path / "out.md")])
    assert not (tmp_path / "out.md").exists() and not list(tmp_path.glob(".out.md*"))
    assert not list(tmp_path.glob(".README.md*"))  # no temporary file left beside it
    # HISTORY.md alone failing: the README's write went through, the history is the old one, whole
    real = report.render

    def render(results, *args, latest=False, **kwargs):
        text = real(results, *args, latest=latest, **kwargs)
        return text if latest else text + "\udcff"

    monkeypatch.setattr(report, "render", render)
    (results / "quick-2026-12-01T000000-GPU.json").write_text(json.dumps(
        {"date": "2026-12-01T00:00:00", "device": {"type": "cuda", "name": "GPU"}, "preset": "quick"}))
    with pytest.raises(UnicodeEncodeError):
        report.main(["--results", str(results), "--readme", str(readme)])
    assert "| GPU |" in readme.read_text() and "prose" in readme.read_text()
    assert (results / report.HISTORY_NAME).read_text() == "# Every measured run\n\nthe old history\n"


def test_an_unpack_or_a_plot_cut_short_leaves_no_half_file(tmp_path, monkeypatch):
    """An unpacked result is written whole or not at all: one cut short stayed half-written, and since unpacking
    leaves an existing file alone, a second --unpack never repaired it. The plot alike keeps its last whole
    version."""
    suite = tmp_path / "gpu_suite.json"
    suite.write_text(json.dumps({"steps": {"date": "2026-01-02", "_file": "steps-2026-01-02T000000-GPU-X.json"}}))
    results = tmp_path / "results"
    real = json.dumps
    # the text to write ends in what cannot be encoded: its write fails after the part before it
    monkeypatch.setattr(report.json, "dumps", lambda *a, **k: real(*a, **k)[:-2] + "\udcff")
    with pytest.raises(UnicodeEncodeError):
        report.unpack_suite(suite, results)
    monkeypatch.setattr(report.json, "dumps", real)
    assert report.unpack_suite(suite, results) == ["steps-2026-01-02T000000-GPU-X.json"]
    assert json.loads((results / "steps-2026-01-02T000000-GPU-X.json").read_text()) == {"date": "2026-01-02"}

    class CutShort:
        def savefig(self, target, **kwargs):
            with open(target, "wb") if isinstance(target, (str, Path)) else contextlib.nullcontext(target) as f:
                f.write(b"\x89PNG half")
            raise OSError("cut short")

    png = tmp_path / "p.png"
    png.write_bytes(b"\x89PNG the last whole plot")
    monkeypatch.setattr(report, "figure", lambda results: CutShort())
    with pytest.raises(OSError, match="cut short"):
        report.plot({"steps": []}, png)
    assert png.read_bytes() == b"\x89PNG the last whole plot" and sorted(tmp_path.iterdir()) == sorted(
        [suite, results, png])


def test_report_skips_and_names_a_result_it_cannot_show(tmp_path, capsys):
    """A results file that parses but holds no result of its kind (a JSON list; a steps file of another format,
    a field missing) is named and left out, the others rendered: it was a traceback (AttributeError, KeyError)
    that named no file and left the README as it was."""
    readme = tmp_path / "README.md"
    readme.write_text(f"# x\n{report.BEGIN}\nthe tables before\n{report.END}\n")
    results = tmp_path / "results"
    results.mkdir()
    good = "steps-2026-11-30T012957-NVIDIA-H200.json"
    shutil.copy(report.RESULTS / good, results / good)
    older = json.loads((report.RESULTS / good).read_text())
    for c in older["configs"]:
        c.pop("sgld_steps", None)
    (results / "steps-2026-01-01T000000-Older.json").write_text(json.dumps(older))
    (results / "kernels-2026-01-01T000000-List.json").write_text(json.dumps([{"op": "sgld_step_"}]))
    assert report.main(["--results", str(results), "--readme", str(readme), "--plot", str(tmp_path / "p.png")]) == 0
    err = capsys.readouterr().err
    assert "skipped steps-2026-01-01T000000-Older.json: not a steps result this report can show (no 'sgld_steps')" \
        in err, err
    assert "skipped kernels-2026-01-01T000000-List.json: not a kernels result (a JSON list, not an object)" in err
    assert "| WRN-28-10 |" in readme.read_text() and "the tables before" not in readme.read_text()
    loaded = report.load_results(results)
    assert [r["_file"] for r in loaded["steps"]] == [good] and loaded["kernels"] == []


def test_report_refuses_a_plot_or_markdown_path_it_cannot_write_before_any_work(tmp_path, capsys):
    """--plot naming a folder or no image (a traceback after the tables were drawn; with no suffix, a .png was
    added to the file the README's image link did not name), --markdown naming a folder, --results naming a
    file: said before any work, nothing written."""
    (tmp_path / "results.json").write_text("{}")
    for args, message in ((["--plot", str(tmp_path)], "--plot " + str(tmp_path) + ": name an image file (.png,"),
                          (["--plot", str(tmp_path / "speeds")], "name an image file"),
                          (["--plot", str(tmp_path / "speeds.txt")], "name an image file"),
                          (["--markdown", str(tmp_path)], "a folder; name the markdown file to write"),
                          (["--results", str(tmp_path / "results.json")], "a file, not a folder")):
        with pytest.raises(SystemExit) as exc:
            report.main(["--print", *args])
        assert exc.value.code == 2 and message in capsys.readouterr().err, args
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results.json"]
    assert report.main(["--print", "--plot", str(tmp_path / "speeds.SVG")]) == 0
    assert (tmp_path / "speeds.SVG").read_bytes().lstrip().startswith(b"<?xml")


def test_a_failed_cifar_run_gets_no_row():
    ok = {"status": "ok", "date": "2026-01-02T00:00:00", "device": {"name": "GPU X"}, "model": "WRN-28-10",
          "batch_size": 64, "train_seconds": 600.0, "iterations": 5000, "it_per_s_steady": 9.5, "test_acc": 0.5}
    failed = {"status": "failed: RuntimeError: out of memory", "date": "2026-01-03T00:00:00",
              "device": {"name": "GPU X"}, "model": "WRN-28-10", "batch_size": 64}
    rows = report.cifar_table([ok, failed])[2:]
    assert rows == ["| 2026-01-02 | GPU X | WRN-28-10 | 64 | 10.0 | 5000 | 9.50 | 50.00% | — |"]


def test_a_terminated_benchmark_removes_its_temporary_folder(tmp_path):
    """SIGTERM (timeout, a scheduler) exits through Python: the script's temporary folder, with its synthetic
    dataset and runs, is removed (the default handler left it in /tmp)."""
    import signal
    import time

    tmp = tmp_path / "tmp"
    tmp.mkdir()
    proc = subprocess.Popen([sys.executable, str(BENCH / "steps_per_sec.py"), "--device", "cpu", "--smoke", "--out",
                             str(tmp_path / "out")], env={**os.environ, "TMPDIR": str(tmp)},
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while not list(tmp.glob("fastjem-bench-*/*")) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    assert proc.poll() is None and list(tmp.glob("fastjem-bench-*")), "the script had no temporary folder yet"
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=60) == 128 + signal.SIGTERM, proc.stderr.read().decode()[-2000:]
    assert not list(tmp.glob("fastjem-bench-*"))


def test_cifar_run_uses_the_folder_given_or_says_it_holds_no_cifar(tmp_path, monkeypatch):
    """--cifar-dir with a typo is an error, not a quiet fall back to another copy (FASTJEM_CIFAR10_DIR, or the
    shared one beside the repository); without it the first copy found is taken."""
    import cifar_run

    good = tmp_path / "cifar"
    for split in ("train", "test"):
        (good / split).mkdir(parents=True)
    monkeypatch.setenv("FASTJEM_CIFAR10_DIR", str(good))
    assert cifar_run.find_cifar("") == good and cifar_run.find_cifar(str(good)) == good
    with pytest.raises(SystemExit, match=r"--cifar-dir .*typo does not hold CIFAR-10: expected cifar10-train"):
        cifar_run.find_cifar(str(tmp_path / "typo"))
    # the script says so before it claims its results file (it left one saying "started")
    with pytest.raises(SystemExit, match=r"--cifar-dir .*typo does not hold CIFAR-10"):
        cifar_run.main(["--device", "cpu", "--cifar-dir", str(tmp_path / "typo"), "--out", str(tmp_path / "out")])
    assert not list((tmp_path / "out").iterdir())


def test_bench_scripts_refuse_bad_options_before_any_work(capsys, monkeypatch):
    import buffer_init_quality
    import cifar_run
    import cpu_compile_study
    import precision_quality
    import profile_step
    import quick_run
    import sgld_study

    for script, args, message in (
            (steps_per_sec, ["--windows", "0"], "--windows must be >= 1"),
            (steps_per_sec, ["--batch-size", "-3"], "--batch-size must be >= 0"),
            (steps_per_sec, ["--warmup", "0"], "--warmup must be >= 1"),  # it became 2 without a word
            (steps_per_sec, ["--sgld-parts", "3"], "invalid choice"),
            (steps_per_sec, ["--configs", "wrn-10-2,wrn-99-1"], "unknown config(s) wrn-99-1; choose from wrn-10-2"),
            (profile_step, ["--engines", "reference,foo"], "--engines takes"),
            (profile_step, ["--steps", "0"], "--steps must be >= 1"),
            (profile_step, ["--width", "-2"], "--width must be > 0 (or 0 for the device's default)"),
            (precision_quality, ["--precisions", "fp32", "fp16"], "--precision must be one of"),
            (precision_quality, ["--precisions", "bf16", "bf16"], "--precisions two different precisions"),
            (precision_quality, ["--seeds", "2", "2"], "--seeds must be distinct"),
            (quick_run, ["--preset", "bogus"], "invalid choice"),
            (quick_run, ["--iters", "-1"], "--iters must be > 0"),
            (buffer_init_quality, ["--preset", "bogus"], "invalid choice"),
            (buffer_init_quality, ["--iters", "-5"], "--iters must be > 0"),
            (buffer_init_quality, ["--seeds", "1", "1"], "--seeds and --variants must be distinct"),
            (buffer_init_quality, ["--variants", "uniform:20", "uniform:x"], "a variant is INIT:STEPS"),
            (buffer_init_quality, ["--variants", "noise:20"], "a variant is INIT:STEPS with INIT one of"),
            (sgld_study, ["--batch-size", "0"], "--batch-size must be >= 1"),
            (sgld_study, ["--sgld-steps", "-1"], "--sgld-steps must be >= 1"),
            (sgld_study, ["--windows", "0"], "--windows must be >= 1"),
            (sgld_study, ["--smoke", "--warmup", "-1"], "--warmup must be >= 0, got -1"),
            (sgld_study, ["--depth", "7"], "--depth must be 6n+4"),
            (sgld_study, ["--smoke", "--variants", "nosuch"], "unknown variant(s) nosuch"),
            (sgld_study, ["--smoke", "--variants", "default,max-autotune"], "--smoke runs only"),  # one dropped
            (profile_step, ["--depth", "7"], "--depth must be 6n+4"),
            (cpu_compile_study, ["--smoke", "--depth", "12"], "--depth must be 6n+4"),
            (cpu_compile_study, ["--smoke", "--batch-size", "0"], "--batch-size must be >= 1"),
            (cpu_compile_study, ["--smoke", "--windows", "0"], "--windows must be >= 1"),
            (cpu_compile_study, ["--smoke", "--sgld-steps", "-1"], "--sgld-steps must be >= 0"),
            (cifar_run, ["--width", "0"], "--width must be >= 1"),
            (cifar_run, ["--minutes", "inf"], "--minutes must be a finite number > 0"),  # it never stopped
            (cifar_run, ["--warmup", "-1"], "--warmup must be >= 0"),  # no steady it/s
            (cifar_run, ["--total-seconds", "nan"], "--total-seconds must be a finite number >= 0"),
            (quick_run, ["--out", __file__], "a file, not a folder"),  # refused before the run, not after it
            (profile_step, ["--out", __file__], "a file, not a folder"),
            (report, ["--unpack", "/nonexistent/gpu_suite.json"], "no such file")):
        with pytest.raises(SystemExit) as exc:
            (script.parse_args if script is steps_per_sec else script.main)(args)
        assert exc.value.code == 2 and message in capsys.readouterr().err, (script.__name__, args)
    if not torch.cuda.is_available():
        for script in (sgld_study, profile_step, cifar_run, steps_per_sec):
            with pytest.raises(SystemExit):
                script.main(["--device", "cuda"])
            assert "--device cuda: no CUDA device here" in capsys.readouterr().err, script.__name__
    # a CPU variant asked for on CUDA (where the network is compiled instead): refused before any CUDA work
    monkeypatch.setattr(sgld_study, "pick_device", lambda parser, name: torch.device("cuda"))
    with pytest.raises(SystemExit):
        sgld_study.main(["--variants", "default,eager-step"])
    assert "eager-step: a CPU variant" in capsys.readouterr().err


def test_bench_scripts_refuse_a_config_variant_or_engine_listed_twice(tmp_path, capsys, monkeypatch):
    """A config, variant or engine listed twice was run twice (a profile replacing the first, a row repeated in the
    results): refused before any work, as ``fastjem bench`` refuses a batch size given twice."""
    import profile_step
    import sgld_study

    def ran(*args):
        raise AssertionError("ran before its options were checked")

    monkeypatch.setattr(sgld_study, "run_variant", ran)
    monkeypatch.setattr(profile_step, "profile", ran)
    for run, message in ((lambda: steps_per_sec.parse_args(["--configs", "wrn-10-2,wrn-16-8,wrn-10-2"]),
                          "--configs lists wrn-10-2 twice"),
                         (lambda: sgld_study.main(["--device", "cpu", "--smoke", "--variants", "nchw,default,nchw",
                                                   "--out", str(tmp_path)]), "--variants lists nchw twice"),
                         (lambda: profile_step.main(["--device", "cpu", "--smoke", "--engines", "default,default",
                                                     "--out", str(tmp_path)]), "--engines lists default twice")):
        with pytest.raises(SystemExit) as exc:
            run()
        assert exc.value.code == 2 and message in capsys.readouterr().err, message
    assert not list(tmp_path.iterdir())


def test_a_shortened_quick_run_is_a_smoke_run_and_cpu_rows_name_their_threads(tmp_path, capsys):
    """quick_run --iters (a check of the script) writes smoke-quick-*.json, which the README's tables leave out
    (it replaced the 800-iteration row before); a CPU row names its threads, so a 1-thread run does not stand in
    for a 2-thread one."""
    import quick_run

    assert quick_run.main(["--iters", "2", "--out", str(tmp_path)]) == 0
    (path,) = tmp_path.glob("smoke-quick-*.json")
    assert json.loads(path.read_text())["smoke"] is True and not list(tmp_path.glob("quick-*.json"))
    assert report.load_results(tmp_path)["quick"] == []
    rep = json.loads(path.read_text())
    assert rep["classifier_only"] is False and rep["config"]["px_weight"] > 0 and rep["config"]["precision"] == "auto"
    # the baseline row and a precision other than the preset's reach the run they record
    capsys.readouterr()
    assert quick_run.main(["--iters", "1", "--classifier-only", "--precision", "fp32", "--out",
                           str(tmp_path / "base")]) == 0
    assert "quick (classifier only): 1 iteration in " in capsys.readouterr().out  # not "1 iterations"
    (path,) = (tmp_path / "base").glob("smoke-quick-*.json")
    rep = json.loads(path.read_text())
    assert rep["classifier_only"] is True and rep["config"]["px_weight"] == rep["config"]["pxy_weight"] == 0.0
    assert rep["config"]["precision"] == "fp32" and rep["engine"].startswith("precision fp32,"), rep["engine"]
    cpu = {"device": {"type": "cpu", "name": "Some CPU", "threads": 2}}
    assert report._device(cpu) == "Some CPU, 2 threads"
    assert report._device({"device": {"type": "cuda", "name": "GPU X"}}) == "GPU X"


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the refusal on a machine without CUDA")
def test_gpu_suite_refuses_a_machine_without_cuda_before_any_stage():
    before = set((BENCH / "results").iterdir())
    proc = subprocess.run(["bash", str(BENCH / "gpu_suite.sh")], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHON": sys.executable, "SKIP_INSTALL": "1"})
    assert proc.returncode == 2 and "no CUDA device here" in proc.stderr, proc.stderr
    assert set((BENCH / "results").iterdir()) == before  # no results file named for no device


def fake_topology(root, cpus, threads_per_core: int):
    """A sysfs CPU folder for ``cpus``, ``threads_per_core`` consecutive CPUs to a core."""
    for i, n in enumerate(cpus):
        topo = root / f"cpu{n}" / "topology"
        topo.mkdir(parents=True)
        (topo / "physical_package_id").write_text("0\n")
        (topo / "core_id").write_text(f"{i // threads_per_core}\n")
    return root


def test_cpu_bars_pins_one_thread_on_each_physical_core(tmp_path):
    """bench/cpu_bars.sh: with this process's CPUs two to a core (as a VM may number them: CPUs 0 and 1 one core's
    two threads), N cores are every second CPU; the default precision is what training picks on this CPU; too many
    cores is refused."""
    from env_info import one_cpu_per_core

    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        pytest.skip("needs two CPUs to pair")
    sys_cpu = fake_topology(tmp_path / "sys", cpus, 2)
    cores = (len(cpus) + 1) // 2
    assert one_cpu_per_core(cores, sys_cpu) == cpus[::2]
    assert one_cpu_per_core(1, fake_topology(tmp_path / "one", cpus, len(cpus))) == cpus[:1]
    # the bf16 probe's answer cached for every thread count (a probe timed beside other work is not kept: two
    # timings on a loaded machine could fall on either side of the threshold)
    from helpers import cache_bf16_probe

    cache = tmp_path / "cache"
    cache_bf16_probe(cache / "cpu-bf16-probe.json", 2.0, 1.0)
    env = {**os.environ, "SYS_CPU": str(sys_cpu), "PYTHON": sys.executable, "DRY_RUN": "1", "FASTJEM_CACHE": str(cache)}
    run = lambda **extra: subprocess.run(["bash", str(BENCH / "cpu_bars.sh")], capture_output=True,  # noqa: E731
                                         text=True, timeout=120, env={**env, **extra})
    proc = run(CORES=str(cores))
    pinned = ",".join(map(str, cpus[::2]))
    # training's pick, made under the script's environment (its thread count and the probe's cache)
    ask = "import torch\nfrom fastjem.engine import fast_bf16\nprint(fast_bf16(torch.device('cpu'))[0])"
    picked = subprocess.run([sys.executable, "-c", ask], capture_output=True, text=True, timeout=120, env=env)
    precision = "bf16" if picked.stdout.strip() == "True" else "fp32"
    assert picked.returncode == 0 and picked.stdout.strip() in ("True", "False"), picked.stderr
    assert proc.returncode == 0, proc.stderr
    steps, study, profile = proc.stdout.splitlines()[1:]
    assert steps.startswith(f"taskset -c {pinned} ") and f"steps_per_sec.py --device cpu --threads {cores}" in steps
    pin = f"OMP_NUM_THREADS={cores} taskset -c {pinned} "
    assert pin in study and f"--precision {precision} " in study
    assert pin in profile and "profile_step.py --device cpu --out" in profile
    assert "profile_step.py --device cpu --smoke --out" in run(CORES="1", SMOKE="1").stdout.splitlines()[3]
    assert run(CORES="1").stdout.splitlines()[1].startswith(f"taskset -c {cpus[0]} ")
    for cores_asked, said in ((str(cores + 1), f"fewer than {cores + 1} physical cores"), ("0", "positive count"),
                              ("two", "positive count")):
        proc = run(CORES=cores_asked)
        assert proc.returncode == 2 and said in proc.stderr and not proc.stdout, (cores_asked, proc.stderr)
    proc = run(CORES="1", SYS_CPU=str(tmp_path / "missing"))
    assert proc.returncode == 2 and "cpu_topology: cannot read the CPU topology" in proc.stderr, proc.stderr


FAKE_PY = r"""#!/usr/bin/env bash
# A stand-in interpreter: CUDA present; the GPU stages and the benchmarks record where they ran and write a stand-in
# result to their --out; everything else (the CPU topology, the suite's packing) runs on the real one.
aff=$(grep Cpus_allowed_list /proc/self/status | cut -f2)
case "$*" in
  *torch.cuda.is_available*|"-m pip"*|"-m fastjem env"*|bench/report.py*|"-m pytest bench/bench_kernels.py"*)
    exit 0 ;;
  bench/env_info.py*|bench/cpu_topology.py*)
    exec "$REAL_PY" "$@" ;;
  "-m pytest -m gpu"*)
    echo "pytest_gpu $aff $(date +%s.%N)" >>"$FAKE_LOG"; sleep 2; exit 0 ;;
  bench/*.py*)
    out=; prev=; device=cuda
    for a in "$@"; do [[ $prev == --out ]] && out=$a; [[ $prev == --device ]] && device=$a; prev=$a; done
    kind=$(basename "$1" .py); kind=${kind/steps_per_sec/steps}; kind=${kind/sgld_study/sgld-study}
    kind=${kind/profile_step/profile}; kind=${kind/cifar_run/cifar}
    echo "$kind-$device $aff $(date +%s.%N)" >>"$FAKE_LOG"
    echo "{\"date\": \"2026-01-01\", \"device\": \"$device\", \"cpus\": \"$aff\"}" \
      >"$out/$kind-2026-01-01T000000-$device.json"
    sleep 1; exit 0 ;;
esac
exec "$REAL_PY" "$@"
"""


def test_gpu_suite_runs_the_cpu_bars_beside_the_gpu_tests_on_cores_of_their_own(tmp_path):
    """CPU_BARS=1 (a stand-in interpreter for the GPU's parts): cpu_bars.sh runs on its pinned core while the GPU
    tests run on the others; no timed GPU stage starts before it ends; its results come back packed in
    gpu_suite.json, which report.py --unpack writes out again, and $OUT still gets at most 8 files. SKIP_CIFAR=1
    gives the CIFAR-10 run's time to iterations/s."""
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        pytest.skip("needs two CPUs: one for the CPU bars, one beside them")
    repo = tmp_path / "repo"
    shutil.copytree(BENCH, repo / "bench", ignore=shutil.ignore_patterns("results", "__pycache__"))
    fake = tmp_path / "python"
    fake.write_text(FAKE_PY)
    fake.chmod(0o755)
    log, out = tmp_path / "calls.log", tmp_path / "out"
    env = {**os.environ, "PYTHON": str(fake), "REAL_PY": sys.executable, "FAKE_LOG": str(log), "OUT": str(out),
           "SKIP_INSTALL": "1", "CPU_BARS": "1", "CPU_BARS_CORES": "1", "SUITE_SECONDS": "360", "SKIP_CIFAR": "1",
           "SYS_CPU": str(fake_topology(tmp_path / "sys", cpus, 1))}
    proc = subprocess.run(["bash", str(repo / "bench" / "gpu_suite.sh")], capture_output=True, text=True,
                          timeout=300, env=env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    calls = [line.split() for line in log.read_text().splitlines()]
    where = {name: aff for name, aff, _ in calls}
    when = {name: float(t) for name, _, t in calls}
    beside = ",".join(map(str, cpus[1:])) if len(cpus) > 2 else str(cpus[1])
    assert where["steps-cpu"] == where["sgld-study-cpu"] == where["profile-cpu"] == str(cpus[0])
    assert _cpu_set(where["pytest_gpu"]) == _cpu_set(beside)
    assert when["steps-cuda"] > max(when["steps-cpu"], when["sgld-study-cpu"], when["profile-cpu"])
    suite = json.loads((out / "gpu_suite.json").read_text())
    stages = {s["stage"]: s for s in suite["stages"]}
    assert stages["cpu_bars"]["status"] == stages["pytest_gpu"]["status"] == "ok", stages
    # SKIP_CIFAR: no CIFAR-10 run, and its time goes to iterations/s (the stage's cap, not 360 s less the run's)
    assert stages["cifar10"]["status"] == "skipped: SKIP_CIFAR" and "cifar-cuda" not in where
    assert stages["steps_per_sec"]["timeout"] == 250
    # and the kernels' stage keeps its cap (360 s less the reserve kept with the CIFAR-10 run was 70 s)
    assert stages["kernels"]["timeout"] == 105
    assert suite["cpu_steps"]["device"] == "cpu" and suite["steps"]["device"] == "cuda"
    assert suite["cpu_steps"]["_file"] == "steps-2026-01-01T000000-cpu.json"
    assert {suite[k]["cpus"] for k in ("cpu_steps", "cpu_sgld_study", "cpu_profile")} == {str(cpus[0])}
    assert len(list(out.iterdir())) <= 8
    assert "steps-2026-01-01T000000-cpu.json" in report.unpack_suite(out / "gpu_suite.json", tmp_path / "unpacked")


def test_gpu_suite_cut_off_mid_stage_leaves_in_out_what_had_finished(tmp_path):
    """The device tool returns what is under $OUT when it kills a command at its limit: the suite collects into $OUT
    after every stage, so a suite killed during iterations/s still returns gpu_suite.json with the stages before it
    (it filled $OUT only at its very end: a cut-off suite returned nothing)."""
    repo = tmp_path / "repo"
    shutil.copytree(BENCH, repo / "bench", ignore=shutil.ignore_patterns("results", "__pycache__"))
    fake = tmp_path / "python"
    # the iterations/s stage kills the suite itself, as the machine's limit would
    kill = '  bench/steps_per_sec.py*)\n    kill -9 "$(cat "$SUITE_PID")"; exit 1 ;;\n'
    fake.write_text(FAKE_PY.replace('  bench/*.py*)\n', kill + '  bench/*.py*)\n', 1))
    fake.chmod(0o755)
    out, pid_file = tmp_path / "out", tmp_path / "suite.pid"
    env = {**os.environ, "PYTHON": str(fake), "REAL_PY": sys.executable, "FAKE_LOG": str(tmp_path / "calls.log"),
           "OUT": str(out), "SKIP_INSTALL": "1", "SKIP_CIFAR": "1", "SUITE_PID": str(pid_file)}
    proc = subprocess.Popen(["bash", str(repo / "bench" / "gpu_suite.sh")], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env=env)
    pid_file.write_text(str(proc.pid))
    assert proc.wait(timeout=120) == -9
    suite = json.loads((out / "gpu_suite.json").read_text())
    assert [(s["stage"], s["status"]) for s in suite["stages"]] == [("pytest_gpu", "ok"), ("kernels", "ok")]
    assert "== kernels: ok" in (out / "gpu_suite.log").read_text()


FALLBACK_PY = r"""#!/usr/bin/env bash
# A stand-in interpreter whose pip cannot install: the GPU tests' stage records whether fastjem.kernels imports in
# the repository's root, as pytest runs there (the venv's editable install of another checkout left out)
case "$*" in
  *torch.cuda.is_available*|"-m fastjem env"*|"-m pytest bench/bench_kernels.py"*|bench/*.py*) exit 0 ;;
  "-m pip"*) exit 1 ;;
  "-m pytest -m gpu"*)
    exec "$REAL_PY" -c "import sys; sys.meta_path = [f for f in sys.meta_path if 'editable' not in str(f).lower()]
import fastjem.kernels; print('imported', fastjem.kernels.__name__)" >>"$FAKE_LOG" 2>&1 ;;
esac
exec "$REAL_PY" "$@"
"""


def test_gpu_suite_install_fallback_reaches_the_stages_run_in_the_repository(tmp_path):
    """Where pip cannot install fastjem, the suite lays the package out by symlinks on PYTHONPATH; but Python run in
    the repository's root (pytest's GPU tests and kernels, the CPU bars' precision probe) imports ./fastjem first,
    which has no kernels/ (they are installed as fastjem.kernels from ./kernels): every such stage failed."""
    root = Path(__file__).resolve().parents[1]
    repo = tmp_path / "repo"
    shutil.copytree(BENCH, repo / "bench", ignore=shutil.ignore_patterns("results", "__pycache__"))
    shutil.copytree(root / "kernels", repo / "kernels", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(root / "fastjem", repo / "fastjem", ignore=shutil.ignore_patterns("__pycache__", "kernels"))
    fake = tmp_path / "python"
    fake.write_text(FALLBACK_PY)
    fake.chmod(0o755)
    log = tmp_path / "calls.log"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "OUT")}
    env.update(PYTHON=str(fake), REAL_PY=sys.executable, FAKE_LOG=str(log), SUITE_SECONDS="600", SKIP_CIFAR="1")
    proc = subprocess.run(["bash", str(repo / "bench" / "gpu_suite.sh")], capture_output=True, text=True,
                          timeout=300, env=env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    (suite,) = (repo / "bench" / "results").glob("gpu_suite-*.json")
    install = json.loads(suite.read_text())["stages"][0]
    assert install["stage"] == "install" and install["status"] == "ok", install
    assert log.read_text().strip().endswith("imported fastjem.kernels"), log.read_text()[-2000:]


def test_gpu_suite_json_records_the_device_versions_git_sha_and_date(tmp_path):
    """gpu_suite.json (the stages' outcomes and times, every result packed) is a results file: it held no device,
    versions, git sha or date (STYLE.md item 7), so a suite whose stages all failed said nothing of the machine."""
    repo = tmp_path / "repo"
    shutil.copytree(BENCH, repo / "bench", ignore=shutil.ignore_patterns("results", "__pycache__"))
    git = lambda *a: subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", *a],  # noqa: E731
                                    capture_output=True, text=True, check=True).stdout.strip()
    git("init", "-q")
    git("add", "bench")
    git("commit", "-qm", "bench")
    site = tmp_path / "site"
    site.mkdir()
    # a CUDA device, for the suite's own check of the machine
    (site / "sitecustomize.py").write_text("import torch\ntorch.cuda.is_available = lambda: True\n"
                                           "torch.cuda.get_device_name = lambda *a: 'NVIDIA Stand-in'\n"
                                           "torch.cuda.get_device_capability = lambda *a: (9, 0)\n")
    fake = tmp_path / "python"
    fake.write_text('#!/usr/bin/env bash\ncase "$*" in\n  *torch.cuda.is_available*) PYTHONPATH=$FAKE_SITE exec '
                    '"$REAL_PY" "$@" ;;\n  "-m pytest"*|bench/*.py*) exit 0 ;;\nesac\nexec "$REAL_PY" "$@"\n')
    fake.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k != "OUT"}
    env.update(PYTHON=str(fake), REAL_PY=sys.executable, FAKE_SITE=str(site), SKIP_INSTALL="1", SKIP_CIFAR="1",
               SUITE_SECONDS="600")
    proc = subprocess.run(["bash", str(repo / "bench" / "gpu_suite.sh")], capture_output=True, text=True,
                          timeout=300, env=env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    (path,) = (repo / "bench" / "results").glob("gpu_suite-*.json")
    suite = json.loads(path.read_text())
    assert suite["device"] == {"type": "cuda", "name": "NVIDIA Stand-in", "capability": "9.0"}
    assert suite["versions"]["torch"] == torch.__version__ and suite["versions"]["python"]
    assert suite["git"] == {"sha": git("rev-parse", "HEAD"), "dirty": False}
    assert suite["date"][:2] == "20" and "T" in suite["date"]


def _cpu_set(listed: str) -> set[int]:
    """The CPUs of a list like 0-2,5."""
    cpus = set()
    for part in listed.split(","):
        lo, _, hi = part.partition("-")
        cpus.update(range(int(lo), int(hi or lo) + 1))
    return cpus


def test_profile_categories_name_the_eager_energy_function():
    import profile_step

    assert profile_step.category("_LseEnergyEager") == "fused fastjem kernels"
    assert profile_step.category("aten::convolution_backward") == "conv input-gradient"


def test_profile_warms_up_under_a_profiler_of_its_own():
    """A process's first profiled operators ran ~10 times slower (109 against 9 ms per step at batch 2 on a 2-thread
    Intel Xeon): the warm-up calls run under a discarded profiler, so that cost never reaches the figures of the
    first engine profiled."""
    import profile_step

    profiled = []

    def call():
        profiled.append(torch._C._autograd._profiler_enabled())
        return torch.ones(4) * 2

    out = profile_step.profile(call, torch.device("cpu"), reps=3, rows=5)
    assert profiled == [True] * 5 and out["profiled_ms_per_call"] > 0


def test_smoke_keeps_the_options_given():
    args = steps_per_sec.parse_args(["--smoke", "--sgld-steps", "5", "--windows", "4"])
    assert (args.sgld_steps, args.windows, args.buffer_size, args.batch_size) == (5, 4, 200, 4)


def test_report_prints_without_touching_the_plot_and_names_a_missing_sha(tmp_path, capsys):
    assert report._git({"git": {"sha": None}}) == "-" and report._git({}) == "-"
    assert report._git({"git": {"sha": "0123456789ab", "dirty": True}}) == "01234567 + changes"
    results = tmp_path / "results"
    results.mkdir()
    for f in sorted((BENCH / "results").glob("steps-*Intel*.json"))[:1]:
        (results / f.name).write_text(f.read_text())
    assert report.main(["--results", str(results), "--print"]) == 0
    assert "| date |" in capsys.readouterr().out and not (results / report.PLOT_NAME).exists()


def test_a_reference_worker_that_dies_is_an_error_not_a_hang(tmp_path):
    """The reference's worker process failing at start (here a seed torch cannot take) left steps_per_sec waiting
    for ever: this process kept its copy of the worker's end of the pipe, so no end of file came."""
    code = (f"import sys, torch; sys.path.insert(0, {str(BENCH)!r}); import steps_per_sec\n"
            "from fastjem.config import TrainConfig\n"
            "cfg = TrainConfig(dataset='digits', arch='convnet', width=8, batch_size=4, buffer_size=100, "
            "sgld_steps=1, device='cpu', compile=False, seed=2 ** 70)\n"
            f"steps_per_sec.reference_worker_runner('reference-ieee', 'fp32', cfg, {str(tmp_path)!r}, "
            "torch.device('cpu'))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=240)
    assert done.returncode != 0
    assert "RuntimeError: the reference-ieee worker process failed to start (exit code 1" in done.stderr


def test_a_reference_worker_interrupted_ends_quietly_with_status_130(tmp_path):
    """Ctrl-C reaches the reference's worker process too (the terminal signals the whole process group): it printed a
    KeyboardInterrupt traceback beside the parent's; it says it was interrupted, in one line, and exits 130."""
    code = (f"import multiprocessing, os, signal, sys, torch; sys.path.insert(0, {str(BENCH)!r})\n"
            "import steps_per_sec\n"
            "from pathlib import Path\n"
            "from env_info import write_synthetic_imagefolder\n"
            # a background job of a shell without job control (CI under nohup ... &) starts with SIGINT ignored, and
            # so would the worker: Ctrl-C's handler, as a terminal's process has it
            "signal.signal(signal.SIGINT, signal.default_int_handler)\n"
            "from fastjem.config import TrainConfig\n"
            f"data = write_synthetic_imagefolder(Path({str(tmp_path)!r}) / 'data', per_class=2)\n"
            "cfg = TrainConfig(dataset='imagefolder', data_dir=str(data), arch='wrn', depth=10, width=1, batch_size=4, "
            "buffer_size=100, sgld_steps=1, device='cpu', compile=False)\n"
            "runner = steps_per_sec.reference_worker_runner('reference-ieee', 'ieee', cfg, data, torch.device('cpu'))\n"
            "runner.step()\n"
            "(worker,) = multiprocessing.active_children()\n"
            "os.kill(worker.pid, signal.SIGINT)\n"
            "worker.join(timeout=60)\n"
            "print('worker exit status', worker.exitcode)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "worker exit status 130" in done.stdout
    # after the data's decoding bars: the one line
    assert done.stderr.rstrip().endswith("\nreference-ieee worker process: interrupted"), done.stderr[-3000:]
    assert "Traceback" not in done.stderr and "KeyboardInterrupt" not in done.stderr, done.stderr[-3000:]


def test_run_script_ends_a_ctrl_c_with_one_line_naming_what_this_run_saved(tmp_path, monkeypatch, capsys):
    """Ctrl-C in a bench script printed a KeyboardInterrupt traceback: run_script ends it with one line naming the
    files the run had saved (not an earlier run's in the same process), and the shell's status for SIGINT."""
    import env_info

    monkeypatch.setattr(sys, "argv", ["a_study.py"])
    env_info.claim_result("{}\n", tmp_path, "earlier.json")

    def interrupted_after_a_write():
        env_info.claim_result("{}\n", tmp_path, "mine.json")
        raise KeyboardInterrupt

    def interrupted_before_any():
        raise KeyboardInterrupt

    def status(main):
        try:
            return env_info.run_script(main)
        except KeyboardInterrupt:  # (not pytest's own Ctrl-C: this run would stop)
            pytest.fail("run_script let Ctrl-C through: a traceback")

    assert status(interrupted_after_a_write) == 130
    assert capsys.readouterr().err == f"a_study.py: interrupted; saved so far: {tmp_path / 'mine.json'}\n"
    assert status(interrupted_before_any) == 130
    assert capsys.readouterr().err == "a_study.py: interrupted; nothing saved\n"
    assert status(lambda: 3) == 3 and capsys.readouterr().err == ""

    # a Ctrl-C in main, after the one while importing torch was set to end the script: run_script's, naming the file
    import signal
    import time

    import interrupted

    def ctrl_c_after_a_write():
        env_info.claim_result("{}\n", tmp_path, "later.json")
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(30)

    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        interrupted.quiet_while_importing("__main__")
        assert status(ctrl_c_after_a_write) == 130
    finally:
        signal.signal(signal.SIGINT, previous)
    assert capsys.readouterr().err == f"a_study.py: interrupted; saved so far: {tmp_path / 'later.json'}\n"


SCRIPTS = sorted(p.name for p in BENCH.glob("*.py") if "run_script(main)" in p.read_text())


@pytest.mark.parametrize("script", SCRIPTS)
def test_a_ctrl_c_while_a_script_imports_torch_ends_it_as_later(script):
    """Ctrl-C while a bench script was still importing torch (its first seconds) printed a KeyboardInterrupt
    traceback from within that import, where any later one ends the script with run_script's line and status 130:
    the same line and status now. Importing a script (as here) leaves Python's own Ctrl-C in place."""
    import signal

    import interrupted

    assert len(SCRIPTS) >= 11 and "env_info.py" in SCRIPTS
    assert signal.getsignal(signal.SIGINT) is not interrupted._end_while_importing
    # Ctrl-C as torch's import begins: a finder consulted for each module imported sends it
    code = (
        "import os, runpy, signal, sys\n"
        "class CtrlC:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'torch':\n"
        "            os.kill(os.getpid(), signal.SIGINT)\n"
        "sys.meta_path.insert(0, CtrlC())\n"
        f"sys.path.insert(0, {str(BENCH)!r})\n"  # as a script run by its path has it
        f"sys.argv = [{str(BENCH / script)!r}, '--help']\n"
        f"runpy.run_path(sys.argv[0], run_name='__main__')\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                          preexec_fn=lambda: signal.signal(signal.SIGINT, signal.default_int_handler))
    assert (done.returncode, done.stderr, done.stdout) == (130, f"{script}: interrupted; nothing saved\n", "")


@pytest.mark.parametrize("stop, status", [(KeyboardInterrupt(), 130), (pytest.exit.Exception("stopped"), 2)],
                         ids=["ctrl-c", "pytest-exit"])
def test_bench_kernels_ends_a_ctrl_c_as_the_other_scripts_do(monkeypatch, capsys, stop, status):
    """pytest ends a Ctrl-C with its status 2, as it ends a collection error or pytest.exit(): ``python
    bench/bench_kernels.py`` tells a Ctrl-C apart by pytest's hook and ends it as run_script does; the others keep
    pytest's status."""
    import bench_kernels
    import env_info

    def pytest_main(args, plugins):
        try:
            raise stop
        except BaseException:
            excinfo = pytest.ExceptionInfo.from_current()
        for plugin in plugins:
            plugin.pytest_keyboard_interrupt(excinfo=excinfo)
        return pytest.ExitCode.INTERRUPTED

    monkeypatch.setattr(pytest, "main", pytest_main)
    monkeypatch.setattr(sys, "argv", ["bench_kernels.py"])
    assert env_info.run_script(bench_kernels.main) == status
    assert capsys.readouterr().err == ("bench_kernels.py: interrupted; nothing saved\n" if status == 130 else "")


def test_bench_scripts_interrupted_end_quietly_with_status_130(tmp_path):
    """Ctrl-C in a bench script printed a KeyboardInterrupt traceback (quick_run, in training: a message and status
    1, "nothing recorded" also where a study had written its earlier runs). steps_per_sec interrupted after its first
    write (the equivalence gate's) and quick_run in training, before any: each ends with one line naming what it had
    saved, and status 130."""
    import signal
    import time

    def start(script, *args):
        return subprocess.Popen(
            [sys.executable, "-u", str(BENCH / script), *args, "--out", str(tmp_path / script)], text=True,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=dict(os.environ, OMP_NUM_THREADS="1"),
            # a background job of a shell without job control starts with SIGINT ignored: Ctrl-C's handler, as a
            # terminal's process has it
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.default_int_handler))

    steps = start("steps_per_sec.py", "--smoke")
    quick = start("quick_run.py", "--iters", "1000", "--precision", "fp32")
    try:
        while not (line := quick.stdout.readline()).startswith("schedule:") and line:
            pass
        time.sleep(0.3)  # past the schedule's line, into training, which catches SIGINT to stop after an iteration
        quick.send_signal(signal.SIGINT)
        deadline = time.monotonic() + 120
        while not list((tmp_path / "steps_per_sec.py").glob("*.json")) and time.monotonic() < deadline:
            time.sleep(0.02)
        steps.send_signal(signal.SIGINT)
        (_, quick_err), (_, steps_err) = quick.communicate(timeout=120), steps.communicate(timeout=120)
    finally:
        for proc in (steps, quick):
            proc.kill()
    assert quick.returncode == 130, quick_err[-3000:]
    assert "SIGINT received: stopping at the end of the iteration" in quick_err  # training's own Ctrl-C, caught
    assert quick_err.splitlines()[-1] == "quick_run.py: interrupted; nothing saved", quick_err[-3000:]
    assert not list((tmp_path / "quick_run.py").iterdir())
    (written,) = (tmp_path / "steps_per_sec.py").glob("*.json")
    assert steps.returncode == 130, steps_err[-3000:]
    assert steps_err.splitlines()[-1] == f"steps_per_sec.py: interrupted; saved so far: {written}", steps_err[-3000:]
    assert json.loads(written.read_text())["gate"]["passed"]  # whole: written atomically
    for err in (quick_err, steps_err):
        assert "Traceback" not in err and "KeyboardInterrupt" not in err, err[-3000:]


@pytest.mark.parametrize("when", ["in-training", "after-the-final-checkpoint"])
def test_quick_run_stopped_names_no_checkpoint_it_removes(when, tmp_path, monkeypatch, capsys):
    """quick_run trains in a temporary folder, removed as training returns: a Ctrl-C in training printed the stop's
    "checkpoint written to /tmp/fastjem-quick-.../checkpoint.pt" (after the final checkpoint: ".../checkpoint.pt holds
    iteration N, saved"), a file gone by the time it was read. The stop is said without it; the Ctrl-C goes on to
    run_script (its line: nothing saved)."""
    import signal

    import quick_run

    def ctrl_c():
        os.kill(os.getpid(), signal.SIGINT)  # caught by training, which stops after the iteration or the checkpoint

    class CtrlC(quick_run.Trainer):
        def train_step(self):
            if self.iteration == 2 and when == "in-training":
                ctrl_c()
            return super().train_step()

        def _end_outputs(self):
            ctrl_c()
            return super()._end_outputs()

    monkeypatch.setattr(quick_run, "Trainer", CtrlC)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    with pytest.raises(KeyboardInterrupt):
        quick_run.train_timed(quick_run.get_preset("quick").replace(iters=50 if when == "in-training" else 3,
                                                                    precision="fp32"))
    out = capsys.readouterr().out
    said = ("SIGINT received: stopped after iteration 3\n" if when == "in-training" else
            "SIGINT received after the final checkpoint: iteration 3; not written: ")
    assert said in out and "checkpoint written" not in out and str(tmp_path) not in out, out
    assert not list(tmp_path.glob("fastjem-quick-*"))  # (the folder the line named: removed)


def timed_runners(monkeypatch, runner):
    """run_config with every engine built by ``runner`` (name, ...) -> Runner, whose calls return the seconds they
    "took": ``timed`` sums them, and nothing else (data, FLOPs, the CPU's matmul) is loaded or measured."""
    from types import SimpleNamespace

    monkeypatch.setattr(steps_per_sec, "reference_worker_runner", runner)
    monkeypatch.setattr(steps_per_sec, "fastjem_runner", runner)
    monkeypatch.setattr(steps_per_sec, "timed", lambda fn, n, device: sum(fn() for _ in range(n)))
    monkeypatch.setattr(steps_per_sec, "load_arrays", lambda *a: SimpleNamespace(train_x=None, train_y=None))
    monkeypatch.setattr(steps_per_sec, "count_flops", lambda *a: {"per_iter": 1e9})
    monkeypatch.setattr(steps_per_sec, "cpu_matmul_ceiling", lambda *a: None)


def test_run_config_alternates_the_windows_and_derives_the_components_from_its_timings(tmp_path, monkeypatch):
    """run_config with engines that cost known seconds: the warm-up (its first, compiling call included) runs engine
    by engine and sizes the windows from its last call; the timed windows alternate the engines, reversed every other
    window, each engine's flags set before each window; the components follow one untimed call of each; and the
    numbers derive from the times as documented (an SGLD step is the sampler call less the buffer round trip, over
    the steps)."""

    log = []
    iter_s = {"reference-ieee": 2.0, "fastjem-matched": 1.0, "fastjem-default": 0.5}
    part_s = {"sample": 0.8, "buffer": 0.1, "draw": 0.2}
    windows, warmup, window_s = 3, 2, 12.0

    def runner(name, *_):
        calls = {"step": 0}

        def step():
            k, calls["step"] = calls["step"], calls["step"] + 1
            log.append((name, "step"))
            if k == 0:
                return 5.0  # the first call compiles
            if k < warmup:
                return iter_s[name]
            per_window = round(window_s / iter_s[name])
            return iter_s[name] * (1 + 0.1 * ((k - warmup) // per_window))  # each window 10% slower than the last

        def part(what):
            return lambda: log.append((name, what)) or part_s[what] * iter_s[name]

        kind = name.split("-")[0]
        return steps_per_sec.Runner(name, kind, "fp32", step, part("sample"), part("buffer"), part("draw"),
                                    lambda: log.append((name, "enter")))

    timed_runners(monkeypatch, runner)
    args = steps_per_sec.parse_args(["--device", "cpu", "--warmup", str(warmup), "--windows", str(windows),
                                     "--window-s", str(window_s), "--component-reps", "2", "--buffer-size", "100"])
    assert args.reference_process and args.batch_size == 16 and args.sgld_steps == 20
    out = steps_per_sec.run_config("wrn-10-2", args, torch.device("cpu"), tmp_path, tmp_path / "runs", True)

    runs = []  # the log with repeats collapsed: (engine, what, times)
    for entry in log:
        if runs and runs[-1][:2] == entry:
            runs[-1] = (*entry, runs[-1][2] + 1)
        else:
            runs.append((*entry, 1))
    order = ["reference-ieee", "fastjem-matched", "fastjem-default"]
    n = {e: round(window_s / iter_s[e]) for e in order}  # from the warm-up's last call, not its compiling first
    want = [(e, what, k) for e in order for what, k in (("enter", 1), ("step", warmup))]
    for w in range(windows):
        want += [(e, what, k) for e in (order if w % 2 == 0 else order[::-1])
                 for what, k in (("enter", 1), ("step", n[e]))]
    parts = [("sample", 1), ("buffer", 1), ("draw", 1)]
    want += [(e, what, k) for e in order for what, k in [("enter", 1), *parts]]  # one untimed call of each
    for w in range(args.component_reps):
        want += [(e, what, k) for e in (order if w % 2 == 0 else order[::-1]) for what, k in [("enter", 1), *parts]]
    assert runs == want

    for name, e in out["engines"].items():
        s = iter_s[name]
        assert e["warmup_iter_s"] == [5.0, s] and e["iters_per_window"] == n[name]
        assert e["window_it_per_s"] == pytest.approx([1 / (s * (1 + 0.1 * w)) for w in range(windows)])
        assert e["it_per_s_median"] == pytest.approx(1 / (1.1 * s))
        assert e["it_per_s_spread_pct"] == pytest.approx(100 * 1.1 * (1 - 1 / 1.2))
        assert e["compile_and_warmup_overhead_s"] == pytest.approx(5.0 - 1.1 * s)
        comp = e["components_ms"]
        assert comp["iteration"] == pytest.approx(1100 * s)
        assert comp["sample"] == pytest.approx(800 * s) and comp["buffer"] == pytest.approx(100 * s)
        assert comp["sgld_step"] == pytest.approx((800 - 100) * s / 20)
        assert comp["data"] == pytest.approx(200 * s)
        assert comp["train_step_rest"] == pytest.approx((1100 - 800 - 200) * s)
    assert out["ratios"]["default"] == pytest.approx(4.0) and out["ratios"]["matched"] == pytest.approx(2.0)
    assert out["paired_ratios"]["default"] == {"median": pytest.approx(4.0), "min": pytest.approx(4.0),
                                               "max": pytest.approx(4.0), "pairs": windows}


def test_the_engine_a_trainer_resolved_is_recorded_and_names_its_precision():
    """A run's JSON records what the trainer resolved (its notes say why: a CPU's bf16 instructions, say), and the
    engine's precision is the resolved one, not the one asked for; a trainer that exposes none: what was asked."""
    from types import SimpleNamespace

    from fastjem.config import TrainConfig

    cpu = torch.device("cpu")
    engine = SimpleNamespace(precision="bf16", compile="off", sgld_parts=1, notes=("bf16 (amx_bf16)",))
    trainer = SimpleNamespace(engine=engine)
    assert steps_per_sec._resolved_engine(trainer) == {"precision": "bf16", "compile": "off", "sgld_parts": 1,
                                                        "notes": ["bf16 (amx_bf16)"]}
    assert steps_per_sec._fastjem_precision(trainer, TrainConfig(precision="auto"), cpu) == "bf16"
    bare = SimpleNamespace()
    assert steps_per_sec._resolved_engine(bare) == {}
    assert steps_per_sec._fastjem_precision(bare, TrainConfig(precision="auto"), cpu) == "fp32"
    assert steps_per_sec._fastjem_precision(bare, TrainConfig(precision="tf32"), cpu) == "fp32"  # no TF32 on a CPU
    assert steps_per_sec._fastjem_precision(bare, TrainConfig(precision="bf16"), cpu) == "bf16"


def test_a_bar_engine_that_fails_to_build_fails_its_config(tmp_path, monkeypatch, capsys):
    """A candidate engine (--overlap, --sgld-parts N) that fails to build is recorded and the others are timed; the
    bar's own engines failing fails the config, rather than a table without them."""
    build = steps_per_sec.fastjem_runner

    def failing(name, *args, **kw):
        if name == "fastjem-default":
            raise RuntimeError("no such kernel")
        return build(name, *args, **kw)

    monkeypatch.setattr(steps_per_sec, "fastjem_runner", failing)
    assert steps_per_sec.main(["--device", "cpu", "--smoke", "--overlap", "--out", str(tmp_path)]) != 0
    (cfg,) = json.loads(next(tmp_path.glob("smoke-steps-*.json")).read_text())["configs"]
    assert cfg["status"] == "failed: RuntimeError: no such kernel"
    out = capsys.readouterr().out
    assert f"| wrn-10-2 | {cfg['batch_size']} | failed: RuntimeError: no such kernel |" in out
    assert "note: --overlap time CUDA candidates; on cpu they are not timed" in out  # said, not silently dropped


def test_the_plot_draws_each_devices_latest_run_as_bars_of_its_measured_speeds():
    """One panel per device, from its newest run that measured something; a bar per engine and configuration at the
    median it/s the run recorded, labelled as the README's table names the engine; a log axis only where the
    configurations span orders of magnitude, else a linear one from 0."""
    import matplotlib.pyplot as plt

    def rep(device, date, measured):
        return {"device": {"name": device, "type": "cuda"}, "date": date, "versions": {"torch": "2.11"},
                "configs": [{"name": name, "batch_size": 64,
                             "engines": {e: {"it_per_s_median": v} for e, v in engines.items()}}
                            for name, engines in measured.items()]}

    old = rep("GPU A", "2026-01-01T00:00:00", {"wrn-28-10": {"reference-ieee": 0.5, "fastjem-default": 9.0}})
    new = rep("GPU A", "2026-01-02T00:00:00", {"wrn-28-10": {"reference-ieee": 0.6, "fastjem-default": 10.0},
                                               "wrn-10-2": {"reference-ieee": 17.0, "fastjem-default": 120.0}})
    other = rep("GPU B", "2026-01-03T00:00:00", {"wrn-28-10": {"reference-ieee": 1.0, "fastjem-matched": 1.5,
                                                               "fastjem-default": 3.0}})
    failed = {**rep("GPU B", "2026-01-04T00:00:00", {}), "configs": [{"name": "wrn-28-10", "status": "failed"}]}
    fig = report.figure({"steps": [old, new, other, failed]})
    try:
        a, b = fig.axes
        bars = [{c.get_label(): [r.get_height() for r in c] for c in ax.containers} for ax in (a, b)]
        assert a.get_title() == "GPU A\n2026-01-02, torch 2.11" and b.get_title().startswith("GPU B\n2026-01-03")
        assert bars[0] == {"reference fp32": [0.6, 17.0], "fastjem default": [10.0, 120.0]}
        assert [t.get_text() for t in a.get_xticklabels()] == ["WRN-28-10\nB=64", "WRN-10-2\nB=64"]
        assert a.get_yscale() == "log"  # 0.6 to 120 it/s
        assert bars[1] == {"reference fp32": [1.0], "fastjem fp32": [1.5], "fastjem default": [3.0]}
        # side by side: a configuration's bars share its slot of width 0.8, centred on its tick
        (left,), (middle,), (right,) = b.containers
        assert [r.get_x() + r.get_width() / 2 for r in (left, middle, right)] == pytest.approx([-0.8 / 3, 0, 0.8 / 3])
        assert middle.get_width() == pytest.approx(0.8 / 3)
        assert b.get_yscale() == "linear" and b.get_ylim() == pytest.approx((0, 3.45))
        assert [t.get_text() for t in b.get_legend().get_texts()] == ["reference fp32", "fastjem fp32",
                                                                      "fastjem default"]
        assert [t.get_text() for t in b.texts] == ["1", "1.5", "3"]  # each bar's value on it
    finally:
        plt.close(fig)


def test_run_config_times_the_candidates_that_work_and_records_those_that_fail(tmp_path, monkeypatch):
    """A candidate engine (--sgld-parts N, --overlap) that fails in its warm-up is recorded, its worker closed,
    and the others are measured without it; one that works gets its gain over the default. The bar's own engines
    failing in the warm-up fail the config."""

    iter_s = {"reference-ieee": 2.0, "fastjem-matched": 1.0, "fastjem-default": 0.5, "fastjem-parts4": 0.25,
              "fastjem-overlap": 0.4}
    broken, closed = set(), []

    def runner(name, *_):
        def step():
            if name in broken:
                raise RuntimeError("graph capture failed")
            return iter_s[name]

        return steps_per_sec.Runner(name, name.split("-")[0], "fp32", step, lambda: 0.1, lambda: 0.01,
                                    lambda: 0.01, lambda: None, close=lambda: closed.append(name))

    timed_runners(monkeypatch, runner)
    monkeypatch.setattr(steps_per_sec, "fastjem_candidates", lambda *a: [
        ("fastjem-matched", {}, "matched"), ("fastjem-default", {}, "default"),
        ("fastjem-parts4", {"sgld_parts": 4}, "parts"), ("fastjem-overlap", {"overlap_data": True}, "overlap")])
    args = steps_per_sec.parse_args(["--device", "cpu", "--warmup", "1", "--windows", "2", "--window-s", "1",
                                     "--component-reps", "1", "--buffer-size", "100"])

    def run():
        return steps_per_sec.run_config("wrn-10-2", args, torch.device("cpu"), tmp_path, tmp_path / "runs", True)

    broken.add("fastjem-overlap")
    out = run()
    assert set(out["engines"]) == {"reference-ieee", "fastjem-matched", "fastjem-default", "fastjem-parts4"}
    assert out["optional_engine_failures"] == {"fastjem-overlap": "RuntimeError: graph capture failed"}
    assert closed[0] == "fastjem-overlap" and closed.count("fastjem-overlap") == 1  # at once, not again
    assert out["ratios"]["parts_candidate_gain"] == pytest.approx(2.0) and "overlap_gain" not in out["ratios"]
    broken.add("fastjem-default")
    with pytest.raises(RuntimeError, match="graph capture failed"):
        run()


def test_cifar_run_trains_for_its_minutes_and_says_when_too_short_for_a_steady_speed(tmp_path, monkeypatch, capsys):
    """The GPU suite's timed CIFAR-10 run, here on a CIFAR-shaped folder (train/, test/) on the CPU: its JSON, sample
    grid and summary lines; a run that ends inside its warm-up iterations has no steady it/s, and says so (it was a
    traceback after the JSON was written, and the report's table then failed on the missing number)."""
    import cifar_run
    from env_info import write_synthetic_imagefolder

    data = tmp_path / "cifar"
    write_synthetic_imagefolder(data / "train", per_class=3)
    write_synthetic_imagefolder(data / "test", per_class=2)
    monkeypatch.setenv("FASTJEM_CACHE", str(tmp_path / "cache"))
    common = ["--device", "cpu", "--depth", "10", "--width", "1", "--batch-size", "8", "--cifar-dir", str(data)]
    assert cifar_run.main([*common, "--minutes", "0.08", "--warmup", "1", "--out", str(tmp_path / "run")]) == 0
    out = capsys.readouterr().out
    (path,) = (tmp_path / "run").glob("cifar-*.json")
    rep = json.loads(path.read_text())
    assert rep["status"] == "ok" and rep["model"] == "WRN-10-1" and rep["config"]["depth"] == 10
    assert rep["iterations"] > 1 and rep["train_seconds"] >= 0.08 * 60 and rep["it_per_s_steady"] > 0
    assert 0 <= rep["test_acc"] <= 1 and (tmp_path / "run" / rep["samples_png"]).is_file()
    assert f"cifar_iterations: {rep['iterations']}\ncifar_it_per_s_steady: {rep['it_per_s_steady']:.3f}" in out

    assert cifar_run.main([*common, "--minutes", "0.001", "--warmup", "1000", "--out", str(tmp_path / "short")]) == 0
    assert "cifar_it_per_s_steady: not measured (the run ended within its 1000 warm-up iterations" in \
        capsys.readouterr().out
    (short,) = report.load_results(tmp_path / "short")["cifar"]
    assert short["status"] == "ok" and short["it_per_s_steady"] is None
    (row,) = report.cifar_table([short])[2:]
    assert f"| {short['iterations']} | — | {short['test_acc']:.2%} |" in row


def test_a_cifar_run_stopped_by_ctrl_c_says_so_in_its_file(tmp_path, monkeypatch):
    """A CIFAR run's file, claimed at its start with the status "started", still said so after a Ctrl-C: it says
    "interrupted", when, and after how many iterations; the Ctrl-C goes on to run_script (its line, status 130)."""
    import datetime

    import cifar_run
    from env_info import write_synthetic_imagefolder

    data = tmp_path / "cifar"
    write_synthetic_imagefolder(data / "train", per_class=2)
    write_synthetic_imagefolder(data / "test", per_class=1)
    monkeypatch.setenv("FASTJEM_CACHE", str(tmp_path / "cache"))

    class CtrlC(cifar_run.Trainer):
        def train_step(self):
            if self.iteration == 2:
                raise KeyboardInterrupt
            return super().train_step()

    monkeypatch.setattr(cifar_run, "Trainer", CtrlC)
    with pytest.raises(KeyboardInterrupt):
        cifar_run.main(["--device", "cpu", "--depth", "10", "--width", "1", "--batch-size", "4", "--cifar-dir",
                        str(data), "--minutes", "5", "--out", str(tmp_path / "run")])
    (path,) = (tmp_path / "run").glob("cifar-*.json")
    rep = json.loads(path.read_text())
    assert rep["status"] == "interrupted" and rep["iterations"] == 2
    started, stopped = (datetime.datetime.fromisoformat(rep[k]) for k in ("date", "interrupted_at"))
    assert 0 <= (stopped - started).total_seconds() <= rep["total_seconds"] + 1


def test_two_cifar_runs_started_in_the_same_second_keep_a_sample_grid_each(tmp_path, monkeypatch, capsys):
    """The JSON of a CIFAR run started in the same second as another took <name>-2.json, but its sample grid took
    the other's PNG name and replaced its figure: the grid is named after the JSON name the run claimed."""
    import cifar_run
    from env_info import now_utc, result_name, write_synthetic_imagefolder

    data = tmp_path / "cifar"
    write_synthetic_imagefolder(data / "train", per_class=2)
    write_synthetic_imagefolder(data / "test", per_class=1)
    monkeypatch.setenv("FASTJEM_CACHE", str(tmp_path / "cache"))
    when = now_utc()
    monkeypatch.setattr(cifar_run, "now_utc", lambda: when)
    grids = []
    for _ in range(2):
        assert cifar_run.main(["--device", "cpu", "--depth", "10", "--width", "1", "--batch-size", "4", "--cifar-dir",
                               str(data), "--minutes", "0.001", "--warmup", "0", "--out", str(tmp_path / "run")]) == 0
        grids.append(max((tmp_path / "run").glob("*.png"), key=lambda p: p.stat().st_mtime_ns).read_bytes())
    stem = result_name("cifar", torch.device("cpu"), when).removeprefix("cifar-").removesuffix(".json")
    names = [stem, f"{stem}-2"]
    files = sorted(p.name for p in (tmp_path / "run").iterdir())
    assert files == sorted([f"cifar-{n}.json" for n in names] + [f"cifar-samples-{n}.png" for n in names])
    for n, grid in zip(names, grids, strict=True):
        rep = json.loads((tmp_path / "run" / f"cifar-{n}.json").read_text())
        assert rep["status"] == "ok" and rep["samples_png"] == f"cifar-samples-{n}.png"
        assert (tmp_path / "run" / rep["samples_png"]).read_bytes() == grid
    capsys.readouterr()


def scored(module, monkeypatch, score):
    """``module``'s runs train as they do, their test accuracy then set to ``score(cfg)``: two-iteration runs all
    predict one class, and the script's arithmetic over seeds needs accuracies that differ."""
    train = module.train_timed

    def train_scored(cfg):
        summary, trainer, seconds = train(cfg)
        return {**summary, "test_acc": score(cfg)}, trainer, seconds

    monkeypatch.setattr(module, "train_timed", train_scored)


def test_buffer_init_quality_trains_every_variant_per_seed_and_averages_over_seeds(tmp_path, capsys, monkeypatch):
    """Each seed trains every (init, SGLD steps) variant, the order rotating with the seed (no variant always pays
    the process's first-run costs); the means are per variant over the seeds."""
    import buffer_init_quality

    scored(buffer_init_quality, monkeypatch, lambda cfg: 0.5 + 0.1 * cfg.seed + 0.01 * cfg.sgld_steps)

    assert buffer_init_quality.main(["--seeds", "1", "2", "--variants", "uniform:1", "informative:2", "--iters", "2",
                                     "--out", str(tmp_path)]) == 0
    (path,) = tmp_path.glob("buffer-init-*.json")
    rep = json.loads(path.read_text())
    assert rep["iters"] == 2 and rep["preset"] == "quick"
    assert [(r["seed"], r["buffer_init"], r["sgld_steps"]) for r in rep["runs"]] == [
        (1, "uniform", 1), (1, "informative", 2), (2, "informative", 2), (2, "uniform", 1)]
    for name, (init, steps) in (("uniform:1", ("uniform", 1)), ("informative:2", ("informative", 2))):
        accs = [r["test_acc"] for r in rep["runs"] if (r["buffer_init"], r["sgld_steps"]) == (init, steps)]
        assert rep["means"][name]["test_acc"] == pytest.approx(sum(accs) / 2)
        assert rep["means"][name]["test_acc_std"] == pytest.approx(abs(accs[0] - accs[1]) / 2 ** 0.5)
    assert rep["means"]["uniform:1"]["test_acc"] == pytest.approx(0.66)
    assert rep["means"]["informative:2"]["test_acc_std"] == pytest.approx(0.1 / 2 ** 0.5)
    assert f"wrote {path}" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        buffer_init_quality.main(["--seeds", "1", "1", "--out", str(tmp_path)])
    assert "must be distinct" in capsys.readouterr().err


def test_buffer_init_quality_refuses_a_bad_variant_before_the_first_run(tmp_path, capsys, monkeypatch):
    """A variant the trainer refuses (no SGLD step) stops the study before anything trains: it was refused when
    its turn came, after the variants before it had trained, with a traceback and no results file."""
    import buffer_init_quality

    def trained(cfg):
        raise AssertionError(f"trained {cfg.buffer_init}:{cfg.sgld_steps} before the variants were checked")

    monkeypatch.setattr(buffer_init_quality, "train_timed", trained)
    with pytest.raises(SystemExit) as exc:
        buffer_init_quality.main(["--seeds", "1", "--variants", "uniform:20", "uniform:0", "--out", str(tmp_path)])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and "--variants uniform:0: --sgld-steps 0 never moves the chains" in err, err


def test_precision_quality_sets_each_seeds_low_precision_run_against_its_base(tmp_path, capsys, monkeypatch):
    """Both precisions train from each seed; the difference is per seed, low minus base, in points; --iters makes a
    check of the script, a smoke file the README leaves out."""
    import precision_quality

    scored(precision_quality, monkeypatch, lambda cfg: 0.9 + 0.01 * cfg.seed - 0.003 * (cfg.precision == "bf16"))

    assert precision_quality.main(["--seeds", "1", "2", "--iters", "2", "--out", str(tmp_path)]) == 0
    (path,) = tmp_path.glob("smoke-precision-quality-*.json")
    rep = json.loads(path.read_text())
    assert rep["smoke"] and rep["iters"] == 2 and report.load_results(tmp_path)["precision-quality"] == []
    assert [(r["seed"], r["precision"]) for r in rep["runs"]] == [(1, "fp32"), (1, "bf16"), (2, "fp32"), (2, "bf16")]
    acc = {(r["seed"], r["precision"]): r["test_acc"] for r in rep["runs"]}
    diffs = [100 * (acc[s, "bf16"] - acc[s, "fp32"]) for s in (1, 2)]
    assert rep["per_seed_diff_points"] == pytest.approx(diffs)
    assert rep["mean_diff_points"] == pytest.approx(sum(diffs) / 2)
    assert rep["per_seed_diff_points"] == pytest.approx([-0.3, -0.3]) and rep["within_1_point"]
    assert [r["engine"].split(",")[0] for r in rep["runs"]] == ["precision fp32", "precision bf16"] * 2
    with pytest.raises(SystemExit):
        precision_quality.main(["--iters", "-1", "--out", str(tmp_path)])
    assert "--iters must be > 0" in capsys.readouterr().err


def test_configs_past_the_time_budget_are_recorded_as_skipped(tmp_path, monkeypatch, capsys):
    """--time-budget (the GPU suite's stage length): a config that would not fit is recorded as skipped, in the JSON
    and the table, not left out as if never asked for; with nothing measured the exit status says so."""
    monkeypatch.setattr(steps_per_sec, "equivalence_check", lambda *a: {"passed": True, "detail": "stubbed"})
    assert steps_per_sec.main(["--device", "cpu", "--smoke", "--configs", "wrn-10-2,wrn-16-8", "--time-budget",
                               "1e-9", "--out", str(tmp_path)]) == 1
    rep = json.loads(next(tmp_path.glob("smoke-steps-*.json")).read_text())
    assert [(c["name"], c["status"]) for c in rep["configs"]] == [("wrn-10-2", "skipped: time budget"),
                                                                  ("wrn-16-8", "skipped: time budget")]
    assert "| wrn-16-8 | 4 | skipped: time budget |" in capsys.readouterr().out


@pytest.mark.parametrize("backend", ["reference", "triton"])
def test_the_kernel_benchmark_checks_each_op_against_its_reference_before_timing_it(backend, monkeypatch):
    """bench/bench_kernels.py's cases (the GPU suite builds the same ones on CUDA) pass their checks on both
    backends, and a check refuses an op that computes something else: a value, a noise draw, a reset, a row written
    (also where indices repeat, as they do at the GPU's 8192 rows of 10000)."""
    import bench_kernels
    from kernel_utils import skip_unless_runnable

    from fastjem import kernels

    skip_unless_runnable("cpu", backend)
    torch.manual_seed(0)  # the cases' indices and data
    cases = [c for c in bench_kernels._cases("cpu", backend, full=False) if "compiled" not in c.name]
    cases.append(bench_kernels._sgld_case((4, 3, 32, 32), "cpu", backend, in_loop=True))
    cases += bench_kernels._buffer_cases(6, 16, "cpu", backend)  # 16 rows into 6: repeated indices
    assert [c.name.split("[")[0] for c in cases] == ["lse_energy_fwd_bwd"] * 2 + ["sgld_step_", "buffer_sample",
                                                                                   "buffer_write_", "sgld_step_",
                                                                                   "buffer_sample", "buffer_write_"]
    if backend == "triton":  # buffer_sample's kernel alone, the state left as it is (the GPU suite's batch 64)
        cases += bench_kernels._buffer_cases(6, 16, "cpu", backend, gather_alone=True)[2:]
        assert [c.name for c in cases[-1:]] == ["buffer_sample[6x3x32x32,B=16,advance=0]"]
    for case in cases:
        case.check()
        case.fused(), case.eager()
        assert case.bytes_moved > 0

    def broken(build, *patches):
        with monkeypatch.context() as m:
            for obj, name, fn in patches:
                m.setattr(obj, name, fn)
            with pytest.raises(AssertionError):
                build().check()

    # the HBM peak a GPU's fractions are of: the most specific name first
    assert [bench_kernels._peak_bandwidth(n) for n in ("NVIDIA H100 PCIe", "NVIDIA H100 80GB HBM3", "NVIDIA H200",
                                                       "Tesla V100-SXM2-16GB")] == [2.0e12, 3.35e12, 4.8e12, None]
    real = {n: getattr(kernels, n) for n in ("sgld_step_", "buffer_sample", "buffer_write_")}
    energy = bench_kernels.energy
    fwd = {n: getattr(energy, n) for n in ("lse_energy_fwd", "_fwd_torch")}

    def sgld():
        return bench_kernels._sgld_case((4, 3, 32, 32), "cpu", backend)

    def lse():
        return bench_kernels._lse_case(8, 10, torch.float32, "cpu", backend)

    def buffer(n=100, rows=16):
        return bench_kernels._buffer_cases(n, rows, "cpu", backend)

    def spilled(b, i, r, **kw):  # the rows written, and a row not written to zeroed
        real["buffer_write_"](b, i, r, **kw)
        b[min(set(range(b.shape[0])) - set(i.tolist()))] = 0

    def repeats_zeroed(b, i, r, **kw):  # rows written once are right, those written more than once hold zeros
        real["buffer_write_"](b, i, r, **kw)
        b[torch.bincount(i, minlength=b.shape[0]) > 1] = 0

    def resets_positive(b, i, p, st, **kw):  # reset rows drawn from U(0, 1), not U(-1, 1)
        out = real["buffer_sample"](b, i, p, st, **kw)
        reset = ~(out == b[i]).flatten(1).all(1)
        out[reset] = (out[reset] + 1) / 2
        return out

    broken(sgld, (kernels, "sgld_step_", lambda x, g, a, s, st, **kw: real["sgld_step_"](x, g, a, 2 * s, st, **kw)))
    # the noise of the state, which is then left where it was (the next call draws the same noise)
    broken(sgld, (kernels, "sgld_step_", lambda x, g, a, s, st, **kw: real["sgld_step_"](x, g, a, s, st.clone(), **kw)))
    broken(lse, (energy, "_bwd_torch", lambda up, lg, *a: torch.zeros_like(lg)),
           (energy, "lse_energy_bwd", lambda up, lg, *a: torch.zeros_like(lg)))
    broken(lse, *[(energy, n, lambda lg, *a, f=f: (f(lg, *a)[0] + 1, *f(lg, *a)[1:])) for n, f in fwd.items()])
    broken(lambda: buffer()[0],
           (kernels, "buffer_sample", lambda b, i, p, st, **kw: real["buffer_sample"](b, i, p / 2, st, **kw)))
    broken(lambda: buffer()[0], (kernels, "buffer_sample", resets_positive))
    # two rows, neither of which the timed 5% resets: the check at 50% still sees the reset values
    torch.manual_seed(0)
    two = buffer(rows=2)[0]
    assert torch.equal(two.fused(), two.fused()) and two.fused().shape[0] == 2  # no reset: the buffer's rows
    broken(lambda: buffer(rows=2)[0], (kernels, "buffer_sample", resets_positive))
    broken(lambda: buffer()[0],
           (kernels, "buffer_sample", lambda b, i, p, st, **kw: real["buffer_sample"](b, i, p, st.clone(), **kw)))
    if backend == "triton":
        fwd_gather = bench_kernels.buffer_sample_fwd

        def gather(rows=16):
            return bench_kernels._buffer_cases(100, rows, "cpu", backend, gather_alone=True)[2]

        def fwd_resets_positive(b, i, p, st, **kw):
            out = fwd_gather(b, i, p, st, **kw)
            reset = ~(out == b[i]).flatten(1).all(1)
            out[reset] = (out[reset] + 1) / 2
            return out

        # the gather alone: rows of another reset probability; the state advanced after all
        broken(gather, (bench_kernels, "buffer_sample_fwd",
                        lambda b, i, p, st, **kw: fwd_gather(b, i, p / 2, st, **kw)))
        broken(gather, (bench_kernels, "buffer_sample_fwd",
                        lambda b, i, p, st, **kw: fwd_gather(b, i, p, st, **{**kw, "advance": True})))
        # two rows, neither reset at 5%: the check at 50% sees the reset values
        broken(lambda: gather(rows=2), (bench_kernels, "buffer_sample_fwd", fwd_resets_positive))
    # the eager sequences set against the ops: without noise, or resetting every row
    broken(sgld, (bench_kernels.torch, "randn_like", torch.zeros_like))
    broken(lambda: buffer()[0], (bench_kernels.torch, "rand", lambda *a, **kw: torch.zeros(*a, **kw)))
    broken(lambda: buffer()[1],
           (kernels, "buffer_write_", lambda b, i, r, **kw: real["buffer_write_"](b, i, 2 * r, **kw)))
    broken(lambda: buffer()[1], (kernels, "buffer_write_", spilled))
    broken(lambda: buffer()[1], (bench_kernels, "_scatter_eager", lambda b, i, r: b.index_put_((i,), 2 * r)))
    # where rows repeat, writing nothing at all is still noticed, and so is a repeated row that holds none of its rows,
    # or the first of them where the op writes the last
    broken(lambda: buffer(6)[1], (kernels, "buffer_write_", lambda b, i, r, **kw: None))
    broken(lambda: buffer(6)[1], (kernels, "buffer_write_", repeats_zeroed))
    broken(lambda: buffer(6)[1],
           (kernels, "buffer_write_", lambda b, i, r, **kw: real["buffer_write_"](b, i.flip(0), r.flip(0), **kw)))


def test_the_kernel_benchmarks_pytest_benchmark_cases_time_only_what_passes_its_check(monkeypatch):
    """bench_kernels.test_bench_cpu (pytest-benchmark) checks its case first: an op that disagrees with its reference
    is never timed; one that agrees is timed under its case's group, with the bytes it moves."""
    import bench_kernels

    from fastjem import kernels

    class Benchmark:  # pytest-benchmark's fixture, as far as test_bench_cpu uses it
        group, stats = None, None

        def __init__(self):
            self.extra_info, self.calls = {}, 0

        def pedantic(self, fn, **kwargs):
            self.calls += 1
            fn()

    name = next(n for n in bench_kernels.CPU_CASES if n.startswith("sgld_step_["))
    bench = Benchmark()
    bench_kernels.test_bench_cpu(bench, name, "eager")
    assert bench.calls == 1 and bench.group == name and bench.extra_info["bytes_moved"] > 0
    real = kernels.sgld_step_
    monkeypatch.setattr(kernels, "sgld_step_", lambda x, g, a, s, st, **kw: real(x, g, a, 2 * s, st, **kw))
    bench = Benchmark()
    with pytest.raises(AssertionError):
        bench_kernels.test_bench_cpu(bench, name, "eager")
    assert bench.calls == 0


def test_the_kernel_benchmarks_gpu_cases_pass_their_checks_at_full_size():
    """The GPU suite's cases at their full sizes (batch 64, and 4096 / 8192 rows beyond the L2 cache, where 8192
    indices into 10000 buffer rows repeat) on the reference backend: what the CUDA report checks before timing."""
    import bench_kernels

    torch.manual_seed(0)
    cases = bench_kernels._cases("cpu", "reference", full=True)
    names = [c.name for c in cases]
    assert "sgld_step_[64x3x32x32,advance=0]" in names and "sgld_step_[4096x3x32x32]" in names
    assert "buffer_write_[10000x3x32x32,B=8192]" in names
    # on the GPU also buffer_sample's kernel alone at batch 64 (built here, not run: a kernel of the Triton backend)
    gather = "buffer_sample[10000x3x32x32,B=64,advance=0]"
    assert gather not in names and gather in [c.name for c in bench_kernels._cases("cpu", "triton", full=True)]
    # but sgld_step_compiled_: a CPU case (16 rows, none on the GPU), whose compile took 10 s here; the CPU report's
    # test checks it (test_bench_cpu and the report check every case before timing it)
    assert [n for n in names if n.startswith("sgld_step_compiled_")] == ["sgld_step_compiled_[16x3x32x32]"]
    for case in cases:
        if not case.name.startswith("sgld_step_compiled_"):
            case.check()


def test_the_kernel_benchmark_run_as_a_script_runs_under_pytest():
    """``python bench/bench_kernels.py`` imported the module and exited 0 having run and said nothing: it hands its
    arguments to pytest, which runs (here: lists) the benchmarks."""
    proc = subprocess.run([sys.executable, str(BENCH / "bench_kernels.py"), "--collect-only", "-q", "-k", "cpu_report",
                           "-p", "no:cacheprovider"], capture_output=True, text=True, timeout=300, cwd=BENCH.parent)
    assert proc.returncode == 0 and "bench/bench_kernels.py::test_bench_cpu_report" in proc.stdout, proc.stdout[-2000:]


def test_the_cpu_kernel_benchmark_writes_its_report(tmp_path):
    """``pytest bench/bench_kernels.py`` on a CPU: the reference backend against the eager sequences, each op timed
    with its bytes, GB/s and the copy floor, written where FASTJEM_BENCH_OUT says (not into bench/results); the
    pytest-benchmark cases carry each op's bytes and GB/s, and run (untimed) under --benchmark-disable too."""
    env = {**os.environ, "FASTJEM_BENCH_OUT": str(tmp_path / "trial"), "OMP_NUM_THREADS": "1"}

    def bench(*args):
        proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                               str(BENCH / "bench_kernels.py"), *args], capture_output=True, text=True, timeout=600,
                              env=env, cwd=BENCH.parent)
        assert proc.returncode == 0, proc.stdout[-3000:]
        return proc.stdout

    out = bench("-s", "-k", "cpu", "--benchmark-json", str(tmp_path / "timed.json"))
    assert "13 passed" in out, out[-1000:]  # 6 ops x (fused, eager) benchmarks + the report
    timed = json.loads((tmp_path / "timed.json").read_text())["benchmarks"]
    assert len(timed) == 12
    for b in timed:
        info = b["extra_info"]
        assert info["GBps"] == pytest.approx(info["bytes_moved"] / b["stats"]["median"] / 1e9), b["name"]
    assert "2 passed" in bench("-k", "test_bench_cpu and sgld_step_[", "--benchmark-disable")
    (path,) = (tmp_path / "trial").glob("kernels-*.json")  # the folder made
    report = json.loads(path.read_text())
    ops = [r["op"].split("[")[0] for r in report["results"]]
    assert ops == ["lse_energy_fwd_bwd", "lse_energy_fwd_bwd", "sgld_step_", "buffer_sample", "buffer_write_",
                   "sgld_step_compiled_"]
    for r in report["results"]:
        assert r["fused_ms"] > 0 and r["eager_ms"] > 0 and r["copy_ms"] > 0
        assert r["fused_GBps"] == pytest.approx(r["bytes_moved"] / r["fused_ms"] / 1e6)
        assert r["speedup_vs_eager"] == pytest.approx(r["eager_ms"] / r["fused_ms"])
    assert "git_sha" in report and report["threads"] == 1  # the sha: None outside a git checkout
    assert f"(1 threads, reference backend) -> {path}" in out
    line = next(s for s in out.splitlines() if s.startswith("buffer_write_[1000x3x32x32,B=16]"))
    r = report["results"][4]
    assert f"fused {r['fused_ms'] * 1e3:8.1f} us" in line and f"{r['fused_GBps']:6.2f} GB/s" in line, line


def test_sgld_study_records_a_failed_variant_and_measures_the_others_against_the_first_that_ran(tmp_path, capsys,
                                                                                                monkeypatch):
    """A variant that cannot run is recorded with its error and the study goes on; the others' samples are compared
    with the first variant that ran, and each prints its line (time per step, TFLOP/s, difference)."""
    import sgld_study

    samples = {"default": torch.zeros(4, 3, 32, 32), "split-2": torch.full((4, 3, 32, 32), 0.25)}
    median = {"default": 0.5, "split-2": 0.25}

    def run_variant(name, opts, args, device, x0):
        if name == "nchw":
            raise RuntimeError("out of memory")
        return {"name": name, "call_s_median": median[name], "sgld_step_ms": 1e3 * median[name] / args.sgld_steps}, \
            samples[name]

    monkeypatch.setattr(sgld_study, "run_variant", run_variant)
    assert sgld_study.main(["--device", "cpu", "--smoke", "--variants", "nchw,default,split-2", "--out",
                            str(tmp_path)]) == 0
    (path,) = tmp_path.glob("smoke-sgld-study-*.json")
    report = json.loads(path.read_text())
    rows = report["variants"]
    assert rows[0] == {"name": "nchw", "error": "RuntimeError: out of memory"}
    assert [r["name"] for r in rows[1:]] == ["default", "split-2"]
    assert [r["samples_max_abs_diff_vs_first"] for r in rows[1:]] == [0.0, 0.25]
    flops = report["flops_per_sgld_step"] * 2  # --smoke: 2 SGLD steps per call
    assert [r["tflops_per_s"] for r in rows[1:]] == pytest.approx([flops / 0.5 / 1e12, flops / 0.25 / 1e12])
    assert all(r["mfu"] is None for r in rows[1:])  # no peak for a CPU
    out = capsys.readouterr().out
    assert "nchw: failed (RuntimeError: out of memory)" in out
    assert "default              SGLD step  250.000 ms" in out and "split-2              SGLD step  125.000 ms" in out
    assert "samples vs first 2.50e-01" in out and f"wrote {path}" in out
    # a small network's TFLOP/s to 3 significant figures (with 2 decimals they printed 0.00)
    for row in rows[1:]:
        assert f" ms  {sgld_study.three_figures(row['tflops_per_s']):>7} TFLOP/s  samples" in out
    assert "0.00 TFLOP/s" not in out
    assert [sgld_study.three_figures(x) for x in (0.0123, 0.000123456, 1.5, 123.4, 989.0, 0.0)] == [
        "0.0123", "0.000123", "1.50", "123", "989", "0"]


def test_sgld_study_smoke_help_says_what_it_runs(tmp_path, capsys, monkeypatch):
    """--smoke's help said "eager", but on CUDA the smoke compiles the network as a full run does (only a CPU runs it
    eager): the help says so, and names the variants the smoke keeps."""
    import sgld_study

    with pytest.raises(SystemExit):
        sgld_study.main(["--help"])
    text = " ".join(capsys.readouterr().out.split())
    smoke = text[text.index("--smoke "):text.index("--out OUT", text.index("--smoke "))]
    assert "compiled on CUDA, eager on a CPU" in smoke and ", eager;" not in smoke
    assert "variants default, cudnn-try-all, nchw, split-2, eager-step (on a CPU)" in smoke
    ran = []

    def run_variant(name, opts, args, device, x0):
        ran.append((name, args.compile))
        return {"name": name, "call_s_median": 0.5, "sgld_step_ms": 1.0}, torch.zeros(x0.shape)

    monkeypatch.setattr(sgld_study, "run_variant", run_variant)
    assert sgld_study.main(["--device", "cpu", "--smoke", "--out", str(tmp_path)]) == 0
    assert sorted(ran) == sorted((name, False) for name in sgld_study.SMOKE_VARIANTS)


def test_sgld_study_on_a_cpu_defaults_to_the_cpu_bar_model(tmp_path, monkeypatch):
    """On a CPU the study's default network is the CPU bars' (WRN-10-2 at batch 16, as profile_step's and
    steps_per_sec's): it was WRN-28-10 at batch 64, hours a variant there. Sizes given are the sizes run."""
    import sgld_study

    ran = []

    def run_variant(name, opts, args, device, x0):
        ran.append((args.depth, args.width, tuple(x0.shape)))
        return {"name": name, "call_s_median": 0.5, "sgld_step_ms": 1.0}, torch.zeros(x0.shape)

    monkeypatch.setattr(sgld_study, "run_variant", run_variant)
    for args, want in (([], (10, 2, (16, 3, 32, 32))),
                       (["--depth", "16", "--width", "1", "--batch-size", "3"], (16, 1, (3, 3, 32, 32))),
                       (["--smoke"], (10, 1, (4, 3, 32, 32)))):
        ran.clear()
        out = tmp_path / str(len(args))
        assert sgld_study.main(["--device", "cpu", "--variants", "default", "--out", str(out), *args]) == 0
        assert ran == [want], args
        (path,) = out.glob("*sgld-study-*.json")
        recorded = json.loads(path.read_text())["args"]
        assert (recorded["depth"], recorded["width"], recorded["batch_size"]) == (want[0], want[1], want[2][0])


def test_a_study_or_profile_cut_short_keeps_what_it_measured(tmp_path, monkeypatch):
    """The GPU suite's CPU bars end at their timeout (240 s; the CPU steps alone took 186 s on the H200's host):
    sgld_study.py and profile_step.py wrote their file only at the end, so a run killed after its first variant or
    engine returned nothing. Each writes after every variant / engine now."""
    import profile_step
    import sgld_study

    def run_variant(name, opts, args, device, x0):
        if name != "default":
            raise SystemExit(128 + 15)  # the stage's timeout, here
        return {"name": name, "call_s_median": 0.5, "sgld_step_ms": 250.0}, torch.zeros(4, 3, 32, 32)

    monkeypatch.setattr(sgld_study, "run_variant", run_variant)
    with pytest.raises(SystemExit):
        sgld_study.main(["--device", "cpu", "--smoke", "--variants", "default,nchw", "--out", str(tmp_path / "s")])
    (path,) = (tmp_path / "s").glob("smoke-sgld-study-*.json")
    assert [r["name"] for r in json.loads(path.read_text())["variants"]] == ["default"]

    profiled = []

    def profile(call, device, reps, rows):
        if profiled:
            raise SystemExit(128 + 15)
        profiled.append(1)
        return {"time_basis": "operators' own CPU time", "profiled_ms_per_call": 1.0, "categories": {}, "top": []}

    monkeypatch.setattr(profile_step, "profile", profile)
    with pytest.raises(SystemExit):
        profile_step.main(["--device", "cpu", "--smoke", "--engines", "reference,matched", "--out",
                           str(tmp_path / "p")])
    (path,) = (tmp_path / "p").glob("smoke-profile-*.json")
    assert list(json.loads(path.read_text())["engines"]) == ["reference"]


def test_a_quality_or_compile_study_cut_short_keeps_the_runs_it_finished(tmp_path, monkeypatch, capsys):
    """precision_quality.py, buffer_init_quality.py and cpu_compile_study.py wrote their file only at the end: a
    study of hours interrupted in its last run kept nothing. Each writes after every run (race) now, the file
    whole each time, its means over the runs finished; the run that finishes leaves the whole study in one file."""
    import buffer_init_quality
    import cpu_compile_study
    import precision_quality

    class Engine:
        def describe(self):
            return "precision fp32, stubbed"

    class Trainer:
        device = torch.device("cpu")
        engine = Engine()

    def stopping_after(n, score):
        trained = []

        def train_timed(cfg):
            if len(trained) == n:
                raise SystemExit(128 + 15)  # a timeout's SIGTERM, or a Ctrl-C
            trained.append(cfg)
            return {"test_acc": score(cfg), "val_acc": 0.5, "it_per_s_median": 1.0, "recoveries": 0,
                    "last_train_record": {"gap": 0.1}}, Trainer(), 1.0

        return train_timed

    score = {("fp32", 1): 0.9, ("bf16", 1): 0.89, ("fp32", 2): 0.92, ("bf16", 2): 0.93}
    for n, mean_diff in ((3, -1.0), (4, 0.0)):
        monkeypatch.setattr(precision_quality, "train_timed", stopping_after(n, lambda c: score[c.precision, c.seed]))
        out = tmp_path / f"precision{n}"
        with pytest.raises(SystemExit) if n < 4 else contextlib.nullcontext():
            precision_quality.main(["--seeds", "1", "2", "--out", str(out)])
        (path,) = out.glob("precision-quality-*.json")
        rep = json.loads(path.read_text())
        assert [(r["seed"], r["precision"]) for r in rep["runs"]] == [(1, "fp32"), (1, "bf16"), (2, "fp32"),
                                                                      (2, "bf16")][:n]
        assert rep["mean_test_acc"] == pytest.approx({"fp32": 0.91, "bf16": 0.89 if n < 4 else 0.91})
        assert rep["per_seed_diff_points"] == pytest.approx([-1.0, 1.0][:n - 2])
        assert rep["mean_diff_points"] == pytest.approx(mean_diff, abs=1e-9)
        (row,) = report.precision_table(report.load_results(out)["precision-quality"])[2:]
        assert "| 1, 2 | 0.9100 |" in row

    monkeypatch.setattr(buffer_init_quality, "train_timed", stopping_after(3, lambda c: 0.5 + 0.1 * c.seed))
    with pytest.raises(SystemExit):
        buffer_init_quality.main(["--seeds", "1", "2", "--variants", "uniform:1", "informative:2", "--out",
                                  str(tmp_path / "buffer")])
    (path,) = (tmp_path / "buffer").glob("buffer-init-*.json")
    rep = json.loads(path.read_text())
    assert [(r["seed"], r["buffer_init"]) for r in rep["runs"]] == [(1, "uniform"), (1, "informative"),
                                                                    (2, "informative")]
    assert rep["means"] == {
        "uniform:1": {"test_acc": pytest.approx(0.6), "test_acc_std": 0.0, "wall_seconds": 1.0, "recoveries": 0},
        "informative:2": {"test_acc": pytest.approx(0.65), "test_acc_std": pytest.approx(0.1 / 2 ** 0.5),
                          "wall_seconds": 1.0, "recoveries": 0}}

    races = []

    def race(fns, reference, n, windows):
        if len(races) == limit:
            raise SystemExit(128 + 15)
        races.append(list(fns))
        return {name: {"ms": 1.0, "max_abs_diff": 0.0, "first_call_s": 0.0} for name in fns}

    monkeypatch.setattr(cpu_compile_study, "_race", race)
    for limit in (1, 4, 5):
        races.clear()
        out = tmp_path / f"compile{limit}"
        with pytest.raises(SystemExit) if limit < 5 else contextlib.nullcontext():
            cpu_compile_study.main(["--smoke", "--sgld-steps", "0", "--out", str(out)])
        (path,) = out.glob("smoke-cpu-compile-*.json")
        rep = json.loads(path.read_text())
        assert list(rep["gradients_ms"]) == ["sgld", "train"][:limit]
        assert list(rep["elementwise_ms"]) == ["leaky_relu", "leaky_relu + bool mask", "select on a bool mask"][
            :max(0, limit - 2)]
    capsys.readouterr()


@pytest.mark.parametrize("script", ["profile_step", "sgld_study", "sgld_study-failed", "steps_per_sec",
                                    "steps_per_sec-gate"])
def test_a_figure_is_printed_once_its_file_holds_it(script, tmp_path, monkeypatch, capsys):
    """profile_step, sgld_study and steps_per_sec printed each engine's, variant's or config's figures (or its
    failure, the equivalence gate's verdict) before the write that records them: a Ctrl-C in between left on the
    screen what no file held, beside run_script's line naming the file as saved. Each write now comes first: a Ctrl-C
    in the second write leaves the first's line printed, and not the second's (in the first write, the gate's: none)."""
    import env_info
    import profile_step
    import sgld_study

    def variant(name, opts, args, device, x0):
        if script.endswith("-failed"):
            raise RuntimeError(f"{name} cannot run here")
        return {"name": name, "call_s_median": 0.5, "sgld_step_ms": 250.0}, torch.zeros(x0.shape)

    monkeypatch.setattr(sgld_study, "run_variant", variant)
    monkeypatch.setattr(profile_step, "profile", lambda call, device, reps, rows: {
        "time_basis": "operators' own CPU time", "profiled_ms_per_call": 1.0, "categories": {}, "top": []})
    monkeypatch.setattr(steps_per_sec, "equivalence_check", lambda *a: {"passed": True, "detail": "not checked"})
    monkeypatch.setattr(steps_per_sec, "run_config", lambda name, *a: {"name": name, "batch_size": 4,
                                                                       "status": "failed: not run"})
    writes, stop = [], 1 if script.endswith("-gate") else 2

    def write_result(*args, **kwargs):
        writes.append(args[0])
        if len(writes) == stop:
            raise KeyboardInterrupt  # Ctrl-C in the second write
        return env_info.write_result(*args, **kwargs)

    out = ["--out", str(tmp_path)]
    main, argv, first, second = {
        "profile_step": (profile_step.main, ["--device", "cpu", "--smoke", "--engines", "reference,default"],
                         "reference ", "default "),
        "sgld_study": (sgld_study.main, ["--device", "cpu", "--smoke", "--variants", "default,nchw"], "default ",
                       "nchw "),
        "sgld_study-failed": (sgld_study.main, ["--device", "cpu", "--smoke", "--variants", "default,nchw"],
                              "default: failed", "nchw: failed"),
        "steps_per_sec": (steps_per_sec.main, ["--device", "cpu", "--smoke"], "equivalence check: passed",
                          "wrn-10-2: failed: not run"),
        "steps_per_sec-gate": (steps_per_sec.main, ["--device", "cpu", "--smoke"], "wrn-10-2: failed: not run",
                               "equivalence check: passed"),
    }[script]
    monkeypatch.setattr(sys.modules[main.__module__], "write_result", write_result)
    with pytest.raises(KeyboardInterrupt):
        main(argv + out)
    printed = capsys.readouterr().out.splitlines()
    assert len(writes) == stop and [line for line in printed if line.startswith((first, second))] == [
        line for line in printed if line.startswith(first)][:stop - 1], printed
    assert stop == 1 or any(line.startswith(first) for line in printed), printed


@pytest.mark.parametrize("stop", [KeyboardInterrupt(), OSError(28, "No space left on device")], ids=["ctrl-c", "full"])
def test_a_claim_cut_short_without_hard_links_leaves_no_file(stop, tmp_path, monkeypatch):
    """Where hard links are unavailable, claim_result takes the name by an exclusive create, then fills the file: a
    Ctrl-C or a full disk in between left an empty results file (as if a run had written nothing). The name is given
    back instead: no file, and the next claim takes it."""
    import env_info

    write = env_info.atomic_write_text

    def write_stopped(text, path):
        if not Path(path).name.startswith("."):  # the file itself, not the one it is first written to
            raise stop
        write(text, path)

    monkeypatch.setattr(env_info.os, "link", lambda *a: (_ for _ in ()).throw(PermissionError(1, "no hard links")))
    monkeypatch.setattr(env_info, "atomic_write_text", write_stopped)
    with pytest.raises(type(stop)):
        env_info.claim_result("{}\n", tmp_path, "mine.json")
    assert not list(tmp_path.iterdir())
    monkeypatch.setattr(env_info, "atomic_write_text", write)
    assert env_info.claim_result("{}\n", tmp_path, "mine.json") == tmp_path / "mine.json"


def test_two_runs_started_in_the_same_second_keep_a_file_each(tmp_path, monkeypatch, capsys):
    """Result files are named by the second a run started and its device: a second run started in the same second
    (two benchmarks launched together) replaced the first one's file. The first write of a run claims a file of
    its own (<name>-2.json where the name is taken); its later writes replace that file, not another's."""
    import bench_kernels
    import env_info
    import profile_step
    import sgld_study

    when = env_info.now_utc()
    for module in (steps_per_sec, sgld_study, profile_step, bench_kernels):
        monkeypatch.setattr(module, "now_utc", lambda: when)
    stamp = when.strftime("%Y-%m-%dT%H%M%S")

    first = env_info.write_result({"run": 1}, "quick", "GPU X", when, tmp_path / "w")
    second = env_info.write_result({"run": 2}, "quick", "GPU X", when, tmp_path / "w")
    assert (first.name, second.name) == (f"quick-{stamp}-GPU-X.json", f"quick-{stamp}-GPU-X-2.json")
    assert env_info.write_result({"run": 2, "more": True}, "quick", "GPU X", when, tmp_path / "w", second) == second
    assert [json.loads(p.read_text()) for p in (first, second)] == [{"run": 1}, {"run": 2, "more": True}]
    assert sorted(p.name for p in (tmp_path / "w").iterdir()) == sorted([first.name, second.name])  # no claim file
    # a file system without hard links: the name is taken by an exclusive create
    with monkeypatch.context() as m:
        m.setattr(env_info.os, "link", lambda *a: (_ for _ in ()).throw(PermissionError(1, "no hard links")))
        paths = [env_info.write_result({"run": k}, "quick", "GPU X", when, tmp_path / "nolink") for k in (1, 2)]
    assert [p.name for p in paths] == [first.name, second.name]
    assert [json.loads(p.read_text()) for p in paths] == [{"run": 1}, {"run": 2}]
    assert sorted(p.name for p in (tmp_path / "nolink").iterdir()) == sorted([first.name, second.name])

    # each script, run twice in one second: two files, each with all of its run's writes
    monkeypatch.setattr(sgld_study, "run_variant", lambda name, opts, args, device, x0: (
        {"name": name, "call_s_median": 0.5, "sgld_step_ms": 250.0}, torch.zeros(x0.shape)))
    monkeypatch.setattr(profile_step, "profile", lambda call, device, reps, rows: {
        "time_basis": "operators' own CPU time", "profiled_ms_per_call": 1.0, "categories": {}, "top": []})
    monkeypatch.setattr(steps_per_sec, "equivalence_check", lambda *a: {"passed": True, "detail": "not checked"})
    monkeypatch.setattr(steps_per_sec, "run_config", lambda name, *a: {"name": name, "batch_size": 4,
                                                                       "status": "failed: not run"})
    monkeypatch.setenv("FASTJEM_BENCH_OUT", str(tmp_path / "kernels"))
    runs = {"sgld-study": lambda out: sgld_study.main(["--device", "cpu", "--smoke", "--variants", "default,nchw",
                                                        "--out", out]),
            "profile": lambda out: profile_step.main(["--device", "cpu", "--smoke", "--engines", "reference,default",
                                                      "--out", out]),
            "steps": lambda out: steps_per_sec.main(["--device", "cpu", "--smoke", "--out", out]),
            "kernels": lambda out: bench_kernels._write_report("kernels", "Some CPU", {"results": []})}
    for kind, run in runs.items():
        out = tmp_path / kind
        for _ in range(2):
            run(str(out))
        files = sorted(out.glob("*.json"))
        prefix = "" if kind == "kernels" else "smoke-"
        device = "Some-CPU" if kind == "kernels" else env_info.slug(env_info.device_name(torch.device("cpu")))
        assert [p.name for p in files] == [f"{prefix}{kind}-{stamp}-{device}{k}.json" for k in ("-2", "")], kind
        for p in files:
            rep = json.loads(p.read_text())
            if kind == "sgld-study":
                assert [v["name"] for v in rep["variants"]] == ["default", "nchw"]
            if kind == "profile":
                assert list(rep["engines"]) == ["reference", "default"]
    capsys.readouterr()


def test_every_sgld_launch_the_kernel_benchmark_sweeps_draws_the_default_numbers():
    """The GPU suite's launch-configuration sweep of sgld_step_ (block, warps): each configuration, launched as the
    sweep launches it, gives the default's numbers (the Triton kernel under the interpreter here; the sweep checks it
    again on the GPU before timing it)."""
    import bench_kernels
    from fastjem.kernels import new_rng_state
    from fastjem.kernels.sgld import sgld_step_fwd
    from kernel_utils import skip_unless_runnable

    skip_unless_runnable("cpu", "triton")
    assert (1024, 4) in bench_kernels.SGLD_CONFIGS and (256, 2) in bench_kernels.SGLD_CONFIGS
    assert bench_kernels._sgld_launch((1024, 4)) == {"block": 1024, "num_warps": 4}
    assert bench_kernels._sgld_launch("default") == {}
    gen = torch.Generator().manual_seed(0)
    x0, grad = torch.randn(2, 3, 16, 17, generator=gen), torch.randn(2, 3, 16, 17, generator=gen)
    xa, sa = x0.clone(), new_rng_state(1, "cpu")
    sgld_step_fwd(xa, grad, 1.0, 0.01, sa)
    for cfg in bench_kernels.SGLD_CONFIGS:
        xb, sb = x0.clone(), new_rng_state(1, "cpu")
        sgld_step_fwd(xb, grad, 1.0, 0.01, sb, **bench_kernels._sgld_launch(cfg))
        assert torch.equal(xa, xb) and torch.equal(sa, sb), cfg


def test_every_buffer_launch_the_kernel_benchmark_sweeps_gives_the_default_rows():
    """The GPU suite's launch sweep of the buffer ops (tiles, warps, and for buffer_sample every drawn row requested
    before or after the reset decisions): each configuration, launched as the sweep launches it, gives the default's
    rows and state (the Triton kernels under the interpreter here)."""
    import bench_kernels
    from fastjem.kernels import new_rng_state
    from fastjem.kernels.buffer import buffer_sample_fwd, buffer_write_fwd
    from kernel_utils import skip_unless_runnable

    skip_unless_runnable("cpu", "triton")
    assert {((1, 1024), 4, "rows-first"), ((1, 2048), 8, "rows-first"), "rows-first"} <= \
        set(bench_kernels.SAMPLE_CONFIGS)
    # nothing drawn in a write
    assert not any("rows-first" in c for c in bench_kernels.WRITE_CONFIGS)
    assert bench_kernels._buffer_launch(((2, 1024), 8, "rows-first")) == {"tiles": (2, 1024), "num_warps": 8,
                                                                          "rows_first": True}
    assert bench_kernels._buffer_launch(((1, 1024), 4)) == {"tiles": (1, 1024), "num_warps": 4}
    assert bench_kernels._buffer_launch("rows-first") == {"rows_first": True}
    assert bench_kernels._buffer_launch("default") == {}
    gen = torch.Generator().manual_seed(1)
    buf = torch.rand(20, 3, 8, 8, generator=gen) * 2 - 1
    idx = torch.randint(0, 20, (5,), generator=gen)
    rows = torch.randn(5, 3, 8, 8, generator=gen)
    sa = new_rng_state(3, "cpu")
    want = buffer_sample_fwd(buf, idx, 0.5, sa)
    for cfg in bench_kernels.SAMPLE_CONFIGS:
        sb = new_rng_state(3, "cpu")
        got = buffer_sample_fwd(buf, idx, 0.5, sb, **bench_kernels._buffer_launch(cfg))
        assert torch.equal(got, want) and torch.equal(sb, sa), cfg
    written = buf.clone()
    buffer_write_fwd(written, idx.unique(), rows[: idx.unique().numel()])
    for cfg in bench_kernels.WRITE_CONFIGS[1::5]:
        other = buf.clone()
        buffer_write_fwd(other, idx.unique(), rows[: idx.unique().numel()], **bench_kernels._buffer_launch(cfg))
        assert torch.equal(other, written), cfg


def test_the_gpu_kernel_benchmarks_dry_run_on_a_cpu(tmp_path, monkeypatch, capsys):
    """bench_kernels' CUDA report and launch sweep, run here as the GPU suite runs them but on the CPU: the Triton
    kernels under the interpreter at small sizes, the timers faked (the n-th timing n us). Every case and
    configuration is checked and "timed", the fractions of the device's HBM peak derived, both reports written and
    their summaries printed: a mistake there costs no GPU session its kernels stage."""
    import bench_kernels
    from kernel_utils import skip_unless_runnable

    skip_unless_runnable("cpu", "triton")
    triton_testing = pytest.importorskip("triton.testing")
    timed = []

    def fake_timer(fn, *args, **kwargs):  # the n-th timing: n us
        fn()
        timed.append(fn)
        return 1e-3 * len(timed)

    monkeypatch.setattr(triton_testing, "do_bench", fake_timer)
    monkeypatch.setattr(triton_testing, "do_bench_cudagraph", fake_timer)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda *a: "NVIDIA H200")
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a: None)
    real_host_us = bench_kernels._host_us
    # two timed calls after one warm-up (50 warm-up calls of 64 rows under the interpreter took 20 of the test's s)
    monkeypatch.setattr(bench_kernels, "_host_us", lambda fn, n=2000, warmup=50: real_host_us(fn, 2, 1))
    monkeypatch.setattr(bench_kernels, "GPU", "cpu")
    monkeypatch.setattr(bench_kernels, "REPORT_FULL", False)
    # each configuration's grid under the interpreter runs one program at a time: sizes that still give the wider
    # blocks and tiles more than one program, the last one partial (2 rows: 4096 in two; 5 rows: tiles of 2 and 4
    # rows in three and two), and no more (3 rows and 7 took a quarter more of the sweep's 95 s)
    monkeypatch.setattr(bench_kernels, "SWEEP_SGLD_ROWS", (1, 2))
    monkeypatch.setattr(bench_kernels, "SWEEP_BUFFER", (20, (2, 5)))
    monkeypatch.setenv("FASTJEM_BENCH_OUT", str(tmp_path))
    torch.manual_seed(0)

    bench_kernels.test_bench_cuda_report()
    (path,) = tmp_path.glob("kernels-*-NVIDIA-H200.json")
    report = json.loads(path.read_text())
    assert report["peak_bandwidth_Bps"] == 4.8e12 and report["dispatch"]["host_us_registered_op"] > 0
    names = [c.name for c in bench_kernels._cases("cpu", "triton", full=False)]
    assert [r["op"] for r in report["results"]] == names
    for i, r in enumerate(report["results"]):  # five timings each: fused, eager; replayed: fused, eager, the copy
        us = [5 * i + k for k in range(1, 6)]
        assert [r[k] * 1e3 for k in ("fused_ms", "eager_ms", "fused_graph_ms", "eager_graph_ms", "copy_graph_ms")] \
            == pytest.approx(us)
        assert r["speedup_vs_eager"] == pytest.approx(us[1] / us[0])
        assert r["graph_speedup_vs_eager"] == pytest.approx(us[3] / us[2])
        for key, t in (("fraction_of_peak_bandwidth", us[0]), ("graph_fraction_of_peak_bandwidth", us[2]),
                       ("copy_graph_fraction_of_peak_bandwidth", us[4])):
            assert r[key] == pytest.approx(r["bytes_moved"] / (t * 1e-6) / 4.8e12), key
    assert len(timed) == 5 * len(names)
    out = capsys.readouterr().out
    assert f"NVIDIA H200  (peak 4.80 TB/s)  -> {path}" in out and "host cost of one sgld_step_" in out

    bench_kernels.test_bench_cuda_launch_configs()
    (path,) = tmp_path.glob("kernel-configs-*-NVIDIA-H200.json")
    sweep = json.loads(path.read_text())
    rows = {(r["op"], r["size"], json.dumps(r["config"])) for r in sweep["results"]}
    counts = {"sgld_step_": len(bench_kernels.SGLD_CONFIGS), "buffer_sample": len(bench_kernels.SAMPLE_CONFIGS),
              "buffer_write_": len(bench_kernels.WRITE_CONFIGS)}
    assert len(rows) == len(sweep["results"]) == 2 * sum(counts.values())
    assert ("sgld_step_", "2x3x32x32", '[4096, 8]') in rows
    assert ("buffer_sample", "20x3x32x32,B=5", '[[1, 2048], 4, "rows-first"]') in rows
    assert ("buffer_sample", "20x3x32x32,B=2", '[[2, 1024], 8, "rows-first"]') in rows
    # each (op, size)'s first configuration, its default, was timed first, so the fastest of the faked timings
    for best in sweep["best"]:
        assert best["config"] == "default" and best["speedup_vs_default"] == 1, best
    assert {(b["op"], b["size"]) for b in sweep["best"]} == {(op, size) for op, size, _ in rows}
    out = capsys.readouterr().out
    assert out.count("the default's launch with every drawn row requested first") == 2  # buffer_sample, twice


def test_the_datasheet_peaks_and_result_names_benchmarks_record():
    """peak_flops: the first table key the device's name contains (the specific variants first), per precision;
    None where a device or a precision has no entry (MFU is then not claimed). result_name: kind, UTC time and the
    device's name made safe for a file name."""
    import datetime

    from env_info import peak_flops, result_name, slug

    assert peak_flops("NVIDIA H100 80GB HBM3", "bf16") == 989e12
    assert peak_flops("NVIDIA H100 PCIe", "bf16") == 756e12 and peak_flops("NVIDIA H100 NVL", "tf32") == 418e12
    assert peak_flops("NVIDIA H200", "fp32") == 67e12
    assert peak_flops("Tesla V100-SXM2-16GB", "bf16") is None and peak_flops("AMD EPYC", "fp32") is None
    assert slug("Intel(R) Xeon(R) Processor @ 2.1GHz") == "Intel-R-Xeon-R-Processor-2-1GHz"
    when = datetime.datetime(2026, 1, 2, 3, 4, 5, tzinfo=datetime.timezone.utc)
    assert result_name("steps", "NVIDIA H100 80GB HBM3", when) == "steps-2026-01-02T030405-NVIDIA-H100-80GB-HBM3.json"
