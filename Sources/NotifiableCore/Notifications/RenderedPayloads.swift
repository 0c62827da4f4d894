import Synchronization

/// What a gateway's payload for one notification content depends on besides the content itself.
public struct RenderedPayloadKey: Hashable, Sendable {
    public var provider: Provider
    public var language: String?
    public var country: String?
    /// Seconds until the content expires, as FCM's `ttl` carries them; nil when not part of the payload.
    public var ttlSeconds: Int64?
    /// An FCM device's operating system: an iPhone's message carries an `apns` block instead of `android`.
    public var platform: DevicePlatform?
    /// The badge of a notification that counts badges up: each device's own.
    public var badge: Int?

    public init(
        provider: Provider, language: String?, country: String?, ttlSeconds: Int64? = nil, platform: DevicePlatform? = nil, badge: Int? = nil
    ) {
        self.badge = badge
        self.provider = provider
        self.platform = platform
        self.language = language
        self.country = country
        self.ttlSeconds = ttlSeconds
    }
}

/// Payloads already written from one notification content, shared by every delivery claimed with
/// that content: a broadcast's devices differ only in their language and country, so a batch of
/// 500 writes a handful of payloads instead of 500. The claim makes one per content it reads, so a
/// payload can never come from another content (a sync signal carries its own).
public final class RenderedPayloads: Sendable {
    private let payloads = Mutex<[RenderedPayloadKey: [UInt8]]>([:])

    public init() {}

    /// The payload for `key`, written by `render` the first time it is asked for. A render that
    /// throws is not kept: each delivery then fails with the same error.
    public func payload<Failure: Error>(
        for key: RenderedPayloadKey, render: () throws(Failure) -> [UInt8]
    ) throws(Failure) -> [UInt8] {
        if let known = payloads.withLock({ $0[key] }) { return known }
        let payload = try render()
        payloads.withLock { $0[key] = payload }
        return payload
    }

    /// How many payloads were written (for tests).
    public var count: Int { payloads.withLock { $0.count } }
}
