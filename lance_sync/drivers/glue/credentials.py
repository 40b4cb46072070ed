"""Where and as whom a Glue driver calls AWS: its region, credentials, endpoints and STS.

What the configuration names is used as it is; what it leaves open is botocore's to resolve,
as every AWS SDK does: the region (AWS_REGION, which botocore itself does not read,
AWS_DEFAULT_REGION, the profile), the
credentials (the default chain: environment, shared files, SSO, web identity, container and
instance roles), the endpoints (AWS_ENDPOINT_URL_GLUE and the like, the profile's
`endpoint_url`, FIPS and dual-stack settings, then the partition's endpoint for the region)
and the certificates to trust (AWS_CA_BUNDLE, the profile's `ca_bundle`). botocore's session is
made only for what is left open, so a configuration that names region, keys and endpoint
imports none of it. An assumed role (`assume_role_arn`) is fetched from STS with botocore's
client on first use and again before it runs out.

The credentials are registered for masking (`lance_sync.model.secrets`): configured ones at
once, those botocore resolves or refreshes (an assumed role, instance or container
credentials) as each request is signed, so a server that echoes the request cannot put them
into a message.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import Any

from botocore.credentials import Credentials, DeferredRefreshableCredentials, ReadOnlyCredentials
from lance_namespace.errors import UnauthenticatedError

from lance_sync.drivers.base import secret_value
from lance_sync.drivers.glue.answers import UnfitAnswer, check_xml_answer, with_bad_answer_retries
from lance_sync.drivers.glue.config import ACCOUNT_ID, REGION, GlueConfig
from lance_sync.drivers.glue.errors import translate
from lance_sync.drivers.support.retry import BadAnswerError
from lance_sync.model import secrets
from lance_sync.model.errors import ConfigError

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


class AwsAccess:
    """A Glue driver's region, credentials, endpoints and STS (see the module docstring)."""

    def __init__(self, config: GlueConfig, sleep: Callable[[float], None]) -> None:
        """`sleep` waits between resends of a garbled STS answer."""
        self.config = config
        self._sleep = sleep
        self._lock = threading.Lock()
        self._botocore: Any = None
        # AWS_REGION as the AWS CLI and the other SDKs read it; botocore reads only the others
        region = config.region or os.environ.get("AWS_REGION") or self._session().get_config_variable("region")
        if not region:
            raise ConfigError("glue: no region: set `region`, AWS_REGION or AWS_DEFAULT_REGION")
        if not REGION.fullmatch(region):
            raise ConfigError(f"glue: the region {region!r} from the environment or the AWS profile is not "
                              "a region name such as us-east-1")
        self.region: str = region
        self.credentials = self._credentials()

    def frozen_credentials(self) -> ReadOnlyCredentials:
        """The credentials to sign the next request with (an assumed role's refreshed when
        due), registered for masking."""
        if self.credentials is None:
            raise UnauthenticatedError("glue: no usable AWS credentials: none are configured and "
                                       "botocore's default chain found none")
        from botocore.exceptions import BotoCoreError
        try:
            frozen = self.credentials.get_frozen_credentials()
        except BotoCoreError as error:  # a provider of the chain failed (SSO, instance, container)
            raise UnauthenticatedError(f"glue: the AWS credentials could not be obtained: {error}") from error
        secrets.register(frozen.access_key, frozen.secret_key, frozen.token)
        return frozen

    def endpoint(self, service: str, configured: str | None) -> str:
        """`configured`, else the endpoint botocore resolves for `service` in the region."""
        if configured:
            return configured
        return str(self._client(service).meta.endpoint_url)

    def ca_bundle(self) -> str | None:
        """The certificates to trust for AWS's endpoints where botocore's configuration names
        them (AWS_CA_BUNDLE; the profile's too once botocore's session is made)."""
        if self._botocore is not None:
            return self._botocore.get_config_variable("ca_bundle")
        return os.environ.get("AWS_CA_BUNDLE") or None

    def caller_account(self) -> str:
        """The caller's account id from STS GetCallerIdentity (a garbled answer sent again)."""
        sts = self._sts(self.region)
        return with_bad_answer_retries(lambda: _caller_account(sts), self._sleep)

    # --- resolution ----------------------------------------------------------------------------

    def _session(self) -> Any:
        """botocore's session, made on first use."""
        with self._lock:
            if self._botocore is None:
                import botocore.session
                self._botocore = botocore.session.Session()
            return self._botocore

    def _credentials(self) -> Any:
        config = self.config
        if config.access_key_id is not None:
            base: Any = Credentials(secret_value(config.access_key_id), secret_value(config.secret_access_key),
                                    secret_value(config.session_token))
            secrets.register(base.access_key, base.secret_key, base.token)
        else:
            base = self._session().get_credentials()
        if config.assume_role_arn is None:
            return base
        return _AssumedRoleCredentials(self._role_fetcher(), config.assume_role_timeout_sec)

    def _role_fetcher(self) -> Callable[[], dict[str, str]]:
        config = self.config
        request: dict[str, Any] = {
            "RoleArn": config.assume_role_arn,
            "RoleSessionName": config.assume_role_session_name or DEFAULT_ROLE_SESSION_NAME,
            "DurationSeconds": config.assume_role_timeout_sec}
        if config.assume_role_external_id:
            request["ExternalId"] = config.assume_role_external_id
        subject = f"role {config.assume_role_arn}"

        def role_credentials(sts: Any) -> dict[str, Any]:
            credentials = _sts_call(sts.assume_role, subject, "AssumeRole", request).get("Credentials") or {}
            if not all(credentials.get(key) for key in ASSUMED_ROLE_CREDENTIALS):
                raise BadAnswerError(f"glue: AssumeRole on {subject} answered without Credentials "
                                     f"({', '.join(ASSUMED_ROLE_CREDENTIALS)})")
            return credentials

        def assume_role() -> dict[str, str]:
            sts = self._sts(config.assume_role_region or self.region)
            credentials = with_bad_answer_retries(lambda: role_credentials(sts), self._sleep)
            secrets.register(credentials["AccessKeyId"], credentials["SecretAccessKey"], credentials["SessionToken"])
            return {"access_key": credentials["AccessKeyId"], "secret_key": credentials["SecretAccessKey"],
                    "token": credentials["SessionToken"],
                    "expiry_time": credentials["Expiration"].isoformat()}

        return assume_role

    def _client(self, service: str, region: str | None = None) -> Any:
        """A botocore client of the session (standard retries), signed with the configured keys
        or the default chain, never with an assumed role."""
        from botocore.config import Config
        options: dict[str, Any] = {}
        if self.config.access_key_id is not None:
            options = {"aws_access_key_id": secret_value(self.config.access_key_id),
                       "aws_secret_access_key": secret_value(self.config.secret_access_key),
                       "aws_session_token": secret_value(self.config.session_token)}
        return self._session().create_client(
            service, region_name=region or self.region,
            config=Config(retries={"mode": "standard"}, user_agent_extra="lance-sync"), **options)

    def _sts(self, region: str) -> Any:
        client = self._client("sts", region)
        client.meta.events.register("before-send.sts", _register_session_token)
        client.meta.events.register("before-parse.sts", check_xml_answer)
        return client


def _register_session_token(request: Any, **_: Any) -> None:
    """botocore `before-send` hook: register the session token the signed request carries."""
    token = request.headers.get("X-Amz-Security-Token")
    secrets.register(token.decode() if isinstance(token, bytes) else token)


def _sts_call(send: Callable[..., dict[str, Any]], subject: str, operation: str,
              request: dict[str, Any]) -> dict[str, Any]:
    """One STS call, its failures as lance_namespace errors naming the call."""
    from botocore.exceptions import BotoCoreError, ClientError
    from botocore.parsers import ResponseParserError
    try:
        return send(**request)
    except UnfitAnswer as unfit:
        raise BadAnswerError(f"glue: {operation} on {subject} answered {unfit}") from None
    except (ClientError, BotoCoreError, ResponseParserError) as error:
        raise translate(error, subject, operation) from error


def _caller_account(sts: Any) -> str:
    subject = "the caller's account (set catalog_id to skip STS)"
    account = _sts_call(sts.get_caller_identity, subject, "GetCallerIdentity", {}).get("Account")
    if not isinstance(account, str) or not ACCOUNT_ID.fullmatch(account):
        raise BadAnswerError(f"glue: GetCallerIdentity on {subject} answered Account {account!r}, "
                             "not a 12-digit account id")
    return account
