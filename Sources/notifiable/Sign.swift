import ArgumentParser
import Foundation
import NotifiableCore

/// Options shared by the commands that sign requests as a client would.
struct SigningOptions: ParsableArguments {
    @Option(help: "Access id (default: NOTIFIABLE_ACCESS_ID).") var accessID: String?
    @Option(help: "Secret key (default: NOTIFIABLE_SECRET_KEY).") var secretKey: String?
    @Option(name: .customLong("as"), help: "Sign with the app's device or server credentials, read from --app-file.") var role: CredentialRole?
    @Option(help: "The JSON that `notifiable apps create --json` printed (default: NOTIFIABLE_APP_FILE).") var appFile: String?
    @Flag(help: "Sign with HMAC-SHA256 instead of the SDKs' HMAC-SHA1.") var sha256 = false

    func credentials() throws -> (accessID: String, secretKey: String) {
        let environment = ProcessInfo.processInfo.environment
        if let role {
            guard let path = appFile ?? environment["NOTIFIABLE_APP_FILE"], !path.isEmpty else {
                throw ValidationError("--as needs --app-file or NOTIFIABLE_APP_FILE: the JSON `notifiable apps create --json` printed.")
            }
            let pair = (try? JSONValue.decode(Array(readFile(path, option: "--app-file").utf8)))?.objectValue?["\(role.rawValue)_credentials"]?.objectValue
            guard case .string(let accessID)? = pair?["access_id"], case .string(let secretKey)? = pair?["secret_key"] else {
                throw ValidationError("\(path) has no \(role.rawValue)_credentials; give the file `notifiable apps create --json` printed.")
            }
            return (accessID, secretKey)
        }
        guard let accessID = accessID ?? environment["NOTIFIABLE_ACCESS_ID"], !accessID.isEmpty else {
            throw ValidationError("Pass --access-id or set NOTIFIABLE_ACCESS_ID.")
        }
        guard let secretKey = secretKey ?? environment["NOTIFIABLE_SECRET_KEY"], !secretKey.isEmpty else {
            throw ValidationError("Pass --secret-key or set NOTIFIABLE_SECRET_KEY.")
        }
        return (accessID, secretKey)
    }

    /// The signing headers; a POST, PUT or PATCH covers its body with X-Authorization-Content-SHA256,
    /// as the api_auth gem does and server credentials must (any credential may).
    func headers(method: String, path: String, body: Data) throws -> [(name: String, value: String)] {
        let (accessID, secretKey) = try credentials()
        let method = method.uppercased()
        return APIAuth.signedHeaders(
            method: method, path: path, body: body, accessID: accessID, secretKey: secretKey,
            date: Int64(Date().timeIntervalSince1970), algorithm: sha256 ? .hmacSHA256 : .hmacSHA1,
            bodyHash: APIAuth.methodsWithBody.contains(method) ? .sha256 : nil
        )
    }
}

struct Sign: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print the headers that sign a request (Date, Content-Type, Authorization, and for POST, PUT and PATCH "
            + "X-Authorization-Content-SHA256 of the body), one per line."
    )

    @Argument(help: "HTTP method, e.g. POST.") var method: String
    @Argument(help: "Request path, e.g. /api/v1/device_tokens.") var path: String
    @Option(help: "The exact body that will be sent (its SHA-256 is signed).") var data: String?
    @Option(help: "A file holding the exact body that will be sent.") var dataFile: String?
    @OptionGroup var signing: SigningOptions

    func validate() throws {
        if data != nil, dataFile != nil { throw ValidationError("Give --data or --data-file, not both.") }
    }

    func run() async throws {
        var body = Data((data ?? "").utf8)
        if let dataFile {
            guard let bytes = FileManager.default.contents(atPath: dataFile) else { throw CommandFailure("--data-file: cannot read \(dataFile).") }
            body = bytes
        }
        for header in try signing.headers(method: method, path: path, body: body) {
            print("\(header.name): \(header.value)")
        }
    }
}
