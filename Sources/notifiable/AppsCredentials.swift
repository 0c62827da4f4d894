import ArgumentParser
import Foundation
import NotifiableApp
import NotifiableCore
import NotifiableStore

extension Apps {
    struct RotateCredentials: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "rotate-credentials",
            abstract: "Make a new device or server credential pair; the old one keeps working for a grace period."
        )

        @Option(help: "The app's id.") var app: Int64
        @Option(help: "device or server.") var role: CredentialRole
        @Option(help: "Hours the old pair keeps working (0 ends it now).") var graceHours: Double = 24
        @Flag(help: "Print exactly one JSON object.") var json = false

        func validate() throws {
            guard graceHours >= 0, graceHours <= 366 * 24 else { throw ValidationError("--grace-hours must be 0 to \(366 * 24).") }
        }

        func run() async throws {
            let id = app, role = role, grace = Duration.seconds(graceHours * 3600)
            guard
                let rotation = try await withStores(
                    audit: CommandAudit("apps rotate-credentials", appID: id), { try await $0.apps.rotate(appID: id, role: role, grace: grace) })
            else {
                throw CommandFailure("There is no app \(id).")
            }
            if json {
                print(AdminJSON.rotation(rotation))
                return
            }
            print(
                """
                New \(role.rawValue) credentials for app \(id) (the secret key is shown only now):
                  access id   \(rotation.credential.accessID)
                  secret key  \(rotation.credential.secretKey)
                """)
            for old in rotation.previous {
                print("  \(old.accessID) keeps working until \(old.expiresAt.map { $0.formatted(.iso8601) } ?? "-")")
            }
        }
    }

    struct RevokeCredential: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "revoke-credential", abstract: "End one credential now (a finished grace period, or a leaked secret)."
        )

        @Option(help: "The app's id.") var app: Int64
        @Option(help: "The credential's access id.") var accessID: String

        func run() async throws {
            let id = app, accessID = accessID
            guard try await withStores(audit: CommandAudit("apps revoke-credential", appID: id), { try await $0.apps.revoke(appID: id, accessID: accessID) })
            else {
                throw CommandFailure("App \(id) has no working credential \(accessID).")
            }
            print("Revoked \(accessID).")
        }
    }
}
