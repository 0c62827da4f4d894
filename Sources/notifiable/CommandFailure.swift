/// A command that was used rightly but could not do its work (no such app, an unreadable file,
/// a database or server that does not answer): ArgumentParser prints "Error: <description>" and
/// exits 1 (`ExitCode.failure`, C's EXIT_FAILURE). A mistake in the command line itself is a
/// `ValidationError`: usage and exit 64 (ArgumentParser's `ExitCode.validationFailure`, sysexits'
/// EX_USAGE). The finer sysexits codes (66 for a missing input, 69 for an unavailable service) are
/// not used: scripts test for non-zero, and ArgumentParser's two are what its users expect.
struct CommandFailure: Error, CustomStringConvertible {
    let description: String

    init(_ description: String) {
        self.description = description
    }
}
