import NIOCore
import NIOPosix

/// A TCP port on loopback that accepts connections and never answers: a server that hangs, for
/// tests of timeouts (a refused port fails at once and proves nothing about them).
public final class SilentListener: Sendable {
    private let channel: any Channel
    public let port: Int

    private init(channel: any Channel, port: Int) {
        self.channel = channel
        self.port = port
    }

    public static func start() async throws -> SilentListener {
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .childChannelInitializer { channel in channel.eventLoop.makeSucceededVoidFuture() }
            .bind(host: "127.0.0.1", port: 0).get()
        return SilentListener(channel: channel, port: channel.localAddress?.port ?? 0)
    }

    public func stop() async throws {
        try await channel.close()
    }
}
