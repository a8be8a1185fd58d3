"""Storage options of object storage (--storage-option KEY=VALUE, the environment): their names and aliases,
the form each client takes them in, and the secrets among them, which no message ever shows."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from typing import Any, Union

from warehouse.errors import UsageError

#: storage option -> its other accepted spellings (object_store's aliases); keys are case-insensitive
OPTIONS: dict[str, tuple[str, ...]] = {
    "aws_access_key_id": ("access_key_id",),
    "aws_secret_access_key": ("secret_access_key",),
    "aws_session_token": ("session_token", "token", "aws_token"),
    "aws_region": ("region", "aws_default_region", "default_region"),
    "aws_endpoint_url": ("endpoint_url", "endpoint", "aws_endpoint"),
    "aws_allow_http": ("allow_http",),
    "aws_virtual_hosted_style_request": ("virtual_hosted_style_request",),
}


#: options whose values are never shown
SECRETS = ("aws_secret_access_key", "aws_session_token")


#: the environment variables read for each option, first found wins (storage options win over all)
ENVIRONMENT = {
    "aws_access_key_id": ("AWS_ACCESS_KEY_ID",),
    "aws_secret_access_key": ("AWS_SECRET_ACCESS_KEY",),
    "aws_session_token": ("AWS_SESSION_TOKEN",),
    "aws_region": ("AWS_REGION", "AWS_DEFAULT_REGION"),
    "aws_endpoint_url": ("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"),
    "aws_allow_http": ("AWS_ALLOW_HTTP",),
    "aws_virtual_hosted_style_request": ("AWS_VIRTUAL_HOSTED_STYLE_REQUEST",),
}


#: storage options as a caller gives them: a dict, or ``KEY=VALUE`` strings as ``--storage-option`` does
StorageOptions = Union[Mapping[str, Any], Iterable[str], None]


_ALIASES = {alias: key for key, aliases in OPTIONS.items() for alias in (key, *aliases)}


WHAT_TO_CHECK = (
    "check the credentials (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, AWS_PROFILE, or --storage-option), "
    "the endpoint (AWS_ENDPOINT_URL) and that they may read the bucket"
)


#: the same, for a write into a warehouse root
WHAT_TO_CHECK_WRITING = WHAT_TO_CHECK.replace("may read the bucket", "may read and write the bucket")


def parse_options(pairs: Mapping[str, Any] | Iterable[str] | None) -> Mapping[str, Any]:
    """Storage options as a mapping: a mapping as it is, ``--storage-option KEY=VALUE`` (repeated) as a dict."""
    if pairs is None or isinstance(pairs, Mapping):
        return pairs or {}
    if isinstance(pairs, str):
        pairs = [pairs]
    out: dict[str, str] = {}
    for pair in pairs:
        key, eq, value = pair.partition("=")
        if not eq or not key.strip():
            raise UsageError(f"--storage-option {pair!r}: expected KEY=VALUE (e.g. aws_region=eu-west-1)")
        out[key.strip()] = value
    return out


def canonical(options: Mapping[str, Any] | Iterable[str] | None) -> dict[str, str]:
    """Storage options under their canonical names; an unknown name is a UsageError listing the known ones."""
    out: dict[str, str] = {}
    for name, value in parse_options(options).items():
        key = _ALIASES.get(str(name).lower())
        if key is None:
            raise UsageError(
                f"--storage-option {name}: unknown option; known: {', '.join(OPTIONS)} "
                "(case-insensitive; the credentials profile is the environment's AWS_PROFILE)"
            )
        if not isinstance(value, (str, bool, int)):
            raise UsageError(f"--storage-option {name}: the value must be text")
        out[key] = str(value).lower() if isinstance(value, bool) else str(value)
    return out


def resolve(options: Mapping[str, Any] | None) -> dict[str, str]:
    """The environment's options, overridden by ``options``."""
    out = {}
    for key, names in ENVIRONMENT.items():
        for name in names:
            if os.environ.get(name):
                out[key] = os.environ[name]
                break
    out.update(canonical(options))
    return out


def _true(value: str | None) -> bool:
    return (value or "").strip().lower() in ("1", "true", "yes", "on")


def translate(options: Mapping[str, str]) -> dict[str, Any]:
    """Resolved options (``resolve``) as ``pyarrow.fs.S3FileSystem`` keyword arguments."""
    kwargs: dict[str, Any] = {}
    key_id, secret = options.get("aws_access_key_id"), options.get("aws_secret_access_key")
    if bool(key_id) != bool(secret):
        missing = "aws_secret_access_key (AWS_SECRET_ACCESS_KEY)" if key_id else "aws_access_key_id (AWS_ACCESS_KEY_ID)"
        raise UsageError(f"object storage credentials: {missing} is missing; give both keys, or neither")
    if key_id:
        kwargs.update(access_key=key_id, secret_key=secret)
        if options.get("aws_session_token"):
            kwargs["session_token"] = options["aws_session_token"]
    if options.get("aws_region"):
        kwargs["region"] = options["aws_region"]
    endpoint = options.get("aws_endpoint_url")
    if endpoint:
        scheme = endpoint.split("://", 1)[0].lower() if "://" in endpoint else "https"
        if scheme == "http" and not _true(options.get("aws_allow_http")):
            raise UsageError(
                f"the endpoint {scrub(endpoint, options)} is plain http: set AWS_ALLOW_HTTP=true (or --storage-option "
                "aws_allow_http=true) to allow it, as deltalake and polars require too"
            )
        kwargs.update(endpoint_override=endpoint, scheme=scheme)
    if _true(options.get("aws_virtual_hosted_style_request")):
        kwargs["force_virtual_addressing"] = True
    return kwargs


#: the credentials a URL can carry: its userinfo (``scheme://user:password@host``) ...
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/\s@'\"<>]*@")


#: ... and a query parameter of a signed URL (``X-Amz-Signature``, ``X-Amz-Credential``, ``sig``, ``token``, ...)
_SECRET_PARAMETER = re.compile(
    r"(?i)([?&;][^=&\s'\"<>]*(?:signature|credential|security-token|token|secret|password|passwd|sig|key|auth)"
    r"[^=&\s'\"<>]*=)[^&\s'\"<>]*")


def scrub(text: str, options: Mapping[str, str]) -> str:
    """``text`` with every URL's userinfo, every credential-like query parameter's value and every secret
    value of ``options`` replaced by ``***``."""
    text = _USERINFO.sub(r"\1***@", text)
    text = _SECRET_PARAMETER.sub(r"\1***", text)
    for value in _secret_values(options):
        text = text.replace(value, "***")
    return text


def _secret_values(options: Mapping[str, str]) -> list[str]:
    """The secret option values, and the password of the endpoint's userinfo (as given and decoded)."""
    from urllib.parse import unquote, urlsplit

    values = [options.get(key) or "" for key in SECRETS]
    endpoint = options.get("aws_endpoint_url") or ""
    try:
        password = urlsplit(endpoint).password or ""
    except ValueError:
        password = ""
    values += [password, unquote(password)]
    return sorted({v for v in values if len(v) >= 4}, key=len, reverse=True)  # the longest first: no partial leftovers
