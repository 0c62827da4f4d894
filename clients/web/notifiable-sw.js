// NotifiableServer's service worker: shows each Web Push message and reports it delivered, and
// opened when clicked. Serve it beside notifiable-web.js (the path below is relative to this
// worker's URL) and register it with Notifiable.subscribe(). An app with its own worker can
// copy these listeners into it instead.
importScripts("notifiable-web.js");

// A report is worth a try, never a reason to fail the event: the notification matters more.
async function reportQuietly(nID, status) {
  if (nID == null) return;
  try {
    const device = await Notifiable.loadDevice();
    if (device) await Notifiable.report(device, nID, status);
  } catch (error) {
    console.warn("Notifiable: could not report " + status + " for " + nID, error);
  }
}

// `badge` is the app icon's count (as on iOS); the Badging API shows it where the browser can.
async function setBadge(badge) {
  if (typeof badge !== "number" || !self.navigator.setAppBadge) return;
  try {
    await (badge > 0 ? self.navigator.setAppBadge(badge) : self.navigator.clearAppBadge());
  } catch (_) {
    // not an installed app: nothing to badge
  }
}

self.addEventListener("push", (event) => {
  let message = {};
  try {
    message = (event.data && event.data.json()) || {};
  } catch (_) {
    // Not one of ours; a notification is shown anyway, since browsers penalise (Safari ends)
    // subscriptions whose pushes show none.
  }
  const options = {
    body: message.message || "",
    data: { n_id: message.n_id, parameters: message.parameters || {} },
  };
  if (message.image_url) options.image = message.image_url;
  // One notification, one entry: a message the push service delivers twice replaces itself.
  if (message.n_id != null) options.tag = "n" + message.n_id;
  event.waitUntil(
    Promise.all([
      self.registration.showNotification(message.title || "", options),
      setBadge(message.badge),
      reportQuietly(message.n_id, "delivered"),
    ])
  );
});

// parameters.url, relative to the worker's scope or absolute; the scope itself otherwise.
function targetURL(parameters) {
  const scope = self.registration.scope;
  if (!parameters || typeof parameters.url !== "string") return scope;
  try {
    const url = new URL(parameters.url, scope);
    return url.protocol === "https:" || url.protocol === "http:" ? url.href : scope;
  } catch (_) {
    return scope;
  }
}

async function focusOrOpen(url) {
  const windows = await self.clients.matchAll({ type: "window", includeUncontrolled: true });
  const open = windows.find((client) => client.url === url);
  if (open) return open.focus();
  return self.clients.openWindow(url);
}

self.addEventListener("notificationclick", (event) => {
  event.notification.close();
  const data = event.notification.data || {};
  // Side by side, not one after the other: browsers let a worker open a window only while
  // the click is recent, and a report may be slow.
  event.waitUntil(Promise.all([reportQuietly(data.n_id, "opened"), focusOrOpen(targetURL(data.parameters))]));
});

// The push service replaced the subscription (expiry, key change): move the device to the new
// one, so the server keeps reaching this browser under the same device id.
self.addEventListener("pushsubscriptionchange", (event) => {
  event.waitUntil(
    (async () => {
      const device = await Notifiable.loadDevice();
      if (!device) return; // never subscribed through Notifiable.subscribe()
      let subscription = event.newSubscription;
      if (!subscription) {
        // Firefox may fire without one: subscribe again with the server's current key.
        const applicationServerKey = Notifiable.base64urlBytes(await Notifiable.vapidPublicKey(device));
        subscription = await self.registration.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey });
      }
      const deviceID = await Notifiable.replaceSubscription(device, subscription.toJSON());
      await Notifiable.saveDevice(Object.assign({}, device, { deviceID }));
    })()
  );
});
