"""``faultdeck export --otel``, run as a user runs it: to a file, and to an OTLP endpoint (a
stand-in collector on 127.0.0.1 that keeps what was POSTed)."""

from __future__ import annotations

import http.server
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from tests.support import GOLDEN, ROOT, children
from tests.support.children import child_env
from tests.support.plants import one_per_pattern

WEATHER = ROOT / "examples" / "openai_agent" / "cassettes" / "weather.jsonl"
START = "2026-11-29T10:00:00Z"


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return children.run([sys.executable, "-m", "faultdeck", *args], cwd=cwd, timeout=120)


class Collector(http.server.ThreadingHTTPServer):
    """Keeps ``(path, body)`` of every POST and answers as an OTLP/HTTP collector does."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.posts: list[tuple[str, bytes]] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Handler(http.server.BaseHTTPRequestHandler):
    server: Collector

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("content-length", "0")))
        self.server.posts.append((self.path, body))
        answer = ExportTraceServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("content-type", "application/x-protobuf")
        self.send_header("content-length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def collector() -> Iterator[Collector]:
    server = Collector()
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def attributes(span: dict[str, object]) -> dict[str, object]:
    found = {}
    for item in span["attributes"]:  # type: ignore[attr-defined]
        (value,) = item["value"].values()
        found[item["key"]] = value
    return found


def test_export_writes_otlp_json_beside_the_cassette(tmp_path: Path) -> None:
    cassette = tmp_path / "weather.jsonl"
    shutil.copy(WEATHER, cassette)
    done = run("export", str(cassette), "--otel", "--start", START)
    assert done.returncode == 0, done.stderr
    target = tmp_path / "weather.otlp.json"
    assert done.stdout.strip() == f"wrote {target}: 3 spans of {cassette} (OTLP/JSON)"
    request = orjson.loads(target.read_bytes())
    found = request["resourceSpans"][0]["scopeSpans"][0]["spans"]
    assert [s["name"] for s in found] == [
        "faultdeck run weather",
        "chat gpt-4o-mini",
        "chat gpt-4o-mini",
    ]
    assert found[0]["startTimeUnixNano"] == "1795946400000000000"
    second = attributes(found[2])
    assert second["gen_ai.usage.input_tokens"] == "29"  # int64 is a string in OTLP/JSON
    assert second["gen_ai.provider.name"] == "openai"
    again = run("export", str(cassette), "--otel", "--start", START)
    assert again.returncode == 2
    assert again.stderr.startswith(f"faultdeck: error: {target} exists already; pass --force")
    forced = run("export", str(cassette), "--otel", "--start", START, "--force")
    assert forced.returncode == 0, forced.stderr
    assert target.read_bytes() == orjson.dumps(request) + b"\n"  # the same trace again


def test_export_sends_protobuf_to_the_endpoint(collector: Collector) -> None:
    done = run("export", str(GOLDEN), "--otel", "--endpoint", collector.url, "--start", START)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == (f"sent 8 spans of {GOLDEN} to {collector.url}/v1/traces")
    ((path, body),) = collector.posts
    assert path == "/v1/traces"
    request = ExportTraceServiceRequest.FromString(body)
    found = list(request.resource_spans[0].scope_spans[0].spans)
    assert len(found) == 8
    root = found[0]
    assert root.name == "faultdeck run golden"
    assert {s.parent_span_id for s in found[1:]} == {root.span_id}
    names = [s.name for s in found[1:]]
    assert names[:3] == ["chat", "execute_tool read_file", "execute_tool read_file"]
    tool = {a.key: a.value.string_value for a in found[2].attributes}
    assert tool["gen_ai.tool.name"] == "read_file"
    assert tool["gen_ai.operation.name"] == "execute_tool"


def test_nothing_credential_shaped_leaves(tmp_path: Path, collector: Collector) -> None:
    plant = next(iter(one_per_pattern().values()))
    cassette = tmp_path / "leaky.jsonl"
    error = {"type": "RuntimeError", "message": f"refused {plant.text}"}
    lines = [
        {"faultdeck": 1},
        {"seq": 1, "kind": "tool", "name": "t", "key": "tool:0", "args": {}, "error": error},
        {"end": {"calls": 1, "status": "ok"}},
    ]
    cassette.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))
    sent = run("export", str(cassette), "--otel", "--endpoint", collector.url)
    written = run("export", str(cassette), "--otel")
    for done in (sent, written):
        assert done.returncode == 2
        (line,) = done.stderr.splitlines()
        assert line.startswith(f"faultdeck: error: {cassette}: seq 1 ('execute_tool t'): ")
        assert "credential-shaped" in line
        assert "nothing was exported" in line
        assert plant.secret not in done.stdout + done.stderr
    assert collector.posts == []
    assert not (tmp_path / "leaky.otlp.json").exists()


def test_an_endpoint_nobody_listens_on_is_one_line(tmp_path: Path) -> None:
    server = Collector()  # bound, then closed: a port nobody listens on
    url = server.url
    server.server_close()
    done = run("export", str(GOLDEN), "--otel", "--endpoint", url, "--timeout", "1")
    assert done.returncode == 2
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"faultdeck: error: {url}/v1/traces: the trace was not delivered")


def test_bad_input_is_one_line_and_writes_nothing(tmp_path: Path) -> None:
    cassette = tmp_path / "golden.jsonl"
    shutil.copy(GOLDEN, cassette)
    cases = {
        ("export", str(cassette)): "say which export: --otel",
        (
            "export",
            str(cassette),
            "--otel",
            "--start",
            "yesterday",
        ): "Invalid value for --start: 'yesterday' is not",
        ("export", str(cassette), "--otel", "-o", "x.json", "--endpoint", "http://127.0.0.1:1"): (
            "-o writes a file and --endpoint sends"
        ),
        ("export", str(tmp_path / "nope.jsonl"), "--otel"): "no such cassette",
    }
    for args, said in cases.items():
        done = run(*args, cwd=tmp_path)
        assert done.returncode == 2, args
        (line,) = done.stderr.splitlines()
        assert line.startswith("faultdeck: error: "), line
        assert said in line, line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["golden.jsonl"]


def test_without_the_sdk_the_error_names_the_extra(tmp_path: Path) -> None:
    hide = (
        "import sys; sys.modules['opentelemetry'] = None; from faultdeck.cli import main; "
        f"sys.exit(main(['export', {str(GOLDEN)!r}, '--otel', '-o', 'x.json']))"
    )
    done = subprocess.run(
        [sys.executable, "-c", hide],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=child_env(),
        timeout=120,
        check=False,
    )
    assert done.returncode == 2
    (line,) = done.stderr.splitlines()
    assert line.startswith("faultdeck: error: the OpenTelemetry export needs its SDK: ")
    assert "pip install 'faultdeck[otel]'" in line
    assert list(tmp_path.iterdir()) == []
