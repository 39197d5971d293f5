"""``providers[].tls`` (ca_file, client_cert, client_key): refused at load when gw could
not use it, the error naming the file, the field, the line and the reason. What needs no
file is checked by the config itself (validate.py); the files are read as the config is
read from disk (gw/upstream_http/tls.py ``tls_file_problems``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization

from gw.config import ConfigError, load_config
from gw.config.schema import ProviderTls
from gw.environment import read_config

from fakes.tls_certs import CertAuthority, make_ca


@pytest.fixture(scope="module")
def authority(tmp_path_factory: pytest.TempPathFactory) -> CertAuthority:
    return make_ca(tmp_path_factory.mktemp("ca"))


def config_text(tls: str, kind: str = "openai_compatible") -> str:
    return (
        "providers:\n"
        f"  - name: corp\n"
        f"    kind: {kind}\n"
        "    base_url: https://llm.corp.example/v1\n"
        f"    tls: {tls}\n"
    )


def load_from_disk(tmp_path: Path, text: str) -> ProviderTls | None:
    path = tmp_path / "gw.yaml"
    path.write_text(text)
    return read_config(path, explicit=True).config.providers[0].tls


def test_usable_files_load(tmp_path: Path, authority: CertAuthority) -> None:
    tls = (
        f"{{ca_file: {authority.ca_file}, client_cert: {authority.client_cert}, "
        f"client_key: {authority.client_key}}}"
    )
    assert load_from_disk(tmp_path, config_text(tls)) == ProviderTls(
        ca_file=str(authority.ca_file),
        client_cert=str(authority.client_cert),
        client_key=str(authority.client_key),
    )


def test_a_key_in_the_certificates_file_needs_no_client_key(
    tmp_path: Path, authority: CertAuthority
) -> None:
    both = tmp_path / "client-with-key.pem"
    both.write_bytes(authority.client_cert.read_bytes() + authority.client_key.read_bytes())
    assert load_from_disk(tmp_path, config_text(f"{{client_cert: {both}}}")) is not None


@pytest.mark.parametrize(
    ("tls", "field", "reason"),
    [
        ("{ca_file: ca.pem}", "ca_file", "must be an absolute path (got 'ca.pem')"),
        ("{client_key: /k.pem}", "client_key", "is given without client_cert"),
        ("{ca_fil: /ca.pem}", "ca_fil", "unknown field; did you mean `ca_file`?"),
    ],
)
def test_what_needs_no_file_is_checked_by_the_config(tls: str, field: str, reason: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config(config_text(tls), "gw.yaml")
    assert caught.value.path == f"providers[0].tls.{field}"
    assert reason in caught.value.reason
    assert caught.value.line == 5


def test_a_mock_provider_takes_no_tls() -> None:
    with pytest.raises(ConfigError) as caught:
        load_config(config_text("{ca_file: /ca.pem}", kind="mock"), "gw.yaml")
    assert caught.value.path == "providers[0].tls"
    assert "makes no connection" in caught.value.reason


def write_bad_files(directory: Path, authority: CertAuthority) -> dict[str, Path]:
    not_pem = directory / "not.pem"
    not_pem.write_text("hello\n")
    key = serialization.load_pem_private_key(authority.client_key.read_bytes(), None)
    encrypted = directory / "encrypted.key"
    encrypted.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.BestAvailableEncryption(b"secret"),
        )
    )
    return {"not_pem": not_pem, "encrypted": encrypted, "missing": directory / "missing.pem"}


@pytest.mark.parametrize(
    ("tls", "field", "reason"),
    [
        ("{ca_file: MISSING}", "ca_file", "cannot read MISSING: No such file or directory"),
        ("{ca_file: DIR}", "ca_file", "cannot read DIR: Is a directory"),
        ("{ca_file: NOT_PEM}", "ca_file", "NOT_PEM holds no PEM certificate gw can use"),
        ("{client_cert: MISSING}", "client_cert", "cannot read MISSING"),
        ("{client_cert: CERT, client_key: MISSING}", "client_key", "cannot read MISSING"),
        (
            "{client_cert: CERT, client_key: OTHER_KEY}",
            "client_cert",
            "CERT and OTHER_KEY: not a PEM certificate and its private key",
        ),
        ("{client_cert: CERT}", "client_cert", "CERT: not a PEM certificate and its private key"),
        (
            "{client_cert: CERT, client_key: ENCRYPTED}",
            "client_key",
            "the private key in ENCRYPTED is encrypted; give gw an unencrypted key",
        ),
    ],
    ids=[
        "missing",
        "directory",
        "not-pem",
        "cert-missing",
        "key-missing",
        "key-mismatch",
        "key-absent",
        "key-encrypted",
    ],
)
def test_files_gw_cannot_use_are_refused_naming_file_field_and_reason(
    tmp_path: Path, authority: CertAuthority, tls: str, field: str, reason: str
) -> None:
    bad = write_bad_files(tmp_path, authority)
    names = {
        "MISSING": bad["missing"],
        "DIR": tmp_path,
        "NOT_PEM": bad["not_pem"],
        "CERT": authority.client_cert,
        "OTHER_KEY": authority.server_key,
        "ENCRYPTED": bad["encrypted"],
    }
    for name, path in names.items():
        tls = tls.replace(name, str(path))
        reason = reason.replace(name, str(path))
    with pytest.raises(ConfigError) as caught:
        load_from_disk(tmp_path, config_text(tls))
    assert caught.value.path == f"providers[0].tls.{field}"
    assert reason in caught.value.reason
    assert (caught.value.source, caught.value.line) == (str(tmp_path / "gw.yaml"), 5)
