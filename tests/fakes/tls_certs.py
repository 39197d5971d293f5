"""A throwaway certificate authority for tests: a CA, a server certificate it signed for
given names (and 127.0.0.1), and a client certificate, written as PEM files.

gw must trust the server only through the CA file it is given (never the system store),
and present the client certificate when told to: ``server_context(require_client=True)``
refuses a client without one.
"""

from __future__ import annotations

import datetime
import ipaddress
import ssl
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


@dataclass(frozen=True, slots=True)
class CertAuthority:
    ca_file: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path

    def server_context(self, *, require_client: bool = False) -> ssl.SSLContext:
        """A TLS server context with the CA-signed certificate; ``require_client``: a
        client must present a certificate the CA signed."""
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(self.server_cert, self.server_key)
        if require_client:
            context.verify_mode = ssl.CERT_REQUIRED
            context.load_verify_locations(cafile=str(self.ca_file))
        return context


def make_ca(directory: Path, names: Sequence[str] = ("localhost",)) -> CertAuthority:
    """A CA in ``directory`` and the certificates it signed: the server's for ``names``
    and 127.0.0.1, and one client certificate (``gw-client``)."""
    directory.mkdir(parents=True, exist_ok=True)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = _name("gw test CA")
    ca = (
        _builder(ca_name, ca_name, ca_key.public_key())
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(_usage(cert_sign=True), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), False)
        .sign(ca_key, hashes.SHA256())
    )
    ca_file = directory / "ca.pem"
    ca_file.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    alt_names: list[x509.GeneralName] = [x509.DNSName(name) for name in names]
    alt_names.append(x509.IPAddress(ipaddress.ip_address("127.0.0.1")))
    server_cert, server_key = _leaf(
        directory / "server",
        ca,
        ca_key,
        names[0],
        purpose=ExtendedKeyUsageOID.SERVER_AUTH,
        alt_names=x509.SubjectAlternativeName(alt_names),
    )
    client_cert, client_key = _leaf(
        directory / "client", ca, ca_key, "gw-client", purpose=ExtendedKeyUsageOID.CLIENT_AUTH
    )
    return CertAuthority(ca_file, server_cert, server_key, client_cert, client_key)


def _leaf(
    stem: Path,
    ca: x509.Certificate,
    ca_key: ec.EllipticCurvePrivateKey,
    common_name: str,
    *,
    purpose: x509.ObjectIdentifier,
    alt_names: x509.SubjectAlternativeName | None = None,
) -> tuple[Path, Path]:
    key = ec.generate_private_key(ec.SECP256R1())
    ca_ski = ca.extensions.get_extension_for_class(x509.SubjectKeyIdentifier).value
    builder = (
        _builder(_name(common_name), ca.subject, key.public_key())
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(_usage(cert_sign=False), critical=True)
        .add_extension(x509.ExtendedKeyUsage([purpose]), critical=False)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ca_ski), False
        )
    )
    if alt_names is not None:
        builder = builder.add_extension(alt_names, critical=False)
    certificate = builder.sign(ca_key, hashes.SHA256())
    cert_file, key_file = stem.with_suffix(".pem"), stem.with_suffix(".key")
    cert_file.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    key_file.chmod(0o600)
    return cert_file, key_file


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _builder(
    subject: x509.Name, issuer: x509.Name, public_key: ec.EllipticCurvePublicKey
) -> x509.CertificateBuilder:
    now = datetime.datetime.now(datetime.UTC)
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
    )


def _usage(*, cert_sign: bool) -> x509.KeyUsage:
    return x509.KeyUsage(
        digital_signature=True,
        content_commitment=False,
        key_encipherment=False,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=cert_sign,
        crl_sign=cert_sign,
        encipher_only=False,
        decipher_only=False,
    )
