#!/usr/bin/env python3
"""Calling NotifiableServer from Python with the standard library alone.

    from notifiable import request, verify_webhook
    status, body = request("POST", "https://push.example.com", "/api/v1/notifications",
                           {"message": "Hello", "user_aliases": ["alice"]}, ACCESS_ID, SECRET_KEY)

Signs as the api_auth gem does (README, Authentication): HMAC-SHA1 over
`METHOD,Content-Type,X-Authorization-Content-SHA256,path,Date`, the body covered by its SHA-256
on POST, PUT and PATCH (server credentials must; device credentials may).
"""
import base64
import email.utils
import hashlib
import hmac
import json
import sys
import time
import urllib.error
import urllib.request

CONTENT_TYPE = "application/json; charset=utf-8"


def signed_headers(method, path, body, access_id, secret_key):
    """The headers that sign `body` (bytes) for `method` and `path` (the query is not signed)."""
    method = method.upper()
    date = email.utils.formatdate(time.time(), usegmt=True)
    headers = {"Date": date, "Content-Type": CONTENT_TYPE}
    content_hash = ""
    if method in ("POST", "PUT", "PATCH"):
        content_hash = base64.b64encode(hashlib.sha256(body).digest()).decode()
        headers["X-Authorization-Content-SHA256"] = content_hash
    canonical = ",".join([method, CONTENT_TYPE, content_hash, path.split("?", 1)[0], date])
    signature = base64.b64encode(hmac.new(secret_key.encode(), canonical.encode(), hashlib.sha1).digest()).decode()
    headers["Authorization"] = f"APIAuth {access_id}:{signature}"
    return headers


def request(method, base_url, path, body, access_id, secret_key):
    """Sends a signed request; `body` is a dict, a string or None. Returns (status, parsed JSON or text)."""
    data = b"" if body is None else (body.encode() if isinstance(body, str) else json.dumps(body).encode())
    headers = signed_headers(method, path, data, access_id, secret_key)
    outgoing = urllib.request.Request(base_url.rstrip("/") + path, data=data or None, method=method.upper(), headers=headers)
    try:
        with urllib.request.urlopen(outgoing, timeout=30) as answer:
            status, text = answer.status, answer.read().decode()
    except urllib.error.HTTPError as error:
        status, text = error.code, error.read().decode()
    try:
        return status, json.loads(text) if text else None
    except ValueError:
        return status, text


def verify_webhook(header, body, secret, tolerance=300, now=None):
    """Whether `X-Notifiable-Signature` (`t=…,sha256=…`) signs `body` (bytes) with `secret` within `tolerance` seconds."""
    fields = {}
    signatures = []
    for part in header.split(","):
        key, _, value = part.strip().partition("=")
        if key == "sha256":
            signatures.append(value.lower())
        else:
            fields[key] = value
    try:
        timestamp = int(fields.get("t", ""))
    except ValueError:
        return False
    if abs((now or time.time()) - timestamp) > tolerance:
        return False
    expected = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()
    return any(hmac.compare_digest(expected, given) for given in signatures)


if __name__ == "__main__":
    # python3 notifiable.py request METHOD BASE_URL PATH [BODY]   (NOTIFIABLE_ACCESS_ID, NOTIFIABLE_SECRET_KEY)
    # python3 notifiable.py verify-webhook SECRET HEADER BODY_FILE
    import os
    if sys.argv[1:2] == ["request"]:
        method, base_url, path = sys.argv[2:5]
        status, answer = request(method, base_url, path, sys.argv[5] if len(sys.argv) > 5 else None,
                                 os.environ["NOTIFIABLE_ACCESS_ID"], os.environ["NOTIFIABLE_SECRET_KEY"])
        print(status, file=sys.stderr)
        print(json.dumps(answer))
        sys.exit(0 if status < 400 else 1)
    if sys.argv[1:2] == ["verify-webhook"]:
        with open(sys.argv[4], "rb") as f:
            sys.exit(0 if verify_webhook(sys.argv[3], f.read(), sys.argv[2]) else 1)
    sys.exit("usage: notifiable.py request METHOD BASE_URL PATH [BODY] | verify-webhook SECRET HEADER BODY_FILE")
