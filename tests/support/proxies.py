"""A proxy and a TLS server on 127.0.0.1, for the clients that send through a proxy.

``Proxy`` forwards a request sent to it in absolute form (``GET http://host/path``) to its
server, and tunnels a ``CONNECT`` (bytes both ways, as an https URL goes through a proxy),
keeping what it carried. ``TLSServer`` answers every GET over TLS with a JSON echo, under a
certificate for 127.0.0.1 signed by a CA made for it (``ca`` is the PEM a client trusts).
Its key never touches the disk: OpenSSL reads it from a file in memory (``memfd_create``).
"""

from __future__ import annotations

import datetime
import http.client
import ipaddress
import json
import os
import selectors
import socket
import ssl
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Self
from urllib.parse import urlsplit

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

_HOP_BY_HOP = {"proxy-authorization", "proxy-connection", "connection", "keep-alive"}


class _Served:
    """A ``ThreadingHTTPServer`` on a free port of 127.0.0.1 while the block runs."""

    def __init__(self, handler: type[BaseHTTPRequestHandler]) -> None:
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.server.daemon_threads = True
        self.stopping = threading.Event()
        self.port = self.server.server_address[1]
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stopping.set()
        self.server.shutdown()
        self.server.server_close()
        self._thread.join(timeout=5)


class Proxy(_Served):
    """A forwarding and tunnelling HTTP proxy; ``carried`` lists each request it took
    (``"GET http://…"``, ``"CONNECT host:port"``) and ``authorized`` each
    ``Proxy-Authorization`` it was given."""

    def __init__(self) -> None:
        super().__init__(_ProxyHandler)
        self.carried: list[str] = []
        self.authorized: list[str] = []
        self.server.owner = self  # type: ignore[attr-defined]
        self.url = f"http://127.0.0.1:{self.port}"


class _ProxyHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""

    @property
    def owner(self) -> Proxy:
        owner: Proxy = self.server.owner  # type: ignore[attr-defined]
        return owner

    def _note(self) -> None:
        self.owner.carried.append(f"{self.command} {self.path}")
        if "Proxy-Authorization" in self.headers:
            self.owner.authorized.append(self.headers["Proxy-Authorization"])

    def do_CONNECT(self) -> None:
        self._note()
        host, _, port = self.path.rpartition(":")
        upstream = socket.create_connection((host, int(port)), timeout=10)
        self.send_response(200, "Connection established")
        self.end_headers()
        self.wfile.flush()
        self.close_connection = True
        with upstream, selectors.DefaultSelector() as selector:
            selector.register(self.connection, selectors.EVENT_READ, upstream)
            selector.register(upstream, selectors.EVENT_READ, self.connection)
            while not self.owner.stopping.is_set():
                for key, _ in selector.select(timeout=0.2):
                    data = key.fileobj.recv(65536)  # type: ignore[union-attr]
                    if not data:
                        return
                    key.data.sendall(data)

    def _forward(self) -> None:
        self._note()
        target = urlsplit(self.path)
        length = int(self.headers.get("Content-Length", 0))
        body = self.rfile.read(length) if length else None
        headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP_BY_HOP}
        upstream = http.client.HTTPConnection(target.hostname or "", target.port, timeout=10)
        try:
            path = target.path + (f"?{target.query}" if target.query else "")
            upstream.request(self.command, path, body=body, headers=headers)
            answer = upstream.getresponse()
            data = answer.read()
            self.send_response(answer.status, answer.reason)
            for name, value in answer.getheaders():
                if name.lower() not in (*_HOP_BY_HOP, "transfer-encoding", "content-length"):
                    self.send_header(name, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        finally:
            upstream.close()

    do_GET = do_POST = do_HEAD = _forward


class TLSServer(_Served):
    """Answers every GET over TLS with ``{"path": …, "tls": true}``; ``ca`` is the PEM of
    the CA a client trusts it by."""

    def __init__(self) -> None:
        ca, chain = _certificates()
        self.ca = ca.decode()
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        memory = os.memfd_create("faultdeck-test-tls")
        try:
            os.write(memory, chain)
            context.load_cert_chain(f"/dev/fd/{memory}")
        finally:
            os.close(memory)
        super().__init__(_EchoHandler)
        self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        self.url = f"https://127.0.0.1:{self.port}"


class _EchoHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""

    def do_GET(self) -> None:
        body = json.dumps({"path": self.path, "tls": True}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def _certificates() -> tuple[bytes, bytes]:
    """A CA's certificate, and a server's key and certificate for 127.0.0.1 that it signed
    (PEM), made afresh: nothing of them outlives the test."""
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "faultdeck test CA")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), False)
        # Python 3.13 verifies strictly (VERIFY_X509_STRICT): a CA must say what its key signs.
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    server = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), False
        )
        .sign(ca_key, hashes.SHA256())
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    return (
        ca.public_bytes(serialization.Encoding.PEM),
        key_pem + server.public_bytes(serialization.Encoding.PEM),
    )
