// NotifiableServer in the browser: Web Push registration for pages, status reports for the
// service worker. A classic script, not a module, so that a page can load it with <script src>
// and a service worker with importScripts() (Firefox runs no module service workers).
//
//   <script src="/notifiable-web.js"></script>
//   const config = { baseURL: "https://push.example.com", accessID: "…", secretKey: "…" };
//   button.onclick = () => Notifiable.subscribe(config, { userAlias: "alice" });
//
// Requests are signed as clients/notifiable.mjs signs them (README, Authentication), with
// WebCrypto (crypto.subtle), which pages and service workers have, and Node from 19 (18 has it
// as require("node:crypto").webcrypto).
(function (global) {
  "use strict";

  const CONTENT_TYPE = "application/json; charset=utf-8";
  const METHODS_WITH_BODY = ["POST", "PUT", "PATCH"];
  const DB_NAME = "notifiable";
  const STORE = "config";
  const KEY = "device";

  function base64(buffer) {
    let text = "";
    for (const byte of new Uint8Array(buffer)) text += String.fromCharCode(byte);
    return btoa(text);
  }

  // Base64url as the server and PushSubscription.toJSON() write it: no padding.
  function base64urlBytes(text) {
    const plain = text.replace(/-/g, "+").replace(/_/g, "/").replace(/=+$/, "");
    const binary = atob(plain + "===".slice((plain.length + 3) % 4));
    return Uint8Array.from(binary, (c) => c.charCodeAt(0));
  }

  async function hmacSHA1(secretKey, text) {
    const encoder = new TextEncoder();
    const key = await crypto.subtle.importKey("raw", encoder.encode(secretKey), { name: "HMAC", hash: "SHA-1" }, false, ["sign"]);
    return base64(await crypto.subtle.sign("HMAC", key, encoder.encode(text)));
  }

  // Signs and sends one device API request; answers {status, body} with the body parsed as JSON
  // (null when empty or not JSON). Only a network failure throws.
  async function signedFetch(config, method, path, body) {
    method = method.toUpperCase();
    const data = body == null ? "" : typeof body === "string" ? body : JSON.stringify(body);
    const date = new Date().toUTCString(); // RFC 1123, GMT
    // Date is a header fetch() may not set; the server reads X-Date in its place. Content-Type
    // goes on bodyless requests too, because it is part of what is signed.
    const headers = { "Content-Type": CONTENT_TYPE, "X-Date": date };
    let contentHash = "";
    if (METHODS_WITH_BODY.includes(method)) {
      contentHash = base64(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(data)));
      headers["X-Authorization-Content-SHA256"] = contentHash;
    }
    const canonical = [method, CONTENT_TYPE, contentHash, path.split("?")[0], date].join(",");
    headers.Authorization = "APIAuth " + config.accessID + ":" + (await hmacSHA1(config.secretKey, canonical));

    const answer = await fetch(config.baseURL.replace(/\/+$/, "") + path, {
      method,
      headers,
      body: data === "" ? undefined : data,
      credentials: "omit", // the server never grants cookies, and needs none
    });
    const text = await answer.text();
    let parsed = null;
    try {
      parsed = text ? JSON.parse(text) : null;
    } catch (_) {
      // a proxy's HTML error page: the status says enough
    }
    return { status: answer.status, body: parsed };
  }

  // Turns an answer outside 2xx into an Error carrying the server's code, message and field.
  function expectSuccess(answer, what) {
    if (answer.status >= 200 && answer.status < 300) return answer.body;
    const problem = (answer.body && answer.body.error) || {};
    const detail = [problem.code, problem.message, problem.field && "(field " + problem.field + ")"].filter(Boolean).join(" ");
    const error = new Error("Notifiable: " + what + " failed with HTTP " + answer.status + (detail ? ": " + detail : ""));
    error.status = answer.status;
    error.code = problem.code;
    error.body = answer.body;
    throw error;
  }

  async function vapidPublicKey(config) {
    const body = expectSuccess(await signedFetch(config, "GET", "/api/v1/web_push/vapid_public_key"), "reading the VAPID key");
    return body.public_key;
  }

  // The part of subscribe() that needs no push service: registers a subscription's endpoint and
  // keys as a webpush device and answers its id. No userAlias registers an anonymous device.
  async function registerSubscription(config, subscriptionJSON, options) {
    options = options || {};
    const device = {
      provider: "webpush",
      token: subscriptionJSON.endpoint,
      keys: { p256dh: subscriptionJSON.keys.p256dh, auth: subscriptionJSON.keys.auth },
    };
    if (options.userAlias != null) device.user_alias = options.userAlias;
    if (options.language) device.language = options.language;
    // Apps that require verified aliases: a token from the app's backend. In the body, not the
    // X-Notifiable-User-Token header, which cross-origin requests are not allowed to send.
    if (options.userToken) device.user_token = options.userToken;
    const body = expectSuccess(await signedFetch(config, "POST", "/api/v1/device_tokens", { device_token: device }), "registering the device");
    return body.id;
  }

  // Moves a registered device (record.deviceID) to a new subscription, keeping its id, user, tags
  // and properties; registers anew when the server no longer has it. Answers the device id.
  async function replaceSubscription(record, subscriptionJSON) {
    if (record.deviceID != null) {
      const answer = await signedFetch(record, "PATCH", "/api/v1/device_tokens/" + encodeURIComponent(record.deviceID), {
        device_token: { token: subscriptionJSON.endpoint, keys: subscriptionJSON.keys },
      });
      if (answer.status !== 404) return expectSuccess(answer, "updating the device's subscription").id;
    }
    return registerSubscription(record, subscriptionJSON, { userAlias: record.userAlias, language: record.language });
  }

  // status: "delivered" or "opened"; config carries deviceID (the record saveDevice keeps).
  async function report(config, nID, status) {
    if (status !== "delivered" && status !== "opened") throw new Error('Notifiable: report "delivered" or "opened", not ' + JSON.stringify(status));
    if (config.deviceID == null) throw new Error("Notifiable: no device id to report for; subscribe first");
    const body = { device_token_id: String(config.deviceID) };
    // An opened report moves a stateful notification on only when it names the device's user.
    if (status === "opened" && config.userAlias) body.user = { alias: config.userAlias };
    const path = "/api/v1/notifications/" + encodeURIComponent(nID) + "/" + status;
    expectSuccess(await signedFetch(config, "POST", path, body), "reporting " + status);
  }

  // IndexedDB holds the device so the service worker, which shares no variables with the page,
  // can report. Without IndexedDB (Node) these do nothing, so the rest can be tested there.
  function openDB() {
    return new Promise((resolve, reject) => {
      const request = indexedDB.open(DB_NAME, 1);
      request.onupgradeneeded = () => request.result.createObjectStore(STORE);
      request.onsuccess = () => resolve(request.result);
      request.onerror = () => reject(request.error);
    });
  }

  async function inStore(mode, work) {
    if (typeof indexedDB === "undefined") return null;
    const db = await openDB();
    try {
      return await new Promise((resolve, reject) => {
        const transaction = db.transaction(STORE, mode);
        const request = work(transaction.objectStore(STORE));
        transaction.oncomplete = () => resolve(request.result);
        transaction.onerror = transaction.onabort = () => reject(transaction.error);
      });
    } finally {
      db.close();
    }
  }

  async function saveDevice(record) {
    await inStore("readwrite", (store) => store.put(record, KEY));
  }

  async function loadDevice() {
    return (await inStore("readonly", (store) => store.get(KEY))) || null;
  }

  async function forgetDevice() {
    await inStore("readwrite", (store) => store.delete(KEY));
  }

  // pushManager.subscribe() needs an active worker; a first registration is still installing.
  function activated(registration) {
    if (registration.active) return Promise.resolve(registration);
    const worker = registration.installing || registration.waiting;
    return new Promise((resolve, reject) => {
      worker.addEventListener("statechange", () => {
        if (worker.state === "activated") resolve(registration);
        if (worker.state === "redundant") reject(new Error("Notifiable: the service worker failed to install"));
      });
    });
  }

  function sameKey(buffer, bytes) {
    if (!buffer) return false;
    const given = new Uint8Array(buffer);
    return given.length === bytes.length && given.every((byte, i) => byte === bytes[i]);
  }

  // For pages: call it from a click handler (browsers grant permission only in answer to a
  // gesture). Answers the device id.
  async function subscribe(config, options) {
    options = options || {};
    // Asked first, before any await, while the page still has the user's gesture (Safari).
    const permission = Notification.requestPermission();
    const [granted, registration, publicKey] = await Promise.all([
      permission,
      navigator.serviceWorker.register(options.serviceWorker || "/notifiable-sw.js").then(activated),
      vapidPublicKey(config),
    ]);
    if (granted !== "granted") throw new Error("Notifiable: notifications were not allowed (" + granted + ")");

    const applicationServerKey = base64urlBytes(publicKey);
    let subscription = await registration.pushManager.getSubscription();
    // A subscription made with a key since rotated is refused by the push service: replace it.
    if (subscription && !sameKey(subscription.options && subscription.options.applicationServerKey, applicationServerKey)) {
      await subscription.unsubscribe();
      subscription = null;
    }
    if (!subscription) subscription = await registration.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey });

    const language = options.language || (navigator.language || "").split("-")[0] || undefined;
    const deviceID = await registerSubscription(config, subscription.toJSON(), {
      userAlias: options.userAlias,
      language,
      userToken: options.userToken,
    });
    const previous = await loadDevice();
    await saveDevice({
      baseURL: config.baseURL,
      accessID: config.accessID,
      secretKey: config.secretKey,
      deviceID,
      userAlias: options.userAlias == null ? null : options.userAlias,
      language: language || null,
    });
    // The device of a subscription just replaced would only wait to be found dead on a send.
    if (previous && previous.deviceID !== deviceID && previous.baseURL === config.baseURL && previous.accessID === config.accessID) {
      await signedFetch(previous, "DELETE", "/api/v1/device_tokens/" + encodeURIComponent(previous.deviceID)).catch(() => {});
    }
    return deviceID;
  }

  // For pages: ends the push subscription and unregisters the device.
  async function unsubscribe(config, options) {
    options = options || {};
    const scriptURL = new URL(options.serviceWorker || "/notifiable-sw.js", location.href).href;
    const registrations = await navigator.serviceWorker.getRegistrations();
    const registration = registrations.find((r) => [r.active, r.waiting, r.installing].some((w) => w && w.scriptURL === scriptURL));
    const subscription = registration && (await registration.pushManager.getSubscription());
    if (subscription) await subscription.unsubscribe();

    const record = await loadDevice();
    const deviceID = config.deviceID != null ? config.deviceID : record && record.deviceID;
    if (deviceID != null) {
      const answer = await signedFetch(config, "DELETE", "/api/v1/device_tokens/" + encodeURIComponent(deviceID));
      if (answer.status !== 404) expectSuccess(answer, "unregistering the device");
    }
    await forgetDevice();
  }

  global.Notifiable = {
    signedFetch,
    vapidPublicKey,
    subscribe,
    registerSubscription,
    replaceSubscription,
    unsubscribe,
    report,
    saveDevice,
    loadDevice,
    base64urlBytes,
  };
})(globalThis);
