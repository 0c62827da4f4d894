/// A command that was used rightly but could not do its work (no such app, an unreadable file,
/// a database or server that does not answer): ArgumentParser prints "Error: <description>" and
/// exits 1, as sysexits and ArgumentParser mean. A mistake in the command line itself is a
/// `ValidationError`: usage and exit 64.
struct CommandFailure: Error, CustomStringConvertible {
    let description: String

    init(_ description: String) {
        self.description = description
    }
}
