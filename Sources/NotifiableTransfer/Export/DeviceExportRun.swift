import Foundation
import Logging
import NotifiableStore
import PostgresNIO

/// One run of `devices export`: an app's reachable devices, in keyset pages of id order, so
/// memory stays one page whatever the app's size.
public struct DeviceExportRun: Sendable {
    let appID: Int64
    let format: DeviceFileFormat
    /// Nil writes to standard output.
    let output: String?
    let pageSize: Int

    public init(appID: Int64, format: DeviceFileFormat, output: String?, pageSize: Int = 5000) {
        self.appID = appID
        self.format = format
        self.output = output
        self.pageSize = pageSize
    }

    /// Writes the devices; returns how many.
    public func run(client: Database, apps: AppStore) async throws -> Int {
        guard try await apps.app(id: appID) != nil else { throw DeviceTransferFailure("There is no app \(appID).") }
        let registry = DeviceStore(client: client, logger: .init(label: "notifiable.export"))
        var sink = try ExportSink(path: output)
        if format == .csv { sink.append(DeviceExportText.csvHeader) }
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
}
