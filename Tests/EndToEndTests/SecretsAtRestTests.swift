import Crypto
import Foundation
import HummingbirdTesting
import NotifiableCore
import NotifiableSandbox
import NotifiableStore
import NotifiableTesting
import Testing
import _CryptoExtras

/// Secrets (credential secret keys, APNs .p8 keys, FCM private keys) are stored only encrypted
/// and never logged: not in a `pg_dump` of the database, not in anything the service logs at
/// trace level while they are uploaded and used to send.
@Suite struct SecretsAtRestTests {
    @Test func secretsAppearNeitherInTheDatabaseDumpNorInTheLogs() async throws {
        let capture = LogCapture()
        try await withFakeFCM { fcmGateway in
            try await withFakeAPNs { gateway in
                try await withTestService(workers: true, logger: capture.logger()) { client, service in
                    let app = try await service.createApp()
                    let apnsKey = P256.Signing.PrivateKey()
                    gateway.trust(teamID: "TEAM123456", keyID: "KEY1234567", publicKey: apnsKey.publicKey)
                    let apns: JSONValue = .object([
                        "key_id": .string("KEY1234567"), "team_id": .string("TEAM123456"), "bundle_id": .string("com.example.app"),
                        "private_key": .string(apnsKey.pemRepresentation), "environment": .string("sandbox"),
                        "endpoint": .string(gateway.baseURL), "trusted_ca_pem": .string(gateway.certificatePEM),
                    ])
                    let uploaded = try await client.admin(.put, "/admin/apps/\(app.app.id)/apns", body: Self.text(apns), service: service)
                    #expect(uploaded.status == .ok)

                    let account = try fcmGateway.makeServiceAccount(projectID: "secret-project")
                    let fcmPEM = try #require(try JSONValue.decode(Array(account.utf8))["private_key"]?.stringValue)
                    let fcmUpload = try await client.admin(
                        .put, "/admin/apps/\(app.app.id)/fcm",
                        body: Self.text(
                            .object([
                                "service_account": .string(account), "endpoint": .string(fcmGateway.baseURL),
                                "trusted_ca_pem": .string(fcmGateway.certificatePEM),
                            ])),
                        service: service
                    )
                    #expect(fcmUpload.status == .ok, "\(String(buffer: fcmUpload.body))")

                    // Use both keys: sign an APNs JWT and an FCM assertion, and send.
                    let token = String(repeating: "5e", count: 32)
                    _ = try await Pipeline.register(client, app.deviceCredential, token: token, alias: "alice")
                    _ = try await Pipeline.register(
                        client, app.deviceCredential, provider: "fcm", token: "android-secret-test", alias: "alice")
                    let id = try await Pipeline.send(client, app.serverCredential, #"{"message": "secret test", "user_aliases": ["alice"]}"#)
                    #expect(try await Pipeline.settled(service, id))
                    #expect(gateway.pushes(to: token).count == 1)
                    #expect(fcmGateway.messages(to: "android-secret-test").count == 1)

                    let secrets: [(String, [String])] = [
                        ("APNs .p8 key", Self.fingerprints(pem: apnsKey.pemRepresentation, der: apnsKey.derRepresentation)),
                        ("FCM private key", Self.fingerprints(pem: fcmPEM, der: try _RSA.Signing.PrivateKey(pemRepresentation: fcmPEM).derRepresentation)),
                        ("server secret key", [app.serverCredential.secretKey, Self.hex(Data(base64Encoded: app.serverCredential.secretKey)!)]),
                        ("device secret key", [app.deviceCredential.secretKey]),
                    ]
                    let dump = try await Self.pgDump(service.configuration.databaseURL)
                    #expect(dump.contains("apns_settings"), "the dump is not of the service's database")
                    #expect(dump.contains("KEY1234567"), "the dump does not hold the APNs settings")
                    let logs = capture.text
                    #expect(capture.count > 10, "nothing was logged, so nothing was checked")
                    for (name, fingerprints) in secrets {
                        for fingerprint in fingerprints {
                            #expect(!dump.contains(fingerprint), "the \(name) is in the database dump")
                            #expect(!logs.contains(fingerprint), "the \(name) is in the logs")
                        }
                    }
                }
            }
        }
    }

    static func text(_ value: JSONValue) -> String {
        String(decoding: try! JSONEncoder().encode(value), as: UTF8.self)
    }

    /// Pieces of a key that would show if it leaked in any form: each line of its PEM body, and
    /// its DER bytes in hex (how pg_dump writes bytea) in 32-byte windows.
    static func fingerprints(pem: String, der: Data) -> [String] {
        let lines = pem.split(separator: "\n").filter { !$0.hasPrefix("-----") && $0.count >= 32 }.map(String.init)
        let bytes = Array(der)
        let windows = stride(from: 0, to: max(1, bytes.count - 32), by: 32).map { hex(Data(bytes[$0..<min(bytes.count, $0 + 32)])) }
        return lines + windows
    }

    static func hex(_ data: Data) -> String { data.map { String(format: "%02x", $0) }.joined() }

    /// The database as `pg_dump` writes it (plain SQL: schema and every row).
    static func pgDump(_ url: String) async throws -> String {
        let (status, dump) = try await runProgram(TestDatabase.clientProgram("pg_dump"), ["--dbname=\(url)", "--no-owner"])
        #expect(status == 0, "\(dump)")
        return dump
    }
}
