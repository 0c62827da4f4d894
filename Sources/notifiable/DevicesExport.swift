import ArgumentParser
import Foundation
import NotifiableCore
import NotifiableStore

extension Devices {
    struct Export: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Write an app's reachable devices as CSV or JSON lines, in the shape devices import reads.",
            discussion: "Devices that were unregistered, merged away or whose token a gateway reported dead are left out."
        )

        @Option(help: "The app's id.") var app: Int64
        @Option(help: "csv or jsonl (default: from --output's extension, else csv).") var format: DeviceFileFormat?
        @Option(help: "Write here instead of standard output.") var output: String?
        @Option(help: .hidden) var pageSize = 5000

        func run() async throws {
            let format = format ?? output.flatMap(DeviceFileFormat.init(fileName:)) ?? .csv
            let (appID, output, pageSize) = (app, output, pageSize)
            let count = try await withStores { stores -> Int in
                guard try await stores.apps.app(id: appID) != nil else { throw CommandFailure("There is no app \(appID).") }
                let registry = DeviceRegistry(client: stores.client, logger: .init(label: "notifiable.export"))
                var sink = try ExportSink(path: output)
                if format == .csv { sink.append(DeviceExportText.csvHeader) }
                // Keyset pages in id order: memory stays one page, whatever the app's size.
                var after: Int64 = 0, count = 0
                while true {
                    let page = try await registry.exportPage(appID: appID, afterID: after, limit: pageSize)
                    for device in page {
                        sink.append(format == .csv ? DeviceExportText.csv(device) : DeviceExportText.jsonLine(device))
                    }
                    try sink.flush(force: false)
                    count += page.count
                    guard let last = page.last, page.count == pageSize else { break }
                    after = last.id
                }
                try sink.flush(force: true)
                return count
            }
            FileHandle.standardError.write(Data("Exported \(count) devices.\n".utf8))
        }
    }
}

/// Buffered output to a file or standard output.
struct ExportSink {
    private let handle: FileHandle
    private var buffer = Data()

    init(path: String?) throws {
        if let path {
            guard FileManager.default.createFile(atPath: path, contents: nil) else { throw CommandFailure("Cannot write \(path): check that its folder exists and is writable.") }
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

/// Devices as export lines; the columns and keys are those `devices import` reads.
enum DeviceExportText {
    static let csvHeader = "token,provider,user_alias,language,country,custom_properties,name,tags"

    static func csv(_ device: ExportedDevice) -> String {
        let custom = device.customProperties == "{}" ? "" : device.customProperties
        // Tags hold no spaces, so one cell holds them all, space-separated.
        return [
            device.token, device.provider.rawValue, device.userAlias ?? "", device.language ?? "", device.country ?? "", custom,
            device.name ?? "", device.tags.joined(separator: " "),
        ].map(csvField).joined(separator: ",")
    }

    /// Quoted when it holds a comma, quote, line break or edge spaces (RFC 4180).
    static func csvField(_ value: String) -> String {
        let needsQuotes = value.contains { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" }
            || value.first == " " || value.last == " "
        return needsQuotes ? "\"" + value.replacingOccurrences(of: "\"", with: "\"\"") + "\"" : value
    }

    static func jsonLine(_ device: ExportedDevice) -> String {
        var object: [String: JSONValue] = ["token": .string(device.token), "provider": .string(device.provider.rawValue)]
        if let alias = device.userAlias { object["user_alias"] = .string(alias) }
        if let language = device.language { object["language"] = .string(language) }
        if let country = device.country { object["country"] = .string(country) }
        if let name = device.name { object["name"] = .string(name) }
        if !device.tags.isEmpty { object["tags"] = .array(device.tags.map(JSONValue.string)) }
        if let custom = try? JSONValue.decode(Array(device.customProperties.utf8)), custom != .object([:]) {
            object["custom_properties"] = custom
        }
        return JSONValue.object(object).jsonText()
    }
}
