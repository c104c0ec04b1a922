import hashlib

import pytest

from shared import data


def _mirror(tmp_path, monkeypatch, content: bytes, rel="set/file.txt"):
    root = tmp_path / "mirror"
    (root / rel).parent.mkdir(parents=True)
    (root / rel).write_bytes(content)
    monkeypatch.setenv("REPRO_DATA_MIRROR", str(root))
    return rel


def test_fetch_from_mirror_verifies_checksum(tmp_path, monkeypatch):
    rel = _mirror(tmp_path, monkeypatch, b"1 2\n")
    dest = data.fetch("https://invalid.example/file.txt", tmp_path / "out" / "f.txt",
                      sha256=hashlib.sha256(b"1 2\n").hexdigest(), mirror_relpath=rel)
    assert dest.read_bytes() == b"1 2\n"


def test_checksum_mismatch_is_clear_and_moves_file_aside(tmp_path, monkeypatch):
    rel = _mirror(tmp_path, monkeypatch, b"tampered\n")
    dest = tmp_path / "out" / "f.txt"
    with pytest.raises(data.ChecksumError, match="does not match the expected"):
        data.fetch("https://invalid.example/f", dest, sha256="0" * 64, mirror_relpath=rel)
    assert not dest.exists() and (tmp_path / "out" / "f.txt.bad").exists()


def test_canonical_text_checksum_ignores_encoding_and_line_ends():
    text = "3 2\n1 2 1\n"
    utf16_crlf = b"\xff\xfe" + text.replace("\n", "\r\n").encode("utf-16-le")
    assert data.sha256_text(utf16_crlf) == hashlib.sha256(text.encode()).hexdigest()
    assert data.sha256_text(text.replace("\n", "\r\n").encode()) == hashlib.sha256(text.encode()).hexdigest()


@pytest.mark.parametrize("raw", [b"3 2 \n1 2 1\t\n", b"3 2\n1 2 1", b"3 2\r1 2 1\r\n\r\n  \n", b"\xef\xbb\xbf3 2\n1 2 1\n\n"])
def test_canonical_text_strips_trailing_blanks_and_ends_with_one_newline(raw):
    assert data.canonical_text(raw) == "3 2\n1 2 1\n"


def test_canonical_text_keeps_leading_blanks_and_inner_empty_lines():
    assert data.canonical_text(b"  a\n\nb") == "  a\n\nb\n"
    assert data.canonical_text(b"") == "" and data.canonical_text(b"\n \n") == ""


def test_no_source_gives_fetch_error(tmp_path, monkeypatch):
    monkeypatch.setenv("REPRO_DATA_MIRROR", str(tmp_path / "empty"))
    monkeypatch.setattr(data, "_download", lambda url, timeout: (_ for _ in ()).throw(OSError("offline")))
    with pytest.raises(data.FetchError, match="REPRO_DATA_MIRROR"):
        data.fetch("https://invalid.example/f", tmp_path / "f", sha256="0" * 64, mirror_relpath="x/f")


def test_bad_digest_length():
    with pytest.raises(ValueError, match="sha256"):
        data.fetch("u", "d", sha256="abc", mirror_relpath="x")
