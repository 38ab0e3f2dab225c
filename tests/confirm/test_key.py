"""The key file: created readable by its owner only, refused when others may read it, outside the case, one
line of kvir's form; the manifest's name for it is the SHA-256 of its bytes."""
from __future__ import annotations

import hashlib
import os
import stat

import pytest

from kvir.confirm.key import load_key
from kvir.core.errors import InputError


def test_a_missing_key_is_created_owner_only_and_reloads_the_same(tmp_path):
    p = tmp_path / "k"
    k1, created = load_key(p, create=True)
    assert created and stat.S_IMODE(os.stat(p).st_mode) == 0o600
    k2, created2 = load_key(p)
    assert not created2 and k1 == k2
    magic, hexkey = p.read_text().split()
    assert magic == "kvir-confirm-key-v1" and k1.key_id == hashlib.sha256(bytes.fromhex(hexkey)).hexdigest()
    assert hexkey not in repr(k1)


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604, 0o660])
def test_a_key_others_may_read_is_refused(tmp_path, mode):
    p = tmp_path / "k"
    load_key(p, create=True)
    os.chmod(p, mode)
    with pytest.raises(InputError, match="may be read by other users"):
        load_key(p)


def test_a_key_inside_the_case_or_missing_or_malformed_is_refused(tmp_path):
    case = tmp_path / "case"
    case.mkdir()
    with pytest.raises(InputError, match="inside the case folder"):
        load_key(case / "k", case_dir=case, create=True)
    assert not (case / "k").exists()
    with pytest.raises(InputError, match="no such key file"):
        load_key(tmp_path / "nope")
    bad = tmp_path / "bad"
    bad.write_text("kvir-confirm-key-v1 abcd\n")
    os.chmod(bad, 0o600)
    with pytest.raises(InputError, match="not a kvir confirmation key"):
        load_key(bad)
