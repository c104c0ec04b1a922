"""G-set loader: canonical checksums, best-known values, bad files."""
import os
from pathlib import Path

import numpy as np
import pytest

from papers.mipcrim import gset
from papers.mipcrim.gset import (GSET_NAMES, best_known, checksums, content_sha256, decode_text, load_gset,
                                 parse_rudy, text_sha256)

ANCHORS = {  # from the spec: canonical content SHA-256
    "G10": "8fe55512e52d30c7145fe457f1703d8a6c3f35d3c87212c2a75ab65315053578",
    "G14": "a46a10d317d817c1f3e8ac7065cf0b408af44e16c86de172bd8af10a082ac8e2",
    "G15": "794bc1dc27e31220fb231b236ab5ee69fac6bb51ebd40130e712510b8c493eba",
    "G22": "122c59f06097a004e43f2fdb78ee6d6204038093cc07f7991049f294a359d07d",
    "G43": "3597e3c22aa10906024f2d09b82510ac5ad16627fd2ea5e934298bead4dd2b5a",
    "G49": "d98ab4dd7074fc57a04b62489e149b78712e262f92cc186f5b8832f9ae7e7a09",
}
TINY = "4 4 \n1 2 1\n3 2 1\n3 4 -1\n1 4 1\n"


def _mirror():
    dirs = [Path(p) for p in os.environ.get("REPRO_DATA_MIRROR", "").split(os.pathsep) if p]
    for d in dirs:
        if (d / "gset" / "G14.txt").is_file():
            return d
    pytest.skip("REPRO_DATA_MIRROR is unset or holds no gset/ folder: the mirror-backed G-set tests need it")


def test_table_and_anchors():
    assert len(GSET_NAMES) == 71 and GSET_NAMES[0] == "G1" and GSET_NAMES[-1] == "G81"
    for name, digest in ANCHORS.items():
        assert checksums()[name]["content_sha256"] == digest


def test_best_known():
    assert best_known("G14") == 3064 and best_known("G49") == 6000
    assert best_known("G25") == 13340           # BLS; the later source's 13349 is a typo
    assert best_known("G77") == 9926            # later source empty -> BLS
    for bad in ("G73", "G0", "g14", 14):
        with pytest.raises(ValueError, match="name must be one of the 71"):
            best_known(bad)


def test_parse_encodings_agree():
    n, e, d = parse_rudy(TINY)
    assert n == 4 and e.shape == (4, 3)
    np.testing.assert_array_equal(e[1], [1, 2, 1])      # "3 2 1" -> i < j, 0-based
    utf16 = b"\xff\xfe" + TINY.replace("\n", "\r\n").encode("utf-16-le")
    assert content_sha256(utf16) == d == content_sha256(TINY.encode("ascii"))
    assert text_sha256(utf16) == text_sha256(TINY.encode("ascii"))
    assert decode_text(utf16).replace("\r\n", "\n") == TINY


def test_parse_bad_files():
    with pytest.raises(ValueError, match="header says m=5"):
        parse_rudy("4 5\n1 2 1\n")
    with pytest.raises(ValueError, match="malformed header"):
        parse_rudy("4\n1 2 1\n")
    with pytest.raises(ValueError, match="line 2 is malformed"):
        parse_rudy("4 1\n1 2\n")
    with pytest.raises(ValueError, match="self-loop"):
        parse_rudy("4 1\n2 2 1\n")
    with pytest.raises(ValueError, match="duplicate"):
        parse_rudy("4 2\n1 2 1\n2 1 1\n")
    with pytest.raises(ValueError, match="outside"):
        parse_rudy("4 1\n1 5 1\n")
    with pytest.raises(ValueError, match="neither ASCII"):
        decode_text("4 1\n1 2 \u00e9\n".encode("latin-1"))


def test_missing_file_and_hash_mismatch(tmp_path, monkeypatch):
    monkeypatch.setattr(gset, "REPO_ROOT", tmp_path)
    monkeypatch.setenv("REPRO_DATA_MIRROR", "")
    with pytest.raises(FileNotFoundError, match="offline=True"):
        load_gset("G14", offline=True)
    dest = tmp_path / "data" / "mipcrim" / "gset" / "G11.txt"
    dest.parent.mkdir(parents=True)
    dest.write_text(TINY)
    with pytest.raises(ValueError, match="canonical content SHA-256"):
        load_gset("G11")
    with pytest.raises(ValueError, match="name must be one of the 71"):
        load_gset("G100")


def test_load_from_mirror(tmp_path, monkeypatch):
    mirror = _mirror()
    monkeypatch.setattr(gset, "REPO_ROOT", tmp_path)           # no data/ there: read the mirror
    n, e = load_gset("G14", offline=True)
    assert n == 800 and e.shape == (4694, 3) and e.dtype == np.float64
    assert np.all(e[:, 0] < e[:, 1]) and e[:, 0].min() == 0 and e[:, 1].max() <= 799
    raw = (mirror / "gset" / "G14.txt").read_bytes()
    assert raw[:2] == b"\xff\xfe"                                 # the UTF-16 copy
    assert text_sha256(raw) == checksums()["G14"]["text_sha256"]
    # tamper with one weight: the canonical hash catches it
    text = decode_text(raw).replace("\r\n", "\n").split("\n")
    text[1] = text[1].rsplit(" ", 1)[0] + " 2"
    bad = tmp_path / "data" / "mipcrim" / "gset" / "G14.txt"
    bad.parent.mkdir(parents=True)
    bad.write_text("\n".join(text))
    with pytest.raises(ValueError, match="canonical content SHA-256"):
        load_gset("G14")


def test_fetch_through_shared_data(tmp_path):
    _mirror()
    path = gset.fetch_gset("G49", tmp_path / "G49.txt")
    assert content_sha256(path.read_bytes()) == ANCHORS["G49"]
