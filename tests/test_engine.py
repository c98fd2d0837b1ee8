"""The fast path computes what the eager path computes (issue: the fast path)."""

import contextlib
import dataclasses
import math
import os
import subprocess
import sys
import time
import types

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from fastjem.config import TrainConfig
from fastjem.engine import BF16Probe, fit_sgld_parts, resolve_engine
from fastjem.models import WideResNet
from fastjem.sampler import SGLD, model_energy, sampling_mode
from fastjem.train import Trainer

CPU = torch.device("cpu")


def test_auto_precision_follows_the_cpu(monkeypatch, tmp_path):
    monkeypatch.setenv("FASTJEM_CACHE", str(tmp_path))
    timed = []
    monkeypatch.setattr("fastjem.engine.time_bf16_probe", lambda: timed.append(1) or (6.0, 4.0))
    monkeypatch.setattr("fastjem.engine.cpu_bf16_flags", lambda: ["amx_bf16"])
    eng = resolve_engine(TrainConfig(), CPU, has_batch_norm=False)
    assert eng.precision == "bf16" and any("amx_bf16" in n for n in eng.notes) and not timed
    # AVX512-BF16 without AMX: bf16 where this CPU's oneDNN runs the probe's bf16 convolutions faster (an AMD EPYC
    # did, x1.8; an Intel Xeon ran them slower), with the margin of BF16_PROBE_SPEEDUP
    monkeypatch.setattr("fastjem.engine.cpu_bf16_flags", lambda: ["avx512_bf16"])
    eng = resolve_engine(TrainConfig(), CPU, has_batch_norm=False)
    assert eng.precision == "bf16" and timed == [1]
    assert any("AVX512-BF16 (no AMX)" in n and "x1.50 the speed of fp32" in n for n in eng.notes), eng.notes
    for fp32_ms, bf16_ms in ((3.0, 4.0), (1.05, 1.0)):
        monkeypatch.setattr("fastjem.engine.cpu_bf16_probe", lambda a=fp32_ms, b=bf16_ms: BF16Probe(a, b, "probe"))
        eng = resolve_engine(TrainConfig(), CPU, has_batch_norm=False)
        assert eng.precision == "fp32" and any("AVX512-BF16 but no AMX" in n and "under the x1.1" in n
                                               for n in eng.notes), eng.notes
    monkeypatch.setattr("fastjem.engine.cpu_bf16_probe", lambda: BF16Probe(1.1, 1.0, "probe"))
    assert resolve_engine(TrainConfig(), CPU, has_batch_norm=False).precision == "bf16"
    # timed beside other work (not kept): fp32, whatever it measured, so that every such run picks the same
    monkeypatch.setattr("fastjem.engine.cpu_bf16_probe",
                        lambda: BF16Probe(3.0, 1.0, "probe timed now beside other work", steady=False))
    eng = resolve_engine(TrainConfig(), CPU, has_batch_norm=False)
    assert eng.precision == "fp32" and any("x3.00 the speed" in n and "fp32 where the timing cannot be trusted" in n
                                           for n in eng.notes), eng.notes
    monkeypatch.setattr("fastjem.engine.cpu_bf16_flags", lambda: ["amx_bf16", "avx512_bf16"])
    assert resolve_engine(TrainConfig(), CPU, has_batch_norm=False).precision == "bf16"
    monkeypatch.setattr("fastjem.engine.cpu_bf16_flags", lambda: [])
    eng = resolve_engine(TrainConfig(), CPU, has_batch_norm=False)
    assert eng.precision == "fp32" and any("neither" in n for n in eng.notes)
    # an explicit request is honoured whatever the CPU has
    assert resolve_engine(TrainConfig(precision="bf16"), CPU, has_batch_norm=False).precision == "bf16"


def test_auto_precision_keeps_a_resumed_runs_started_in_only_where_it_is_bf16_or_fp32(monkeypatch):
    """``started_in`` (a resumed run's checkpoint record) decides auto without the probe; a record that is no
    precision auto gives (tf32, a damaged value) is probed again; an explicit --precision is never overridden."""
    monkeypatch.setattr("fastjem.engine.fast_bf16", lambda device: (True, "the test's probe"))
    for started_in, expected in (("fp32", "fp32"), ("bf16", "bf16"), ("tf32", "bf16"), ("fp64", "bf16"),
                                 (None, "bf16")):
        eng = resolve_engine(TrainConfig(), CPU, has_batch_norm=False, started_in=started_in)
        assert eng.precision == expected, started_in
        assert ("its checkpoint records it" in eng.notes[0]) is (started_in in ("fp32", "bf16")), eng.notes
    assert resolve_engine(TrainConfig(precision="fp32"), CPU, has_batch_norm=False, started_in="bf16").precision == \
        "fp32"


def test_the_cpu_bf16_probe_is_timed_once_per_cpu_torch_and_thread_count(monkeypatch, tmp_path):
    """``cpu_bf16_probe`` times the probe where its cache file has no entry for this CPU, torch and thread count,
    writes it there, and reads it back after; a file that is not JSON, or not ours, is timed over; an unwritable
    cache still decides, and says it was not cached."""
    import json

    from fastjem.engine import cpu_bf16_probe

    monkeypatch.setenv("FASTJEM_CACHE", str(tmp_path))
    monkeypatch.setattr("fastjem.engine.busy_cpu_seconds", lambda cpus=None: None)  # other work: unknown
    timings = iter([(6.0, 3.0), (5.0, 4.0), (7.0, 2.0), (8.0, 2.0), (9.0, 3.0)])
    timed = []
    monkeypatch.setattr("fastjem.engine.time_bf16_probe", lambda: timed.append(1) or next(timings))
    path = tmp_path / "cpu-bf16-probe.json"
    assert cpu_bf16_probe() == BF16Probe(6.0, 3.0, f"probe timed now, cached in {path}", steady=True)
    assert len(timed) == 1 and cpu_bf16_probe() == (6.0, 3.0, f"probe cached in {path}", True) and len(timed) == 1
    [(key, entry)] = json.loads(path.read_text()).items()
    assert entry["fp32_ms"] == 6.0 and entry["bf16_ms"] == 3.0 and f"{torch.get_num_threads()} threads" in key
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(threads + 1)
        assert cpu_bf16_probe()[:2] == (5.0, 4.0) and len(timed) == 2  # another thread count: its own entry
    finally:
        torch.set_num_threads(threads)
    assert cpu_bf16_probe()[:2] == (6.0, 3.0) and len(json.loads(path.read_text())) == 2
    path.write_text("{not json")
    assert cpu_bf16_probe()[:2] == (7.0, 2.0) and json.loads(path.read_text())[key]["fp32_ms"] == 7.0
    path.write_text(json.dumps({key: {"fp32_ms": "nan", "bf16_ms": 1.0}}))
    assert cpu_bf16_probe()[:2] == (8.0, 2.0)
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("FASTJEM_CACHE", str(blocker / "cache"))
    probe = cpu_bf16_probe()  # steady: timed alone, only the file could not be written
    assert probe[:2] == (9.0, 3.0) and "not cached" in probe.where and probe.steady and len(timed) == 5


def test_a_cached_probe_entry_is_used_only_when_both_times_are_positive_and_finite(monkeypatch, tmp_path):
    """An entry of this CPU's key is taken as it is when both its times are positive and finite, however short (a
    fast CPU's probe takes well under a millisecond); a zero, negative or infinite time, a missing one or an entry
    that is not a mapping is timed over and replaced."""
    import json

    from fastjem.engine import cpu_bf16_probe

    monkeypatch.setenv("FASTJEM_CACHE", str(tmp_path))
    monkeypatch.setattr("fastjem.engine.busy_cpu_seconds", lambda cpus=None: None)
    monkeypatch.setattr("fastjem.engine.time_bf16_probe", lambda: (5.0, 2.5))
    path = tmp_path / "cpu-bf16-probe.json"
    cpu_bf16_probe()  # timed, and cached under this CPU's key
    [key] = json.loads(path.read_text())
    path.write_text(json.dumps({key: {"fp32_ms": 0.4, "bf16_ms": 0.25, "other_cores": 0.0}}))
    assert cpu_bf16_probe()[:2] == (0.4, 0.25)
    # an entry written before the probe measured the machine's other work may have been timed beside it
    for entry in ({"fp32_ms": 0.0, "bf16_ms": 1.0, "other_cores": 0.0},
                  {"fp32_ms": 1.0, "bf16_ms": -1.0, "other_cores": 0.0},
                  {"fp32_ms": 1.0, "bf16_ms": 1e400, "other_cores": 0.0}, {"fp32_ms": 1.0, "other_cores": 0.0},
                  [1.0, 2.0], {"fp32_ms": 0.4, "bf16_ms": 0.25}):
        path.write_text(json.dumps({key: entry}))
        assert cpu_bf16_probe()[:2] == (5.0, 2.5), entry
        assert json.loads(path.read_text())[key]["fp32_ms"] == 5.0


def test_a_probe_timed_beside_other_work_decides_its_run_and_is_not_kept(monkeypatch, tmp_path):
    """Where other processes took more of the cores this process may run on (its affinity; 8 here), while the probe
    was timed, than its threads leave free, its times (which that work distorted: an AMD EPYC's bf16 step came out
    slower than fp32 beside a busy process, x1.7 faster alone) decide this run only: nothing is cached, the next run
    times it again; timed on quiet cores, it is kept, with the other work it measured."""
    import json

    from fastjem.engine import PROBE_OTHER_CORES, cpu_bf16_probe

    monkeypatch.setenv("FASTJEM_CACHE", str(tmp_path))
    path = tmp_path / "cpu-bf16-probe.json"
    cpus = set(range(8))
    monkeypatch.setattr("fastjem.engine.usable_cpus", lambda: cpus)
    spare = max(0, len(cpus) - torch.get_num_threads())
    monkeypatch.setattr("fastjem.engine.time_bf16_probe", lambda: (3.0, 4.0))
    for others, kept in ((spare + PROBE_OTHER_CORES + 0.1, False), (spare + PROBE_OTHER_CORES - 0.1, True)):
        measured_on = []

        @contextlib.contextmanager
        def load_of(on, cores=others, measured_on=measured_on):  # what other_cpu_load measured on those CPUs
            measured_on.append(on)
            yield {"cores": cores}

        monkeypatch.setattr("fastjem.engine.other_cpu_load", load_of)
        fp32_ms, bf16_ms, where, steady = cpu_bf16_probe()
        assert (fp32_ms, bf16_ms) == (3.0, 4.0) and measured_on == [cpus]
        assert path.exists() is kept is steady, where
        if not kept:
            assert where.startswith("probe timed now while other work took") and "of the 8 cores it may run on, " \
                "not cached" in where, where
        else:
            [entry] = json.loads(path.read_text()).values()
            assert entry["other_cores"] == others and "cached in" in where, (entry, where)


def test_the_other_cpu_load_counts_another_process_not_this_one(monkeypatch):
    """``busy_cpu_seconds`` counts this process's CPU time (a matrix product on every thread torch has, so the
    machine's idle time would not do) and another process's: ``other_cpu_load`` sees a process spinning beside the
    block as about one core. The block's own CPU time is taken off (clocks faked: 3 s of the machine's in 2 s,
    1 of them this process's, is one core of other work)."""
    import fastjem.engine as engine
    from fastjem.engine import busy_cpu_seconds, other_cpu_load

    if busy_cpu_seconds() is None:
        pytest.skip("no /proc/stat on this machine")
    # each CPU's time, and their sum the machine's (read a moment later: a few ticks more at most)
    each = [busy_cpu_seconds({c}) for c in range(os.cpu_count())]
    total = busy_cpu_seconds()
    assert -1e-6 <= total - sum(each) < 0.1 * len(each) + 0.05, (each, total)
    assert len(each) == 1 or max(each) < total
    before, own = busy_cpu_seconds(), time.process_time()
    a = torch.randn(768, 768)
    while time.process_time() - own < 0.5:
        a = torch.tanh(a @ a)
    assert busy_cpu_seconds() - before >= 0.8 * (time.process_time() - own)
    spin = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.6: pass"
    with other_cpu_load() as besides:
        subprocess.run([sys.executable, "-c", spin], check=True)
    assert besides["cores"] is not None and besides["cores"] >= 0.5, besides
    clocks = {"monotonic": iter([10.0, 12.0]), "process_time": iter([5.0, 6.0]), "machine": iter([100.0, 103.0])}
    monkeypatch.setattr(engine, "time", types.SimpleNamespace(monotonic=lambda: next(clocks["monotonic"]),
                                                              process_time=lambda: next(clocks["process_time"])))
    monkeypatch.setattr(engine, "busy_cpu_seconds", lambda cpus=None: next(clocks["machine"]))
    with other_cpu_load() as load:
        pass
    assert load["cores"] == pytest.approx(1.0)


def test_the_bf16_probe_times_bf16_convolutions_against_fp32_ones():
    """The probe's two steps compute the same input gradient, one with its convolutions in bf16 and one in fp32; its
    timing returns two positive times and leaves the global random stream where it was (training seeds it)."""
    from fastjem.engine import BF16_PROBE_SHAPE, bf16_probe_step, time_bf16_probe

    class ConvDtypes(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.seen = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            if "convolution" in func.__name__:
                self.seen.append(args[0].dtype)
            return func(*args, **(kwargs or {}))

    gen = torch.Generator().manual_seed(1)
    x = torch.randn(2, 8, 6, 6, generator=gen).to(memory_format=torch.channels_last)
    weights = [torch.randn(8, 8, 3, 3, generator=gen) / 8 for _ in range(2)]
    exact = bf16_probe_step(x.double(), [w.double() for w in weights], bf16=False)
    grads = {}
    for bf16 in (False, True):
        with ConvDtypes() as mode:
            grads[bf16] = bf16_probe_step(x, [w.to(torch.bfloat16) if bf16 else w for w in weights], bf16)
        assert grads[bf16].dtype == torch.float32 and grads[bf16].shape == x.shape
        # two convolutions forward, and their input gradients
        assert mode.seen and set(mode.seen) == {torch.bfloat16 if bf16 else torch.float32}, mode.seen
    # the step as modules: conv 3x3 (padding 1) -> LeakyReLU(0.2) -> conv 3x3, no biases, the first weight first
    net = torch.nn.Sequential(torch.nn.Conv2d(8, 8, 3, padding=1, bias=False), torch.nn.LeakyReLU(0.2),
                              torch.nn.Conv2d(8, 8, 3, padding=1, bias=False)).double()
    with torch.no_grad():
        net[0].weight.copy_(weights[0])
        net[2].weight.copy_(weights[1])
    xd = x.double().requires_grad_(True)
    assert torch.allclose(exact, torch.autograd.grad(net(xd).sum(), xd)[0], rtol=1e-10, atol=1e-12)
    assert torch.allclose(grads[False].double(), exact, rtol=1e-5, atol=1e-6)
    assert torch.allclose(grads[True].double(), exact, rtol=0.05, atol=0.05 * exact.abs().max().item())
    assert not torch.equal(grads[True], grads[False])
    assert BF16_PROBE_SHAPE == (16, 64, 16, 16)
    state = torch.get_rng_state()
    fp32_ms, bf16_ms = time_bf16_probe(rounds=1, reps=1)
    assert fp32_ms > 0 and bf16_ms > 0 and torch.equal(torch.get_rng_state(), state)
    for mode in (torch.no_grad, torch.inference_mode):  # an engine resolved where gradients are off still probes
        with mode():
            assert min(time_bf16_probe(rounds=1, reps=1)) > 0


def test_gpu_only_options_fall_back_on_cpu_with_a_note(monkeypatch):
    monkeypatch.setattr("fastjem.kernels._dispatch.interpreter_on", lambda: False)
    eng = resolve_engine(TrainConfig(kernels="triton", precision="tf32"), CPU, has_batch_norm=True)
    assert not eng.cuda_graph and eng.kernels == "reference" and eng.precision == "fp32"
    assert not eng.fused_forward
    joined = " | ".join(eng.notes)
    for word in ("CUDA graph off", "kernels triton -> reference", "tf32", "batch norm"):
        assert word in joined


def _params(model):
    return torch.cat([p.detach().flatten() for p in model.parameters()])


def test_fast_engine_matches_the_eager_reference_path(tmp_path):
    """Same seed, kernels=reference, fp32: compiled + fused forward vs eager + three forwards.

    Not bitwise: inductor fuses bias + LeakyReLU and reorders reductions, and one forward of a
    3B batch blocks the convolutions differently from three of B; both change fp32 rounding
    (~1e-6 relative), which SGLD's 20 gradient steps carry forward. Hence a tolerance of 1e-4.
    """
    base = TrainConfig(dataset="digits", arch="wrn", depth=10, width=1, batch_size=8, sgld_steps=4,
                       buffer_size=64, iters=3, warmup_iters=2, lr=1e-3, device="cpu", precision="fp32",
                       kernels="reference", seed=5, log_every=1, ckpt_every=0)
    eager = Trainer(base.replace(compile=False, fused_forward=False), out_dir=tmp_path / "eager", progress=False)
    fast = Trainer(base.replace(compile=True, fused_forward=True), out_dir=tmp_path / "fast", progress=False)
    assert fast.engine.compile and fast.engine.fused_forward and not eager.engine.compile
    assert torch.equal(_params(fast.model), _params(eager.model))
    # Each draws its chain indices from RNG states of its own, seeded alike (the rewind below changes nothing).
    start = torch.get_rng_state()
    runs = {}
    for name, t in (("eager", eager), ("fast", fast)):
        torch.set_rng_state(start)
        runs[name] = []
        for _ in range(3):
            parts = t.train_step()
            runs[name].append((t.last_samples.clone(), parts["loss"], _params(t.model).clone()))
    for (xe, le, pe), (xf, lf, pf) in zip(runs["eager"], runs["fast"]):
        torch.testing.assert_close(xf, xe, rtol=1e-4, atol=1e-4)
        torch.testing.assert_close(lf, le, rtol=1e-4, atol=1e-4)
        torch.testing.assert_close(pf, pe, rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(fast.buffer.data, eager.buffer.data, rtol=1e-4, atol=1e-4)
    # compiled vs eager WRN: same logits and input gradients
    x = torch.randn(6, 1, 8, 8, requires_grad=True)
    x2 = x.detach().clone().requires_grad_(True)
    torch.testing.assert_close(fast.net(x), eager.model(x2), rtol=1e-4, atol=1e-5)
    (g_fast,) = torch.autograd.grad(fast.net(x).logsumexp(1).sum(), x)
    (g_eager,) = torch.autograd.grad(eager.model(x2).logsumexp(1).sum(), x2)
    torch.testing.assert_close(g_fast, g_eager, rtol=1e-4, atol=1e-5)


def test_concatenated_forward_equals_three_forwards():
    torch.manual_seed(0)
    m = WideResNet(10, 2, num_classes=10).eval()
    a, b, c = torch.randn(5, 3, 16, 16), torch.rand(7, 3, 16, 16) * 2 - 1, torch.randn(3, 3, 16, 16)
    fused = m(torch.cat([a, b, c])).split([5, 7, 3])
    for f, x in zip(fused, (a, b, c)):
        torch.testing.assert_close(f, m(x), rtol=1e-5, atol=1e-5)


class ConvBackwardRecorder(TorchDispatchMode):
    """Records the output_mask (grad_input, grad_weight, grad_bias) of every convolution backward."""

    def __init__(self):
        super().__init__()
        self.masks = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is torch.ops.aten.convolution_backward.default:
            self.masks.append(tuple(args[-1]))
        return func(*args, **kwargs)


def test_sampler_computes_no_weight_gradients():
    torch.manual_seed(0)
    m = WideResNet(10, 1, num_classes=10)
    x0 = torch.rand(4, 3, 8, 8) * 2 - 1
    with ConvBackwardRecorder() as rec:
        SGLD(2, 1.0, 0.01, seed=0).sample(model_energy(m), x0, model=m)
    n_convs = sum(isinstance(mod, torch.nn.Conv2d) for mod in m.modules())
    assert len(rec.masks) == 2 * n_convs
    assert all(mask[1] is False and mask[2] is False for mask in rec.masks), rec.masks
    assert all(p.grad is None for p in m.parameters())
    # the recorder does see weight gradients when they are computed (the training backward)
    with ConvBackwardRecorder() as rec:
        model_energy(m)(x0).sum().backward()
    assert all(mask[1] for mask in rec.masks) and len(rec.masks) == n_convs
    with sampling_mode(m):
        assert not any(p.requires_grad for p in m.parameters())


def _aot_graphs(model, run):
    """The forward and backward graphs AOTAutograd builds for the compiled ``model`` (what inductor then lowers)."""
    from functorch.compile import make_boxed_func
    from torch._dynamo.backends.common import aot_autograd

    graphs = {"fw": [], "bw": []}

    def keep(kind):
        def compiler(gm, example_inputs):
            graphs[kind].append(gm)
            return make_boxed_func(gm.forward)
        return compiler

    torch._dynamo.reset()
    run(torch.compile(model, backend=aot_autograd(fw_compiler=keep("fw"), bw_compiler=keep("bw"))))
    return graphs


def _conv_backward_masks(gm):
    return [tuple(n.args[-1]) for n in gm.graph.nodes if n.target == torch.ops.aten.convolution_backward.default]


def test_compiled_sampler_graph_has_no_weight_gradient():
    """The compiled network, sampled with frozen parameters: its backward graph computes the input gradient only."""
    torch.manual_seed(0)
    m = WideResNet(10, 1, num_classes=10)
    x0 = torch.rand(4, 3, 8, 8) * 2 - 1
    n_convs = sum(isinstance(mod, torch.nn.Conv2d) for mod in m.modules())
    graphs = _aot_graphs(m, lambda net: SGLD(2, 1.0, 0.01, seed=0).sample(model_energy(net), x0, model=m))
    (bw,) = graphs["bw"]
    masks = _conv_backward_masks(bw)
    assert len(masks) == n_convs and all(mask == (True, False, False) for mask in masks), masks
    outputs = [a for a in next(n for n in bw.graph.nodes if n.op == "output").args[0] if a is not None]
    assert len(outputs) == 1  # d/dx only: no weight or bias gradient leaves the graph
    assert all(p.grad is None for p in m.parameters())
    # the same inspection sees weight gradients where they are computed (the training step)
    graphs = _aot_graphs(m, lambda net: net(x0).logsumexp(1).sum().backward())
    assert all(mask[1] and mask[2] for mask in _conv_backward_masks(graphs["bw"][0]))
    torch._dynamo.reset()


def test_bf16_engine_keeps_samples_fp32_and_the_noise_statistics(tmp_path):
    """SGLD noise of 0.01 survives bf16: x and the buffer stay fp32 (bf16 spacing near 1 is 0.004)."""
    stats = {}
    for precision in ("fp32", "bf16"):
        cfg = TrainConfig(dataset="digits", arch="convnet", width=8, batch_size=256, sgld_steps=20,
                          sgld_step_size=1e-7, sgld_noise=0.01, buffer_size=256, reinit_prob=0.0, iters=1,
                          device="cpu", precision=precision, compile=False, kernels="reference", seed=2)
        t = Trainer(cfg, out_dir=tmp_path / precision, progress=False)
        assert t.engine.precision == precision
        x0 = t.buffer.data.clone()
        x = t.run_sgld(x0)
        assert x.dtype == torch.float32 and t.buffer.data.dtype == torch.float32
        d = (x - x0).flatten()
        stats[precision] = (d.mean().item(), d.std().item(), d)
    expected = 0.01 * math.sqrt(20)
    n = stats["fp32"][2].numel()
    for precision, (mean, std, _) in stats.items():
        assert abs(mean) < 5 * expected / math.sqrt(n), precision
        assert abs(std / expected - 1) < 0.02, (precision, std, expected)
    # same RNG state: the two runs add the same noise
    torch.testing.assert_close(stats["bf16"][2], stats["fp32"][2], rtol=0, atol=1e-5)


@pytest.mark.gpu
def test_graphed_sampler_replay_equals_eager_on_cuda():
    from fastjem.graphs import GraphedSGLD

    torch.manual_seed(0)
    dev = torch.device("cuda")
    m = WideResNet(10, 2, num_classes=10).to(dev)
    opt = torch.optim.Adam(m.parameters(), lr=1e-3)
    eager = SGLD(5, 1.0, 0.01, seed=7, backend="triton")
    graphed = SGLD(5, 1.0, 0.01, seed=7, backend="triton")
    x0 = torch.rand(16, 3, 32, 32, device=dev) * 2 - 1
    g = GraphedSGLD(graphed, m, m, x0, backend="triton")
    # the capture's warm-up leaves the noise state where it found it
    assert torch.equal(eager.rng_for(dev), graphed.rng_state)
    outs = []
    for _ in range(3):
        x0 = torch.rand(16, 3, 32, 32, device=dev) * 2 - 1
        xe = eager.sample(model_energy(m, backend="triton"), x0, model=m)
        xg = g(x0)
        torch.testing.assert_close(xg, xe, rtol=1e-5, atol=1e-5)
        outs.append(xg)
        # parameters change between replays: the graph must read the new weights
        m(x0).logsumexp(1).mean().backward()
        opt.step()
        opt.zero_grad()
    assert not torch.equal(outs[0], outs[1])


@pytest.mark.gpu
@pytest.mark.parametrize("buffer_init,optimizer,compile_mode,overlap,objective", [
    ("uniform", "adam", "auto", False, {}),
    ("informative", "sgd", "off", False, {}),
    ("uniform", "adam", "off", True, {}),
    ("uniform", "adam", "off", False, dict(class_cond_px=True, pxy_weight=1.0, energy_l2=0.1)),
], ids=["compiled", "informative-sgd", "overlap", "conditional-pxy-l2"])
def test_training_iteration_has_no_host_sync_on_cuda(tmp_path, buffer_init, optimizer, compile_mode, overlap,
                                                     objective):
    """Compiled, and (cheaper: no compile) with the class-Gaussian restarts and DeviceSGD inside the graph, with
    the overlapped backward (a second stream inside the graph), and with class-conditional p(x) sampling, the
    p(x, y) term and the energy penalty."""
    cfg = TrainConfig(dataset="digits", arch="wrn", depth=10, width=2, batch_size=32, sgld_steps=5,
                      buffer_size=320, iters=4, device="cuda", seed=0, buffer_init=buffer_init, optimizer=optimizer,
                      compile=compile_mode, overlap_data=overlap, **objective)
    logs = []
    t = Trainer(cfg, out_dir=tmp_path, progress=False, log=logs.append)
    t.train_step()  # warm-up: compilation and graph capture may sync
    t.train_step()
    assert "iteration" in t._graphs, [m for m in logs if "engine" in m]  # the whole iteration is one graph replay
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        t.train_step()
        t.train_step()
    finally:
        torch.cuda.set_sync_debug_mode("default")
    assert torch.isfinite(t.read_metrics()["loss"] * torch.ones(1)).all()


@pytest.mark.gpu
@pytest.mark.parametrize("precision,compile_mode,overlap", [("fp32", "off", False), ("bf16", "auto", False),
                                                              ("fp32", "off", True)])
def test_iteration_graph_replays_equal_eager_iterations_on_cuda(tmp_path, precision, compile_mode, overlap):
    """Same seeds: four replays of the captured iteration vs four eager iterations (no graphs at all), the
    parameters changing in between. fp32 (TF32 off): the same kernels run, so only atomics-ordered sums
    (cuDNN weight gradients, duplicate buffer rows) can differ: tight tolerances. bf16 + compile: a
    last-bit difference may flip a bf16 rounding, and SGLD carries it forward: looser ones. ``overlap``: both
    runs take the overlapped backward (the graph's on two captured streams, the eager one's on two live ones),
    so both sum the gradient in the same order; that it equals the one backward is tests/test_overlap.py's."""
    # a large buffer: duplicate chain indices (whose write-back order is unspecified) stay rare
    cfg = TrainConfig(dataset="digits", arch="wrn", depth=10, width=2, batch_size=32, sgld_steps=5, buffer_size=10000,
                      iters=10, warmup_iters=3, lr=1e-3, device="cuda", seed=0, precision=precision,
                      compile=compile_mode, ckpt_every=0, sgld_parts=0 if precision == "bf16" else 2)
    logs = []
    graphed = Trainer(cfg.replace(overlap_data=overlap), out_dir=tmp_path / "graphed", progress=False,
                      log=logs.append)
    eager = Trainer(cfg.replace(cuda_graph=False, overlap_data=overlap), out_dir=tmp_path / "eager", progress=False)
    assert graphed.engine.iteration_graph and not eager.engine.iteration_graph and not eager.engine.cuda_graph
    assert graphed.engine.overlap_data == overlap and eager.engine.overlap_data == overlap
    # two blocks forced (the path WRN-28-10's default takes); auto fits one block to WRN-10-2 at batch 32
    assert graphed.engine.sgld_parts == eager.engine.sgld_parts == (1 if precision == "bf16" else 2)
    assert graphed.optimizer.param_groups[0]["fused"] and graphed.optimizer.param_groups[0]["capturable"]
    assert torch.equal(_params(graphed.model), _params(eager.model))
    eager.buffer.data.copy_(graphed.buffer.data)
    start_params = _params(graphed.model).clone()
    start = torch.cuda.get_rng_state()
    runs = {}
    for name, t in (("graphed", graphed), ("eager", eager)):
        torch.cuda.set_rng_state(start)
        runs[name] = []
        for _ in range(4):
            parts = t.train_step()
            runs[name].append((parts["loss"].clone(), _params(t.model).clone(), t.last_samples.clone()))
    assert "iteration" in graphed._graphs, logs
    tol = {"fp32": 1e-4, "bf16": 2e-2}[precision]
    for (lg, pg, xg), (le, pe, xe) in zip(runs["graphed"], runs["eager"]):
        torch.testing.assert_close(lg, le, rtol=tol, atol=tol)
        torch.testing.assert_close(xg, xe, rtol=tol, atol=tol)
        if precision == "fp32" and not overlap:
            torch.testing.assert_close(pg, pe, rtol=1e-4, atol=1e-3 * cfg.lr)
        elif precision == "fp32":
            # overlap: cuDNN's weight gradients sum in an unspecified order run to run, and Adam divides by
            # sqrt(v), so where a weight's gradient nearly cancels the rounding moves its step by a visible part
            # of lr (an H100, eager run with the one backward: 7 of 303178 weights, at most 1.3% of lr). Nearly
            # all weights agree tightly; none may move by more than the 2 * lr a flipped Adam step would give.
            off = ~torch.isclose(pg, pe, rtol=1e-4, atol=1e-3 * cfg.lr)
            assert off.float().mean() < 1e-4, f"{int(off.sum())} of {off.numel()} weights differ"
            worst = float((pg - pe).abs().max())
            assert worst <= 2 * cfg.lr * len(runs["graphed"]), f"a weight moved {worst / cfg.lr:.2f} lr apart"
        d_g, d_e = pg - start_params, pe - start_params
        assert torch.nn.functional.cosine_similarity(d_g, d_e, dim=0) > 0.99
        assert abs(float(d_g.norm() / d_e.norm()) - 1) < 0.02
    # fresh noise and fresh data every replay: consecutive sample batches differ
    assert not torch.equal(runs["graphed"][1][2], runs["graphed"][2][2])
    rows_off = ((graphed.buffer.data - eager.buffer.data).abs().flatten(1).amax(1) > 10 * tol).float().mean()
    assert rows_off <= 0.001
    torch.testing.assert_close(graphed.read_metrics()["loss"], eager.read_metrics()["loss"], rtol=tol, atol=tol)


def test_compile_auto_is_off_on_cpu_and_can_be_forced():
    eng = resolve_engine(TrainConfig(), CPU, has_batch_norm=False)
    assert not eng.compile and any("compile auto -> network eager" in n for n in eng.notes)
    assert resolve_engine(TrainConfig(compile="on"), CPU, has_batch_norm=False).compile
    assert TrainConfig(compile=True).compile == "on" and TrainConfig(compile=False).compile == "off"


@pytest.mark.parametrize("compile_, depth, width, rows, compiled", [
    ("auto", 10, 2, 16, True),  # the CPU bar's WRN-10-2 at batch 16: 4.7 GFLOP a step
    ("auto", 10, 1, 2, False),  # 0.1 GFLOP: compiling would not pay back
    ("on", 10, 1, 2, True),
    ("off", 10, 2, 16, False),
])
def test_cpu_compiles_the_sgld_gradient_where_a_step_is_large_enough(compile_, depth, width, rows, compiled):
    from fastjem.engine import SGLD_COMPILE_FLOPS, fit_cpu_sgld_compile

    cfg = TrainConfig(compile=compile_, batch_size=rows)
    model = WideResNet(depth, width)
    eng = fit_cpu_sgld_compile(resolve_engine(cfg, CPU, has_batch_norm=False), (3, 32, 32), cfg, model)
    assert eng.compile_sgld == compiled
    assert f"compile {'on' if compile_ == 'on' else 'SGLD step only' if compiled else 'off'}," in eng.describe()
    said = [n for n in eng.notes if n.startswith("SGLD gradient")]
    assert len(said) == (compile_ != "off") and (not said or ("compiled" in said[0]) == compiled)
    if compile_ == "auto" and compiled:
        # the rule: the step's convolution FLOPs, forward and input gradient, all its chains (4.66 G counted by
        # torch.utils.flop_counter for the whole WRN-10-2 step, bench/results/steps-*)
        assert "a step computes 4.7 GFLOP" in said[0] and SGLD_COMPILE_FLOPS <= 4.6e9
    cuda_eng = dataclasses.replace(resolve_engine(cfg, CPU, has_batch_norm=False), device=torch.device("cuda"))
    assert fit_cpu_sgld_compile(cuda_eng, (3, 32, 32), cfg, model) is cuda_eng  # CUDA graphs the compiled network


def test_cpu_sgld_gradient_follows_the_threshold_and_needs_a_compiler(monkeypatch):
    import fastjem.engine as engine_mod

    cfg = TrainConfig(batch_size=16)
    fit = lambda: engine_mod.fit_cpu_sgld_compile(resolve_engine(cfg, CPU, has_batch_norm=False),  # noqa: E731
                                                  (3, 32, 32), cfg, WideResNet(10, 2))
    monkeypatch.setattr(engine_mod, "SGLD_COMPILE_FLOPS", 5e9)  # above WRN-10-2's 4.7 G a step
    assert not fit().compile_sgld
    monkeypatch.setattr(engine_mod, "SGLD_COMPILE_FLOPS", 1e9)
    assert fit().compile_sgld
    monkeypatch.setattr(engine_mod, "compile_available", lambda device: (False, "no C++ compiler"))
    assert not fit().compile_sgld


@pytest.mark.parametrize("precision, atol", [("fp32", 1e-5), ("bf16", 5e-4)])
def test_trainer_samples_with_the_compiled_gradient_on_cpu(tmp_path, monkeypatch, precision, atol):
    """Where the engine compiles it, every SGLD step takes the compiled graph's dE/dx (the same chains as
    autograd's, to fp32 rounding; under bf16 autocast, on the weights cast once, to bf16's); the network itself
    stays eager."""
    import fastjem.engine as engine_mod

    monkeypatch.setattr(engine_mod, "SGLD_COMPILE_FLOPS", 0)  # a tiny network, compiled as a large one would be
    calls = []
    real = engine_mod.compiled_input_grad

    def spy(model, autocast, cpp_wrapper):
        assert cpp_wrapper  # training calls the graph from inductor's C++ wrapper
        grad = real(model, autocast=autocast, cpp_wrapper=cpp_wrapper)

        def counted(x, y):
            calls.append(x.shape)
            return grad(x, y)

        return counted

    monkeypatch.setattr(engine_mod, "compiled_input_grad", spy)
    runs = {}
    for name, compile_ in (("compiled", "auto"), ("eager", "off")):
        cfg = TrainConfig(dataset="digits", arch="wrn", depth=10, width=1, batch_size=8, sgld_steps=3, iters=2,
                          ckpt_every=0, log_every=1, seed=3, device="cpu", compile=compile_, precision=precision)
        t = Trainer(cfg, out_dir=tmp_path / name, progress=False, log=lambda *a: None)
        assert t.engine.compile_sgld == (name == "compiled") and not t.engine.compile
        assert t.sampler.compiled_update == (name == "compiled")  # the update compiled with the gradient
        t.train_step()
        t.train_step()
        runs[name] = t.buffer.data.clone()
    assert len(calls) == 2 * 3  # two iterations of three steps
    torch.testing.assert_close(runs["compiled"], runs["eager"], rtol=0, atol=atol)


CHURN = """
import ctypes, resource, sys, torch
# glibc's default mmap threshold (128 kB), made static: glibc otherwise adapts it as blocks are freed, and a run
# then faults 16 MB or 1.3 GB over the rounds below depending on where its blocks happened to land
assert ctypes.CDLL("libc.so.6").mallopt(-3, 128 * 1024) == 1  # M_MMAP_THRESHOLD
if sys.argv[1] == "tuned":
    from fastjem.engine import tune_cpu_malloc
    assert tune_cpu_malloc()
def churn():
    blocks = [torch.empty(n * 262144).fill_(1.0) for n in (1, 2, 4, 8, 16, 16, 16, 16)]  # MB, as activations are
    del blocks
churn(); churn()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(20):
    churn()
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def test_cpu_malloc_tuning_stops_page_faults_on_reused_activations():
    """glibc's defaults return freed megabytes to the OS, so each step page-faults them in again; tuned, none."""
    import platform
    import subprocess
    import sys

    from fastjem.engine import cpu_malloc_available

    if not cpu_malloc_available()[0]:
        pytest.skip(f"needs glibc on Linux ({platform.system()})")
    faults = {"default": [], "tuned": []}
    # separate processes: the setting is process-wide
    for _ in range(2):
        for mode in faults:
            out = subprocess.run([sys.executable, "-c", CHURN, mode], capture_output=True, text=True, timeout=120)
            assert out.returncode == 0, out.stderr
            faults[mode].append(int(out.stdout.split()[-1]))
    # 20 rounds of 79 MB: at glibc's default every block is a fresh mapping, faulted in page by page (20 x 79 MB
    # of 4 kB pages); tuned, the blocks stay in the heap (a rare run still meets a stray burst of a few thousand)
    assert min(faults["default"]) >= 20 * 79 * 256 * 0.9, faults
    assert max(faults["tuned"]) <= min(faults["default"]) / 20, faults
    eng = resolve_engine(TrainConfig(), CPU, has_batch_norm=False)
    assert eng.cpu_malloc and any("CPU allocator" in n for n in eng.notes) and "malloc tuned" in eng.describe()
    assert not resolve_engine(TrainConfig(cpu_malloc=False), CPU, has_batch_norm=False).cpu_malloc


def _fake_cpuinfo(monkeypatch, text):
    """/proc/cpuinfo reads as ``text``; None: it does not exist (macOS, Windows). Other files open as usual."""
    import builtins
    import io

    real_open = builtins.open

    def fake_open(path, *a, **k):
        if path != "/proc/cpuinfo":
            return real_open(path, *a, **k)
        if text is None:
            raise FileNotFoundError(path)
        return io.StringIO(text)

    monkeypatch.setattr(builtins, "open", fake_open)


def test_the_cpu_paths_of_the_engines_choices(monkeypatch):
    """What the hunt found no test of: kernels auto is the reference on a CPU (even with the interpreter on), an
    unusable compiler turns compile off with its note, FASTJEM_ASSUME_NO_BF16 and a torch without oneDNN keep fp32
    on an AMX CPU, TF32 is set only for --precision tf32 on CUDA (flags settable without a GPU), the engine that
    names the CPU malloc tuning applies it, and /proc/cpuinfo's flags line is parsed."""
    import shutil

    import fastjem.engine as engine_mod
    from fastjem.engine import Engine, cpu_bf16_flags

    for on in (True, False):
        monkeypatch.setattr("fastjem.kernels._dispatch.interpreter_on", lambda on=on: on)
        assert resolve_engine(TrainConfig(), CPU, has_batch_norm=False).kernels == "reference"
    monkeypatch.setattr(shutil, "which", lambda name: None)
    eng = resolve_engine(TrainConfig(compile="on"), CPU, has_batch_norm=False)
    assert not eng.compile and any("compile off: no C++ compiler" in n for n in eng.notes)
    monkeypatch.undo()
    monkeypatch.setattr("fastjem.engine.cpu_bf16_flags", lambda: ["amx_bf16"])
    monkeypatch.setenv("FASTJEM_ASSUME_NO_BF16", "1")
    eng = resolve_engine(TrainConfig(), CPU, has_batch_norm=False)
    assert eng.precision == "fp32" and any("FASTJEM_ASSUME_NO_BF16 is set" in n for n in eng.notes)
    monkeypatch.delenv("FASTJEM_ASSUME_NO_BF16")
    monkeypatch.setattr(torch.backends.mkldnn, "is_available", lambda: False)
    eng = resolve_engine(TrainConfig(), CPU, has_batch_norm=False)
    assert eng.precision == "fp32" and any("without oneDNN" in n for n in eng.notes)
    monkeypatch.undo()
    flags = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32, torch.backends.cudnn.benchmark)
    try:
        for precision, allowed in (("fp32", False), ("tf32", True), ("bf16", False)):
            Engine(torch.device("cuda"), precision, False, False, "reference", False).apply_backend_flags()
            assert torch.backends.cuda.matmul.allow_tf32 is allowed and torch.backends.cudnn.allow_tf32 is allowed
    finally:
        (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32, torch.backends.cudnn.benchmark) = flags
    tuned = []
    monkeypatch.setattr(engine_mod, "tune_cpu_malloc", lambda: tuned.append(1) or True)
    Engine(CPU, "fp32", False, False, "reference", False, cpu_malloc=False).apply_backend_flags()
    assert not tuned
    Engine(CPU, "fp32", False, False, "reference", False, cpu_malloc=True).apply_backend_flags()
    assert tuned == [1]
    _fake_cpuinfo(monkeypatch, "processor\t: 0\nflags\t\t: fpu sse2 avx512_bf16 amx_tile amx_bf16\n")
    assert cpu_bf16_flags() == ["amx_bf16", "avx512_bf16"]


def test_a_cpu_engine_that_compiles_keeps_torchs_no_cuda_runtime_warning_out_of_the_output():
    """Inductor's first compile on a machine without a GPU printed "No CUDA runtime is found, using CUDA_HOME=..."
    (torch.utils.cpp_extension, at import): an engine that compiles on a CPU, be it only its SGLD gradient (compile
    auto), drops that line, and only that one."""
    code = """
import logging
import torch
import fastjem.engine
from fastjem.config import TrainConfig
from fastjem.engine import engine_networks, resolve_engine
from fastjem.models import build_model
cpp = logging.getLogger("torch.utils.cpp_extension")
fastjem.engine.SGLD_COMPILE_FLOPS = 0  # compile auto compiles the SGLD gradient, not the network
cfg = TrainConfig(arch="wrn", depth=10, width=1, batch_size=2, compile=MODE, device="cpu")
model = build_model("wrn", 10, 3, 10, 1)
nets = engine_networks(resolve_engine(cfg, torch.device("cpu"), False), model, (3, 8, 8), cfg)
assert (nets.engine.compile, nets.engine.compile_sgld) == EXPECTED, nets.engine
cpp.warning("No CUDA runtime is found, using CUDA_HOME='%s'", "/usr/local")
cpp.warning("another warning")
"""
    for compile_, compiled, dropped in (("'auto'", (False, True), True), ("'off'", (False, False), False)):
        proc = subprocess.run([sys.executable, "-c", code.replace("MODE", compile_)
                               .replace("EXPECTED", repr(compiled))], capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr[-2000:]
        assert ("No CUDA runtime is found" in proc.stderr) != dropped, proc.stderr
        assert "another warning" in proc.stderr


def test_bench_sampler_samples_with_the_compiled_gradient_as_training_does(monkeypatch):
    """build_sampler_call samples with the compiled gradient where training does, called from the C++ wrapper as
    training calls it, or from Python when asked (what bench/profile_step.py profiles): the same samples."""
    import fastjem.benchmark as benchmark
    import fastjem.engine as engine_mod

    calls, wrappers = [], []
    real = engine_mod.compiled_input_grad

    def spy(model, autocast, cpp_wrapper):
        wrappers.append(cpp_wrapper)
        grad = real(model, autocast=autocast, cpp_wrapper=cpp_wrapper)
        return lambda x, y: calls.append(x.shape) or grad(x, y)

    monkeypatch.setattr(engine_mod, "compiled_input_grad", spy)
    out = {}
    for compile_, cpp in (("on", True), ("off", True), ("on", False)):
        cfg = TrainConfig(arch="wrn", depth=10, width=1, batch_size=4, sgld_steps=2, seed=5, compile=compile_,
                          precision="fp32")
        call, engine = benchmark.build_sampler_call(cfg, CPU, size=8, cpp_wrapper=cpp)
        assert engine.compile_sgld == (compile_ == "on")
        out[compile_, cpp] = call()
    assert calls == [(4, 3, 8, 8)] * 4 and wrappers == [True, False]
    torch.testing.assert_close(out["on", True], out["off", True], rtol=0, atol=1e-5)
    assert torch.equal(out["on", True], out["on", False])


def test_bf16_on_cuda_follows_the_tensor_cores_and_elsewhere_is_refused(monkeypatch):
    """fast_bf16 on CUDA: compute capability 8.0 (Ampere) and up have bf16 tensor cores, 7.x does not; a device
    that is neither CUDA nor CPU has no known fast path. The capability is the device's (read without a GPU)."""
    from fastjem.engine import fast_bf16

    monkeypatch.delenv("FASTJEM_ASSUME_NO_BF16", raising=False)
    for capability, fast in (((8, 0), True), ((9, 0), True), ((7, 5), False)):
        monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None, c=capability: c)
        ok, why = fast_bf16(torch.device("cuda"))
        assert ok is fast and f"compute capability {capability[0]}.{capability[1]} has" in why
        assert ("no bf16 tensor cores" in why) is not fast
    assert fast_bf16(torch.device("meta")) == (False, "no bf16 fast path known for meta")


def test_an_engine_built_by_hand_has_no_extras_and_describes_what_it_has(monkeypatch):
    """Engine(...) with only the required fields: no iteration graph, malloc tuning, overlap, cast-once weights,
    parts or compiled SGLD step, and its description lists exactly what is on."""
    import dataclasses
    import shutil
    import sys

    from fastjem.engine import Engine, compile_available

    bare = Engine(CPU, "fp32", False, False, "reference", False)
    assert bare.describe() == "precision fp32, compile off, CUDA graph off, kernels reference, fused forward off"
    full = dataclasses.replace(bare, cuda_graph=True, iteration_graph=True, cpu_malloc=True, overlap_data=True,
                               cast_weights_once=True, sgld_parts=2, compile_sgld=True, fused_forward=True)
    assert full.describe() == ("precision fp32, compile SGLD step only, CUDA graph iteration, kernels reference, "
                               "fused forward on, data gradient overlapped, SGLD weights cast once, SGLD in 2 parts, "
                               "CPU malloc tuned")
    assert dataclasses.replace(bare, cuda_graph=True).describe().startswith(
        "precision fp32, compile off, CUDA graph SGLD loop,")
    # cuDNN autotuning is on for every CUDA engine (flags settable without a GPU)
    benchmark = torch.backends.cudnn.benchmark
    try:
        torch.backends.cudnn.benchmark = False
        dataclasses.replace(bare, device=torch.device("cuda")).apply_backend_flags()
        assert torch.backends.cudnn.benchmark is True
    finally:
        torch.backends.cudnn.benchmark = benchmark
    # inductor's CPU backend takes any one of the three compilers; CUDA needs triton
    for present, ok in ((("clang++",), True), (("g++",), True), ((), False)):
        monkeypatch.setattr(shutil, "which", lambda name, present=present: f"/usr/bin/{name}" if name in present
                            else None)
        assert compile_available(CPU) == (ok, "" if ok else "no C++ compiler found for inductor's CPU backend")
    assert compile_available(torch.device("cuda")) == (True, "")
    monkeypatch.setitem(sys.modules, "triton", None)  # import triton raises ImportError
    assert compile_available(torch.device("cuda")) == (False, "triton is not installed")


def test_the_engine_notes_only_what_it_turned_off(monkeypatch):
    """A graph the user turned off is not noted as turned off; an iteration graph dropped on CUDA for
    --no-cuda-graph says so (on a CPU, that there is no CUDA device). The CPU's compiled SGLD step is never turned
    on for a CUDA engine, and under auto from SGLD_COMPILE_FLOPS on, the threshold included."""
    import fastjem.engine as engine_mod
    from fastjem.engine import fit_cpu_sgld_compile
    from fastjem.models import build_model

    off = TrainConfig(cuda_graph=False, iteration_graph=False, precision="fp32", compile="off", kernels="reference")
    for device in (CPU, torch.device("cuda")):
        assert not any("graph off" in n for n in resolve_engine(off, device, has_batch_norm=False).notes)
    no_graph = off.replace(iteration_graph=True)
    assert "iteration graph off: --no-cuda-graph (the same iteration runs eagerly)" in resolve_engine(
        no_graph, torch.device("cuda"), has_batch_norm=False).notes
    assert "iteration graph off: not on a CUDA device (the same iteration runs eagerly)" in resolve_engine(
        no_graph, CPU, has_batch_norm=False).notes
    # the CPU's compiled SGLD step: never on CUDA (which graphs the compiled network); on a CPU from the threshold on
    model = build_model("convnet", 10, 1, width=4)
    cfg = TrainConfig(arch="convnet", width=4, compile="on", batch_size=8)
    cuda_engine = resolve_engine(cfg.replace(precision="fp32", kernels="reference"), torch.device("cuda"), False)
    assert fit_cpu_sgld_compile(cuda_engine, (1, 8, 8), cfg, model) is cuda_engine
    auto = cfg.replace(compile="auto")
    engine = resolve_engine(auto, CPU, has_batch_norm=False)
    flops = 2 * 8 * sum(layer.flops for layer in engine_mod.conv_layers(model, (1, 8, 8)))
    monkeypatch.setattr(engine_mod, "compile_available", lambda device: (True, ""))  # a machine without g++ too
    monkeypatch.setattr(engine_mod, "SGLD_COMPILE_FLOPS", flops)
    assert fit_cpu_sgld_compile(engine, (1, 8, 8), auto, model).compile_sgld
    monkeypatch.setattr(engine_mod, "SGLD_COMPILE_FLOPS", flops + 1)
    assert not fit_cpu_sgld_compile(engine, (1, 8, 8), auto, model).compile_sgld


def test_the_engine_keeps_what_the_device_allows(monkeypatch):
    """What resolve_engine leaves on where nothing stands in the way, and each thing it turns off with its note: the
    iteration graph on CUDA (off under data parallelism), triton kernels on a CPU only under the interpreter, the
    CPU malloc tuning only on a CPU, the fused forward unless batch norm, SGLD parts on a CPU run in turn."""
    cuda = torch.device("cuda")
    cfg = TrainConfig(precision="fp32", compile="off", kernels="reference")
    on_cuda = resolve_engine(cfg, cuda, has_batch_norm=False)
    assert on_cuda.iteration_graph and on_cuda.cuda_graph and not any("iteration graph" in n for n in on_cuda.notes)
    assert not on_cuda.cpu_malloc and on_cuda.fused_forward
    shared = resolve_engine(cfg, cuda, has_batch_norm=False, distributed=True)
    assert not shared.iteration_graph and shared.cuda_graph
    assert any(n.startswith("iteration graph off: data parallel") for n in shared.notes)
    for device in (CPU, cuda):
        assert not resolve_engine(cfg.replace(cuda_graph=False), device, has_batch_norm=False).iteration_graph
    on_cpu = resolve_engine(cfg, CPU, has_batch_norm=False)
    assert not on_cpu.iteration_graph and on_cpu.fused_forward and not any("kernels" in n for n in on_cpu.notes)
    for interpreted, kept in ((False, "reference"), (True, "triton")):
        monkeypatch.setattr("fastjem.kernels._dispatch.interpreter_on", lambda on=interpreted: on)
        eng = resolve_engine(cfg.replace(kernels="triton"), CPU, has_batch_norm=False)
        assert eng.kernels == kept
        assert any("TRITON_INTERPRET is not set" in n for n in eng.notes) is not interpreted
    assert not resolve_engine(cfg.replace(cpu_malloc=False), CPU, has_batch_norm=False).cpu_malloc
    bn = resolve_engine(cfg, CPU, has_batch_norm=True)
    assert not bn.fused_forward and any(n.startswith("fused forward off: batch norm") for n in bn.notes)
    # dropout too: the config's, or the network's own (given in Python)
    for eng in (resolve_engine(cfg.replace(dropout=0.3), CPU, has_batch_norm=False),
                resolve_engine(cfg, CPU, has_batch_norm=False, has_dropout=True)):
        assert not eng.fused_forward and any(n.startswith("fused forward off: dropout") for n in eng.notes)
    assert resolve_engine(cfg.replace(dropout=0.3), CPU, has_batch_norm=False, has_dropout=False).fused_forward
    assert not any("fused forward off" in n for n in resolve_engine(cfg.replace(fused_forward=False), CPU,
                                                                       has_batch_norm=False).notes)
    for parts, noted in ((1, False), (2, True)):
        eng = resolve_engine(cfg.replace(sgld_parts=parts), CPU, has_batch_norm=False)
        assert eng.sgld_parts == parts and any(n.startswith("SGLD parts: the") for n in eng.notes) is noted


def test_the_cpu_malloc_tuning_sets_glibcs_three_thresholds(monkeypatch):
    """mallopt(M_MMAP_THRESHOLD = -3, 32 MB), (M_TRIM_THRESHOLD = -1, 1 GB), (M_TOP_PAD = -2, 64 MB): malloc.h's
    parameter numbers. Applied only where every call succeeds (mallopt returns 1) and there is a glibc; glibc is
    looked for on Linux only."""
    import platform

    import fastjem.engine as engine_mod

    class FakeGlibc:
        def __init__(self, ok):
            self.ok, self.calls = ok, []

        def mallopt(self, param, value):
            self.calls.append((param, value))
            return self.ok

    libc = FakeGlibc(1)
    monkeypatch.setattr(engine_mod, "_glibc", lambda: (libc, ""))
    assert engine_mod.tune_cpu_malloc() is True
    assert sorted(libc.calls) == [(-3, 32 << 20), (-2, 64 << 20), (-1, 1 << 30)]
    monkeypatch.setattr(engine_mod, "_glibc", lambda: (FakeGlibc(0), ""))
    assert engine_mod.tune_cpu_malloc() is False
    monkeypatch.setattr(engine_mod, "_glibc", lambda: (None, "no libc.so.6"))
    assert engine_mod.tune_cpu_malloc() is False
    assert engine_mod.cpu_malloc_available() == (False, "no libc.so.6")
    monkeypatch.undo()
    monkeypatch.setattr(platform, "system", lambda: "Darwin")
    assert engine_mod._glibc() == (None, "not Linux (Darwin)")
    # Linux without glibc: no libc.so.6 to load (Alpine's musl), or a C library without glibc's version call
    import ctypes

    monkeypatch.setattr(platform, "system", lambda: "Linux")

    def no_libc(name):
        raise OSError(f"{name}: cannot open shared object file")

    monkeypatch.setattr(ctypes, "CDLL", no_libc)
    assert engine_mod.cpu_malloc_available() == (False, "no libc.so.6") and engine_mod.tune_cpu_malloc() is False
    monkeypatch.setattr(ctypes, "CDLL", lambda name: FakeGlibc(1))
    assert engine_mod.cpu_malloc_available() == (False, "the C library is not glibc")
    assert engine_mod.tune_cpu_malloc() is False


def test_the_cpu_model_falls_back_to_the_platforms_names(monkeypatch):
    """Without /proc/cpuinfo (macOS, Windows): platform.processor(), or platform.machine() where that is empty."""
    import platform

    from fastjem.engine import cpu_bf16_flags, cpu_model

    _fake_cpuinfo(monkeypatch, None)
    monkeypatch.setattr(platform, "machine", lambda: "arm64")
    for processor, named in (("Apple M2", "Apple M2"), ("", "arm64")):
        monkeypatch.setattr(platform, "processor", lambda p=processor: p)
        assert cpu_model() == named
    assert cpu_bf16_flags() == []


def test_the_cpus_name_and_flags_from_cpuinfo_with_and_without_their_lines(monkeypatch):
    """A CPU names itself by cpuinfo's model name line (results and logs say it as the device); an ARM cpuinfo has
    neither that line nor a flags one: no bf16 flags (a list: cache keys and results join it), the platform's name."""
    import platform

    from fastjem.engine import cpu_bf16_flags, cpu_model, device_name

    _fake_cpuinfo(monkeypatch, "processor\t: 0\nmodel name\t: Some Xeon 9000\nflags\t\t: fpu avx512_bf16\n")
    assert (cpu_model(), device_name(CPU), cpu_bf16_flags()) == ("Some Xeon 9000", "Some Xeon 9000", ["avx512_bf16"])
    _fake_cpuinfo(monkeypatch, "processor\t: 0\nFeatures\t: fp asimd bf16\nCPU part\t: 0xd4f\n")
    monkeypatch.setattr(platform, "processor", lambda: "")
    monkeypatch.setattr(platform, "machine", lambda: "aarch64")
    assert (cpu_model(), device_name(CPU), cpu_bf16_flags()) == ("aarch64", "aarch64", [])


def test_the_bf16_probe_reports_each_precisions_milliseconds_per_step(monkeypatch):
    """On a clock that a fp32 step moves by 4 ms and a bf16 step by 1 ms: (4.0, 1.0), fp32 first, per step."""
    import fastjem.engine as engine_mod

    clock = [0.0]

    def step(x, weights, bf16):
        clock[0] += 0.001 if bf16 else 0.004

    monkeypatch.setattr(engine_mod, "bf16_probe_step", step)
    monkeypatch.setattr(engine_mod.time, "perf_counter", lambda: clock[0])
    assert engine_mod.time_bf16_probe(rounds=3, reps=2) == pytest.approx((4.0, 1.0))


def test_dropout_turns_the_fused_forward_off_and_the_run_is_the_unfused_one(tiny_config, tmp_path):
    """One forward of [x_p, x_q, x_lab] drew each dropout layer's masks for the joined batch: with two dropout
    layers or more their order differed from three forwards', and so did the run (loss 2.28717 against 2.28638 at
    iteration 1 on a WRN-10-1). The network's dropout is seen (has_dropout), the forward is not fused, and the run
    is the unfused run bit for bit."""
    from fastjem.models import has_dropout

    assert has_dropout(WideResNet(10, 1, dropout=0.3)) and not has_dropout(WideResNet(10, 1))
    cfg = tiny_config.replace(arch="wrn", depth=10, width=1, dropout=0.3, iters=3, sgld_steps=2)
    runs = {}
    for fused in (True, False):
        t = Trainer(cfg.replace(fused_forward=fused), out_dir=tmp_path / str(fused), progress=False,
                    log=lambda *a: None)
        assert not t.engine.fused_forward
        t.fit()
        runs[fused] = torch.cat([p.detach().flatten() for p in t.model.parameters()])
    assert torch.equal(runs[True], runs[False])


def test_sgld_parts_turned_off_by_the_sample_size_say_so_once():
    """Samples of 49 elements cannot be split: the note on how the parts would run one after another goes, the one
    saying why they are off stays."""
    eng = fit_sgld_parts(resolve_engine(TrainConfig(sgld_parts=2), CPU, has_batch_norm=False), (1, 7, 7))
    assert eng.sgld_parts == 1
    assert [n for n in eng.notes if n.startswith("SGLD parts")] == [
        "SGLD parts off: a sample's 49 elements are not a multiple of 4 (the width of the noise counters a part "
        "starts at)"]


def test_a_batch_smaller_than_the_sgld_parts_is_sampled_in_as_many_parts_as_rows(tiny_config, tmp_path):
    """--sgld-parts is checked against --batch-size, but a call may sample fewer chains (``Trainer.sample(n)``, a
    data-parallel rank's share): each row is then its own part, where it was refused (more parts than rows)."""
    t = Trainer(tiny_config.replace(sgld_parts=4), out_dir=tmp_path, progress=False, log=lambda *a: None)
    assert t.engine.sgld_parts == 4
    x = t.sample(2)
    assert x.shape == (2, *t.data.sample_shape) and torch.isfinite(x).all()


def test_counting_the_convolutions_leaves_batch_norm_statistics_and_the_mode_alone():
    """conv_layers runs one forward of a zero sample: in eval mode, so a batch-norm network's running statistics
    (which a training-mode forward updates, gradient or not) are what they were, and the mode is restored."""
    import fastjem.engine as engine_mod

    net = torch.nn.Sequential(torch.nn.Conv2d(1, 4, 3, padding=1), torch.nn.BatchNorm2d(4), torch.nn.Conv2d(4, 2, 1))
    before = {k: v.clone() for k, v in net.state_dict().items()}
    layers = engine_mod.conv_layers(net, (1, 8, 8))
    assert [(layer.pixels, layer.channels) for layer in layers] == [(64, 4), (64, 2)]
    assert net.training
    assert all(torch.equal(v, before[k]) for k, v in net.state_dict().items())


def test_sgld_parts_auto_on_a_network_without_convolutions_is_one_part():
    """Under --sgld-parts auto on CUDA the parts follow the convolutions' last waves of tiles; a network with none
    (an MLP) has no idle tiles to fill: one part, where the share of their time was a division by zero."""
    import fastjem.engine as engine_mod

    mlp = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(64, 10))
    assert engine_mod.wave_tail([], 64, 132) == 0.0
    cfg = TrainConfig(precision="fp32", compile="off", kernels="reference", batch_size=64)
    engine = resolve_engine(cfg, torch.device("cuda"), has_batch_norm=False)
    assert cfg.sgld_parts == 0 and engine.sgld_parts == 2  # auto, before the network is known
    fitted = fit_sgld_parts(engine, (1, 8, 8), cfg, mlp, sms=132)
    assert fitted.sgld_parts == 1
    assert fitted.notes[-1].startswith("SGLD parts auto -> 1: 0% of the convolutions' time at batch 64")
