import Foundation
import NIOSSL
import NotifiableCore
import NotifiableDelivery
import NotifiableStore

/// Validates APNs settings as an operator sends them, before anything is stored: the key must
/// be a P-256 `.p8`, the endpoint an https URL, the CA a PEM certificate.
public enum APNsSettingsInput {
    public static func parse(_ body: JSONValue) throws -> APNsSettings {
        guard let object = body.objectValue else {
            throw APIError(status: .unprocessableContent, code: "invalid_body", message: "The body must be a JSON object.")
        }
        func string(_ key: String, required: Bool = true) throws -> String? {
            switch object[key] {
            case .string(let value)? where !value.isEmpty: return value
            case nil, .null?, .string?:
                if required { throw APIError(status: .unprocessableContent, code: "missing_field", message: "\(key) is required.", field: key) }
                return nil
            default: throw APIError(status: .unprocessableContent, code: "invalid_type", message: "\(key) must be a string.", field: key)
            }
        }
        func identifier(_ key: String) throws -> String {
            let value = try string(key)!
            guard value.count <= 32, value.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber) }) else {
                throw APIError(
                    status: .unprocessableContent, code: "invalid_\(key)", message: "\(key) is the 10-character id Apple shows (letters and digits).",
                    field: key)
            }
            return value
        }
        let keyID = try identifier("key_id")
        let teamID = try identifier("team_id")
        let bundleID = try string("bundle_id")!
        guard bundleID.unicodeScalars.count <= 255, bundleID.unicodeScalars.allSatisfy({ $0.isASCII && $0.value > 0x20 && $0.value < 0x7F }) else {
            throw APIError(
                status: .unprocessableContent, code: "invalid_bundle_id", message: "bundle_id is the app's bundle identifier, e.g. com.example.app.",
                field: "bundle_id")
        }
        let key = try string("private_key")!
        do {
            _ = try APNsJWT.privateKey(fromP8: key)
        } catch {
            throw APIError(status: .unprocessableContent, code: "invalid_private_key", message: "private_key: \(error)", field: "private_key")
        }
        let environmentName = try string("environment", required: false) ?? "production"
        guard let environment = APNsSettings.Environment(rawValue: environmentName) else {
            throw APIError(status: .unprocessableContent, code: "invalid_environment", message: "environment is production or sandbox.", field: "environment")
        }
        func endpointURL(_ key: String) throws -> String? {
            guard let endpoint = try string(key, required: false) else { return nil }
            guard let url = URL(string: endpoint), url.scheme == "https", url.host != nil, url.path.isEmpty || url.path == "/",
                url.user == nil, url.query == nil, (try? HTTP2Client.validate(baseURL: endpoint)) != nil
            else {
                throw APIError(
                    status: .unprocessableContent, code: "invalid_endpoint", message: "\(key) must be an https URL such as https://127.0.0.1:2197.",
                    field: key)
            }
            return endpoint
        }
        let endpoint = try endpointURL("endpoint")
        let sandboxEndpoint = try endpointURL("sandbox_endpoint")
        let ca = try string("trusted_ca_pem", required: false)
        if let ca {
            guard (try? NIOSSLCertificate.fromPEMBytes(Array(ca.utf8)))?.isEmpty == false else {
                throw APIError(
                    status: .unprocessableContent, code: "invalid_trusted_ca_pem", message: "trusted_ca_pem must hold a PEM certificate.",
                    field: "trusted_ca_pem")
            }
        }
        return APNsSettings(
            keyID: keyID, teamID: teamID, bundleID: bundleID, privateKeyPEM: key, environment: environment,
            endpoint: endpoint, trustedCAPEM: ca, sandboxEndpoint: sandboxEndpoint
        )
    }
}
