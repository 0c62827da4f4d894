import ArgumentParser
import Foundation
import NotifiableCore
import NotifiableStore

struct Operators: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Manage the console's operators: owners, admins and editors of given apps, viewers.",
        subcommands: [Add.self, List.self, Update.self, OperatorKeys.self]
    )

    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Add an operator who signs in to the console with a name and password.",
            discussion: """
                The password is read from standard input (its first line) with --password-stdin, or asked for at the terminal.
                Example: printf '%s\\n' "$PASSWORD" | notifiable operators add --name ana --role editor --apps 1,3 --password-stdin
                """
        )

        @Option(help: "Sign-in name: letters, digits, '.', '_', '-' or '@'; compared without case.") var name: String
        @Option(help: "owner, admin, editor or viewer.") var role: OperatorRole
        @Option(help: "App ids an admin or editor works on, separated by commas.") var apps: String?
        @Flag(help: "Read the password from the first line of standard input.") var passwordStdin = false

        func validate() throws {
            guard OperatorName.normalized(name) != nil else {
                throw ValidationError("--name must be 1 to \(OperatorName.maxLength) letters, digits, '.', '_', '-' or '@'.")
            }
            _ = try parseAppIDs(apps, role: role)
        }

        func run() async throws {
            let name = OperatorName.normalized(name)!, role = role, appIDs = try parseAppIDs(apps, role: role)
            let hash = try PasswordHash.make(try readPassword(fromStandardInput: passwordStdin))
            let detail = ["operator": name, "role": role.rawValue, "apps": appIDs.map(String.init).joined(separator: ",")]
            let account = try await withStores(audit: CommandAudit("operators add", detail: detail)) { stores in
                do {
                    return try await OperatorStore(client: stores.client, logger: stores.apps.logger).add(
                        name: name, role: role, password: hash, appIDs: appIDs)
                } catch let refused as OperatorChangeRefused {
                    throw CommandFailure(refused.description)
                }
            }
            print("Added \(account.role.rawValue) \(account.name) (operator \(account.id)).")
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List operators: id, name, role, apps, disabled.")

        func run() async throws {
            let accounts = try await withStores { try await OperatorStore(client: $0.client, logger: $0.apps.logger).list() }
            for account in accounts {
                print(
                    "\(account.id)\t\(account.name)\t\(account.role.rawValue)\t\(account.appIDs.map(String.init).joined(separator: ","))\t"
                        + (account.disabledAt == nil ? "enabled" : "disabled"))
            }
        }
    }

    struct Update: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Change an operator's role, apps or password, or disable or enable them.")

        @Option(help: "The operator's name.") var name: String
        @Option(help: "owner, admin, editor or viewer.") var role: OperatorRole?
        @Option(help: "App ids an admin or editor works on, separated by commas.") var apps: String?
        @Flag(help: "Set a new password, read from the first line of standard input.") var passwordStdin = false
        @Flag(help: "--disable stops the operator signing in and ends their sessions; --enable lets them in again.") var access: Access?

        func run() async throws {
            let name = OperatorName.normalized(name) ?? name, role = role, apps = apps, disabled = access.map { $0 == .disable }
            let hash = passwordStdin ? try PasswordHash.make(try readPassword(fromStandardInput: true)) : nil
            var detail = ["operator": name]
            detail["role"] = role?.rawValue
            detail["apps"] = apps
            detail["access"] = access?.rawValue
            if passwordStdin { detail["password"] = "changed" }
            let account = try await withStores(audit: CommandAudit("operators update", detail: detail)) { stores -> OperatorAccount? in
                let operators = OperatorStore(client: stores.client, logger: stores.apps.logger)
                guard let current = try await operators.account(name: name) else { return nil }
                let newRole = role ?? current.role
                let appIDs = try apps.map { try parseAppIDs($0, role: newRole) } ?? (newRole.isScopedToApps ? current.appIDs : [])
                if newRole.isScopedToApps, appIDs.isEmpty { throw CommandFailure("An \(newRole.rawValue) needs --apps.") }
                do {
                    return try await operators.update(
                        id: current.id, role: newRole, appIDs: appIDs, password: hash, disabled: disabled)
                } catch let refused as OperatorChangeRefused {
                    throw CommandFailure(refused.description)
                }
            }
            guard let account else { throw CommandFailure("There is no operator named \(name).") }
            print("Operator \(account.name): \(account.role.rawValue)\(account.disabledAt == nil ? "" : ", disabled").")
        }
    }
}

extension OperatorRole: ExpressibleByArgument {}

/// `--enable` or `--disable` on `operators update`.
enum Access: String, EnumerableFlag {
    case enable, disable
}

/// `--apps 1,3` for a role: required for admins and editors, meaningless for the others.
private func parseAppIDs(_ text: String?, role: OperatorRole) throws -> [Int64] {
    let parts = (text ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
    let ids = parts.compactMap { Int64($0) }
    guard ids.count == parts.count else { throw ValidationError("--apps takes app ids separated by commas, e.g. 1,3.") }
    if role.isScopedToApps, ids.isEmpty { throw ValidationError("An \(role.rawValue) works on given apps: add --apps.") }
    if !role.isScopedToApps, !ids.isEmpty { throw ValidationError("An \(role.rawValue) acts on every app; leave out --apps.") }
    return ids
}

/// A new password: the first line of standard input, or typed twice at the terminal without echo.
private func readPassword(fromStandardInput: Bool) throws -> String {
    let password: String
    if fromStandardInput {
        guard let line = Swift.readLine(strippingNewline: true) else { throw ValidationError("--password-stdin found nothing on standard input.") }
        password = line
    } else {
        guard isatty(0) == 1 else { throw ValidationError("Give --password-stdin, or run at a terminal to be asked for the password.") }
        let first = String(cString: getpass("Password: "))
        guard String(cString: getpass("Again: ")) == first else { throw CommandFailure("The two passwords differ; nothing was changed.") }
        password = first
    }
    if let weakness = PasswordHash.weakness(of: password) { throw CommandFailure(weakness) }
    return password
}
