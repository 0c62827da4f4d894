/// What the app's backend asks of a device's tags: replace them all
/// (`PUT …/tags {"tags": […]}`) or add and remove some (`PATCH …/tags {"add": […], "remove": […]}`).
public enum TagChanges: Sendable, Equatable {
    case replace([String])
    case edit(add: [String], remove: [String])

    /// The body of `PUT /api/v1/device_tokens/:id/tags`.
    public static func replacement(from body: JSONValue) throws(ValidationError) -> TagChanges {
        let object = try members(of: body, allowed: ["tags"], example: #"{"tags": ["group:beta"]}"#)
        guard let tags = object["tags"] else {
            throw ValidationError(
                code: "missing_field", message: "Give the device's new tags: {\"tags\": [...]} (an empty array removes them all).",
                field: "tags"
            )
        }
        return .replace(try DeviceTags.read(tags, path: "tags"))
    }

    /// The body of `PATCH /api/v1/device_tokens/:id/tags`.
    public static func edit(from body: JSONValue) throws(ValidationError) -> TagChanges {
        let object = try members(of: body, allowed: ["add", "remove"], example: #"{"add": ["group:beta"], "remove": ["group:alpha"]}"#)
        let add = try object["add"].map { value throws(ValidationError) in try DeviceTags.read(value, path: "add") } ?? []
        let remove = try object["remove"].map { value throws(ValidationError) in try DeviceTags.read(value, path: "remove") } ?? []
        guard !add.isEmpty || !remove.isEmpty else {
            throw ValidationError(
                code: "missing_field", message: "Say which tags to add or remove: {\"add\": [...], \"remove\": [...]}.", field: "add"
            )
        }
        if let both = add.first(where: Set(remove).contains) {
            throw ValidationError(
                code: "conflicting_tags", message: "\(DeviceTags.quoted(both)) is both added and removed; send it in one list.",
                field: "remove"
            )
        }
        return .edit(add: add, remove: remove)
    }

    /// The tags a device holding `current` ends with.
    public func applied(to current: [String]) -> [String] {
        switch self {
        case .replace(let tags): tags
        case .edit(let add, let remove): Set(current).union(add).subtracting(remove).sorted()
        }
    }

    private static func members(of body: JSONValue, allowed: Set<String>, example: String) throws(ValidationError) -> [String: JSONValue] {
        guard let object = body.objectValue else {
            throw ValidationError(code: "invalid_body", message: "The request body must be a JSON object such as \(example), not \(body.typeName).")
        }
        if let unknown = object.keys.sorted().first(where: { !allowed.contains($0) }) {
            throw ValidationError(
                code: "unknown_field",
                message: "\(unknown) is not a field here; the fields are \(allowed.sorted().joined(separator: ", ")), as in \(example).",
                field: unknown
            )
        }
        return object
    }
}
