"""SCons' CacheDir as a shared cache uses it: every file carries its content's sha256 and a
damaged one is refused (quarantined, a miss); reading the config needs no lock file."""

from __future__ import annotations

import os

import pytest

from pypto.scons.cachedir import DamagedCacheFileError, VerifiedCacheDir


def test_a_pushed_file_comes_back_as_it_went(tmp_path):
    source = tmp_path / "golden.json"
    source.write_bytes(b'{"name": "out"}\n')
    os.utime(source, (1_000_000, 1_000_000))
    cached, back = tmp_path / "cache" / "AB" / "ab01", tmp_path / "back.json"
    cached.parent.mkdir(parents=True)
    VerifiedCacheDir.copy_to_cache(None, str(source), str(cached))
    assert cached.read_bytes() != source.read_bytes()  # the digest rides along
    VerifiedCacheDir.copy_from_cache(None, str(cached), str(back))
    assert back.read_bytes() == source.read_bytes()
    assert back.stat().st_mtime == cached.stat().st_mtime


@pytest.mark.parametrize("damage", [lambda b: b.replace(b"out", b"oat"), lambda b: b[:-1],
                                    lambda b: b[:10]])
def test_a_damaged_file_is_refused_and_moved_aside(tmp_path, capsys, damage):
    source = tmp_path / "golden.json"
    source.write_bytes(b'{"name": "out"}\n')
    cached = tmp_path / "cache" / "AB" / "ab01"
    cached.parent.mkdir(parents=True)
    VerifiedCacheDir.copy_to_cache(None, str(source), str(cached))
    cached.write_bytes(damage(cached.read_bytes()))
    with pytest.raises(DamagedCacheFileError):
        VerifiedCacheDir.copy_from_cache(None, str(cached), str(tmp_path / "back.json"))
    assert not cached.exists() and not (tmp_path / "back.json").exists()
    assert [p.name.split(".")[0] for p in (tmp_path / "cache" / "quarantine").iterdir()] == [
        "ab01"]
    assert "is damaged (its sha256 does not match)" in capsys.readouterr().out


def test_the_config_is_read_without_lock_files(tmp_path):
    assert VerifiedCacheDir(str(tmp_path / "scons")).config == {"prefix_len": 2}
    (tmp_path / "scons").mkdir()
    (tmp_path / "scons" / "config").write_text('{"prefix_len": 3}')
    os.chmod(tmp_path / "scons", 0o555)  # a reader that may not write there
    try:
        assert VerifiedCacheDir(str(tmp_path / "scons")).config == {"prefix_len": 3}
    finally:
        os.chmod(tmp_path / "scons", 0o755)
    assert sorted(p.name for p in (tmp_path / "scons").iterdir()) == ["config"]
