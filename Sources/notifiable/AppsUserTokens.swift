import ArgumentParser
import NotifiableApp

extension Apps {
    struct RotateUserTokenKey: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "rotate-user-token-key",
            abstract: "Revoke every user token the app has minted, at once; tokens minted from now on work."
        )

        @Option(help: "The app's id.") var app: Int64
        @Flag(help: "Print exactly one JSON object, as POST /admin/apps/:id/user_tokens/rotate answers.") var json = false

        func run() async throws {
            let id = app
            guard
                let policy = try await withStores(
                    audit: CommandAudit("apps rotate-user-token-key", appID: id), { try await $0.userTokens.rotateKey(appID: id) })
            else {
                throw CommandFailure("There is no app \(id).")
            }
            print(
                json
                    ? AdminJSON.userTokenRotation(policy)
                    : "App \(id) signs user tokens with key generation \(policy.generation); every token minted before is revoked.")
        }
    }
}
