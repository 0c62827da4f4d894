extension SandboxAPNsGateway {
    /// Removes and returns the accepted push answered with this `apns-id` (a sandbox stores what
    /// it sent, then forgets it, so memory stays flat however long it runs).
    public func takePush(apnsID: String) -> AcceptedPush? {
        rules.state.withLock { state in
            guard let index = state.accepted.lastIndex(where: { $0.apnsID.caseInsensitiveCompare(apnsID) == .orderedSame }) else {
                return nil
            }
            return state.accepted.remove(at: index)
        }
    }
}
