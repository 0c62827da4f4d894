import Dispatch
import Foundation

/// Waits for SIGINT or SIGTERM and returns which one came.
func waitForTerminationSignal() async -> Int32 {
    let signals: [Int32] = [SIGINT, SIGTERM]
    let stream = AsyncStream<Int32> { continuation in
        let sources = signals.map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { continuation.yield(number) }
            source.resume()
            return source
        }
        let box = SignalSources(sources)
        continuation.onTermination = { _ in box.cancel() }
    }
    for await number in stream { return number }
    return SIGTERM
}

/// Keeps the signal sources alive until the wait ends.
private final class SignalSources: @unchecked Sendable {
    private let sources: [any DispatchSourceSignal]

    init(_ sources: [any DispatchSourceSignal]) {
        self.sources = sources
    }

    func cancel() {
        for source in sources { source.cancel() }
    }
}
