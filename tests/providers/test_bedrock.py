"""AWS Bedrock through boto3: recorded against a local fake of the runtime, replayed
offline, each fault seen as botocore's own exception, credentials never on disk."""

from __future__ import annotations

import base64
import json
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import botocore.eventstream
import botocore.exceptions
import httpx
import pytest
from botocore.config import Config

import faultdeck as fd
from faultdeck import faults
from faultdeck._cassette.summary import brief
from faultdeck._deck.retarget import Retarget
from faultdeck.attach._install import routed
from faultdeck.http._eventstream import EventStreamParser, FrameError, decode_message, encode
from tests.support.fake_bedrock import TOOL_ARGUMENTS, TOOL_CONFIG, create_app, event, frame
from tests.support.fake_upstream import Upstream
from tests.support.plants import B64, UPPER_DIGITS, rand
from tests.support.sdk import model_spans

ACCESS_KEY = "AK" + "IA" + rand("bedrock-access", UPPER_DIGITS, 16)
SECRET_KEY = rand("bedrock-secret", B64, 40)
SESSION_TOKEN = "IQoJb3JpZ2luX2Vj" + rand("bedrock-token", B64, 200)
OTHER_TOKEN = "FwoGZX" + "IvYXdzE" + rand("bedrock-other-token", B64, 300)
OTHER_KEY = "AS" + "IA" + rand("bedrock-other", UPPER_DIGITS, 16)
MODEL = "anthropic.claude-3-5-sonnet-20240620-v1:0"
ASK = [{"role": "user", "content": [{"text": "What is the weather?"}]}]
DEAD = "http://127.0.0.1:9"  # nothing listens: a replay that went live would fail loudly


def bedrock(url: str, *, key: str = ACCESS_KEY, secret: str = SECRET_KEY) -> Any:
    return boto3.client(
        "bedrock-runtime",
        region_name="us-east-1",
        endpoint_url=url,
        aws_access_key_id=key,
        aws_secret_access_key=secret,
        aws_session_token=SESSION_TOKEN,
        config=Config(retries={"total_max_attempts": 1}),  # max_attempts=1 still retries once
    )


def attached(deck: fd.Deck, url: str, **kwargs: Any) -> Any:
    client = bedrock(url, **kwargs)
    fd.http.attach_botocore(client, deck)
    return client


def tool_result(use: dict[str, Any]) -> list[dict[str, Any]]:
    result = {"toolUseId": use["toolUseId"], "content": [{"text": "18C"}]}
    return [
        *ASK,
        {"role": "assistant", "content": [{"toolUse": use}]},
        {"role": "user", "content": [{"toolResult": result}]},
    ]


def turn(client: Any) -> tuple[dict[str, Any], str]:
    """A tool-calling turn through ``converse``: the tool use, then the answer's text."""
    first = client.converse(modelId=MODEL, messages=ASK, toolConfig=TOOL_CONFIG)
    assert first["stopReason"] == "tool_use"
    use = first["output"]["message"]["content"][0]["toolUse"]
    second = client.converse(modelId=MODEL, messages=tool_result(use), toolConfig=TOOL_CONFIG)
    return use, second["output"]["message"]["content"][0]["text"]


def streamed(client: Any, messages: list[dict[str, Any]]) -> tuple[list[str], dict[str, Any]]:
    """A ``converse_stream`` answer read whole: its events' names, and what they built."""
    names: list[str] = []
    built: dict[str, Any] = {"text": "", "input": ""}
    answer = client.converse_stream(modelId=MODEL, messages=messages, toolConfig=TOOL_CONFIG)
    for one in answer["stream"]:
        (name, body), *_ = one.items()
        names.append(name)
        start = body.get("start", {}).get("toolUse")
        if start is not None:
            built["use"] = start
        delta = body.get("delta", {})
        built["text"] += delta.get("text", "")
        built["input"] += delta.get("toolUse", {}).get("input", "")
        if name == "messageStop":
            built["stop"] = body["stopReason"]
    return names, built


def stream_turn(client: Any) -> tuple[list[str], dict[str, Any], str]:
    names, first = streamed(client, ASK)
    assert first["stop"] == "tool_use"
    use = {**first["use"], "input": json.loads(first["input"])}
    return names, use, streamed(client, tool_result(use))[1]["text"]


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Recordings made once against the fake runtime, which is then stopped; what the SDK
    gave while recording is kept beside them."""
    folder = tmp_path_factory.mktemp("bedrock")
    out: dict[str, Any] = {name: folder / f"{name}.jsonl" for name in ("turn", "stream", "invoke")}
    with Upstream(app=create_app()) as upstream:
        with fd.Deck(out["turn"], mode="record", clock=fd.SystemClock()) as deck:
            out["turn answer"] = turn(attached(deck, upstream.url))
        with fd.Deck(out["stream"], mode="record", clock=fd.SystemClock()) as deck:
            out["stream answer"] = stream_turn(attached(deck, upstream.url))
        with fd.Deck(out["invoke"], mode="record", clock=fd.SystemClock()) as deck:
            client = attached(deck, upstream.url)
            body = json.dumps({"messages": ASK, "max_tokens": 64})
            out["invoke answer"] = client.invoke_model(modelId=MODEL, body=body)["body"].read()
            answer = client.invoke_model_with_response_stream(modelId=MODEL, body=body)
            out["chunks"] = [one["chunk"]["bytes"] for one in answer["body"]]
        out["seen"] = upstream.requests
    return out


def lines(path: Path) -> list[dict[str, Any]]:
    found = (json.loads(line) for line in path.read_text().splitlines()[1:])
    return [line for line in found if "kind" in line]


def replay(path: Path, *plan: fd.Fault) -> fd.Deck:
    return fd.Deck(path, mode="replay", faults=list(plan), clock=fd.VirtualClock())


# ----------------------------------------------------------------- record and replay


def test_the_calls_are_model_calls_named_by_operation(recorded: dict[str, Any]) -> None:
    names = [(c["kind"], c["name"]) for c in lines(recorded["turn"])]
    assert names == [("model", "bedrock.converse")] * 2
    streams = lines(recorded["stream"])
    assert [c["name"] for c in streams] == ["bedrock.converse_stream"] * 2
    assert [c["name"] for c in lines(recorded["invoke"])] == [
        "bedrock.invoke_model",
        "bedrock.invoke_model_stream",
    ]
    # A stream's messages are stored decoded: their JSON seen, their framing made again.
    first = streams[0]["stream"]["events"]
    assert [e["event"] for e in first][:2] == ["messageStart", "contentBlockStart"]
    assert first[1]["data"]["start"]["toolUse"]["name"] == "get_weather"
    assert first[0]["headers"] == {":content-type": "application/json", ":message-type": "event"}


def test_a_converse_turn_replays_offline(recorded: dict[str, Any]) -> None:
    use, text = recorded["turn answer"]
    assert use["input"] == TOOL_ARGUMENTS
    assert text == "It is 18C in Paris."
    with replay(recorded["turn"]) as deck:
        assert turn(attached(deck, DEAD)) == (use, text)
    assert deck.report().ok


def test_a_converse_stream_turn_replays_offline(recorded: dict[str, Any]) -> None:
    names, use, text = recorded["stream answer"]
    assert names == [
        "messageStart",
        "contentBlockStart",
        "contentBlockDelta",
        "contentBlockDelta",
        "contentBlockStop",
        "messageStop",
        "metadata",
    ]
    assert use["input"] == TOOL_ARGUMENTS
    assert text == "It is 18C in Paris."
    with replay(recorded["stream"]) as deck:
        assert stream_turn(attached(deck, DEAD)) == (names, use, text)


def test_a_fork_onto_another_model_is_refused_as_signed(
    recorded: dict[str, Any], tmp_path: Path
) -> None:
    assert brief(fd.load(recorded["turn"])).models == (MODEL,)  # read off the path
    fork = fd.Deck(tmp_path / "fork.jsonl", mode="fork", parent=recorded["turn"], at=1, model="x")
    with pytest.raises(fd.ConfigError) as raised:
        fork.open()
    message = str(raised.value)
    assert "\n" not in message
    assert (
        "is Bedrock's, signed (SigV4) with the model in its path, so it cannot be sent to 'x'"
        in message
    )
    assert message.endswith("fork without --model and change the modelId the program asks for")
    # A Bedrock call later in a fork onto another model (its first live call another
    # provider's) is refused as it is made, in the same terms.
    later = fd.load(recorded["turn"]).entries[1]
    with pytest.raises(fd.ConfigError) as raised:
        Retarget(((0, "x"),)).apply(later.seq, "model", later.args)
    assert str(raised.value) == (
        "seq 2: this request is Bedrock's, signed (SigV4) with the model in its path, so it "
        "cannot be sent to 'x'; fork without --model and change the modelId the program asks for"
    )


def test_invoke_model_and_its_stream_replay_offline(recorded: dict[str, Any]) -> None:
    with replay(recorded["invoke"]) as deck:
        client = attached(deck, DEAD)
        body = json.dumps({"messages": ASK, "max_tokens": 64})
        assert (
            client.invoke_model(modelId=MODEL, body=body)["body"].read()
            == (recorded["invoke answer"])
        )
        answer = client.invoke_model_with_response_stream(modelId=MODEL, body=body)
        assert [one["chunk"]["bytes"] for one in answer["body"]] == recorded["chunks"]
    assert json.loads(recorded["chunks"][1])["delta"]["text"] == "Hi"


def test_invoke_models_header_options_are_keyed(tmp_path: Path) -> None:
    path = tmp_path / "guarded.jsonl"
    with Upstream(app=create_app()) as upstream, fd.Deck(path, mode="record") as deck:
        body = json.dumps({"messages": ASK, "max_tokens": 64})
        client = attached(deck, upstream.url)
        answer = client.invoke_model(
            modelId=MODEL, body=body, guardrailIdentifier="g1", trace="ENABLED"
        )
        assert answer["body"].read()  # (a blob is recorded once it is read)
    (call,) = lines(path)
    assert call["args"]["headers"] == {
        "x-amzn-bedrock-guardrailidentifier": "g1",
        "x-amzn-bedrock-trace": "ENABLED",
    }


def test_other_credentials_and_another_time_find_the_same_calls(recorded: dict[str, Any]) -> None:
    # SigV4 signs every request anew (x-amz-date, the signature): none of it is keyed.
    with replay(recorded["turn"]) as deck:
        client = attached(deck, DEAD, key=OTHER_KEY, secret=rand("other-secret", B64, 40))
        assert turn(client) == recorded["turn answer"]


def test_fd_intercept_reaches_a_boto3_client_made_inside_it(
    recorded: dict[str, Any], tmp_path: Path
) -> None:
    with (
        Upstream(app=create_app()) as upstream,
        fd.Deck(tmp_path / "c.jsonl", mode="record") as deck,
    ):
        with fd.intercept(deck):
            assert "botocore.client" in routed()  # its own seam, not urllib3's adapter
            client = bedrock(upstream.url)
            client.converse(modelId=MODEL, messages=ASK)
        assert upstream.requests[0]["headers"]["user-agent"].startswith("Boto3/")
    assert [(c["kind"], c["name"]) for c in lines(tmp_path / "c.jsonl")] == [
        ("model", "bedrock.converse")
    ]
    with replay(recorded["stream"]) as deck, fd.intercept(deck):
        assert stream_turn(bedrock(DEAD)) == recorded["stream answer"]


# ----------------------------------------------------------------- credentials


def test_planted_aws_credentials_never_reach_the_cassettes(recorded: dict[str, Any]) -> None:
    seen = recorded["seen"][0]["headers"]
    assert ACCESS_KEY in seen["authorization"]  # the fake was sent them: they were there
    assert seen["x-amz-security-token"] == SESSION_TOKEN
    for name in ("turn", "stream", "invoke"):
        raw = Path(recorded[name]).read_bytes()
        for planted in (ACCESS_KEY, SECRET_KEY, SESSION_TOKEN, SESSION_TOKEN[:40]):
            assert planted.encode() not in raw, name
        for header in (b"authorization", b"x-amz-date", b"x-amz-security-token", b"x-amz-content"):
            assert header not in raw.lower(), (name, header)


def test_aws_credentials_pasted_into_a_prompt_are_masked(tmp_path: Path) -> None:
    path = tmp_path / "pasted.jsonl"
    # The secret key is masked by its label (no shape of the table names it bare); the
    # access key id and the session token by their shapes, labelled or not.
    said = (
        f"keys: {ACCESS_KEY} aws_secret_access_key={SECRET_KEY} aws_session_token={SESSION_TOKEN}"
        f" and again, bare: {OTHER_TOKEN}"
    )
    with Upstream(app=create_app()) as upstream, fd.Deck(path, mode="record") as deck:
        attached(deck, upstream.url).converse(
            modelId=MODEL, messages=[{"role": "user", "content": [{"text": said}]}]
        )
    raw = path.read_bytes()
    for planted in (ACCESS_KEY, SECRET_KEY, SESSION_TOKEN, OTHER_TOKEN, OTHER_TOKEN[12:60]):
        assert planted.encode() not in raw
    assert raw.count("«redacted:sha256:".encode()) >= 4
    assert fd.Redactor().scan_text(OTHER_TOKEN) == ["aws_session_token"]


def test_a_presigned_query_keeps_no_credential() -> None:
    query = [
        ("X-Amz-Algorithm", "AWS4-HMAC-SHA256"),
        ("X-Amz-Credential", f"{ACCESS_KEY}/20260101/us-east-1/bedrock/aws4_request"),
        ("X-Amz-Security-Token", SESSION_TOKEN),
        ("X-Amz-Signature", rand("signature", "0123456789abcdef", 64)),
    ]
    kept = fd.Redactor().redact_pairs(query)
    assert kept[0] == ["X-Amz-Algorithm", "AWS4-HMAC-SHA256"]
    for (name, value), (_, masked) in zip(query[1:], kept[1:], strict=True):
        assert value not in masked, name
        assert masked.startswith("«redacted:sha256:"), name


# ----------------------------------------------------------------- faults


def raised(path: Path, plan: fd.Fault, call: Any) -> BaseException:
    """What ``call`` raised through a client replaying ``path`` under ``plan``."""
    with replay(path, plan) as deck:
        client = attached(deck, DEAD)
        try:
            call(client)
        except Exception as exc:  # the test asserts its class
            return exc
    pytest.fail(f"{plan} raised nothing")


def first_turn(client: Any) -> Any:
    return client.converse(modelId=MODEL, messages=ASK, toolConfig=TOOL_CONFIG)


def read_stream(client: Any) -> list[str]:
    return streamed(client, ASK)[0]


def test_a_quota_fault_is_bedrocks_throttling_exception(recorded: dict[str, Any]) -> None:
    exc = raised(recorded["turn"], faults.quota().at(seq=1), first_turn)
    # the client's modelled class (client.exceptions.ThrottlingException), a ClientError
    assert isinstance(exc, botocore.exceptions.ClientError)
    assert type(exc).__name__ == "ThrottlingException"
    assert exc.response["Error"] == {
        "Code": "ThrottlingException",
        "Message": "Too many requests, please wait before trying again.",
    }
    assert exc.response["ResponseMetadata"]["HTTPStatusCode"] == 429
    failure = fd.classify_error(exc)
    assert isinstance(failure, fd.QuotaExhausted)
    assert (failure.code, failure.status) == ("ThrottlingException", 429)


def test_a_quota_no_wait_refills_is_a_service_quota_exceeded(recorded: dict[str, Any]) -> None:
    exc = raised(recorded["turn"], faults.quota(code="insufficient_quota").at(seq=1), first_turn)
    assert exc.response["Error"]["Code"] == "ServiceQuotaExceededException"  # type: ignore[attr-defined]
    assert isinstance(fd.classify_error(exc), fd.QuotaExhausted)


@pytest.mark.parametrize(
    ("status", "code"),
    [(503, "ServiceUnavailableException"), (500, "InternalServerException")],
)
def test_a_transient_fault_is_bedrocks_5xx(
    recorded: dict[str, Any], status: int, code: str
) -> None:
    exc = raised(recorded["turn"], faults.transient(status).at(seq=1), first_turn)
    assert isinstance(exc, botocore.exceptions.ClientError)
    assert type(exc).__name__ == code
    assert exc.response["Error"]["Code"] == code
    failure = fd.classify_error(exc)
    assert isinstance(failure, fd.TransientError)
    assert (failure.code, failure.status) == (code, status)


@pytest.mark.parametrize(
    ("fault", "kind", "error", "code"),
    [
        (faults.timeout(), "turn", botocore.exceptions.ReadTimeoutError, "timeout"),
        (faults.reset(), "turn", botocore.exceptions.ConnectionClosedError, "connection"),
        (
            faults.stream_cut(after=3),
            "stream",
            botocore.exceptions.ResponseStreamingError,
            "protocol",
        ),
    ],
    ids=["timeout", "reset", "stream_cut"],
)
def test_a_broken_connection_is_botocores_own_error(
    recorded: dict[str, Any], fault: fd.Fault, kind: str, error: type[Exception], code: str
) -> None:
    exc = raised(recorded[kind], fault.at(seq=1), first_turn if kind == "turn" else read_stream)
    assert type(exc) is error
    failure = fd.classify_error(exc)
    assert isinstance(failure, fd.TransientError)
    assert failure.code == code


def test_nothing_listening_is_botocores_endpoint_connection_error(tmp_path: Path) -> None:
    with fd.Deck(tmp_path / "dead.jsonl", mode="record") as deck:
        with pytest.raises(botocore.exceptions.EndpointConnectionError) as caught:
            first_turn(attached(deck, DEAD))
    failure = fd.classify_error(caught.value)
    assert isinstance(failure, fd.TransientError)
    assert failure.code == "connection"


def test_a_stream_error_event_is_bedrocks_exception_message(recorded: dict[str, Any]) -> None:
    got: list[str] = []

    def read(client: Any) -> None:
        answer = client.converse_stream(modelId=MODEL, messages=ASK, toolConfig=TOOL_CONFIG)
        got.extend(next(iter(one)) for one in answer["stream"])

    plan = faults.stream_cut(after=2, how="error_event").at(seq=1)
    exc = raised(recorded["stream"], plan, read)
    assert got == ["messageStart", "contentBlockStart"]
    assert type(exc) is botocore.exceptions.EventStreamError
    assert exc.response["Error"]["Code"] == "modelStreamErrorException"  # type: ignore[attr-defined]
    failure = fd.classify_error(exc)
    assert isinstance(failure, fd.TransientError)


def test_a_malformed_stream_fails_botocores_checksum(recorded: dict[str, Any]) -> None:
    exc = raised(recorded["stream"], faults.malformed_stream().at(seq=1), read_stream)
    assert isinstance(exc, botocore.eventstream.ChecksumMismatch)


# ----------------------------------------------------------------- the framing


def test_a_replayed_event_stream_is_the_bytes_recorded(tmp_path: Path) -> None:
    path = tmp_path / "bytes.jsonl"
    body = {"messages": ASK, "toolConfig": TOOL_CONFIG}
    route = f"/model/{MODEL}/converse-stream"
    with Upstream(app=create_app()) as upstream, fd.Deck(path, mode="record") as deck:
        with httpx.Client(transport=fd.http.Transport(deck)) as client:
            sent = client.post(upstream.url + route, json=body).content
    with replay(path) as deck, httpx.Client(transport=fd.http.Transport(deck)) as client:
        assert client.post(DEAD + route, json=body).content == sent
    assert len(EventStreamParser().feed(sent)) == 7


def fake_frames() -> bytes:
    return b"".join(
        [
            event("messageStart", {"role": "assistant"}),
            event("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "Hi"}}),
            frame(
                {":exception-type": "throttlingException", ":message-type": "exception"},
                b'{"message":"slow down"}',
            ),
        ]
    )


def pieces(data: bytes, size: int) -> Iterator[bytes]:
    for at in range(0, len(data), size):
        yield data[at : at + size]


@pytest.mark.parametrize("size", [1, 7, 1 << 20])
def test_messages_decode_in_any_pieces_and_encode_to_the_same_bytes(size: int) -> None:
    data = fake_frames()
    parser = EventStreamParser()
    messages = [m for piece in pieces(data, size) for m in parser.feed(piece)]
    assert [m["event"] for m in messages] == [
        "messageStart",
        "contentBlockDelta",
        "throttlingException",
    ]
    assert messages[2]["headers"] == {":message-type": "exception"}
    assert messages[2]["data"] == {"message": "slow down"}
    assert b"".join(encode(m) for m in messages) == data


def test_botocore_decodes_every_header_type_faultdeck_encodes() -> None:
    stored = {
        "event": "chunk",
        "headers": {
            ":message-type": "event",
            "flag": True,
            "off": False,
            "count": -5,
            "blob": {"base64": base64.b64encode(b"\x00\xff").decode()},
        },
        "bytes": {"base64": base64.b64encode(b"\xff\xfe not utf-8").decode()},
    }
    buffer = botocore.eventstream.EventStreamBuffer()
    buffer.add_data(encode(stored))
    (message,) = list(buffer)
    assert message.headers == {
        ":event-type": "chunk",
        ":message-type": "event",
        "flag": True,
        "off": False,
        "count": -5,
        "blob": b"\x00\xff",
    }
    assert message.payload == b"\xff\xfe not utf-8"
    assert decode_message(encode(stored))[1] == b"\xff\xfe not utf-8"


def test_a_message_whose_crc_disagrees_is_refused() -> None:
    data = bytearray(event("messageStart", {"role": "assistant"}))
    data[-5] ^= 0x01
    with pytest.raises(FrameError, match="CRC32"):
        decode_message(bytes(data))
    prelude = bytearray(data)
    prelude[8:12] = struct.pack(">I", 0)
    with pytest.raises(FrameError, match="prelude"):
        EventStreamParser().feed(bytes(prelude))
    # A live stream's tee keeps the messages before the bad bytes and leaves the rest to
    # the client's own decoder.
    tee = EventStreamParser(strict=False)
    assert [m["event"] for m in tee.feed(fake_frames()[:-1] + bytes(data))] == [
        "messageStart",
        "contentBlockDelta",
    ]
    assert tee.broken is not None
    assert tee.feed(fake_frames()) == []


# ----------------------------------------------------------------- misbehaviours in a 200


def answered(path: Path, plan: fd.Fault, *, stream: bool) -> dict[str, Any]:
    """The first answer of the recorded turn under ``plan``, a stream folded as read."""
    with replay(path, plan) as deck:
        client = attached(deck, DEAD)
        if not stream:
            got = first_turn(client)
            return {"stop": got["stopReason"], "content": got["output"]["message"]["content"]}
        names, built = streamed(client, ASK)
    content: list[dict[str, Any]] = []
    if "use" in built:
        given = built["input"]
        content.append({"toolUse": {**built["use"], "input": json.loads(given or "{}")}})
    if built["text"]:
        content.append({"text": built["text"]})
    return {"stop": built.get("stop"), "content": content, "names": names}


@pytest.mark.parametrize("stream", [False, True], ids=["converse", "converse_stream"])
def test_misbehaviours_show_in_converses_own_shape(recorded: dict[str, Any], stream: bool) -> None:
    path = recorded["stream" if stream else "turn"]
    empty = answered(path, faults.empty_answer().at(seq=1), stream=stream)
    assert (empty["stop"], empty["content"]) == ("end_turn", [])
    filtered = answered(path, faults.content_filter().at(seq=1), stream=stream)
    assert (filtered["stop"], filtered["content"]) == ("content_filtered", [])
    refused = answered(path, faults.refusal().at(seq=1), stream=stream)
    assert refused["stop"] == "end_turn"
    assert refused["content"] == [{"text": "I'm sorry, but I can't help with that."}]
    broken = answered(path, faults.bad_tool_call("missing_required").at(seq=1), stream=stream)
    assert broken["stop"] == "tool_use"
    assert broken["content"][0]["toolUse"]["input"] == {}  # "city" is required
    cut = answered(path, faults.length_stop().at(seq=1), stream=stream)
    assert cut["stop"] == "max_tokens"
    assert cut["content"][0]["toolUse"]["name"] == "get_weather"


def test_a_reasoning_only_answer_is_a_reasoning_block(recorded: dict[str, Any]) -> None:
    with replay(recorded["turn"], faults.reasoning_only().at(seq=1)) as deck:
        got = first_turn(attached(deck, DEAD))
    (block,) = got["output"]["message"]["content"]
    assert block["reasoningContent"]["reasoningText"]["text"]
    assert got["stopReason"] == "end_turn"


def test_its_spans_name_bedrock_its_model_from_the_path_and_its_usage(
    recorded: dict[str, Any],
) -> None:
    found = model_spans(recorded["turn"], recorded["stream"])
    assert found
    for name, attributes in found:
        assert name == f"chat {MODEL}"
        assert attributes["gen_ai.provider.name"] == "aws.bedrock"
        assert attributes["gen_ai.usage.input_tokens"] == 12
        assert isinstance(attributes["gen_ai.usage.output_tokens"], int)
        reasons: Any = attributes["gen_ai.response.finish_reasons"]
        assert set(reasons) <= {"tool_use", "end_turn"}


def test_attaching_what_is_no_botocore_client_is_one_line(tmp_path: Path) -> None:
    session = boto3.session.Session(region_name="us-east-1")
    with fd.Deck(tmp_path / "none.jsonl", mode="off") as deck:
        with pytest.raises(fd.ConfigError) as raised:
            fd.http.attach_botocore(session, deck)
    said = str(raised.value)
    assert "\n" not in said
    assert "a Session is not a botocore client" in said
    assert "boto3.client(...)" in said
