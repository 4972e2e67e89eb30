"""Amazon MSK's IAM sign-in for librdkafka (confluent-kafka), which has no AWS_MSK_IAM
mechanism: SASL/OAUTHBEARER with a token MSK accepts on the same IAM listener (9098).

The token is a SigV4 pre-signed request for the action `kafka-cluster:Connect` on
`kafka.<region>.amazonaws.com`, signed with the pod's credentials (botocore's chain: EKS
Pod Identity's container credentials on EKS), base64url-encoded without padding; it is
valid for TOKEN_SECONDS and librdkafka asks for a new one before then (oauth_cb). The JVM's
clients sign in with the aws-msk-iam-auth library instead (the Spark image's jar).

Not exercised against MSK here (no AWS): the unit tests check the token's form, and that it
signs exactly as aws-msk-iam-auth's own OAUTHBEARER token for the same credentials and time.
"""

from __future__ import annotations

import base64
import os
import re
import time
from typing import Any
from urllib.parse import urlencode

from logberg.errors import ConfigError

SERVICE = "kafka-cluster"
ACTION = "kafka-cluster:Connect"
TOKEN_SECONDS = 900
USER_AGENT = "logberg"
# b-1.name.abc123.c2.kafka.eu-west-1.amazonaws.com:9098 (and .amazonaws.com.cn)
BROKER_REGION = re.compile(r"\.kafka(?:-serverless)?\.([a-z]{2}(?:-[a-z]+)+-\d)\.amazonaws\.com")
REGION = re.compile(r"^[a-z]{2}(?:-[a-z]+)+-\d$")


def region(bootstrap: str) -> str:
    """The brokers' region: AWS_REGION (AWS_DEFAULT_REGION), else their host names'."""
    for env in ("AWS_REGION", "AWS_DEFAULT_REGION"):
        value = os.environ.get(env, "").strip()
        if value:
            if not REGION.match(value):
                raise ConfigError(f"{env} {value!r}: not an AWS region name")
            return value
    found = {m.group(1) for m in BROKER_REGION.finditer(bootstrap)}
    if len(found) != 1:
        raise ConfigError(
            f"Kafka brokers {bootstrap!r}: set AWS_REGION (MSK IAM tokens are signed for "
            "the brokers' region, which their names do not say)"
        )
    return found.pop()


def token(region_name: str, credentials: Any = None) -> tuple[str, float]:
    """(the token, when it expires in seconds since the epoch). `credentials`: botocore
    credentials (default: botocore's chain, which reads Pod Identity's on EKS)."""
    from botocore.auth import SigV4QueryAuth
    from botocore.awsrequest import AWSRequest

    if credentials is None:
        import botocore.session

        credentials = botocore.session.get_session().get_credentials()
        if credentials is None:
            raise ConfigError(
                "MSK IAM: no AWS credentials (on EKS, the pod's service account needs its "
                "Pod Identity association)"
            )
    frozen = credentials.get_frozen_credentials()
    url = f"https://kafka.{region_name}.amazonaws.com/?" + urlencode({"Action": ACTION})
    request = AWSRequest(method="GET", url=url)
    started = time.time()
    SigV4QueryAuth(frozen, SERVICE, region_name, expires=TOKEN_SECONDS).add_auth(request)
    signed = f"{request.url}&{urlencode({'User-Agent': USER_AGENT})}"
    encoded = base64.urlsafe_b64encode(signed.encode()).decode().rstrip("=")
    return encoded, started + TOKEN_SECONDS
