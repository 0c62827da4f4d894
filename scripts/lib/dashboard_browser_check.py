#!/usr/bin/python3
"""Drives headless Chromium (over the DevTools protocol) through the dashboard of a running
server: signs in with the admin token, opens each page, writes a screenshot of it under the
given folder, and checks that the page shows what it must. Exits non-zero on the first
page that does not.

usage: dashboard_browser_check.py BASE_URL ADMIN_TOKEN SCREENSHOT_DIR PAGES_JSON
PAGES_JSON: [{"name": "apps", "path": "/dashboard", "expect": ["Demo", ...]}, ...]
"""
import base64, http.client, json, os, re, shutil, subprocess, sys, tempfile, time, urllib.parse, urllib.request

import websocket  # Debian's python3-websocket


def session_cookie(base, token):
    url = urllib.parse.urlparse(base)
    connection = http.client.HTTPConnection(url.hostname, url.port, timeout=10)
    connection.request("POST", "/dashboard/login", body="token=" + urllib.parse.quote(token),
                       headers={"Content-Type": "application/x-www-form-urlencoded"})
    answer = connection.getresponse()
    cookie = answer.getheader("Set-Cookie") or ""
    if answer.status != 303 or "=" not in cookie:
        sys.exit(f"sign-in failed: HTTP {answer.status}")
    name, value = cookie.split(";", 1)[0].split("=", 1)
    return name, value


class Browser:
    def __init__(self):
        self.profile = tempfile.mkdtemp(prefix="notifiable-chromium-")
        binary = shutil.which("chromium") or shutil.which("chromium-browser") or sys.exit("chromium is not installed")
        self.process = subprocess.Popen(
            [binary, "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
             "--remote-debugging-port=0", f"--user-data-dir={self.profile}", "--window-size=1280,900", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        port = None
        deadline = time.time() + 60
        while port is None and time.time() < deadline:
            line = self.process.stderr.readline()
            match = re.search(r"DevTools listening on ws://[^:]+:(\d+)/", line)
            if match:
                port = int(match.group(1))
        if port is None:
            sys.exit("chromium did not start")
        targets = json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10))
        page = next(t for t in targets if t.get("type") == "page")
        self.socket = websocket.create_connection(page["webSocketDebuggerUrl"], timeout=30)
        self.next_id = 0
        self.call("Page.enable")
        self.call("Network.enable")

    def call(self, method, **params):
        self.next_id += 1
        self.socket.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            message = json.loads(self.socket.recv())
            if message.get("id") == self.next_id:
                if "error" in message:
                    sys.exit(f"{method}: {message['error']}")
                return message.get("result", {})

    def wait_for(self, event, timeout=30):
        deadline = time.time() + timeout
        while time.time() < deadline:
            message = json.loads(self.socket.recv())
            if message.get("method") == event:
                return message
        sys.exit(f"timed out waiting for {event}")

    def open(self, url):
        self.call("Page.navigate", url=url)
        self.wait_for("Page.loadEventFired")
        return self.call("Runtime.evaluate", expression="document.documentElement.outerHTML")["result"]["value"]

    def screenshot(self, path):
        data = self.call("Page.captureScreenshot", format="png", captureBeyondViewport=True)["data"]
        with open(path, "wb") as file:
            file.write(base64.b64decode(data))

    def close(self):
        self.process.terminate()
        self.process.wait(timeout=10)
        shutil.rmtree(self.profile, ignore_errors=True)


def main():
    base, token, folder, pages = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
    os.makedirs(folder, exist_ok=True)
    name, value = session_cookie(base, token)
    browser = Browser()
    try:
        browser.call("Network.setCookie", name=name, value=value, url=base + "/dashboard", httpOnly=True, sameSite="Strict")
        for page in pages:
            html = browser.open(base + page["path"])
            shot = os.path.join(folder, page["name"] + ".png")
            browser.screenshot(shot)
            missing = [text for text in page["expect"] if text not in html]
            if missing:
                sys.exit(f"{page['path']} lacks {missing} (screenshot: {shot})")
            print(f"  {page['path']}: shows {len(page['expect'])} expected values; screenshot {shot}")
    finally:
        browser.close()


if __name__ == "__main__":
    main()
