"""Field names and what they mean to redaction: credentials, secret-like, or not.

A credential field (``authorization``, ``x-api-key``, cookies) is dropped with its value
and never keyed; a secret-like field (``password``, ``client_secret``, ``apiKey``) has a
random-looking value masked whole; a fixed list of names only looks secret-like (page
tokens, cursors, token counts) and stays readable.
"""

from __future__ import annotations

CREDENTIAL_FIELDS = frozenset(
    {
        "authorization",
        "proxy-authorization",
        "x-api-key",
        "api-key",
        "x-goog-api-key",
        "cookie",
        "set-cookie",
        "openai-organization",
        "openai-project",
        "dd-api-key",
        "dd-application-key",
        # AWS SigV4, as headers and as a presigned URL's query
        "x-amz-security-token",
        "x-amz-signature",
        "x-amz-credential",
    }
)
"""Field names (compared lower-case) whose values are credentials: dropped, never keyed."""

SECRET_FIELD_WORDS: frozenset[str] = frozenset(
    {
        "password",
        "passwd",
        "passphrase",
        "secret",
        "secrets",
        "token",
        "credential",
        "credentials",
        "auth",
        "authorization",
        "apikey",
        "appkey",
        "applicationkey",
        "accesskey",
        "privatekey",
        "clientsecret",
    }
)
"""Words that make a field name secret-like (see ``Redactor``); compared without separators."""

NOT_SECRET_FIELDS: frozenset[str] = frozenset(
    {
        # pagination: opaque, often random-looking, and sent back on the next call
        "pagetoken",
        "nextpagetoken",
        "prevpagetoken",
        "previouspagetoken",
        "paginationtoken",
        "continuationtoken",
        "nexttoken",
        "synctoken",
        "nextsynctoken",
        "resumetoken",
        "cursor",
        "nextcursor",
        "startcursor",
        "endcursor",
        # counting: numbers of tokens, never tokens
        "tokens",
        "maxtokens",
        "maxoutputtokens",
        "maxcompletiontokens",
        "maxnewtokens",
        "totaltokens",
        "prompttokens",
        "completiontokens",
        "inputtokens",
        "outputtokens",
        "cachedtokens",
        "reasoningtokens",
        "cachereadinputtokens",
        "cachecreationinputtokens",
        "tokencount",
        "numtokens",
        "tokenlimit",
        "tokensused",
        "usedtokens",
        "tokentype",
    }
)
"""Field names (without separators, lower-case) that look secret-like but are not."""

PLAIN, DROP, SECRET = 0, 1, 2
"""What a field name means to redaction: nothing, a credential (dropped), or secret-like."""
