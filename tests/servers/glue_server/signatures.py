"""AWS Signature Version 4, checked as AWS checks it, written here from AWS's description of it
("Create a signed AWS API request", IAM user guide) rather than taken from botocore, which
signs both the driver's requests and boto3's.

Every Glue and Lake Formation call must carry `Authorization: AWS4-HMAC-SHA256
Credential=<key>/<date>/<region>/<service>/aws4_request, SignedHeaders=..., Signature=...`
and an `X-Amz-Date` within 15 minutes of the server's clock. A call signed with a key this
server knows (`KNOWN_SECRETS`: the suite's fake credentials) must carry the signature that
key's secret gives for the request as it arrived: its method, path, query, the signed headers'
values and the body's SHA-256, scoped to this server's region and the service called. So a
client that changes what it signed (a header, the body, the host) after signing, signs for
the wrong service or region, or leaves the session token unsigned, is refused, as AWS would
refuse it. A call signed with another key is not checked further: its secret is not known
here (tests of the credential chain sign with keys of their own).
"""

from __future__ import annotations

import hashlib
import hmac
import re
from datetime import datetime, timedelta, timezone
from urllib.parse import parse_qsl, quote

from tests.servers.glue_server.errors import GlueError

#: the suite's fake credentials (tests/servers/glue.py), whose signatures are checked
KNOWN_SECRETS = {"testing": "testing"}
REGION = "us-east-1"
MAX_CLOCK_SKEW = timedelta(minutes=15)
_AUTHORIZATION = re.compile(
    r"AWS4-HMAC-SHA256 Credential=(?P<key>[^/]+)/(?P<date>\d{8})/(?P<region>[^/]+)/(?P<service>[^/]+)"
    r"/aws4_request, ?SignedHeaders=(?P<headers>[a-z0-9;-]+), ?Signature=(?P<signature>[0-9a-f]{64})$")
_MISMATCH = ("The request signature we calculated does not match the signature you provided. "
             "Check your AWS Secret Access Key and signing method.")


def check_signature(environ: dict, body: bytes, service: str) -> None:
    """Raise the GlueError AWS answers for a call to `service` whose signature is wrong."""
    authorization = environ.get("HTTP_AUTHORIZATION")
    if not authorization:
        raise GlueError("MissingAuthenticationTokenException", "Missing Authentication Token", 403)
    signed = _AUTHORIZATION.fullmatch(authorization)
    if signed is None:
        raise GlueError("IncompleteSignatureException",
                        f"Authorization header requires 'Credential', 'SignedHeaders' and 'Signature': "
                        f"{authorization.split(' ')[0]}", 403)
    timestamp = environ.get("HTTP_X_AMZ_DATE", "")
    try:
        moment = datetime.strptime(timestamp, "%Y%m%dT%H%M%SZ").replace(tzinfo=timezone.utc)
    except ValueError:
        raise GlueError("IncompleteSignatureException", "X-Amz-Date is missing or malformed.", 403) from None
    if abs(datetime.now(timezone.utc) - moment) > MAX_CLOCK_SKEW:
        raise GlueError("InvalidSignatureException", f"Signature expired: {timestamp} is not within 15 minutes "
                        "of the server's time.", 403)
    if signed["date"] != timestamp[:8] or signed["region"] != REGION or signed["service"] != service:
        raise GlueError("InvalidSignatureException", f"Credential should be scoped to a valid region and "
                        f"service: {signed['date']}/{signed['region']}/{signed['service']}, expected "
                        f"{timestamp[:8]}/{REGION}/{service}.", 403)
    names = signed["headers"].split(";")
    if "host" not in names or "x-amz-date" not in names or (
            environ.get("HTTP_X_AMZ_SECURITY_TOKEN") and "x-amz-security-token" not in names):
        raise GlueError("InvalidSignatureException", "Host, X-Amz-Date and any X-Amz-Security-Token "
                        "must be signed.", 403)
    secret = KNOWN_SECRETS.get(signed["key"])
    if secret is None:
        return
    expected = _signature(secret, timestamp, f"{signed['date']}/{REGION}/{service}/aws4_request",
                          _canonical_request(environ, names, body))
    if not hmac.compare_digest(expected, signed["signature"]):
        raise GlueError("InvalidSignatureException", _MISMATCH, 403)


def _canonical_request(environ: dict, names: list[str], body: bytes) -> str:
    path = quote(environ.get("PATH_INFO") or "/", safe="/~")
    query = "&".join(f"{quote(key, safe='-_.~')}={quote(value, safe='-_.~')}"
                     for key, value in sorted(parse_qsl(environ.get("QUERY_STRING", ""), keep_blank_values=True)))
    headers = "".join(f"{name}:{' '.join(_header(environ, name).split())}\n" for name in names)
    return "\n".join([environ["REQUEST_METHOD"], path, query, headers, ";".join(names),
                      hashlib.sha256(body).hexdigest()])


def _header(environ: dict, name: str) -> str:
    key = name.upper().replace("-", "_")
    return environ.get(key if key in ("CONTENT_TYPE", "CONTENT_LENGTH") else f"HTTP_{key}", "")


def _signature(secret: str, timestamp: str, scope: str, canonical_request: str) -> str:
    string_to_sign = "\n".join(["AWS4-HMAC-SHA256", timestamp, scope,
                                hashlib.sha256(canonical_request.encode()).hexdigest()])
    key = f"AWS4{secret}".encode()
    for part in scope.split("/"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    return hmac.new(key, string_to_sign.encode(), hashlib.sha256).hexdigest()
