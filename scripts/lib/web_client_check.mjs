// Runs clients/web/notifiable-web.js, the browser client, against a running server, from Node
// 18+ with no packages: the script is evaluated in a vm context given only what a service
// worker also has (fetch, crypto.subtle, TextEncoder, atob, btoa, URL), so the code under test
// is the code browsers load.
//
//   BASE_URL=http://127.0.0.1:8080 ACCESS_ID=… SECRET_KEY=… (device credentials)
//   ENDPOINT=https://… P256DH=… AUTH=… (a subscription) EXPECT_PUBLIC_KEY=… (the app's VAPID key)
//   [N_ID=… (a notification sent to web-alice, to report)] [WEB_ORIGIN=https://… (one of NOTIFIABLE_WEB_ORIGINS)]
//   node scripts/lib/web_client_check.mjs      → {"device_id": …}
import { webcrypto } from "node:crypto";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import vm from "node:vm";

const env = process.env;
const USER_ALIAS = "web-alice";

function fail(message) {
  console.error(`web_client_check: ${message}`);
  process.exit(1);
}

for (const name of ["BASE_URL", "ACCESS_ID", "SECRET_KEY", "ENDPOINT", "P256DH", "AUTH", "EXPECT_PUBLIC_KEY"]) {
  if (!env[name]) fail(`set ${name}`);
}

// Every request the client makes passes here: a browser refuses to send Date from fetch(), so
// the client must sign X-Date and never rely on Date.
const sentHeaders = [];
async function browserFetch(url, init) {
  const names = Object.keys(init.headers).map((name) => name.toLowerCase());
  if (names.includes("date")) fail(`the client set Date on ${init.method} ${url}; browsers refuse it`);
  if (!names.includes("x-date")) fail(`the client sent no X-Date on ${init.method} ${url}`);
  sentHeaders.push(...names);
  return fetch(url, init);
}

const file = fileURLToPath(new URL("../../clients/web/notifiable-web.js", import.meta.url));
const context = vm.createContext({
  fetch: browserFetch,
  crypto: webcrypto, // globalThis.crypto only from Node 19 (18 needs a flag)
  TextEncoder,
  atob,
  btoa,
  URL,
  console,
});
vm.runInContext(readFileSync(file, "utf8"), context, { filename: file });
const Notifiable = context.Notifiable;
if (!Notifiable) fail("clients/web/notifiable-web.js defined no globalThis.Notifiable");

const config = { baseURL: env.BASE_URL, accessID: env.ACCESS_ID, secretKey: env.SECRET_KEY };
const subscription = { endpoint: env.ENDPOINT, expirationTime: null, keys: { p256dh: env.P256DH, auth: env.AUTH } };

async function step(what, work) {
  try {
    return await work();
  } catch (error) {
    // fetch() says only "fetch failed"; the reason is in its cause.
    const cause = error.cause ? ` (${error.cause.code || error.cause.message}; is the server at ${env.BASE_URL} running?)` : "";
    fail(`${what}: ${error.message}${cause}`);
  }
}

// Without IndexedDB the storage helpers do nothing, so the rest runs here.
await step("saveDevice/loadDevice without IndexedDB", async () => {
  await Notifiable.saveDevice({ deviceID: 1 });
  if ((await Notifiable.loadDevice()) !== null) throw new Error("loadDevice() should answer null without IndexedDB");
});

// The server must check the signature at all, or nothing below says anything about signing.
await step("a request signed with the wrong secret", async () => {
  const answer = await Notifiable.signedFetch({ ...config, secretKey: "not-the-secret" }, "GET", "/api/v1/web_push/vapid_public_key");
  if (answer.status !== 401) throw new Error(`answered ${answer.status}, not 401`);
});

const publicKey = await step("reading the VAPID key", () => Notifiable.vapidPublicKey(config));
if (publicKey !== env.EXPECT_PUBLIC_KEY) fail(`the VAPID key read is ${publicKey}, not ${env.EXPECT_PUBLIC_KEY}`);
if (Notifiable.base64urlBytes(publicKey).length !== 65) fail("the VAPID key is not a 65-byte point");

const deviceID = await step("registering the subscription", () =>
  Notifiable.registerSubscription(config, subscription, { userAlias: USER_ALIAS, language: "en" })
);
if (!Number.isInteger(deviceID)) fail(`the registration answered the id ${JSON.stringify(deviceID)}, not a number`);

await step("reading the device back", async () => {
  const answer = await Notifiable.signedFetch(config, "GET", `/api/v1/device_tokens?user_alias=${encodeURIComponent(USER_ALIAS)}`);
  if (answer.status !== 200) throw new Error(`HTTP ${answer.status} ${JSON.stringify(answer.body)}`);
  const device = answer.body.find((d) => d.id === deviceID);
  if (!device) throw new Error(`device ${deviceID} is not among ${USER_ALIAS}'s: ${JSON.stringify(answer.body)}`);
  const wrong = [
    ["provider", "webpush"],
    ["token", env.ENDPOINT],
    ["user_alias", USER_ALIAS],
    ["language", "en"],
  ].filter(([key, value]) => device[key] !== value);
  if (wrong.length) throw new Error(`the device has ${wrong.map(([key]) => `${key}=${JSON.stringify(device[key])}`).join(", ")}`);
});

if (env.N_ID) {
  const record = { ...config, deviceID, userAlias: USER_ALIAS };
  for (const status of ["delivered", "opened"]) {
    await step(`reporting ${status} for notification ${env.N_ID}`, () => Notifiable.report(record, env.N_ID, status));
  }
}

// What the service worker does on pushsubscriptionchange, on a device of its own (anonymous, so
// web-alice's devices stay as registered): the new subscription keeps the device id.
await step("moving a device to a renewed subscription", async () => {
  const first = { ...subscription, endpoint: `${env.ENDPOINT}-check-old` };
  const renewed = { ...subscription, endpoint: `${env.ENDPOINT}-check-renewed` };
  const id = await Notifiable.registerSubscription(config, first, {});
  const movedID = await Notifiable.replaceSubscription({ ...config, deviceID: id }, renewed);
  if (movedID !== id) throw new Error(`the device's id changed from ${id} to ${movedID}`);
  const gone = await Notifiable.signedFetch(config, "DELETE", `/api/v1/device_tokens/${id}`);
  if (gone.status !== 204) throw new Error(`unregistering it answered ${gone.status}`);
  // A device since unregistered: replaceSubscription registers the subscription again (the
  // server may revive the same row), and it can be unregistered once more.
  const againID = await Notifiable.replaceSubscription({ ...config, deviceID: id }, renewed);
  const goneAgain = await Notifiable.signedFetch(config, "DELETE", `/api/v1/device_tokens/${againID}`);
  if (goneAgain.status !== 204) throw new Error(`the device registered again (${againID}) was not registered: DELETE answered ${goneAgain.status}`);
});

// A page on WEB_ORIGIN sends these headers cross-origin; the server's preflight must allow each.
if (env.WEB_ORIGIN) {
  await step(`the preflight from ${env.WEB_ORIGIN}`, async () => {
    const wanted = [...new Set(sentHeaders)].sort();
    const answer = await fetch(`${env.BASE_URL.replace(/\/+$/, "")}/api/v1/device_tokens`, {
      method: "OPTIONS",
      headers: { Origin: env.WEB_ORIGIN, "Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": wanted.join(",") },
    });
    if (answer.headers.get("access-control-allow-origin") !== env.WEB_ORIGIN) {
      throw new Error(`Access-Control-Allow-Origin is ${answer.headers.get("access-control-allow-origin")} (is it in NOTIFIABLE_WEB_ORIGINS?)`);
    }
    const allowed = (answer.headers.get("access-control-allow-headers") || "").toLowerCase().split(/\s*,\s*/);
    const missing = wanted.filter((name) => !allowed.includes(name));
    if (missing.length) throw new Error(`the server does not allow the headers ${missing.join(", ")}`);
  });
}

console.log(JSON.stringify({ device_id: deviceID }));
