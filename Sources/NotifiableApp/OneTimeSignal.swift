/// Something that happens once (the schema is migrated) and that others wait for; waiting
/// after it happened returns at once. A failure is passed to every waiter.
actor OneTimeSignal {
    private var result: Result<Void, any Error>?
    private var waiters: [CheckedContinuation<Void, any Error>] = []

    func fire(_ result: Result<Void, any Error>) {
        guard self.result == nil else { return }
        self.result = result
        for waiter in waiters { waiter.resume(with: result) }
        waiters = []
    }

    func wait() async throws {
        if let result { return try result.get() }
        try await withCheckedThrowingContinuation { waiters.append($0) }
    }
}
