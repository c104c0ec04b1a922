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


def _offline(monkeypatch):
    monkeypatch.setattr(data, "_download", lambda url, timeout: (_ for _ in ()).throw(OSError("offline")))


def test_checksum_mismatch_names_the_source_and_writes_nothing(tmp_path, monkeypatch):
    rel = _mirror(tmp_path, monkeypatch, b"tampered\n")
    _offline(monkeypatch)
    dest = tmp_path / "out" / "f.txt"
    with pytest.raises(data.ChecksumError, match="mirror .*SHA-256"):
        data.fetch("https://invalid.example/f", dest, sha256="0" * 64, mirror_relpath=rel)
    assert not dest.exists()
    assert not list(tmp_path.rglob("*.part")) and not list(tmp_path.rglob("*.bad"))


def test_undecodable_mirror_file_is_a_checksum_error_and_leaves_no_poisoned_copy(tmp_path, monkeypatch):
    good = b"3 2\n1 2 1\n"
    rel = _mirror(tmp_path, monkeypatch, b"\xff\xd8\x00 not text \x80\x81")
    _offline(monkeypatch)
    dest = tmp_path / "out" / "f.txt"
    digest = data.sha256_text(good)
    with pytest.raises(data.ChecksumError, match="not decodable"):
        data.fetch("https://invalid.example/f", dest, sha256=digest, mirror_relpath=rel, canonical_text=True)
    assert not dest.exists()
    (tmp_path / "mirror" / rel).write_bytes(good)  # the mirror is repaired: the next fetch works
    assert data.fetch("https://invalid.example/f", dest, sha256=digest, mirror_relpath=rel,
                      canonical_text=True).read_bytes() == good


def test_a_corrupt_file_already_in_place_is_set_aside_and_fetched_again(tmp_path, monkeypatch):
    good = b"1 2\n"
    rel = _mirror(tmp_path, monkeypatch, good)
    dest = tmp_path / "out" / "f.txt"
    dest.parent.mkdir()
    dest.write_bytes(b"\x80\x81 poisoned")
    got = data.fetch("https://invalid.example/f", dest, sha256=data.sha256_text(good), mirror_relpath=rel,
                     canonical_text=True)
    assert got.read_bytes() == good and (tmp_path / "out" / "f.txt.bad").read_bytes() == b"\x80\x81 poisoned"


def test_a_bad_mirror_falls_through_to_a_good_source(tmp_path, monkeypatch):
    good = b"1 2\n"
    rel = _mirror(tmp_path, monkeypatch, b"tampered\n")
    monkeypatch.setattr(data, "_download", lambda url, timeout: good)
    dest = data.fetch("https://invalid.example/f", tmp_path / "f.txt", sha256=hashlib.sha256(good).hexdigest(),
                      mirror_relpath=rel)
    assert dest.read_bytes() == good


def test_fetch_over_loopback_http(tmp_path, monkeypatch):
    """The real download path, against a server on 127.0.0.1 (no outside network)."""
    import functools
    import http.server
    import threading

    (tmp_path / "srv").mkdir()
    (tmp_path / "srv" / "f.txt").write_bytes(b"5 6\n")
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(tmp_path / "srv"))
    handler.log_message = lambda *a, **k: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        monkeypatch.delenv("REPRO_DATA_MIRROR", raising=False)
        url = f"http://127.0.0.1:{server.server_address[1]}/f.txt"
        dest = data.fetch(url, tmp_path / "out" / "f.txt", sha256=hashlib.sha256(b"5 6\n").hexdigest(),
                          mirror_relpath="x/f.txt", timeout=5)
        assert dest.read_bytes() == b"5 6\n"
    finally:
        server.shutdown()
        server.server_close()


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
