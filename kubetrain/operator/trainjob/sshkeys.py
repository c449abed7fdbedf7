"""New SSH key pairs for MPI TrainJobs: ECDSA P-521, as upstream's MPI plugin makes them.

The private key is PEM ``EC PRIVATE KEY`` (SEC 1), the public key one ``authorized_keys`` line.
This is the only randomness the TrainJob controller needs, which is why it is not in the
(pure) MPI plugin: the reconciler calls it when the job's SSH Secret does not exist yet.
Must not: log or keep keys.
"""

from __future__ import annotations

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec


def new_key_pair() -> tuple[bytes, bytes]:
    """``(private PEM, public authorized_keys line ending in a newline)``."""
    key = ec.generate_private_key(ec.SECP521R1())
    private = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    )
    public = key.public_key().public_bytes(
        serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH
    )
    return private, public + b"\n"
