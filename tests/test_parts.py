"""SGLD in parts (engine option sgld_parts): the batch's rows as independent chains, each on its own CUDA stream.

On CUDA the parts run side by side inside one graph; on CPU the same code runs them one after another, so these
tests exercise what the GPU runs. Each part must draw the noise the whole batch draws for its rows and leave the
RNG state where the whole batch leaves it, so that the chains, the loss and the training are those of the
whole-batch sampler up to the network's arithmetic on fewer rows (here, on CPU in fp32: bitwise or within fp32
rounding).
"""

import pytest
import torch
from kernel_utils import skip_unless_runnable

from fastjem import SGLD
from fastjem.config import TrainConfig
from fastjem.engine import resolve_engine
from fastjem.errors import ConfigError
from fastjem.models import build_model
from fastjem.sampler import model_energy, part_bounds
from fastjem.train import Trainer


def test_part_bounds_cut_as_tensor_split():
    for rows, parts in ((7, 3), (64, 2), (64, 4), (5, 5), (9, 1)):
        expected = [(int(c[0]), int(c[-1]) + 1) for c in torch.arange(rows).tensor_split(parts)]
        assert part_bounds(rows, parts) == expected


@pytest.mark.parametrize("backend", ["reference", "triton"])
@pytest.mark.parametrize("parts", [2, 3])
def test_parts_are_the_whole_batch_chains(backend, parts):
    """A WRN energy in eval mode (row-independent): the same samples and the same final RNG state; labels sliced
    per part for E(x, y)."""
    skip_unless_runnable("cpu", backend)
    torch.manual_seed(0)
    net = build_model("wrn", 10, 3, depth=10, width=1).eval()
    x0 = torch.rand(7, 3, 8, 8) * 2 - 1
    y = torch.randint(0, 10, (7,))
    for labels in (None, y):
        whole, split = SGLD(3, 1.0, 0.01, seed=4, backend=backend), SGLD(3, 1.0, 0.01, seed=4, backend=backend)
        a = whole.sample(model_energy(net, labels, backend=backend), x0, model=net)
        b = split.sample_parts(lambda s, e, labels=labels: model_energy(
            net, None if labels is None else labels[s:e], backend=backend), x0, parts, model=net)
        torch.testing.assert_close(b, a, rtol=0, atol=1e-6)
        assert torch.equal(split.rng_state, whole.rng_state)
        assert b.dtype == torch.float32 and not b.requires_grad


def test_parts_refuse_what_they_cannot_split():
    sampler = SGLD(2, 0.1, 0.01, seed=0)
    energy = lambda x: x.flatten(1).sum(1)  # noqa: E731
    with pytest.raises(ValueError, match="multiple of 4"):
        sampler.sample_parts(lambda s, e: energy, torch.zeros(4, 3, 1, 1), 2)
    with pytest.raises(ValueError, match="batch size"):
        sampler.sample_parts(lambda s, e: energy, torch.zeros(2, 4), 3)
    # 2.0 failed inside range() with "'float' object cannot be interpreted as an integer", True ran as 1 part
    for parts in (2.0, True, "2"):
        with pytest.raises(TypeError, match=r"SGLD parts \(a number of blocks of rows\) must be an integer, got"):
            sampler.sample_parts(lambda s, e: energy, torch.zeros(4, 4), parts)
    with pytest.raises(ConfigError, match="sgld-parts"):
        TrainConfig(batch_size=4, sgld_parts=8).validate()
    with pytest.raises(ConfigError, match="sgld-parts"):
        TrainConfig(sgld_parts=-1).validate()
    TrainConfig(sgld_parts=0).validate()  # 0 = auto


def test_engine_names_the_parts():
    cpu = torch.device("cpu")
    eng = resolve_engine(TrainConfig(sgld_parts=2), cpu, False)
    assert eng.sgld_parts == 2 and "SGLD in 2 parts" in eng.describe()
    assert any("one after another" in n for n in eng.notes)
    assert resolve_engine(TrainConfig(), cpu, False).sgld_parts == 1  # auto: the blocks would only run in turn


def test_parts_are_two_by_default_on_cuda_before_the_network_is_seen():
    """Auto (the default) resolves to two blocks on CUDA until fit_sgld_parts sees the network (the paper's
    WRN-28-10's value); an explicit count is kept."""
    cuda = torch.device("cuda")
    base = TrainConfig(precision="bf16", compile="off", kernels="reference")  # nothing that asks the device
    assert base.sgld_parts == 0
    assert resolve_engine(base, cuda, False).sgld_parts == 2
    assert "SGLD in 2 parts" in resolve_engine(base, cuda, False).describe()
    assert resolve_engine(base.replace(sgld_parts=1), cuda, False).sgld_parts == 1
    assert resolve_engine(base.replace(sgld_parts=4), cuda, False).sgld_parts == 4


def test_wave_tail_counts_idle_sms_in_last_waves():
    """256x64 tiles: 64 rows of 8x8 pixels by 640 channels is 16 x 10 = 160 tiles, 1.21 waves on 132 SMs, whose
    second wave is 0.21 full: 1 - 1.212/2 of the time idle. A layer under one wave idles nothing a split could
    fill; 132 tiles exactly fill one wave; layers weigh by their FLOPs."""
    from fastjem.engine import ConvLayer, wave_tail

    big = ConvLayer(pixels=64, channels=640, flops=3)
    assert wave_tail([big], 64, 132) == pytest.approx(1 - (160 / 132) / 2)
    assert wave_tail([ConvLayer(64, 128, 1)], 64, 132) == 0.0  # 32 tiles: one wave either way
    assert wave_tail([ConvLayer(528, 64, 1)], 64, 132) == pytest.approx(0.0)  # 132 x 1 tiles: one full wave
    assert wave_tail([big, ConvLayer(64, 128, 1)], 64, 132) == pytest.approx(3 / 4 * (1 - (160 / 132) / 2))
    assert wave_tail([ConvLayer(64, 640, 1)], 64, 132) > wave_tail([ConvLayer(64, 640, 1)], 128, 132)
    assert wave_tail([], 64, 132) == 0.0
    # tiles are whole: 64 rows of 10 pixels are 2.5 tiles of 256, so 3 (1.5 waves on 2 SMs)
    assert wave_tail([ConvLayer(10, 64, 1)], 64, 2) == pytest.approx(1 - 1.5 / 2)


def test_auto_parts_split_at_a_tenth_of_the_time_in_last_waves():
    """A share of exactly SPLIT_TAIL splits: a layer of 1.5 waves (a quarter idle) weighing 2 beside a full one
    weighing 3 is 0.5 / 5 = 0.1 of the time."""
    from fastjem.engine import SPLIT_TAIL, ConvLayer, auto_sgld_parts, wave_tail

    layers = [ConvLayer(12, 64, 2), ConvLayer(8, 64, 3)]  # 3 and 2 tiles of 256 x 64 at 64 rows, on 2 SMs
    assert wave_tail(layers, 64, 2) == SPLIT_TAIL == 0.1
    assert auto_sgld_parts(torch.device("cuda"), layers, 64, 2) == 2
    assert auto_sgld_parts(torch.device("cuda"), layers[1:], 64, 2) == 1


def test_conv_layers_read_the_network_without_changing_it():
    """The network's convolutions with their output shapes, from one forward; its mode, parameters and the RNG
    state are as they were."""
    from fastjem.engine import conv_layers

    model = build_model("wrn", 10, 3, depth=10, width=2, dropout=0.3)
    model.train()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    rng = torch.get_rng_state()
    layers = conv_layers(model, (3, 32, 32))
    assert model.training and torch.equal(torch.get_rng_state(), rng)
    assert all(torch.equal(v, before[k]) for k, v in model.state_dict().items())
    convs = [m for m in model.modules() if isinstance(m, torch.nn.Conv2d)]
    assert len(layers) == len(convs) == 1 + 3 * 2 + 3  # stem, two convs per block, a shortcut per stage
    assert (layers[0].pixels, layers[0].channels, layers[0].flops) == (32 * 32, 16, 2 * 3 * 9 * 16 * 32 * 32)
    # a block's first conv widens at the input's size, its second strides (this WRN's blocks)
    assert {(c.pixels, c.channels) for c in layers[1:]} == {(32 * 32, 32), (32 * 32, 64), (16 * 16, 64),
                                                            (16 * 16, 128), (8 * 8, 128)}
    # an oblong kernel on an oblong image: its own height and width each, and the groups' share of the inputs
    net = torch.nn.Sequential(torch.nn.Conv2d(4, 6, (1, 3), groups=2), torch.nn.Flatten())
    (layer,) = conv_layers(net, (4, 5, 8))
    assert (layer.pixels, layer.channels, layer.flops) == (5 * 6, 6, 2 * (1 * 3 * 4 // 2) * 6 * 5 * 6)


@pytest.mark.parametrize("depth, width, batch, parts", [(28, 10, 64, 2), (16, 8, 64, 1), (10, 2, 64, 1),
                                                        (28, 10, 128, 1)])
def test_auto_parts_follow_the_convolutions_waves(depth, width, batch, parts):
    """On CUDA, auto splits SGLD in two where the network's convolutions spend 10% or more of their time in
    partly idle last waves: WRN-28-10 at batch 64 (18% on an H100's 132 SMs; measured 5.5-8% faster in two
    blocks), not WRN-16-8 (2%; measured 4.8% slower in two), WRN-10-2, or WRN-28-10 at batch 128. The engine
    notes the share and the choice; an explicit count is kept; off CUDA it is 1 without looking."""
    from fastjem.engine import auto_sgld_parts, conv_layers, fit_sgld_parts

    cuda = torch.device("cuda")
    cfg = TrainConfig(precision="bf16", compile="off", kernels="reference", arch="wrn", depth=depth, width=width,
                      batch_size=batch)
    model = build_model("wrn", 10, 3, depth=depth, width=width)
    fitted = fit_sgld_parts(resolve_engine(cfg, cuda, False), (3, 32, 32), cfg, model, sms=132)
    assert fitted.sgld_parts == parts
    assert f"SGLD parts auto -> {parts}" in fitted.notes[-1] and "of the 132 SMs" in fitted.notes[-1]
    assert fitted.notes[-1].endswith("(a second block fills them)" if parts > 1 else
                                     "(under 10%: a split costs more)")
    assert auto_sgld_parts(cuda, conv_layers(model, (3, 32, 32)), batch, 132) == parts
    # a data-parallel rank's share of the batch is what its SGLD call runs: WRN-28-10's 64 rows over 2 ranks
    if (depth, width, batch) == (28, 10, 128):
        assert fit_sgld_parts(resolve_engine(cfg, cuda, False), (3, 32, 32), cfg, model, sms=132,
                              rows=64).sgld_parts == 2
    for explicit in (1, 2, 4):
        cfg_n = cfg.replace(sgld_parts=explicit)
        kept = fit_sgld_parts(resolve_engine(cfg_n, cuda, False), (3, 32, 32), cfg_n, model, sms=132)
        assert kept.sgld_parts == explicit
    cpu = torch.device("cpu")
    assert fit_sgld_parts(resolve_engine(cfg, cpu, False), (3, 32, 32), cfg, model, sms=132).sgld_parts == 1
    assert auto_sgld_parts(cpu, conv_layers(model, (3, 32, 32)), batch, 132) == 1


def test_trainer_fits_the_parts_to_its_own_network(tiny_config, tmp_path, monkeypatch):
    """The Trainer hands fit_sgld_parts its config, its (uncompiled, fp32) network and the data's sample shape:
    what auto needs on CUDA."""
    import fastjem.engine as engine_mod

    seen = []
    real = engine_mod.fit_sgld_parts
    monkeypatch.setattr(engine_mod, "fit_sgld_parts", lambda *a, **k: seen.append((a, k)) or real(*a, **k))
    t = Trainer(tiny_config, out_dir=tmp_path, progress=False)
    (engine, shape, cfg, model), kwargs = seen[0]
    assert shape == t.data.sample_shape == (1, 8, 8) and cfg is t.cfg and model is t.model
    assert kwargs == {"rows": t.local_batch} and t.local_batch == tiny_config.batch_size  # one process: all of it


def test_training_with_parts_is_the_whole_batch_training(tiny_config, tmp_path):
    """Three iterations of the digits JEM (class-conditional sampling too): the same losses, samples, parameters
    and RNG states, within fp32 rounding of the network on fewer rows; the parts really run (counted)."""
    for extra in ({}, {"class_cond_px": True}):
        cfg = tiny_config.replace(arch="wrn", depth=10, width=1, **extra)
        runs = {}
        for parts in (1, 2):
            t = Trainer(cfg.replace(sgld_parts=parts), out_dir=tmp_path / f"{parts}{len(extra)}", progress=False)
            calls = []
            t.sampler.sample_parts = (lambda *a, calls=calls, run=t.sampler.sample_parts, **k:
                                      calls.append(a[2]) or run(*a, **k))
            torch.manual_seed(7)
            runs[parts] = [({k: float(v) for k, v in t.train_step().items()}, t.last_samples.clone()) for _ in range(3)]
            runs[parts].append([p.detach().clone() for p in t.model.parameters()])
            runs[parts].append((t.sampler.rng_state.clone(), t.buffer.data.clone()))
            assert calls == [parts] * 3  # every iteration samples through sample_parts, in `parts` blocks
        for (pa, xa), (pb, xb) in zip(runs[1][:3], runs[2][:3]):
            for k in pa:
                assert pb[k] == pytest.approx(pa[k], rel=1e-5, abs=1e-6), k
            torch.testing.assert_close(xb, xa, rtol=0, atol=1e-5)
        for p, q in zip(runs[1][3], runs[2][3]):
            torch.testing.assert_close(q, p, rtol=1e-5, atol=1e-6)
        assert torch.equal(runs[1][4][0], runs[2][4][0])
        torch.testing.assert_close(runs[2][4][1], runs[1][4][1], rtol=0, atol=1e-5)


def test_parts_off_when_a_sample_is_not_a_multiple_of_4(tmp_path):
    from fastjem.data import arrays_from_tensors

    images, labels = torch.rand(40, 3, 3, 3), torch.randint(0, 2, (40,))
    data = arrays_from_tensors(images[:30], labels[:30], images[30:], labels[30:], classes=["a", "b"])
    net = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(27, 2))
    cfg = TrainConfig(iters=2, batch_size=8, buffer_size=40, sgld_steps=2, device="cpu", sgld_parts=2, ckpt_every=0)
    t = Trainer(cfg, out_dir=tmp_path, model=net, data=data, progress=False)
    assert t.engine.sgld_parts == 1 and any("27 elements" in n for n in t.engine.notes)
    t.train_step()


@pytest.mark.gpu
def test_trainer_on_cuda_chooses_its_parts_from_its_network(tmp_path):
    """CUDA, auto: the Trainer's engine takes the count wave_tail gives for its network, batch and the device's
    SM count, and says so in its notes (digits' 8x8 images leave WRN-10-2's waves nearly empty: one block)."""
    if not torch.cuda.is_available():
        pytest.skip("needs CUDA")
    from fastjem.engine import SPLIT_TAIL, conv_layers, wave_tail

    cfg = TrainConfig(dataset="digits", arch="wrn", depth=10, width=2, batch_size=32, sgld_steps=2, buffer_size=1000,
                      iters=2, device="cuda", compile="off", seed=0, ckpt_every=0)
    t = Trainer(cfg, out_dir=tmp_path, progress=False)
    sms = torch.cuda.get_device_properties(t.device).multi_processor_count
    tail = wave_tail(conv_layers(t.model, t.data.sample_shape), 32, sms)
    assert t.engine.sgld_parts == (2 if tail >= SPLIT_TAIL else 1) == 1
    assert any(n.startswith("SGLD parts auto -> 1") and f"{sms} SMs" in n for n in t.engine.notes)
    t.train_step()


@pytest.mark.gpu
def test_parts_on_streams_in_the_cuda_graphs_match_the_whole_batch(tmp_path):
    """CUDA: the parts on their own streams, in the SGLD graph and in the whole-iteration graph, against the
    whole-batch engine: the same samples and losses within bf16 rounding (cuDNN may pick other algorithms for
    the parts' shapes); the iteration graph is captured."""
    if not torch.cuda.is_available():
        pytest.skip("needs CUDA")
    cfg = TrainConfig(dataset="digits", arch="wrn", depth=10, width=2, batch_size=32, sgld_steps=5, buffer_size=10000,
                      iters=10, warmup_iters=3, lr=1e-3, device="cuda", seed=0, ckpt_every=0)
    for iteration_graph in (True, False):
        runs = {}
        for parts in (1, 2):
            logs = []
            t = Trainer(cfg.replace(sgld_parts=parts, iteration_graph=iteration_graph),
                        out_dir=tmp_path / f"{parts}{iteration_graph}", progress=False, log=logs.append)
            torch.manual_seed(7)
            runs[parts] = [(t.train_step()["loss"].clone(), t.last_samples.clone()) for _ in range(4)]
            assert ("iteration" in t._graphs) == iteration_graph, logs
            runs[parts].append(t.sampler.rng_state.clone())
        for (la, xa), (lb, xb) in zip(runs[1][:4], runs[2][:4]):
            torch.testing.assert_close(lb, la, rtol=2e-2, atol=2e-2)
            torch.testing.assert_close(xb, xa, rtol=2e-2, atol=2e-2)
        assert torch.equal(runs[1][4], runs[2][4])


def test_bench_turns_parts_off_where_a_sample_is_not_a_multiple_of_4_elements():
    """`fastjem bench` takes the engine's parts (2 by default on CUDA) as the Trainer does: a sample of 3x7x7 = 147
    elements runs in one part, with a note, where the sampler would refuse it (bench raised a traceback)."""
    from fastjem.benchmark import bench_sampler
    from fastjem.engine import fit_sgld_parts

    cfg = TrainConfig(arch="wrn", depth=10, width=1, batch_size=4, sgld_steps=2, device="cpu", compile="off",
                      sgld_parts=2)
    engine = resolve_engine(cfg, torch.device("cpu"), has_batch_norm=False)
    assert engine.sgld_parts == 2 and fit_sgld_parts(engine, (3, 8, 8)) is engine
    one = fit_sgld_parts(engine, (3, 7, 7))
    assert one.sgld_parts == 1 and "147 elements are not a multiple of 4" in one.notes[-1]
    assert fit_sgld_parts(one, (3, 7, 7)) is one  # already one part: nothing to turn off, nothing noted
    r = bench_sampler(cfg, torch.device("cpu"), size=7, seconds=0.0, warmup=1)
    assert r["input"] == [3, 7, 7] and any("SGLD parts off" in n for n in r["engine_notes"])
