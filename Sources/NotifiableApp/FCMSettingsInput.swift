import Foundation
import NIOSSL
import NotifiableCore
import NotifiableStore

/// Validates FCM settings as an operator sends them, before anything is stored:
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
            throw APIError(status: .unprocessableContent, code: "missing_field", message: "service_account is required: the service-account JSON from the Firebase console (Project settings → Service accounts → Generate new private key).", field: "service_account")
        default:
            throw APIError(status: .unprocessableContent, code: "invalid_type", message: "service_account must be the service-account JSON object, or its text.", field: "service_account")
        }
        guard let object = (try? JSONValue.decode(Array(json.utf8)))?.objectValue,
              case .string(let projectID)? = object["project_id"], !projectID.isEmpty,
              case .string(let clientEmail)? = object["client_email"], !clientEmail.isEmpty
        else {
            throw APIError(status: .unprocessableContent, code: "invalid_service_account", message: "service_account must hold project_id and client_email.", field: "service_account")
        }
        let endpoint = try body.string("endpoint")
        if let endpoint {
            guard let url = URL(string: endpoint), url.scheme == "https", url.host != nil, url.path.isEmpty || url.path == "/",
                  url.user == nil, url.query == nil else {
                throw APIError(status: .unprocessableContent, code: "invalid_endpoint", message: "endpoint must be an https URL such as https://127.0.0.1:4443.", field: "endpoint")
            }
        }
        let ca = try body.string("trusted_ca_pem")
        if let ca {
            guard (try? NIOSSLCertificate.fromPEMBytes(Array(ca.utf8)))?.isEmpty == false else {
                throw APIError(status: .unprocessableContent, code: "invalid_trusted_ca_pem", message: "trusted_ca_pem must hold a PEM certificate.", field: "trusted_ca_pem")
            }
        }
        return FCMSettings(serviceAccountJSON: json, projectID: projectID, clientEmail: clientEmail, endpoint: endpoint, trustedCAPEM: ca)
    }
}
