import Foundation
import NotifiableCore
import NotifiableDelivery
import NotifiableStore

/// Validates Web Push settings as an operator sends them: `{"subject": "mailto:…" or "https://…",
/// "private_key"?: PEM or the raw key in base64url, "rotate"?: true}`. Without a private key the
/// app keeps the key it has (so changing the contact does not orphan every subscription), or gets
/// a new one when it has none or `rotate` is true.
public enum WebPushSettingsInput {
    /// The parsed settings; an empty `privateKeyPEM` means "keep the app's key, or make one".
    public static func parse(_ body: JSONValue) throws -> WebPushSettings {
        let body = try AdminBody(body)
        try body.allowOnly(["subject", "private_key", "rotate"])
        guard let subject = try body.string("subject") else {
            throw APIError(
                status: .unprocessableContent, code: "missing_field",
                message: "subject is required: a mailto: address or https: page where push services can reach you (RFC 8292).",
                field: "subject")
        }
        guard subject.hasPrefix("mailto:") || subject.hasPrefix("https:"), subject.unicodeScalars.count <= 255,
            !subject.unicodeScalars.contains(where: { $0.value < 0x20 || $0 == " " })
        else {
            throw APIError(
                status: .unprocessableContent, code: "invalid_subject",
                message: "subject must be a mailto: address or an https: URL of at most 255 characters, e.g. mailto:push@example.com.",
                field: "subject")
        }
        let rotate = try body.boolean("rotate") ?? false
        if let text = try body.string("private_key") {
            guard !rotate else {
                throw APIError(
                    status: .unprocessableContent, code: "invalid_body", message: "Send private_key or rotate, not both.", field: "rotate")
            }
            guard let key = WebPushVAPID.privateKey(from: text) else {
                throw APIError(
                    status: .unprocessableContent, code: "invalid_private_key",
                    message: "private_key must be a P-256 private key: PEM, or the 32-byte key in base64url as web-push libraries print it.",
                    field: "private_key")
            }
            return WebPushSettings(
                subject: subject, publicKey: Base64URL.encode(key.publicKey.x963Representation), privateKeyPEM: key.pemRepresentation)
        }
        if rotate {
            let pair = WebPushVAPID.newKeyPair()
            return WebPushSettings(subject: subject, publicKey: pair.publicKey, privateKeyPEM: pair.privateKeyPEM)
        }
        return WebPushSettings(subject: subject, publicKey: "", privateKeyPEM: "")
    }

    /// Settings ready to save: the app's current key kept when none was sent, or a new one made.
    public static func completed(_ parsed: WebPushSettings, previous: WebPushSettings?) -> WebPushSettings {
        guard parsed.privateKeyPEM.isEmpty else { return parsed }
        if let previous {
            return WebPushSettings(subject: parsed.subject, publicKey: previous.publicKey, privateKeyPEM: previous.privateKeyPEM)
        }
        let pair = WebPushVAPID.newKeyPair()
        return WebPushSettings(subject: parsed.subject, publicKey: pair.publicKey, privateKeyPEM: pair.privateKeyPEM)
    }
}
