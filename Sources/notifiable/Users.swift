import ArgumentParser
import Foundation
import NotifiableApp
import NotifiableCore

struct Users: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "A person's data: export it, erase it, and check whether an alias was erased.",
        subcommands: [Export.self, Erase.self, Erased.self]
    )

    struct Person: ParsableArguments {
        @Option(help: "The app's id.") var app: Int64
        @Option(help: "The user alias, as the app registered it.") var alias: String

        func validate() throws {
            if let problem = UserAlias.problem(alias) { throw ValidationError("--alias \(problem).") }
        }
    }

    struct Export: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Write everything the app holds about a person as one JSON document (to standard output, or --output FILE).")

        @OptionGroup var person: Person
        @Option(help: "A file to write instead of standard output (made readable by its owner only).") var output: String?

        func run() async throws {
            let (app, alias, output) = (person.app, person.alias, output)
            let handle: FileHandle
            if let output {
                guard FileManager.default.createFile(atPath: output, contents: nil, attributes: [.posixPermissions: 0o600]),
                    let file = FileHandle(forWritingAtPath: output)
                else { throw CommandFailure("Cannot write \(output).") }
                handle = file
            } else {
                handle = FileHandle.standardOutput
            }
            try await withStores { stores in
                guard try await stores.apps.app(id: app) != nil else { throw CommandFailure("There is no app \(app).") }
                let personalData = PersonalData(client: stores.client, keys: stores.configuration.keys, logger: stores.logger)
                try await personalData.export(alias: alias, appID: app, in: try personalData.reserveExport()) { handle.write(Data($0.utf8)) }
            }
            try handle.close()
        }
    }

    struct Erase: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Erase a person: every device that has or ever had the alias becomes anonymous, and their history, stateful notifications and copies go. Counters stay."
        )

        @OptionGroup var person: Person
        @Flag(help: "Print exactly one JSON object.") var json = false

        func run() async throws {
            let (app, alias) = (person.app, person.alias)
            let erased = try await withStores { stores in
                guard try await stores.apps.app(id: app) != nil else { throw CommandFailure("There is no app \(app).") }
                let personalData = PersonalData(client: stores.client, keys: stores.configuration.keys, logger: stores.logger)
                return try await personalData.erase(
                    alias: alias, appID: app,
                    by: PersonalData.Requester(actor: CommandAudit.actor, channel: .cli, origin: ProcessInfo.processInfo.hostName),
                    logger: stores.logger)
            }
            let counts = try JSONDecoder().decode([String: Int64].self, from: JSONEncoder().encode(erased))
            if json {
                let encoder = JSONEncoder()
                encoder.outputFormatting = .sortedKeys
                print(String(decoding: try encoder.encode(["erased": counts]), as: UTF8.self))
            } else {
                print(erased.isEmpty ? "The app held nothing about this alias." : "Erased:")
                for (kind, count) in counts.sorted(by: { $0.key < $1.key }) where count > 0 {
                    print("  \(kind.replacingOccurrences(of: "_", with: " ")): \(count)")
                }
            }
        }
    }

    struct Erased: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Say whether and when an alias was erased from an app (from the audit log, which keeps only a keyed digest).")

        @OptionGroup var person: Person

        func run() async throws {
            let (app, alias) = (person.app, person.alias)
            let entries = try await withStores { stores in
                try await PersonalData(client: stores.client, keys: stores.configuration.keys, logger: stores.logger).erasures(of: alias, appID: app)
            }
            guard !entries.isEmpty else {
                print("No erasure of this alias from app \(app) is in the audit log.")
                throw ExitCode(1)
            }
            for entry in entries {
                print("Erased \(entry.at?.formatted(.iso8601) ?? "?") by \(entry.actor) (\(entry.channel.rawValue))")
            }
        }
    }
}
