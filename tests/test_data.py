import numpy as np
import pytest
import torch
from PIL import Image

from fastjem.data import DeviceData, augment, load_arrays, to_float
from fastjem.errors import DataNotFoundError


def test_digits_splits_are_fixed_and_disjoint():
    a = load_arrays("digits")
    assert a.train_x.dtype == torch.uint8 and a.train_x.shape[1:] == (1, 8, 8)
    assert len(a.train_y) + len(a.test_y) == 1797
    d1 = DeviceData(a, torch.device("cpu"))
    d2 = DeviceData(load_arrays("digits"), torch.device("cpu"))
    assert len(d1.val_y) == 180 and d1.n_train == 1797 - 360 - 180
    assert torch.equal(d1.val_x, d2.val_x) and torch.equal(d1.train_x, d2.train_x)
    # No validation image appears in the training split.
    train_rows = {bytes(r.numpy()) for r in d1.train_x.flatten(1)}
    dup = sum(bytes(r.numpy()) in train_rows for r in d1.val_x.flatten(1))
    assert dup <= 2  # digits has a couple of exact duplicate images; a leaked split would give 180


def test_to_float_range():
    x = torch.tensor([0, 255], dtype=torch.uint8)
    assert to_float(x).tolist() == [-1.0, 1.0]


def test_random_crop_is_a_window_of_the_reflect_padded_image():
    torch.manual_seed(0)
    x = torch.randn(64, 2, 6, 6)
    out = augment(x, pad=2, flip=False, noise=0.0)
    padded = torch.nn.functional.pad(x, (2, 2, 2, 2), mode="reflect")
    offsets = set()
    for i in range(64):
        hits = [(oy, ox) for oy in range(5) for ox in range(5)
                if torch.equal(out[i], padded[i, :, oy:oy + 6, ox:ox + 6])]
        assert hits, f"image {i} is not a crop"
        offsets.update(hits)
    assert len(offsets) > 10  # crops vary


def test_flip_happens_about_half_the_time_and_noise_has_the_right_std():
    torch.manual_seed(0)
    x = torch.randn(4000, 1, 4, 4)
    out = augment(x, pad=0, flip=True, noise=0.0)
    flipped = (out == x.flip(3)).flatten(1).all(1)
    same = (out == x).flatten(1).all(1)
    assert bool((flipped | same).all())
    assert abs(flipped.float().mean().item() - 0.5) < 0.04
    noisy = augment(x, pad=0, flip=False, noise=0.03)
    assert abs((noisy - x).std().item() - 0.03) < 0.001


def _write_folder(root, classes=("a", "b"), n=6, size=8):
    rng = np.random.default_rng(0)
    for c in classes:
        (root / c).mkdir(parents=True)
        for i in range(n):
            Image.fromarray(rng.integers(0, 255, (size, size, 3), dtype=np.uint8)).save(root / c / f"{i}.png")


def test_imagefolder_is_decoded_once_and_cached(tmp_path, monkeypatch):
    _write_folder(tmp_path / "imgs")
    a = load_arrays("imagefolder", tmp_path / "imgs")
    assert a.info.num_classes == 2 and a.train_x.shape[1:] == (3, 8, 8)
    assert len(a.train_y) + len(a.test_y) == 12

    def no_decode(*args, **kwargs):
        raise AssertionError("decoded again instead of using the cache")

    monkeypatch.setattr("fastjem.data._decode", no_decode)
    b = load_arrays("imagefolder", tmp_path / "imgs")
    assert torch.equal(a.train_x, b.train_x)


def test_cifar10_from_a_train_test_image_folder(tmp_path):
    classes = [f"c{i}" for i in range(10)]
    _write_folder(tmp_path / "cifar" / "train", classes, n=2, size=32)
    _write_folder(tmp_path / "cifar" / "test", classes, n=1, size=32)
    a = load_arrays("cifar10", tmp_path / "cifar")
    assert a.info.name == "cifar10" and a.info.pad == 4 and a.info.flip
    assert a.train_x.shape == (20, 3, 32, 32) and a.test_x.shape == (10, 3, 32, 32)


@pytest.mark.parametrize("name", ["cifar10", "cifar100", "svhn"])
def test_missing_dataset_says_what_to_do(name, tmp_path):
    with pytest.raises(DataNotFoundError) as err:
        load_arrays(name, tmp_path / "empty")
    msg = str(err.value)
    assert "--download" in msg and "--data-dir" in msg and str(tmp_path / "empty") in msg


def test_imagefolder_errors(tmp_path):
    with pytest.raises(DataNotFoundError, match="does not exist"):
        load_arrays("imagefolder", tmp_path / "nowhere")
    (tmp_path / "flat").mkdir()
    with pytest.raises(DataNotFoundError, match="class subfolders"):
        load_arrays("imagefolder", tmp_path / "flat")


def test_to_uint8_inverts_to_float():
    from fastjem.data import to_float, to_uint8

    u8 = torch.arange(256, dtype=torch.uint8)
    assert torch.equal(to_uint8(to_float(u8)), u8)
    assert to_uint8(torch.tensor([-3.0, 5.0])).tolist() == [0, 255]  # clipped first
