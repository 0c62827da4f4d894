import NotifiableCore

/// Bounds the sends in flight to FCM at the streams the transport's connections carry (Google's front ends allow
/// 100 concurrent streams on a connection). The HTTP/2 client queues what its connections cannot carry with the
/// request's deadline running: a send that waited its whole deadline for a stream was never sent, yet it counted
/// as a failed attempt. Under a partial outage (requests FCM never answers hold their streams until the
/// deadline) that sent healthy deliveries to dead. Waiting here instead costs time, not attempts.
enum FCMStreamPermits {
    static let streamsPerConnection = 100
    static let defaultLimit = streamsPerConnection * GatewayHTTPTransport.defaultConnectionsPerOrigin

    static func make(limit: Int = defaultLimit) -> Permits { Permits(limit: limit) }
}
