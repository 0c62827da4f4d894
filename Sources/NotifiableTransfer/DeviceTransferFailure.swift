/// An import or export that could not do its work: an unreadable or malformed file, a file that
/// cannot be written, a checkpoint of another import, an app that does not exist. The message
/// says what to do; the command line prints it and exits 1.
public struct DeviceTransferFailure: Error, CustomStringConvertible, Equatable {
    public let description: String

    init(_ description: String) {
        self.description = description
    }
}
