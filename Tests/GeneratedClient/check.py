"""Generates a Python client from the running server's OpenAPI document with openapi-python-client
(a maintained generator, from PyPI) and calls the server through it, signing each request with a
small httpx hook that calls the Python client recipe's signer (clients/notifiable.py). Run by GeneratedClientTests:

    python check.py BASE_URL DEVICE_ACCESS_ID DEVICE_SECRET SERVER_ACCESS_ID SERVER_SECRET WORK_DIR

Prints one line per call and exits non-zero at the first answer that is not what the document
promises."""
import importlib
import os
import subprocess
import sys

# The signer users are given: clients/notifiable.py, beside this repository's tests.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "clients"))
from notifiable import signed_headers  # noqa: E402

base, device_id, device_secret, server_id, server_secret, work = sys.argv[1:7]

# The generator reads the document the server serves, as a user's build would.
subprocess.run([sys.executable, "-m", "openapi_python_client", "generate", "--url", f"{base}/openapi.json",
                "--output-path", f"{work}/notifiable_client", "--meta", "none", "--overwrite"],
               check=True, stdout=subprocess.DEVNULL)
sys.path.insert(0, work)
client_module = importlib.import_module("notifiable_client")
register_device = importlib.import_module("notifiable_client.api.devices.register_device")
update_device = importlib.import_module("notifiable_client.api.devices.update_device")
send_notification = importlib.import_module("notifiable_client.api.notifications.send_notification")
get_notification = importlib.import_module("notifiable_client.api.notifications.get_notification")
list_user_devices = importlib.import_module("notifiable_client.api.devices.list_user_devices")
models = importlib.import_module("notifiable_client.models")


def signer(access_id, secret):
    """An httpx request hook that signs each request as the recipe does (body covered on POST, PUT, PATCH)."""
    def sign(request):
        request.headers.update(signed_headers(request.method, request.url.path, request.content, access_id, secret))
    return client_module.AuthenticatedClient(base_url=base, token="unused", httpx_args={"event_hooks": {"request": [sign]}})


device = signer(device_id, device_secret)
server = signer(server_id, server_secret)


def expect(answer, status, what):
    print(f"{what}: {int(answer.status_code)}")
    if int(answer.status_code) != status:
        sys.exit(f"{what}: expected {status}, got {int(answer.status_code)}: {answer.content[:300]!r}")
    return answer.parsed


registered = expect(register_device.sync_detailed(client=device, body=models.DeviceRegistration.from_dict(
    {"provider": "apns", "token": "ab" * 32, "user_alias": "gen-alice", "language": "fr"})), 200, "registerDevice")
if not isinstance(registered, models.Device) or registered.user_alias != "gen-alice":
    sys.exit(f"registerDevice answered {registered!r}")
updated = expect(update_device.sync_detailed(str(registered.id), client=server, body=models.DeviceUpdate.from_dict({"name": "generated"})),
                 200, "updateDevice (server credentials, body signed)")
listed = expect(list_user_devices.sync_detailed(client=device, user_alias="gen-alice"), 200, "listUserDevices")
if [d.id for d in listed] != [registered.id]:
    sys.exit(f"listUserDevices answered {listed!r}")
sent = expect(send_notification.sync_detailed(client=server, body=models.NotificationRequest.from_dict(
    {"title": "Hello", "message": "From a generated client", "user_aliases": ["gen-alice"]})), 202, "sendNotification")
read = expect(get_notification.sync_detailed(str(sent.id), client=server), 200, "getNotification")
if read.id != sent.id:
    sys.exit(f"getNotification answered {read!r}")
# An error answer is parsed as the document's Error.
missing = expect(get_notification.sync_detailed("999999999", client=server), 404, "getNotification (no such)")
if not isinstance(missing, models.Error) or missing.error.code != "not_found":
    sys.exit(f"a 404 answered {missing!r}")
print("generated client: ok")
