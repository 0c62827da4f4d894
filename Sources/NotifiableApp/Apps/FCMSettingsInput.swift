import Foundation
import NIOSSL
import NotifiableCore
import NotifiableStore

/// Validates FCM settings as an operator sends them, before anything is stored (the service
/// account must parse, with an RSA private key):
/// `{"service_account": {…} or "<the JSON file's text>", "endpoint"?, "trusted_ca_pem"?}`.
public enum FCMSettingsInput {
    public static func parse(_ body: JSONValue) throws -> FCMSettings {
        let body = try AdminBody(body)
        try body.allowOnly(["service_account", "endpoint", "trusted_ca_pem"])
        let json: String
        switch body.object["service_account"] {
        case .string(let text)?: json = text
        case .object?:
            json = String(decoding: try JSONEncoder().encode(body.object["service_account"]!), as: UTF8.self)
        case nil, .null?:
            throw APIError(
                status: .unprocessableContent, code: "missing_field",
                message:
                    "service_account is required: the service-account JSON from the Firebase console (Project settings → Service accounts → Generate new private key).",
                field: "service_account")
        default:
            throw APIError(
                status: .unprocessableContent, code: "invalid_type", message: "service_account must be the service-account JSON object, or its text.",
                field: "service_account")
        }
        let account: FCMServiceAccount
        do {
            account = try FCMServiceAccount(json: json)
        } catch {
            throw APIError(
                status: .unprocessableContent, code: "invalid_service_account", message: error.message,
                field: error.field.map { "service_account.\($0)" } ?? "service_account"
            )
        }
        // What the settings table keeps in the clear, with its limits.
        for (field, value) in [("project_id", account.projectID), ("client_email", account.clientEmail)] where value.unicodeScalars.count > 255 {
            throw APIError(
                status: .unprocessableContent, code: "invalid_service_account", message: "\(field) is longer than 255 characters.",
                field: "service_account.\(field)"
            )
        }
        let endpoint = try body.string("endpoint")
        if let endpoint {
            guard let url = URL(string: endpoint), url.scheme == "https", url.host != nil, url.path.isEmpty || url.path == "/",
                url.user == nil, url.query == nil
            else {
                throw APIError(
                    status: .unprocessableContent, code: "invalid_endpoint", message: "endpoint must be an https URL such as https://127.0.0.1:4443.",
                    field: "endpoint")
            }
        }
        let ca = try body.string("trusted_ca_pem")
        if let ca {
            guard (try? NIOSSLCertificate.fromPEMBytes(Array(ca.utf8)))?.isEmpty == false else {
                throw APIError(
                    status: .unprocessableContent, code: "invalid_trusted_ca_pem", message: "trusted_ca_pem must hold a PEM certificate.",
                    field: "trusted_ca_pem")
            }
        }
        return FCMSettings(
            serviceAccountJSON: json, projectID: account.projectID, clientEmail: account.clientEmail, endpoint: endpoint, trustedCAPEM: ca
        )
    }
}
