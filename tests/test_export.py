"""fastjem export: the classifier as a torch.export program that computes what the network computes."""

import copy

import pytest
import torch

from fastjem.cli import main
from fastjem.errors import ConfigError
from fastjem.eval import load_model
from fastjem.export import export_classifier, load_exported, read_meta
from fastjem.train import Trainer


@pytest.fixture(scope="module")
def run(tmp_path_factory, tiny_config_module):
    folder = tmp_path_factory.mktemp("run")
    Trainer(tiny_config_module.replace(iters=4, eval_every=2), out_dir=folder, progress=False).fit()
    return folder


def test_export_writes_a_program_with_free_batch_size_and_its_metadata(run, capsys):
    assert main(["export", str(run)]) == 0
    out = capsys.readouterr().out
    path = run / "model.pt2"
    assert f"to {path}" in out and "largest relative difference" in out
    classes = read_meta(path)["classes"]
    assert len(classes) == 10 and f"  output  logits [B, 10]; classes {', '.join(classes)}\n" in out  # all ten shown
    assert read_meta(path)["input"]["shape"][1:] == [1, 8, 8]
    assert "  input   images [B, 1, 8, 8] in [-1, 1] (x = 2 * uint8 / 255 - 1)\n" in out  # what the program takes
    net = load_exported(path)
    em = load_model(run, "cpu")
    x_test = em.test_set()[0]
    # the line it suggests loads the program
    use = next(line for line in out.splitlines() if line.startswith("  use     "))[len("  use     "):]
    scope = {"torch": torch}
    exec(use, scope)
    with torch.no_grad():
        torch.testing.assert_close(scope["net"](x_test[:4]), net(x_test[:4]))
    for b in (1, 16, 360):  # any batch size: here the whole test set in one call
        with torch.no_grad():
            torch.testing.assert_close(net(x_test[:b]), em.model(x_test[:b]), rtol=1e-5, atol=1e-6)
    # and past 2^16 images in one call (a bound at 65536 refused SVHN's 73257 training images)
    with torch.no_grad():
        many = net(x_test.repeat(183, 1, 1, 1)[: (1 << 16) + 1])
        torch.testing.assert_close(many, em.model(x_test).repeat(183, 1)[: (1 << 16) + 1], rtol=1e-5, atol=1e-6)
    # on the device asked for (the meta device: a device of another kind than the CPU it was saved on)
    on_meta = load_exported(path, device="meta")
    assert {p.device.type for p in on_meta.parameters()} == {"meta"}
    assert on_meta(x_test[:2].to("meta")).device.type == "meta"
    meta = read_meta(path)
    assert meta["classes"] == [str(i) for i in range(10)] and meta["input"]["shape"] == ["B", 1, 8, 8]
    assert meta["iteration"] == 4 and meta["checkpoint"] == str(run / "checkpoint.pt")
    # best.pt exports beside it, under its own name; an existing file is kept unless --force
    assert main(["export", str(run / "best.pt")]) == 0 and (run / "model-best.pt2").exists()
    before = path.read_bytes()
    assert main(["export", str(run)]) == 1
    assert "pass --force" in capsys.readouterr().err and path.read_bytes() == before
    assert main(["export", str(run), "--force"]) == 0


def test_export_names_ten_classes_and_marks_more(monkeypatch, capsys):
    """The output line shows at most ten class names, and `...` when there are more (CIFAR-100's hundred)."""
    for k in (10, 11, 100):
        meta = {"model": "WRN-28-10", "dataset": "x", "iteration": 1, "num_classes": k,
                "classes": [f"c{i}" for i in range(k)], "input": {"shape": ["B", 3, 32, 32], "pixels": "x"}}
        monkeypatch.setattr("fastjem.export.export_classifier",
                            lambda *args, meta=meta: {"meta": meta, "path": "m.pt2", "max_relative_difference": 0.0})
        assert main(["export", "run"]) == 0
        shown = ", ".join(f"c{i}" for i in range(10))
        assert f"  output  logits [B, {k}]; classes {shown}{' ...' if k > 10 else ''}\n" in capsys.readouterr().out


def test_export_refuses_a_wrong_suffix_and_a_network_it_cannot_build(run, tmp_path, capsys):
    # the suffix it needs, the format that is, and a name to give (an .onnx asked for is not written in ONNX)
    for given, example in (("model.onnx", "model.pt2"), ("m.pt", "m.pt2"), ("model", "model.pt2")):
        assert main(["export", str(run), "--out", str(tmp_path / given)]) == 1
        assert (f"--out {tmp_path / given}: a name ending in .pt2 is needed for the exported program (torch.export's "
                f"format); give e.g. --out {tmp_path / example}\n") in capsys.readouterr().err
    # a folder named like the file, with or without --force: said as such, not "exists" or an OSError at the rename
    (tmp_path / "folder.pt2").mkdir()
    for force in ([], ["--force"]):
        assert main(["export", str(run), "--out", str(tmp_path / "folder.pt2"), *force]) == 1
        assert "is a folder: give the exported program" in capsys.readouterr().err
    # the run folder itself as --out (no .pt2 to its name): a folder, not a wrong suffix
    assert main(["export", str(run), "--out", str(run)]) == 1
    assert f"{run} is a folder: give the exported program" in capsys.readouterr().err
    ckpt = torch.load(run / "checkpoint.pt", weights_only=False)
    ckpt["custom"] = {"model": "mine.Net", "data": False}
    torch.save(ckpt, tmp_path / "custom.pt")
    assert main(["export", str(tmp_path / "custom.pt")]) == 1
    err = capsys.readouterr().err  # the way it is exported: from Python, with the network (not load_model alone)
    assert "network given in Python (mine.Net)" in err and "fastjem.export.export_classifier" in err
    assert not (tmp_path / "model-custom.pt2").exists()
    # given that network, but one whose output depends on its values in Python: torch.export cannot trace it
    net = copy.deepcopy(load_model(run, "cpu").model)

    class Untraceable(type(net)):
        def forward(self, x):
            out = super().forward(x)
            return out if out.sum().item() > 0 else -out

    net.__class__ = Untraceable
    with pytest.raises(ConfigError, match=r"custom\.pt: torch\.export could not trace the network \(.+\)$"):
        export_classifier(tmp_path / "custom.pt", tmp_path / "u.pt2", model=net)
    assert not (tmp_path / "u.pt2").exists()


def test_a_trace_failure_without_a_message_is_said_in_one_line(run, tmp_path, monkeypatch):
    """torch.export fails with bare asserts too (an AssertionError with no text): said as a ConfigError naming the
    exception (an IndexError from reading the first line of no text was raised instead), and only the first line of
    a long one."""
    def fail(error):
        def export(*args, **kwargs):
            raise error
        return export

    monkeypatch.setattr(torch.export, "export", fail(AssertionError()))
    with pytest.raises(ConfigError, match=r"could not trace the network \(AssertionError: \)$"):
        export_classifier(run, tmp_path / "a.pt2")
    monkeypatch.setattr(torch.export, "export", fail(RuntimeError("guard failed\n  File x.py, line 3\n")))
    with pytest.raises(ConfigError, match=r"could not trace the network \(RuntimeError: guard failed\)$"):
        export_classifier(run, tmp_path / "b.pt2")


def test_export_refuses_its_output_before_loading_the_checkpoint(run, tmp_path, monkeypatch):
    """A wrong --out is said at once, without loading (and on a GPU run, moving) the checkpoint first."""
    import fastjem.eval.core

    monkeypatch.setattr(fastjem.eval.core, "load_model", lambda *a, **k: pytest.fail("loaded before --out was checked"))
    (tmp_path / "m.pt2").write_bytes(b"kept")
    with pytest.raises(ConfigError, match="pass --force"):
        export_classifier(run, tmp_path / "m.pt2")
    with pytest.raises(ConfigError, match=r"a name ending in \.pt2 is needed"):
        export_classifier(run, str(tmp_path / "m.onnx"))
    assert (tmp_path / "m.pt2").read_bytes() == b"kept"


@pytest.mark.parametrize("wrong", ["scaled", "nan", "one", "single"])
def test_export_refuses_a_program_that_computes_something_else(run, tmp_path, capsys, monkeypatch, wrong):
    """The check of the file read back: logits 10% off, NaN (max(0.0, nan) passed it as a difference of 0), one
    logit of the last of several images 0.005% off (the largest difference counts, not the mean), or logits 10% off
    for a batch of one image only (a program specialised wrongly at batch size 1) are refused, the file kept for
    inspection; the metadata states the pixel range the program expects."""
    import fastjem.export as export

    real = export.load_exported

    class Wrong(torch.nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, x):
            out = self.inner(x)
            if wrong == "one":  # 5e-5 of the largest logit: averaged over 7 x 10 logits, under the 1e-5 allowed
                bump = torch.zeros_like(out)
                bump[-1, 0] = 5e-5 * out.abs().max() * (len(out) > 1)
                return out + bump
            if wrong == "single":
                return out * 1.1 if len(out) == 1 else out
            return out * 1.1 if wrong == "scaled" else out * float("nan")

    monkeypatch.setattr(export, "load_exported", lambda path, device="cpu": Wrong(real(path, device)))
    out = tmp_path / "m.pt2"
    assert main(["export", str(run), "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert "differ from the network's" in err and "should not be used" in err and out.exists(), err
    assert read_meta(out)["input"]["range"] == [-1.0, 1.0]


@pytest.mark.parametrize("command", ["sample", "export", "convert"])
def test_an_exported_program_or_saved_samples_given_as_checkpoint_are_named(run, tmp_path, capsys, command):
    """fastjem's other outputs given where a checkpoint is wanted (model.pt2 for its checkpoint.pt beside it, the
    samples' .npz) are said to be what they are, with the checkpoint to give: torch's reader called them
    'truncated, corrupted or not a torch file' with a note that the checkpoint was likely corrupted."""
    program = tmp_path / "model.pt2"
    export_classifier(run, program)
    assert main([command, str(program)]) == 1
    err = capsys.readouterr().err
    assert (f"{program} is a program written by fastjem export (torch.export's format), not a checkpoint: give the "
            f"checkpoint it was exported from, {run / 'checkpoint.pt'}\n") in err and "corrupted" not in err
    import numpy as np

    np.savez(tmp_path / "samples.npz", x=np.zeros((2, 1, 8, 8), np.float32), pred=np.zeros(2, np.int64))
    assert main([command, str(tmp_path / "samples.npz")]) == 1
    err = capsys.readouterr().err
    assert f"{tmp_path / 'samples.npz'} is NumPy's .npz (fastjem sample writes its samples so), not a checkpoint" in err
    assert "corrupted" not in err
