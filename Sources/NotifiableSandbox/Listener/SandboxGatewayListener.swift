import Foundation
import Logging
import NIOCore
import NIOPosix
import NIOSSL
import Synchronization

/// The listening side shared by the fake gateways: event loops, a bound socket, and on each accepted connection the
/// ``SandboxGatewayConnectionDropper`` under TLS with the process's self-signed certificate. What runs above TLS is the
/// gateway's business (`configureConnection`), so that each fake speaks its own protocol over the same plumbing.
final class SandboxGatewayListener: Sendable {
    /// The port bound (the one asked for, or the one picked for port 0).
    let port: Int
    /// The self-signed certificate (PEM) the connections present.
    let certificatePEM: String

    private let group: MultiThreadedEventLoopGroup
    private let channel: any Channel
    private let stopped = Mutex(false)
    private let accepted: AcceptedConnections

    /// TCP connections accepted so far (before TLS): whether a client ever reached the listener at all.
    var connectionsAccepted: Int { accepted.count.withLock { $0 } }

    final class AcceptedConnections: Sendable {
        let count = Mutex(0)
    }

    private init(port: Int, certificatePEM: String, group: MultiThreadedEventLoopGroup, channel: any Channel, accepted: AcceptedConnections) {
        self.port = port
        self.certificatePEM = certificatePEM
        self.group = group
        self.channel = channel
        self.accepted = accepted
    }

    /// Binds `host:port` and serves TLS with ALPN offering `applicationProtocols`, in order of preference.
    /// - Parameters:
    ///   - name: the gateway's name, for errors.
    ///   - configureConnection: adds the protocol handlers above TLS to a new connection; runs on its event loop.
    static func start(
        host: String,
        port: Int,
        threads: Int,
        applicationProtocols: [String],
        name: String,
        configureConnection: @escaping @Sendable (any Channel) -> EventLoopFuture<Void>
    ) async throws -> SandboxGatewayListener {
        let certificate = try await SelfSignedCertificate.shared(for: host)
        var tls = TLSConfiguration.makeServerConfiguration(
            certificateChain: try NIOSSLCertificate.fromPEMBytes(Array(certificate.certificatePEM.utf8)).map { .certificate($0) },
            privateKey: .privateKey(try NIOSSLPrivateKey(bytes: Array(certificate.privateKeyPEM.utf8), format: .pem))
        )
        tls.applicationProtocols = applicationProtocols
        let sslContext = try NIOSSLContext(configuration: tls)

        let group = MultiThreadedEventLoopGroup(numberOfThreads: max(1, threads))
        let accepted = AcceptedConnections()
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 256)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { channel in
                accepted.count.withLock { $0 += 1 }
                do {
                    let pipeline = channel.pipeline.syncOperations
                    try pipeline.addHandler(SandboxGatewayConnectionDropper())
                    try pipeline.addHandler(NIOSSLServerHandler(context: sslContext))
                } catch {
                    return channel.eventLoop.makeFailedFuture(error)
                }
                return configureConnection(channel)
            }
        let channel: any Channel
        do {
            channel = try await bootstrap.bind(host: host, port: port).get()
        } catch {
            try? await group.shutdownGracefully()
            throw error
        }
        guard let boundPort = channel.localAddress?.port else {
            try? await channel.close()
            try? await group.shutdownGracefully()
            throw SandboxGatewayError("The \(name) has no local port.")
        }
        return SandboxGatewayListener(
            port: boundPort, certificatePEM: certificate.certificatePEM, group: group, channel: channel, accepted: accepted
        )
    }

    /// Stops listening and closes every connection; returns false (and does nothing) when already stopped.
    @discardableResult
    func stop() async throws -> Bool {
        let alreadyStopped = stopped.withLock { stopped in
            defer { stopped = true }
            return stopped
        }
        guard !alreadyStopped else { return false }
        try? await channel.close()
        try await group.shutdownGracefully()
        return true
    }

    /// `https://HOST:PORT`, with an IPv6 host in brackets.
    static func baseURL(host: String, port: Int) -> String {
        let shownHost = host.contains(":") ? "[\(host)]" : host
        return "https://\(shownHost):\(port)"
    }
}
