"""An S3-compatible server for the s3:// initializer's tests: moto's server (the AWS mock that
boto3's own users test with), started in the Python environment moto is installed in (its
boto3 cannot install beside kubetrain's Kubernetes client; ``make test`` puts it in
``.venv/moto``).

Run as a program there: reads a JSON scenario on stdin's first line, starts moto's server on
a free loopback port, sets the scenario up through boto3 (an IAM user with an access key and
S3 rights, a role that user may assume and one it may not, buckets in regions, objects), then
turns on moto's request authentication, so that from then on every request must be signed
with a key moto knows (checked the way S3 does), and prints one JSON line: the endpoint and
the keys. It serves until stdin closes.

    {"region": "eu-central-1",
     "buckets": {"data": {"region": "eu-central-1", "objects": {"key": "<base64>"}}}}
"""

from __future__ import annotations

import base64
import json
import sys

S3_POLICY = {
    "Version": "2012-10-17",
    "Statement": [{"Effect": "Allow", "Action": ["s3:*", "sts:AssumeRole"], "Resource": "*"}],
}


def trust(principal: str) -> dict[str, object]:
    """A role that ``principal`` (an ARN) may assume."""
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {"AWS": principal},
                "Action": "sts:AssumeRole",
            }
        ],
    }


def main() -> None:
    import boto3
    import requests
    from moto.server import ThreadedMotoServer

    scenario = json.loads(sys.stdin.readline())
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    region = scenario.get("region", "us-east-1")
    setup = {"endpoint_url": endpoint, "region_name": region}
    setup |= {"aws_access_key_id": "setup", "aws_secret_access_key": "setup"}
    iam = boto3.client("iam", **setup)
    user = iam.create_user(UserName="initializer")["User"]["Arn"]
    iam.put_user_policy(
        UserName="initializer", PolicyName="s3", PolicyDocument=json.dumps(S3_POLICY)
    )
    key = iam.create_access_key(UserName="initializer")["AccessKey"]
    role = iam.create_role(RoleName="reader", AssumeRolePolicyDocument=json.dumps(trust(user)))
    iam.put_role_policy(RoleName="reader", PolicyName="s3", PolicyDocument=json.dumps(S3_POLICY))
    # a role that trusts someone else: the user may not assume it
    other = trust(user.replace(":user/initializer", ":user/someone-else"))
    locked = iam.create_role(RoleName="locked", AssumeRolePolicyDocument=json.dumps(other))
    for name, bucket in scenario.get("buckets", {}).items():
        where = bucket.get("region", region)
        s3 = boto3.client("s3", **{**setup, "region_name": where})
        if where == "us-east-1":
            s3.create_bucket(Bucket=name)
        else:
            s3.create_bucket(Bucket=name, CreateBucketConfiguration={"LocationConstraint": where})
        for object_key, data in bucket.get("objects", {}).items():
            s3.put_object(Bucket=name, Key=object_key, Body=base64.b64decode(data))
    # From here on every request must be signed with a key moto knows.
    requests.post(f"{endpoint}/moto-api/reset-auth", data=b"0", timeout=10).raise_for_status()
    print(
        json.dumps(
            {
                "endpoint": endpoint,
                "access_key_id": key["AccessKeyId"],
                "secret_access_key": key["SecretAccessKey"],
                "role_arn": role["Role"]["Arn"],
                "locked_role_arn": locked["Role"]["Arn"],
            }
        ),
        flush=True,
    )
    sys.stdin.read()  # until the test closes it
    server.stop()


if __name__ == "__main__":
    main()
