import NotifiableCore

extension Credential {
    /// The credential of `role` in the answer of `POST /admin/apps` (or `apps create --json`).
    public init(_ role: CredentialRole, ofCreatedApp created: JSONValue) {
        let pair = created[role == .device ? "device_credentials" : "server_credentials"]
        self.init(role: role, accessID: pair?["access_id"]?.stringValue ?? "", secretKey: pair?["secret_key"]?.stringValue ?? "")
    }
}
