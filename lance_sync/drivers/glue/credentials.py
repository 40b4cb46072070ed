"""The boto3 session of a Glue driver: its credentials, an assumed role, and STS.

Credentials come from botocore's default chain, from static keys (with a session token), or
from an assumed role on top of either (`glue_session`). The credentials botocore resolved
(configured, from the environment or a profile), those of an assumed role, and the session
token header of each request sent are registered for masking (`lance_sync.model.secrets`), so
a server that echoes the request cannot put them into a message.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import boto3
import botocore.session
from botocore.config import Config
from botocore.credentials import (
    CredentialProvider,
    CredentialResolver,
    DeferredRefreshableCredentials,
    RefreshableCredentials,
)
from botocore.exceptions import BotoCoreError, ClientError
from botocore.parsers import ResponseParserError

from lance_sync.drivers.base import secret_value
from lance_sync.drivers.glue.answers import UnfitAnswer, check_xml_answer
from lance_sync.drivers.glue.config import ACCOUNT_ID, GlueConfig
from lance_sync.drivers.glue.errors import translate
from lance_sync.drivers.support.retry import BadAnswerError
from lance_sync.model import secrets

DEFAULT_ROLE_SESSION_NAME = "lance-sync"
#: members of STS AssumeRole's Credentials the role session is built from
ASSUMED_ROLE_CREDENTIALS = ("AccessKeyId", "SecretAccessKey", "SessionToken", "Expiration")


class _AssumedRoleCredentials(DeferredRefreshableCredentials):
    """Role credentials fetched on first use and again before the session runs out.

    botocore refreshes when less than the advisory margin is left (and blocks callers once
    less than the mandatory margin is left): a quarter and a sixth of the session, capped at
    botocore's own 15 and 10 minutes.
    """

    def __init__(self, fetch: Callable[[], dict[str, str]], session_seconds: int):
        super().__init__(refresh_using=fetch, method="assume-role")
        self._advisory_refresh_timeout = min(15 * 60, session_seconds // 4)
        self._mandatory_refresh_timeout = min(10 * 60, session_seconds // 6)


class _FixedCredentialProvider(CredentialProvider):
    METHOD = "assume-role"

    def __init__(self, credentials: _AssumedRoleCredentials):
        super().__init__()
        self._credentials = credentials

    def load(self) -> _AssumedRoleCredentials:
        return self._credentials


def sts_client(session: boto3.Session, region: str | None) -> Any:
    client = session.client("sts", region_name=region,
                            config=Config(retries={"mode": "standard"}, user_agent_extra="lance-sync"))
    client.meta.events.register("before-send.sts", register_session_token)
    client.meta.events.register("before-parse.sts", check_xml_answer)
    return client


def register_resolved_credentials(session: boto3.Session) -> None:
    """Register the credentials botocore resolved when it made the client (configured, from
    the environment or a profile). Credentials it refreshes (an assumed role, instance or
    container credentials) are registered as they come: `glue_session`'s role fetch, and the
    session token each request carries (`register_session_token`)."""
    credentials = session.get_credentials()
    if credentials is not None and not isinstance(credentials, RefreshableCredentials):
        secrets.register(credentials.access_key, credentials.secret_key, credentials.token)


def register_session_token(request: Any, **_: Any) -> None:
    """botocore `before-send` hook: register the session token the signed request carries."""
    token = request.headers.get("X-Amz-Security-Token")
    secrets.register(token.decode() if isinstance(token, bytes) else token)


def glue_session(config: GlueConfig) -> boto3.Session:
    """Default chain, static keys (with session token), or an assumed role on top of either."""
    base = boto3.Session(aws_access_key_id=secret_value(config.access_key_id),
                         aws_secret_access_key=secret_value(config.secret_access_key),
                         aws_session_token=secret_value(config.session_token),
                         region_name=config.region)
    if config.assume_role_arn is None:
        return base
    sts = sts_client(base, config.assume_role_region or config.region)
    request = {"RoleArn": config.assume_role_arn,
               "RoleSessionName": config.assume_role_session_name or DEFAULT_ROLE_SESSION_NAME,
               "DurationSeconds": config.assume_role_timeout_sec}
    if config.assume_role_external_id:
        request["ExternalId"] = config.assume_role_external_id

    def assume_role() -> dict[str, str]:
        subject = f"role {config.assume_role_arn}"
        try:
            credentials = sts.assume_role(**request).get("Credentials") or {}
        except UnfitAnswer as unfit:
            raise BadAnswerError(f"glue: AssumeRole on {subject} answered {unfit}") from None
        except ResponseParserError as error:
            raise translate(error, subject, "AssumeRole") from error
        if not all(credentials.get(key) for key in ASSUMED_ROLE_CREDENTIALS):
            raise BadAnswerError(f"glue: AssumeRole on {subject} answered without Credentials "
                                 f"({', '.join(ASSUMED_ROLE_CREDENTIALS)})")
        secrets.register(credentials["AccessKeyId"], credentials["SecretAccessKey"], credentials["SessionToken"])
        return {"access_key": credentials["AccessKeyId"], "secret_key": credentials["SecretAccessKey"],
                "token": credentials["SessionToken"],
                "expiry_time": credentials["Expiration"].isoformat()}

    role_session = botocore.session.Session()
    role_credentials = _AssumedRoleCredentials(assume_role, config.assume_role_timeout_sec)
    role_session.register_component("credential_provider",
                                    CredentialResolver([_FixedCredentialProvider(role_credentials)]))
    return boto3.Session(botocore_session=role_session, region_name=config.region)


def caller_account(sts: Any) -> str:
    """The caller's account id from STS GetCallerIdentity."""
    subject = "the caller's account (set catalog_id to skip STS)"
    try:
        account = sts.get_caller_identity().get("Account")
    except UnfitAnswer as unfit:
        raise BadAnswerError(f"glue: GetCallerIdentity on {subject} answered {unfit}") from None
    except (ClientError, BotoCoreError, ResponseParserError) as error:
        raise translate(error, subject, "GetCallerIdentity") from error
    if not isinstance(account, str) or not ACCOUNT_ID.fullmatch(account):
        raise BadAnswerError(f"glue: GetCallerIdentity on {subject} answered Account {account!r}, "
                             "not a 12-digit account id")
    return account
