"""The confirmation key: the secret that salts every fingerprint, kept in a file apart from the case.

Without the key, the case's fingerprints cannot be computed for a guessed text (kvir.confirm.siphash), so a
case can travel to legal or a regulator without carrying a way to test what a prompt said. The file holds 32
random bytes as hex on one line, readable by its owner only: a file any other user may read (group or world
permission bits) is refused, as is one inside the case folder. The manifest names the key by the SHA-256 of
its bytes only; a case fingerprinted under one key refuses another (fingerprints would never match).
"""
from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import stat
from dataclasses import dataclass
from pathlib import Path

from kvir.core.errors import InputError

KEY_BYTES = 32
_MAGIC = "kvir-confirm-key-v1"


@dataclass(frozen=True)
class ConfirmKey:
    """The subkeys of one key file (derived with HMAC-SHA256, one label each) and the key's public id."""

    key_id: str          # SHA-256 of the key bytes: how the manifest names it
    base: int            # the window hash's base (odd: invertible modulo 2**64)
    select: int          # keys the winnowing order, so which windows are kept says nothing without the key
    k0: int              # the SipHash key
    k1: int

    def __repr__(self) -> str:          # never print key material
        return f"ConfirmKey(key_id={self.key_id[:16]}...)"


def _subkey(key: bytes, label: str) -> int:
    return int.from_bytes(hmac.new(key, f"kvir-confirm/{label}".encode(), hashlib.sha256).digest()[:8], "little")


def derive(key: bytes) -> ConfirmKey:
    return ConfirmKey(hashlib.sha256(key).hexdigest(), _subkey(key, "base") | 1, _subkey(key, "select"),
                      _subkey(key, "siphash-k0"), _subkey(key, "siphash-k1"))


def create_key(path: Path) -> None:
    """Write a new key file, readable by its owner only (never replacing a file)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        raise InputError("key file exists already", path=str(path)) from None
    except OSError as e:
        raise InputError(f"cannot create the key file: {e.strerror or e}", path=str(path)) from None
    with os.fdopen(fd, "w") as f:
        f.write(f"{_MAGIC} {secrets.token_hex(KEY_BYTES)}\n")


def load_key(path: str | Path, *, case_dir: Path | None = None, create: bool = False) -> tuple[ConfirmKey, bool]:
    """The key in `path` (created first when it does not exist and `create`), and whether it was created.
    Refused: a key inside the case folder, a file others may read, anything but one key line."""
    path = Path(path)
    if case_dir is not None and _inside(path, case_dir):
        raise InputError("the key file lies inside the case folder: keep it apart from the case", path=str(path))
    created = False
    if not path.exists() and not path.is_symlink():
        if not create:
            raise InputError("no such key file", path=str(path))
        create_key(path)
        created = True
    st = os.stat(path)
    if not stat.S_ISREG(st.st_mode):
        raise InputError("the key file is not a regular file", path=str(path))
    if st.st_mode & 0o077:
        raise InputError(f"the key file may be read by other users (mode {stat.filemode(st.st_mode)})",
                         path=str(path), hint=f"chmod 600 {path}")
    try:
        text = path.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(f"cannot read the key file: {getattr(e, 'strerror', None) or e}", path=str(path)) from None
    magic, _, hexkey = text.partition(" ")
    try:
        key = bytes.fromhex(hexkey) if magic == _MAGIC else b""
    except ValueError:
        key = b""
    if len(key) != KEY_BYTES or "\n" in text:
        raise InputError(f"not a kvir confirmation key (one line: '{_MAGIC} ' and {2 * KEY_BYTES} hex digits)",
                         path=str(path))
    return derive(key), created


def _inside(path: Path, folder: Path) -> bool:
    try:
        Path(os.path.realpath(path)).relative_to(os.path.realpath(folder))
        return True
    except ValueError:
        return False
