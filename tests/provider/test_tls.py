"""The process's one TLS context (provider/tls.py) verifies as the HTTP library's own did.

A real TLS server on 127.0.0.1 with a self-signed certificate: the provider's
client and a look-up's client refuse it, as they refused it when each client
built its own context; a context built while ``SSL_CERT_FILE`` names that
certificate trusts it (the library's own rule), and every client then shares it.
"""

from __future__ import annotations

import asyncio
import datetime
import ipaddress
import json
import ssl
from contextlib import aclosing, asynccontextmanager

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from selfref_tui.agent.provider.chunks import TextChunk
from selfref_tui.agent.provider.client import Provider
from selfref_tui.agent.provider.errors import ProviderError
from selfref_tui.agent.provider.probe import fetch_json, status_of
from selfref_tui.agent.provider.tls import tls_context
from selfref_tui.config import ProviderConfig


def _self_signed(tmp_path) -> tuple[str, str]:
    """A certificate for 127.0.0.1 signed by its own key: (certificate file, key file)."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName(
                [x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    cert_file, key_file = tmp_path / "cert.pem", tmp_path / "key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                           serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return str(cert_file), str(key_file)


MODELS = json.dumps({"object": "list", "data": [{"id": "tls-model"}]}).encode()
ANSWER = (b'data: {"id": "c", "object": "chat.completion.chunk", "created": 0, '
          b'"model": "tls-model", "choices": [{"index": 0, "delta": {"content": "over TLS"}, '
          b'"finish_reason": "stop"}]}\n\ndata: [DONE]\n\n')


@asynccontextmanager
async def _tls_server(cert_file: str, key_file: str):
    """HTTPS on 127.0.0.1: a streamed answer to a POST, the model list to anything else;
    yields its base URL."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert_file, key_file)

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = (await reader.readuntil(b"\r\n\r\n")).lower()
            length = head.partition(b"content-length:")[2].split(b"\r\n")[0].strip()
            await reader.readexactly(int(length or 0))
            kind, body = ((b"text/event-stream", ANSWER) if head.startswith(b"post")
                          else (b"application/json", MODELS))
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: %s\r\nContent-Length: %d\r\n"
                         b"Connection: close\r\n\r\n%s" % (kind, len(body), body))
            await writer.drain()
        except (OSError, asyncio.IncompleteReadError):
            pass  # a client that refused the certificate hung up
        finally:
            writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0, ssl=context)
    try:
        yield f"https://127.0.0.1:{server.sockets[0].getsockname()[1]}/v1"
    finally:
        server.close()
        await server.wait_closed()


@pytest.fixture
def fresh_context():
    """The process's context built anew in the test, and again after it (the test's is
    built from the test's environment)."""
    tls_context.cache_clear()
    yield
    tls_context.cache_clear()


def _config(url: str) -> ProviderConfig:
    return ProviderConfig(base_url=url, api_key="k", model="tls-model", max_retries=0,
                          timeout_s=5.0)


def test_the_context_verifies_certificates_and_host_names_and_is_built_once():
    context = tls_context()
    assert isinstance(context, ssl.SSLContext)
    assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname
    assert tls_context() is context


async def test_a_server_whose_certificate_nobody_trusts_is_refused(tmp_path):
    cert_file, key_file = _self_signed(tmp_path)
    async with _tls_server(cert_file, key_file) as url:
        assert await status_of(_config(url), 5.0) == "connection"
        async with Provider(_config(url), backoff_base_s=0.01) as provider:
            with pytest.raises(ProviderError) as refused:
                async with aclosing(provider.stream([{"role": "user", "content": "hi"}])) as s:
                    async for _ in s:
                        pass
            assert refused.value.kind == "connection", refused.value
            with pytest.raises(ProviderError):
                await provider.list_models()


async def test_ssl_cert_file_is_honoured_and_every_client_shares_the_context(
    tmp_path, monkeypatch, fresh_context
):
    cert_file, key_file = _self_signed(tmp_path)
    monkeypatch.setenv("SSL_CERT_FILE", cert_file)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    async with _tls_server(cert_file, key_file) as url:
        assert await status_of(_config(url), 5.0) == 200  # built here, trusting that file
        # Built once: a later change of the variable is not read again by any client.
        monkeypatch.delenv("SSL_CERT_FILE")
        status, payload = await fetch_json(_config(url), f"{url}/models", 5.0)
        assert (status, payload["data"][0]["id"]) == (200, "tls-model")
        async with Provider(_config(url)) as provider:
            assert await provider.list_models() == ["tls-model"]
            async with aclosing(provider.stream([{"role": "user", "content": "hi"}])) as s:
                text = [c.text async for c in s if isinstance(c, TextChunk)]
            assert "".join(text) == "over TLS"
