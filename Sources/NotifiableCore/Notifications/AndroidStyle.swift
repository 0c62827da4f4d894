/// How an FCM push presents itself on Android.
///
/// Both carry the notification's `n_id`, `title` and `message` in `data` as strings: the
/// Notifiable Android SDK builds its notification from those keys (`createNotificationFromMap`).
/// They differ in whether FCM also gets a `notification` block: with one, Android draws the
/// notification itself while the app is in the background and the app's `onMessageReceived`
/// does not run, so the SDK cannot report the push as delivered.
public enum AndroidStyle: String, Sendable, Codable, CaseIterable {
    /// A data-only message, as notifiable-rails sent: the app's `onMessageReceived` always runs,
    /// builds the notification and reports receipt. The default.
    case data
    /// A `notification` block beside the same data keys, for apps that let Android draw it.
    case notification
}
