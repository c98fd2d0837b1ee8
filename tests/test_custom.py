"""Your own network (Trainer(model=...)) and your own data (Trainer(data=arrays_from_tensors(...)))."""

import copy
import json

import pytest
import torch
from torch import nn

from fastjem.checkpoint import load_checkpoint
from fastjem.cli import main
from fastjem.data import arrays_from_tensors, load_arrays
from fastjem.errors import CheckpointError, ConfigError
from fastjem.eval import accuracy, load_model
from fastjem.export import export_classifier
from fastjem.train import Trainer, evaluate, resume_config


class TinyNet(nn.Module):
    def __init__(self, k=10):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.LeakyReLU(0.2), nn.AdaptiveAvgPool2d(2),
                                  nn.Flatten(), nn.Linear(32, k))

    def forward(self, x):
        return self.body(x)


@pytest.fixture(scope="module")
def digits_as_floats():
    """The digits set handed over as float tensors in [0, 1], the way a user's own data arrives."""
    a = load_arrays("digits")
    return (a.train_x.float() / 255, a.train_y, a.test_x.float() / 255, a.test_y), a


def params(model):
    return torch.cat([p.detach().flatten() for p in model.parameters()])


def test_arrays_from_tensors_keeps_the_images_and_labels(digits_as_floats):
    (tx, ty, vx, vy), ref = digits_as_floats
    data = arrays_from_tensors(tx, ty, vx, vy, classes=[f"digit {i}" for i in range(10)], name="my digits", flip=False)
    assert torch.equal(data.train_x, ref.train_x) and torch.equal(data.test_y, ref.test_y)  # 0..1 -> 0..255 exactly
    info = data.info
    assert (info.name, info.num_classes, info.channels, info.image_size, info.pad, info.flip) == \
        ("my digits", 10, 1, 8, 1, False)
    assert info.classes[3] == "digit 3" and info.default_val_size == len(ty) // 10
    assert torch.equal(arrays_from_tensors(ref.train_x, ty, ref.test_x, vy).train_x, ref.train_x)  # uint8 as is



def test_arrays_from_tensors_defaults_and_edges():
    """Without options: flips on, a pad of an eighth of the side, a tenth of train held out (at most 5000), the
    classes counted from the largest label of either split and named by index. Floats at exactly 0 and 1 are taken
    and round to the nearest level; an empty label set passes the range check."""
    g = torch.Generator().manual_seed(0)
    x = torch.randint(0, 256, (50, 3, 16, 16), generator=g, dtype=torch.uint8)
    data = arrays_from_tensors(x, torch.zeros(50, dtype=torch.long), x[:4], torch.tensor([0, 1, 2, 3]))
    info = data.info
    assert (info.name, info.flip, info.pad, info.default_val_size, info.num_classes, info.classes) == (
        "tensors", True, 2, 5, 4, ("0", "1", "2", "3"))
    big = torch.zeros(50010, 1, 8, 8, dtype=torch.uint8)
    assert arrays_from_tensors(big, torch.zeros(50010, dtype=torch.long), big[:1],
                               torch.zeros(1, dtype=torch.long)).info.default_val_size == 5000
    levels = torch.tensor([0.0, 1.0, 0.5, 0.2]).view(1, 1, 2, 2)
    got = arrays_from_tensors(levels, [0], levels, [0]).train_x.flatten().tolist()
    assert got == [0, 255, 128, 51]  # 127.5 rounds to even: 128; 51.0 stays
    assert len(arrays_from_tensors(x, torch.zeros(50, dtype=torch.long), x[:0], torch.zeros(0, dtype=torch.long),
                                   classes=["a"]).test_y) == 0
@pytest.mark.parametrize("change,match", [
    (lambda tx, ty, vx, vy: (tx[0], ty, vx, vy), r"images \[N, C, H, W\]"),
    (lambda tx, ty, vx, vy: (tx[..., :7], ty, vx, vy), "square images"),
    (lambda tx, ty, vx, vy: (tx * 2 - 1, ty, vx, vy), r"give it in \[0, 1\]"),
    (lambda tx, ty, vx, vy: ((tx * 255).int(), ty, vx, vy), "uint8 .* or floating point"),
    (lambda tx, ty, vx, vy: (tx, ty[:-1], vx, vy), "integer labels"),
    (lambda tx, ty, vx, vy: (tx, ty.float(), vx, vy), "integer labels"),
    (lambda tx, ty, vx, vy: (tx, ty, vx.repeat(1, 3, 1, 1), vy), "one shape"),
    # channels last was told to resize or crop its "8x1 images"; NaN became pixel 0; NumPy arrays named no fix
    (lambda tx, ty, vx, vy: (tx.permute(0, 2, 3, 1), ty, vx, vy),
     r"train_x is \(\d+, 8, 8, 1\): images \[N, H, W, C\] with channels last; .* pass x.permute\(0, 3, 1, 2\)"),
    (lambda tx, ty, vx, vy: (tx, ty, torch.where(vx == vx.max(), torch.nan, vx), vy), "test_x holds NaN pixels"),
    (lambda tx, ty, vx, vy: (tx.numpy(), ty, vx, vy), r"got ndarray: pass torch.from_numpy\(x\)"),
])
def test_bad_tensors_get_a_clear_error(change, match, digits_as_floats):
    with pytest.raises(ConfigError, match=match):
        arrays_from_tensors(*change(*digits_as_floats[0]))


def test_a_model_that_is_not_a_module_is_refused(digits_as_floats, tiny_config, tmp_path):
    """A function given as model= failed with "'function' object has no attribute 'parameters'"."""
    data = arrays_from_tensors(*digits_as_floats[0])
    with pytest.raises(ConfigError, match=r"model= must be your network, a torch.nn.Module .*, got a function"):
        Trainer(tiny_config, out_dir=tmp_path, progress=False, model=lambda x: x, data=data)


def test_labels_outside_the_classes_are_refused(digits_as_floats):
    tx, ty, vx, vy = digits_as_floats[0]
    with pytest.raises(ConfigError, match=r"labels in 0..9; they must lie in 0..4"):
        arrays_from_tensors(tx, ty, vx, vy, classes=list("abcde"))


def test_own_network_and_data_train_resume_exactly_and_evaluate(digits_as_floats, tiny_config, tmp_path):
    data = arrays_from_tensors(*digits_as_floats[0], name="my digits", flip=False)
    cfg = tiny_config.replace(iters=6, ckpt_every=3)
    torch.manual_seed(0)
    net = TinyNet()
    whole = Trainer(cfg, out_dir=tmp_path / "whole", progress=False, model=net, data=data)
    assert whole.model is net  # the user's module is trained in place
    assert whole.fit()["model"] == "TinyNet"  # its class, not its module's path or the config's default WRN
    saved = json.loads((tmp_path / "whole" / "config.json").read_text())
    assert saved["dataset"] == "tensors"
    ckpt = load_checkpoint(tmp_path / "whole")
    assert ckpt["custom"] == {"model": f"{__name__}.TinyNet", "data": True}
    assert ckpt["dataset"]["name"] == "my digits"

    # stopped at 3, resumed with the same network and data: bitwise the uninterrupted run
    torch.manual_seed(0)
    part = Trainer(cfg.replace(iters=3), out_dir=tmp_path / "part", progress=False, model=TinyNet(), data=data)
    part.fit()
    ckpt_path = tmp_path / "part" / "checkpoint.pt"
    with pytest.raises(CheckpointError, match="pass the same kind of network as model="):
        Trainer(resume_config(ckpt_path), resume=ckpt_path, progress=False, data=data)
    with pytest.raises(CheckpointError, match="pass the same data= to resume"):
        Trainer(resume_config(ckpt_path), resume=ckpt_path, progress=False, model=TinyNet())
    # with the config the run was started from (its dataset the default, data= having replaced it), a missing data=
    # is named, not a dataset the user never asked for
    for kwargs in ({"model": TinyNet()}, {}):
        with pytest.raises(CheckpointError, match="pass the same (data=|kind of network)"):
            Trainer(cfg, resume=ckpt_path, progress=False, **kwargs)
    # a network of other shapes (16 channels, not 8) neither continues the run nor takes its weights
    wider = TinyNet()
    wider.body[0], wider.body[4] = nn.Conv2d(1, 16, 3, padding=1), nn.Linear(64, 10)
    with pytest.raises(CheckpointError, match=r"checkpoint .*checkpoint\.pt does not fit this network: Error\(s\) "
                                              r"in loading state_dict for TinyNet"):
        Trainer(resume_config(ckpt_path), resume=ckpt_path, progress=False, model=wider, data=data)
    with pytest.raises(CheckpointError, match=r"--init-weights .*checkpoint\.pt does not fit this network: Error"):
        Trainer(cfg.replace(iters=3, init_weights=str(ckpt_path)), out_dir=tmp_path / "wider", progress=False,
                model=wider, data=data)
    resumed = Trainer(resume_config(ckpt_path, {"iters": 6}), resume=ckpt_path, progress=False, model=TinyNet(),
                      data=data)
    resumed.fit()
    assert torch.equal(params(resumed.model), params(net))

    # evaluation needs them too, and then scores the trained network on that data
    with pytest.raises(CheckpointError, match=r"give a network of that kind as model= \(to fastjem\.eval\.load_model"):
        load_model(tmp_path / "whole", "cpu")
    with pytest.raises(CheckpointError, match=r"the network given as model= does not fit the weights of checkpoint "
                                              r".*whole.checkpoint\.pt \(Error\(s\) in loading state_dict for TinyNet.*"
                                              rf"pass a network of the kind and size it trained, {__name__}\.TinyNet$"):
        load_model(tmp_path / "whole", "cpu", model=wider, data=data)
    with pytest.raises(ConfigError, match="load_model\\(path, data=...\\)"):
        accuracy(load_model(tmp_path / "whole", "cpu", model=TinyNet()), out_dir=tmp_path / "e0")
    (tx, ty, vx, vy), _ = digits_as_floats
    other = arrays_from_tensors(tx, ty % 5, vx, vy % 5, name="five digits")
    with pytest.raises(CheckpointError, match=r"trained on my digits \(num_classes 10.*data= holds five digits"):
        load_model(tmp_path / "whole", "cpu", model=TinyNet(), data=other)
    with pytest.raises(CheckpointError, match="data= holds five digits"):
        Trainer(resume_config(ckpt_path), resume=ckpt_path, progress=False, model=TinyNet(), data=other)
    em = load_model(tmp_path / "whole", "cpu", model=TinyNet(), data=data)
    report = accuracy(em, out_dir=tmp_path / "eval")
    assert report["results"]["acc"] == pytest.approx(evaluate(net, data.test_x, data.test_y)["acc"], abs=1e-6)
    # the network is named as what it is, not as the config's default WRN
    assert em.model_name == "TinyNet" and "TinyNet (" in whole._model_desc()
    assert export_classifier(tmp_path / "whole", tmp_path / "net.pt2", model=TinyNet())["meta"]["model"] == "TinyNet"


def test_a_network_that_does_not_fit_the_data_is_refused_before_training(tiny_config, tmp_path):
    with pytest.raises(ConfigError, match=r"logits \[B, 10\] .* returned \(2, 7\)"):
        Trainer(tiny_config, out_dir=tmp_path / "a", progress=False, model=TinyNet(k=7))
    rgb = nn.Sequential(nn.Conv2d(3, 4, 3), nn.Flatten(), nn.LazyLinear(10))
    with pytest.raises(ConfigError, match=r"model= failed on a batch of images \[2, 1, 8, 8\]"):
        Trainer(tiny_config, out_dir=tmp_path / "b", progress=False, model=rgb)
    # weights in another precision than the samples': refused with the cast that mends it, not torch's dtype error
    for dtype, said in ((torch.float64, "float64"), (torch.bfloat16, "bfloat16")):
        with pytest.raises(ConfigError, match=rf"model= holds {said} weights: .* pass model.float\(\)"):
            Trainer(tiny_config, out_dir=tmp_path / "c", progress=False, model=TinyNet().to(dtype))
    half_norm = TinyNet()
    half_norm.register_buffer("scale", torch.ones(1, dtype=torch.float16))  # a buffer counts as the weights do
    with pytest.raises(ConfigError, match="model= holds float16 weights"):
        Trainer(tiny_config, out_dir=tmp_path / "c", progress=False, model=half_norm)
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists() and not (tmp_path / "c").exists()


def test_the_tensors_dataset_is_python_only(capsys, tmp_path):
    assert main(["train", "--dataset", "tensors", "--out-dir", str(tmp_path / "run"), "--device", "cpu"]) == 1
    assert "data given in Python" in capsys.readouterr().err


CALLS = []


class CountingNet(TinyNet):
    def __init__(self):
        super().__init__(k=5)
        self.body[0] = nn.Conv2d(3, 8, 3, padding=1)

    def forward(self, x):
        CALLS.append(x.shape[0])
        return super().forward(x)


def test_bench_times_your_own_network(tiny_config):
    from torch.utils.flop_counter import FlopCounterMode

    from fastjem.benchmark import bench_sampler

    net = CountingNet()
    before = [p.detach().clone() for p in net.parameters()]
    cfg = tiny_config.replace(batch_size=6, sgld_steps=4)
    CALLS.clear()
    r = bench_sampler(cfg, torch.device("cpu"), num_classes=5, channels=3, size=12, seconds=0.2, warmup=1, model=net)
    assert r["model"] == "CountingNet" and r["input"] == [3, 12, 12]
    # the timed chains went through this network (a copy of it), after the engine's channels_last probe of 1 sample
    assert CALLS[0] == 1 and set(CALLS[1:]) == {6}
    frozen = copy.deepcopy(net).requires_grad_(False)  # an SGLD step: input gradient only
    with FlopCounterMode(display=False) as counter:
        x = torch.zeros(6, 3, 12, 12, requires_grad=True)
        frozen(x).logsumexp(1).sum().backward()
    assert r["flops_per_step"] == counter.get_total_flops()
    assert all(torch.equal(a, b) for a, b in zip(before, net.parameters()))  # the caller's module is untouched
    assert net.body[0].weight.is_contiguous()  # not turned channels_last


def test_a_run_of_named_parts_resumes_without_model_or_data_and_sizes_must_agree(digits_as_floats, tiny_config,
                                                                                  tmp_path):
    """A run whose network its config describes, on a named dataset, resumes without model= and data= (given, they
    would silently stand in for what it trained); data= of another size than --image-size asks is refused; a
    Trainer without a folder to write to is refused; nothing is written by any of them."""
    Trainer(tiny_config.replace(iters=1), out_dir=tmp_path / "run", progress=False, log=lambda *a: None).fit()
    ckpt = tmp_path / "run" / "checkpoint.pt"
    before = ckpt.read_bytes()
    data = arrays_from_tensors(*digits_as_floats[0])
    with pytest.raises(CheckpointError, match="trained the network its config describes; resume it without model="):
        Trainer(resume_config(ckpt), resume=ckpt, progress=False, model=TinyNet())
    # said before the config's dataset ('tensors' with data=) is compared with the checkpoint's
    with pytest.raises(CheckpointError, match="trained on digits, not on data given in Python: resume it without"):
        Trainer(resume_config(ckpt), resume=ckpt, progress=False, data=data)
    assert ckpt.read_bytes() == before
    with pytest.raises(ConfigError, match="--image-size 16 asked, but data= holds 8-pixel images"):
        Trainer(tiny_config.replace(image_size=16), out_dir=tmp_path / "sized", progress=False, data=data)
    with pytest.raises(ConfigError, match=r"an output folder is needed \(--out-dir\)"):
        Trainer(tiny_config, progress=False)
    assert not (tmp_path / "sized").exists()


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the refusal on a machine without CUDA")
def test_asking_for_cuda_without_it_says_what_to_use():
    from fastjem.train import resolve_device

    with pytest.raises(ConfigError, match="--device cuda was asked for but CUDA is not available; use --device cpu"):
        resolve_device("cuda")
    assert resolve_device("auto").type == "cpu"


def test_a_run_on_data_given_in_python_is_evaluated_on_that_data_and_a_classifier_has_no_buffer(digits_as_floats,
                                                                                             tiny_config, tmp_path):
    """Evaluating a run trained on data= without giving it again is refused, naming how to pass it (the run's own
    data cannot be reloaded by name); a classifier-only run has no replay buffer to draw rows from."""
    data = arrays_from_tensors(*digits_as_floats[0])
    Trainer(tiny_config.replace(iters=1), out_dir=tmp_path / "own", progress=False, log=lambda *a: None,
            data=data).fit()
    with pytest.raises(ConfigError, match=r"was trained on data given in Python .*load_model\(path, data=\.\.\.\)"):
        load_model(tmp_path / "own").arrays()
    assert load_model(tmp_path / "own", data=data).arrays() is data
    Trainer(tiny_config.replace(iters=1, px_weight=0.0), out_dir=tmp_path / "clf", progress=False,
            log=lambda *a: None).fit()
    with pytest.raises(ConfigError, match="has no replay buffer"):
        load_model(tmp_path / "clf").buffer_rows(4)


def test_a_compiled_network_trains_and_saves_under_its_own_parameter_names(tiny_config, tmp_path):
    """``model=torch.compile(net)``: the run trains the module inside the wrapper, so its checkpoint names the
    network's parameters without the wrapper's ``_orig_mod.`` prefix, and the plain network (or a compiled one)
    loads it; a checkpoint an earlier version wrote with the prefix loads too."""
    from fastjem.models import plain_state_dict

    torch.manual_seed(0)
    net = TinyNet()
    trainer = Trainer(tiny_config.replace(iters=2), out_dir=tmp_path / "run", progress=False,
                      model=torch.compile(net))
    assert trainer.model is net
    trainer.fit()
    ckpt = load_checkpoint(tmp_path / "run")
    assert set(ckpt["model"]) == set(TinyNet().state_dict()) and ckpt["custom"]["model"] == f"{__name__}.TinyNet"
    for given in (TinyNet(), torch.compile(TinyNet())):
        em = load_model(tmp_path / "run", "cpu", model=given)
        assert type(em.model) is TinyNet and torch.equal(params(em.model), params(net))
    # a checkpoint an earlier version wrote of a compiled network (every name prefixed) is evaluated, and starts a run
    raw = torch.load(tmp_path / "run" / "checkpoint.pt", weights_only=True)
    raw["model"] = {f"_orig_mod.{k}": v for k, v in raw["model"].items()}
    torch.save(raw, tmp_path / "old.pt")
    assert torch.equal(params(load_model(tmp_path / "old.pt", "cpu", model=TinyNet()).model), params(net))
    started = Trainer(tiny_config.replace(iters=1, init_weights=str(tmp_path / "old.pt")), out_dir=tmp_path / "new",
                      progress=False, model=TinyNet())
    assert torch.equal(params(started.model), params(net))
    assert plain_state_dict(net.state_dict()).keys() == net.state_dict().keys()
    # only a prefix every name has is taken away
    assert list(plain_state_dict({"_orig_mod.a": 1, "b": 2})) == ["_orig_mod.a", "b"]


class ViewNet(nn.Module):
    """Flattens a convolution's output with .view, as much user code (and the authors' WRN) does."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.LeakyReLU(0.2), nn.Conv2d(4, 4, 3, padding=1))
        self.fc = nn.Linear(4 * 8 * 8, 10)

    def forward(self, x):
        h = self.conv(x)
        return self.fc(h.view(h.size(0), -1))


class ReshapeNet(ViewNet):
    def forward(self, x):
        h = self.conv(x)
        return self.fc(h.reshape(h.size(0), -1))


def test_a_network_that_views_its_activations_trains_in_nchw(tiny_config, tmp_path):
    """The engine makes the weights channels_last, so convolutions return channels_last activations, which
    ``.view(B, -1)`` refuses: such a network passed the model= check and then failed with a raw RuntimeError inside
    the engine's setup. It now runs with NCHW weights, and the log says why."""
    from fastjem.engine import channels_last_failure

    torch.manual_seed(0)
    net = ViewNet()
    lines = []
    trainer = Trainer(tiny_config.replace(iters=2), out_dir=tmp_path / "run", progress=False, model=net,
                      log=lambda *a, **k: lines.append(" ".join(map(str, a))))
    assert trainer.model is net and net.conv[2].weight.is_contiguous()
    before = params(net)
    trainer.fit()
    assert not torch.equal(params(net), before)  # it trained
    assert any("channels_last weights off: the network fails on channels_last activations (RuntimeError: view size"
               in line and ".reshape or .flatten" in line and "it runs in NCHW" in line for line in lines)
    # a 5-d parameter has no channels_last layout: the network keeps NCHW weights, and trains
    volume = ReshapeNet()
    volume.conv.insert(0, nn.Conv3d(1, 1, 1))
    volume.conv.insert(0, nn.Unflatten(1, (1, 1)))
    volume.conv.insert(2, nn.Flatten(1, 2))
    lines.clear()
    Trainer(tiny_config.replace(iters=1), out_dir=tmp_path / "volume", progress=False, model=volume,
            log=lambda *a, **k: lines.append(" ".join(map(str, a)))).fit()
    assert any("channels_last weights off: a tensor of the network has no channels_last layout" in line
               for line in lines) and volume.conv[5].weight.is_contiguous()
    # a network that takes channels_last keeps it, with no note
    assert channels_last_failure(ReshapeNet().to(memory_format=torch.channels_last), (1, 8, 8)) is None
    reshaping = ReshapeNet()
    lines.clear()
    Trainer(tiny_config.replace(iters=1), out_dir=tmp_path / "reshape", progress=False, model=reshaping,
            log=lambda *a, **k: lines.append(" ".join(map(str, a))))
    weight = reshaping.conv[2].weight
    assert weight.is_contiguous(memory_format=torch.channels_last) and not weight.is_contiguous()
    assert not any("channels_last weights off" in line for line in lines)
