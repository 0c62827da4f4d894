import Foundation
import HummingbirdTesting
import NotifiableCore
import NotifiableTesting
import Testing

/// The OpenAPI document serves as a client's source: every operation has an id and documents the
/// 503 of a database outage, and a client generated from it by a maintained generator
/// (openapi-python-client) calls the running server, signing through a small hook.
@Suite struct GeneratedClientTests {
    @Test func everyOperationHasAnIDAndTheOutageAnswer() throws {
        let document = try JSONValue.decode(try Data(contentsOf: OpenAPIConformance.documentURL))
        var ids: [String] = []
        for (path, operations) in document["paths"]?.objectValue ?? [:] {
            for (method, operation) in operations.objectValue ?? [:] where ["get", "post", "put", "patch", "delete"].contains(method) {
                let id = try #require(operation["operationId"]?.stringValue, "\(method) \(path) has no operationId")
                ids.append(id)
                if path.hasPrefix("/api/") || path.hasPrefix("/admin/") {
                    #expect(
                        operation["responses"]?["503"]?["$ref"]?.stringValue == "#/components/responses/DatabaseUnavailable",
                        "\(method) \(path) does not document database_unavailable"
                    )
                }
            }
        }
        let outage = document["components"]?["responses"]?["DatabaseUnavailable"]
        #expect(outage?["headers"]?["Retry-After"] != nil)
        #expect(outage?["content"]?["application/json"]?["example"]?["error"]?["code"]?.stringValue == "database_unavailable")
        #expect(ids.count >= 50)
        #expect(Set(ids).count == ids.count, "operationIds are unique")
        let notification = document["paths"]?["/api/v1/notifications"]?["post"]?["requestBody"]?["content"]?["application/json"]?["example"]
        #expect(notification != nil, "the main operations carry examples")
    }

    @Test func aClientGeneratedFromTheDocumentCallsTheServer() async throws {
        let python = try #require(ProcessInfo.processInfo.environment["NOTIFIABLE_OPENAPI_PYTHON"], "scripts/test sets NOTIFIABLE_OPENAPI_PYTHON")
        let script = TestDatabase.migrationsDirectory.deletingLastPathComponent().appendingPathComponent("Tests/GeneratedClient/check.py")
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("generated-client-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: work) }
        try await withTestService(.live) { client, service in
            let app = try await service.createApp()
            let base = "http://127.0.0.1:\(try #require(client.port))"
            let (status, output) = try await runProgram(
                URL(fileURLWithPath: python),
                [
                    script.path, base, app.deviceCredential.accessID, app.deviceCredential.secretKey,
                    app.serverCredential.accessID, app.serverCredential.secretKey, work.path,
                ])
            #expect(status == 0, "\(output)")
            #expect(output.contains("generated client: ok"), "\(output)")
        }
    }
}
