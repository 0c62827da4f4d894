// Calling NotifiableServer from Node (18 or later) with no packages.
//
//   import { request, verifyWebhook } from "./notifiable.mjs";
//   const { status, body } = await request("POST", "https://push.example.com", "/api/v1/notifications",
//                                          { message: "Hello", user_aliases: ["alice"] }, ACCESS_ID, SECRET_KEY);
//
// Signs as the api_auth gem does (README, Authentication): HMAC-SHA1 over
// `METHOD,Content-Type,X-Authorization-Content-SHA256,path,Date`, the body covered by its SHA-256
// on POST, PUT and PATCH (server credentials must; device credentials may).
import { createHash, createHmac, timingSafeEqual } from "node:crypto";
import { readFileSync } from "node:fs";

const CONTENT_TYPE = "application/json; charset=utf-8";

export function signedHeaders(method, path, body, accessID, secretKey) {
  method = method.toUpperCase();
  const date = new Date().toUTCString(); // RFC 1123, GMT
  const headers = { Date: date, "Content-Type": CONTENT_TYPE };
  let contentHash = "";
  if (["POST", "PUT", "PATCH"].includes(method)) {
    contentHash = createHash("sha256").update(body).digest("base64");
    headers["X-Authorization-Content-SHA256"] = contentHash;
  }
  const canonical = [method, CONTENT_TYPE, contentHash, path.split("?")[0], date].join(",");
  headers.Authorization = `APIAuth ${accessID}:${createHmac("sha1", secretKey).update(canonical).digest("base64")}`;
  return headers;
}

export async function request(method, baseURL, path, body, accessID, secretKey) {
  const data = body == null ? "" : typeof body === "string" ? body : JSON.stringify(body);
  const answer = await fetch(baseURL.replace(/\/$/, "") + path, {
    method: method.toUpperCase(),
    headers: signedHeaders(method, path, Buffer.from(data), accessID, secretKey),
    body: data === "" ? undefined : data,
  });
  const text = await answer.text();
  let parsed = text;
  try { parsed = text ? JSON.parse(text) : null; } catch {}
  return { status: answer.status, body: parsed };
}

export function verifyWebhook(header, body, secret, tolerance = 300, now = Date.now() / 1000) {
  let timestamp = NaN;
  const signatures = [];
  for (const part of header.split(",")) {
    const [key, ...rest] = part.trim().split("=");
    const value = rest.join("=");
    if (key === "t") timestamp = Number.parseInt(value, 10);
    if (key === "sha256") signatures.push(value.toLowerCase());
  }
  if (!Number.isInteger(timestamp) || Math.abs(now - timestamp) > tolerance) return false;
  const expected = Buffer.from(createHmac("sha256", secret).update(`${timestamp}.`).update(body).digest("hex"));
  return signatures.some((given) => given.length === expected.length && timingSafeEqual(Buffer.from(given), expected));
}

// node notifiable.mjs request METHOD BASE_URL PATH [BODY]   (NOTIFIABLE_ACCESS_ID, NOTIFIABLE_SECRET_KEY)
// node notifiable.mjs verify-webhook SECRET HEADER BODY_FILE
if (import.meta.url === `file://${process.argv[1]}`) {
  const [command, ...args] = process.argv.slice(2);
  if (command === "request") {
    const [method, baseURL, path, body] = args;
    const answer = await request(method, baseURL, path, body ?? null, process.env.NOTIFIABLE_ACCESS_ID, process.env.NOTIFIABLE_SECRET_KEY);
    console.error(answer.status);
    console.log(JSON.stringify(answer.body));
    process.exit(answer.status < 400 ? 0 : 1);
  } else if (command === "verify-webhook") {
    const [secret, header, file] = args;
    process.exit(verifyWebhook(header, readFileSync(file), secret) ? 0 : 1);
  } else {
    console.error("usage: notifiable.mjs request METHOD BASE_URL PATH [BODY] | verify-webhook SECRET HEADER BODY_FILE");
    process.exit(2);
  }
}
