"""The keys of a signed run: the vendor's private key (`--sign-key`), read before the run sends a
request, and the public key a certification body verifies with (`verify --key`).

Ed25519 and ECDSA on P-256 only: the two that DSSE signers, cosign and securesystemslib all
read, and small enough to paste into a README. A key that cannot be used is one line naming the
file, never its content: the private key appears in no output.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import dsa, ec, ed448, ed25519, rsa
from securesystemslib.formats import encode_canonical
from securesystemslib.signer import CryptoSigner, SSlibKey

from conformance import regular_file

KINDS = "Ed25519 or ECDSA P-256"
MAX_KEY_BYTES = 64 * 1024
"""A PEM key is a few hundred bytes: a bigger file is not one, and is not read whole."""


class KeyFileError(ValueError):
    """A key file that cannot be used; the message is one line for the user."""


def read_pem(path: Path, option: str) -> bytes:
    try:
        data = regular_file.read(path, MAX_KEY_BYTES)
    except OSError as error:
        raise KeyFileError(f"{option} {path}: cannot read it ({error.strerror or error})") from None
    if len(data) > MAX_KEY_BYTES or b"-----BEGIN" not in data:
        raise KeyFileError(f"{option} {path}: not a PEM key file")
    return data


def kind_of(key: object) -> str | None:
    """The key's kind where it is one this checker signs with; None otherwise."""
    if isinstance(key, ed25519.Ed25519PrivateKey | ed25519.Ed25519PublicKey):
        return "ed25519"
    if isinstance(key, ec.EllipticCurvePrivateKey | ec.EllipticCurvePublicKey):
        return "ecdsa-p256" if isinstance(key.curve, ec.SECP256R1) else None
    return None


def refuse_kind(key: object, path: Path, option: str) -> None:
    if kind_of(key) is not None:
        return
    if isinstance(key, ec.EllipticCurvePrivateKey | ec.EllipticCurvePublicKey):
        what = f"an EC key on {key.curve.name}"
    elif isinstance(key, rsa.RSAPrivateKey | rsa.RSAPublicKey):
        what = "an RSA key"
    elif isinstance(key, dsa.DSAPrivateKey | dsa.DSAPublicKey):
        what = "a DSA key"
    elif isinstance(key, ed448.Ed448PrivateKey | ed448.Ed448PublicKey):
        what = "an Ed448 key"
    else:
        what = "a key of another kind"
    raise KeyFileError(f"{option} {path}: {what}; use an {KINDS} key")


def load_signer(path: Path) -> CryptoSigner:
    """The signer of `--sign-key`: an unencrypted PEM private key (PKCS#8, or the SEC1 form
    `openssl ecparam -genkey` writes)."""
    option = "--sign-key"
    data = read_pem(path, option)
    try:
        key = serialization.load_pem_private_key(data, password=None)
    except TypeError:  # encrypted: cryptography would need the passphrase
        raise KeyFileError(
            f"{option} {path}: the key is encrypted, and the checker never asks for a "
            "passphrase; give it an unencrypted copy (openssl pkey -in KEY -out PLAIN.pem)"
        ) from None
    except (ValueError, UnsupportedAlgorithm):
        raise KeyFileError(f"{option} {path}: not a PEM private key ({KINDS})") from None
    refuse_kind(key, path, option)
    return CryptoSigner(key, public_key=with_go_keyid(SSlibKey.from_crypto(key.public_key())))


def load_public_key(path: Path) -> SSlibKey:
    """The key of `verify --key`: a PEM public key (`openssl pkey -in KEY -pubout`)."""
    option = "--key"
    data = read_pem(path, option)
    try:
        key = serialization.load_pem_public_key(data)
    except (ValueError, UnsupportedAlgorithm):
        raise KeyFileError(f"{option} {path}: not a PEM public key ({KINDS})") from None
    refuse_kind(key, path, option)
    return with_go_keyid(SSlibKey.from_crypto(key))


# The keyid a DSSE signature carries is only a hint, but go-securesystemslib's verifier skips a
# signature whose non-empty keyid is not the one it computes for its key, and python-
# securesystemslib's computes another (it leaves keyid_hash_algorithms out, and keeps the PEM's
# final newline). So the keyid written is Go's: the sha256 of the canonical JSON (OLPC) of
# {keytype, scheme, keyid_hash_algorithms: ["sha256", "sha512"], keyval: {public}}, with the
# public key as go-securesystemslib's NewKey writes it: hex of the raw key for ed25519, the
# SubjectPublicKeyInfo PEM without its final newline for ecdsa. docs/signing.md says more.
GO_KEYID_HASH_ALGORITHMS = ["sha256", "sha512"]


def go_keyid(keytype: str, scheme: str, public: str) -> str:
    """The keyid go-securesystemslib's NewKey computes for a public key in this form."""
    key = {
        "keytype": keytype,
        "scheme": scheme,
        "keyid_hash_algorithms": GO_KEYID_HASH_ALGORITHMS,
        "keyval": {"public": public.strip()},
    }
    return hashlib.sha256(encode_canonical(key).encode("utf-8")).hexdigest()


def with_go_keyid(key: SSlibKey) -> SSlibKey:
    public = key.keyval["public"].strip()
    keyid = go_keyid(key.keytype, key.scheme, public)
    return SSlibKey(keyid, key.keytype, key.scheme, {"public": public})


def known_ids(key: SSlibKey) -> list[SSlibKey]:
    """The key under Go's keyid, which this checker writes, and under python-securesystemslib's,
    which it wrote before: an envelope signed either way verifies."""
    public = key.keyval["public"]
    if key.keytype == "ed25519":
        crypto = ed25519.Ed25519PublicKey.from_public_bytes(bytes.fromhex(public))
    else:
        crypto = serialization.load_pem_public_key(public.encode("ascii"))
    return [key, SSlibKey.from_crypto(crypto)]


def describe(key: SSlibKey) -> str:
    """`ed25519 key 3f2a…` : what a person compares with the key the vendor published."""
    return f"{key.scheme} key {key.keyid[:16]}"
