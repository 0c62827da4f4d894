import Foundation

/// Buffered output to a file or standard output.
struct ExportSink {
    private let handle: FileHandle
    private var buffer = Data()

    init(path: String?) throws {
        if let path {
            guard FileManager.default.createFile(atPath: path, contents: nil) else {
                throw DeviceTransferFailure("Cannot write \(path): check that its folder exists and is writable.")
            }
            handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        } else {
            handle = FileHandle.standardOutput
        }
    }

    mutating func append(_ line: String) {
        buffer.append(contentsOf: line.utf8)
        buffer.append(UInt8(ascii: "\n"))
    }

    mutating func flush(force: Bool) throws {
        guard force || buffer.count >= 256 * 1024 else { return }
        try handle.write(contentsOf: buffer)
        buffer.removeAll(keepingCapacity: true)
    }
}
