"""The HTTP boundary: transports for ``httpx`` and ``httpx2`` that route every request
through a deck, so the OpenAI and Anthropic SDKs (and any HTTP client) record, replay and
rehearse at the wire.

    client = openai.OpenAI(
        http_client=httpx2.Client(transport=fd.http.Transport(deck, httpx=httpx2))
    )

A botocore (boto3) client, whose requests do not go through httpx, is routed by its own
seam: ``fd.http.attach_botocore(client, deck)``.
"""

from ._botocore import attach_botocore
from ._transport import AsyncTransport, Transport

__all__ = ["AsyncTransport", "Transport", "attach_botocore"]
