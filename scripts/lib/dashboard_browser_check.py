#!/usr/bin/python3
"""Drives headless Chromium (over the DevTools protocol) through the console of a running server,
as an operator would: types into its forms and clicks its buttons, no cookie or request made by
hand. Every page it visits is photographed at 1400 px and at a phone's 400 px (both kept under the
given folder) and, at 400 px, must not scroll sideways. Exits non-zero on the first thing that is
not as it must be, naming the screenshot that shows it.

  1. Signs in with the admin token (no name), checks the pages in PAGES_JSON show what they must.
  2. Adds an editor of the app on the Operators page, signs out, and signs in as that editor.
  3. Searches for the user alias in the header's search box and opens the device it finds.
  4. Composes a notification to that user, counts the audience and previews the payloads, sends it,
     and watches its live page (it refreshes itself) until the status reads `completed`.

usage: dashboard_browser_check.py BASE_URL ADMIN_TOKEN SCREENSHOT_DIR PAGES_JSON FLOW_JSON
PAGES_JSON: [{"name": "apps", "path": "/dashboard", "expect": ["Demo", ...]}, ...]
FLOW_JSON: {"app_id": 1, "user_alias": "alice", "token": "abab…"}
"""
import base64, json, os, re, shutil, subprocess, sys, tempfile, time, urllib.request

import websocket  # Debian's python3-websocket

WIDE, NARROW = 1400, 400


class Failed(Exception):
    pass


class Browser:
    def __init__(self):
        self.profile = tempfile.mkdtemp(prefix="notifiable-chromium-")
        binary = shutil.which("chromium") or shutil.which("chromium-browser") or sys.exit("chromium is not installed")
        self.process = subprocess.Popen(
            [binary, "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
             "--remote-debugging-port=0", f"--user-data-dir={self.profile}", f"--window-size={WIDE},900", "about:blank"],
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
        self.events = []
        self.call("Page.enable")
        self.width = WIDE
        self.resize(WIDE)

    def call(self, method, **params):
        self.next_id += 1
        self.socket.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            message = json.loads(self.socket.recv())
            if message.get("id") == self.next_id:
                if "error" in message:
                    raise Failed(f"{method}: {message['error']}")
                return message.get("result", {})
            if "method" in message:
                self.events.append(message)

    def wait_for_load(self, timeout=30):
        """Until the page that a navigation, a click or a refresh started has loaded."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            while self.events:
                if self.events.pop(0).get("method") == "Page.loadEventFired":
                    return
            self.socket.settimeout(max(0.1, deadline - time.time()))
            message = json.loads(self.socket.recv())
            self.socket.settimeout(30)
            if message.get("method") == "Page.loadEventFired":
                return
        raise Failed("a page did not load within 30 s")

    def evaluate(self, expression):
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        if "exceptionDetails" in result:
            raise Failed(f"{expression}: {result['exceptionDetails'].get('text')}")
        return result["result"].get("value")

    def open(self, url):
        self.events.clear()
        self.call("Page.navigate", url=url)
        self.wait_for_load()

    def html(self):
        return self.evaluate("document.documentElement.outerHTML")

    def path(self):
        return self.evaluate("location.pathname + location.search")

    def resize(self, width):
        self.width = width
        self.call("Emulation.setDeviceMetricsOverride", width=width, height=900, deviceScaleFactor=1, mobile=width < 800)

    def center(self, selector):
        box = self.evaluate(
            f"(() => {{ const e = document.querySelector({json.dumps(selector)}); if (!e) return null;"
            " e.scrollIntoView({block: 'center'}); const r = e.getBoundingClientRect();"
            " return [r.left + r.width / 2, r.top + r.height / 2]; })()")
        if box is None:
            raise Failed(f"{self.path()} has no {selector}")
        return box

    def click(self, selector, navigates=True):
        """A real mouse click in the middle of the element."""
        x, y = self.center(selector)
        self.events.clear()
        for kind in ("mousePressed", "mouseReleased"):
            self.call("Input.dispatchMouseEvent", type=kind, x=x, y=y, button="left", clickCount=1)
        if navigates:
            self.wait_for_load()

    def type(self, selector, text):
        """Clicks into the field, clears it and types the text."""
        self.click(selector, navigates=False)
        self.evaluate(f"document.querySelector({json.dumps(selector)}).select && document.querySelector({json.dumps(selector)}).select()")
        self.call("Input.insertText", text=text)

    def press_enter(self):
        self.events.clear()
        for kind in ("keyDown", "keyUp"):
            self.call("Input.dispatchKeyEvent", type=kind, key="Enter", code="Enter", windowsVirtualKeyCode=13, text="\r")
        self.wait_for_load()

    def screenshot(self, path):
        data = self.call("Page.captureScreenshot", format="png", captureBeyondViewport=True)["data"]
        with open(path, "wb") as file:
            file.write(base64.b64decode(data))

    def close(self):
        self.process.terminate()
        self.process.wait(timeout=10)
        shutil.rmtree(self.profile, ignore_errors=True)


class Console:
    """What the check does with the browser, and the screenshots it keeps."""

    def __init__(self, browser, base, folder):
        self.browser, self.base, self.folder = browser, base, folder
        self.shots = []

    def expect(self, name, texts):
        html = self.browser.html()
        missing = [text for text in texts if text not in html]
        if missing:
            raise Failed(f"{self.browser.path()} lacks {missing} (screenshot: {self.shoot(name)})")

    def shoot(self, name):
        path = os.path.join(self.folder, f"{name}-{self.browser.width}.png")
        self.browser.screenshot(path)
        self.shots.append(path)
        return path

    def photograph(self, name):
        """The page as it stands at 1400 px and at 400 px, where it must fit without scrolling
        sideways; then back to 1400 px."""
        self.shoot(name)
        self.browser.resize(NARROW)
        self.browser.evaluate("void document.body.offsetWidth")
        overflow = self.browser.evaluate(
            "(() => { const w = document.documentElement.clientWidth; const wide = [...document.querySelectorAll('body *')]"
            ".filter(e => e.getBoundingClientRect().right > w + 1).map(e => e.tagName.toLowerCase() + (e.className ? '.' + e.className : ''));"
            " return [document.documentElement.scrollWidth, w, wide.slice(0, 5)]; })()")
        shot = self.shoot(name)
        self.browser.resize(WIDE)
        scroll_width, client_width, wide = overflow
        if scroll_width > client_width:
            raise Failed(f"{self.browser.path()} scrolls sideways at {NARROW} px: {scroll_width} px wide, "
                         f"past the edge: {wide} (screenshot: {shot})")

    def visit(self, name, path, texts=()):
        self.browser.open(self.base + path)
        self.expect(name, texts)
        self.photograph(name)
        print(f"  {path}: shows {len(texts)} expected values; fits {NARROW} px")

    def sign_in(self, name, password):
        self.browser.open(self.base + "/dashboard/login")
        if name:
            self.browser.type("input[name=name]", name)
        self.browser.type("input[name=password]", password)
        self.browser.click("form.login button")
        if self.browser.path() != "/dashboard":
            raise Failed(f"signing in as {name or 'the admin token'} led to {self.browser.path()} (screenshot: {self.shoot('sign-in-failed')})")

    def sign_out(self):
        self.browser.click("header form button")
        if self.browser.path() != "/dashboard/login":
            raise Failed(f"signing out led to {self.browser.path()}")


def run(console, token, pages, flow):
    browser = console.browser
    app, alias, device_token = flow["app_id"], flow["user_alias"], flow["token"]

    print("  1. signs in with the admin token and reads the pages")
    browser.open(console.base + "/dashboard/login")
    console.photograph("sign-in")
    console.sign_in(None, token)
    for page in pages:
        console.visit(page["name"], page["path"], page["expect"])
    for name, path, texts in [("devices", f"/dashboard/apps/{app}/devices", [alias]),
                              ("trends", f"/dashboard/apps/{app}/trends", ["Sent per hour", "<svg"]),
                              ("settings", f"/dashboard/apps/{app}/settings", ["Credentials", "Webhooks"]),
                              ("new-app", "/dashboard/apps/new", ["Create"]),
                              ("audit", "/dashboard/audit", ["POST /dashboard/login"])]:
        console.visit(name, path, texts)

    print("  2. adds an editor of the app and signs in as them")
    editor, password = f"editor-{int(time.time())}", "a console check password"
    browser.open(console.base + "/dashboard/operators")
    form = "form.panel[action='/dashboard/operators']"
    browser.type(f"{form} input[name=name]", editor)
    browser.evaluate(f"document.querySelector(\"{form} select[name=role]\").value = 'editor'")
    browser.type(f"{form} input[name=apps]", str(app))
    browser.type(f"{form} input[name=password]", password)
    browser.click(f"{form} button")
    console.expect("operators", [editor])
    console.photograph("operators")
    console.sign_out()
    console.sign_in(editor, password)
    console.expect("apps-as-editor", [f"{editor} · editor"])
    if "/dashboard/operators" in browser.html():
        raise Failed(f"an editor is offered the Operators page (screenshot: {console.shoot('apps-as-editor')})")

    print(f"  3. searches for {alias} and opens the device found")
    browser.type("form.search input[name=q]", alias)
    browser.press_enter()
    console.expect("search", [f"/dashboard/apps/{app}/devices/", device_token[:16]])
    console.photograph("search")
    browser.click(f"main a[href^='/dashboard/apps/{app}/devices/']")
    console.expect("device", [device_token, alias])
    console.photograph("device")

    print(f"  4. composes a notification to {alias}, previews it, sends it and watches it complete")
    browser.open(console.base + f"/dashboard/apps/{app}/compose")
    title = f"From the console {int(time.time())}"
    browser.type("input[name=title]", title)
    browser.type("textarea[name=message]", "Sent by an editor in a browser")
    browser.click("input[name=audience][value=users]", navigates=False)
    browser.type("input[name=users]", alias)
    browser.click("button[value=preview]")
    # One device: alice's iPhone; its APNs payload carries the title and n_id.
    console.expect("compose-preview", ["Devices<b>1</b>", "iOS (APNs)<b>1</b>", title, '"n_id"'])
    console.photograph("compose-preview")
    browser.click("button#send")
    match = re.fullmatch(rf"/dashboard/apps/{app}/notifications/(\d+)", browser.path())
    if not match:
        raise Failed(f"sending led to {browser.path()} (screenshot: {console.shoot('sent')})")
    deadline, status = time.time() + 60, ""
    while time.time() < deadline:
        try:
            status = browser.evaluate("document.getElementById('status') && document.getElementById('status').textContent")
        except Failed:
            status = ""  # read while the page was being replaced by its refresh
        if status == "completed":
            break
        browser.wait_for_load(timeout=10)  # the page's own refresh, every 2 s while it is live
    if status != "completed":
        raise Failed(f"notification {match.group(1)} stayed {status!r} for 60 s (screenshot: {console.shoot('notification-live')})")
    console.expect("notification-completed", [title, "Targeted<b>1</b>", "Sent<b>1</b>", "Cancelled<b>0</b>"])
    console.photograph("notification-completed")
    print(f"  notification {match.group(1)} reached completed in the browser")


def main():
    base, token, folder = sys.argv[1], sys.argv[2], sys.argv[3]
    pages, flow = json.loads(sys.argv[4]), json.loads(sys.argv[5])
    os.makedirs(folder, exist_ok=True)
    browser = Browser()
    console = Console(browser, base, folder)
    try:
        run(console, token, pages, flow)
    except Failed as failure:
        sys.exit(f"console check: {failure}")
    finally:
        browser.close()
    print(f"  {len(console.shots)} screenshots in {folder}")


if __name__ == "__main__":
    main()
