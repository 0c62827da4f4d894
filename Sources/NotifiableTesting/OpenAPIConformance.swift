import Foundation
import NotifiableCore

/// The service's OpenAPI document, read from the source tree, and a check of real answers
/// against it: the operation (path template and method) must be there, the status among its
/// responses, and the body must satisfy the response's schema (the subset of JSON Schema the
/// document uses: type, properties, required, additionalProperties, items, enum, oneOf, allOf, $ref).
public struct OpenAPIConformance: Sendable {
    public let document: JSONValue

    public static var documentURL: URL {
        TestDatabase.migrationsDirectory.deletingLastPathComponent()
            .appendingPathComponent("Sources/NotifiableApp/OpenAPI/openapi.json")
    }

    public init() throws {
        document = try JSONValue.decode(Array(try Data(contentsOf: Self.documentURL)))
    }

    /// Every documented operation as "METHOD /path/{param}".
    public var operations: Set<String> {
        var result: Set<String> = []
        for (path, item) in document["paths"]?.objectValue ?? [:] {
            for method in (item.objectValue ?? [:]).keys { result.insert("\(method.uppercased()) \(path)") }
        }
        return result
    }

    /// The documented path template a concrete path (without query) matches.
    public func template(for path: String) -> String? {
        let parts = path.split(separator: "/", omittingEmptySubsequences: false)
        let templates = (document["paths"]?.objectValue ?? [:]).keys.sorted()
        // Literal segments win over parameters, as in the router.
        let matching = templates.filter { template in
            let pattern = template.split(separator: "/", omittingEmptySubsequences: false)
            return pattern.count == parts.count && zip(pattern, parts).allSatisfy { $0.hasPrefix("{") || $0 == $1 }
        }
        return matching.min { $0.filter { $0 == "{" }.count < $1.filter { $0 == "{" }.count }
    }

    /// What is wrong with this answer by the document; empty when nothing is.
    public func problems(method: String, path: String, status: Int, body: [UInt8]) -> [String] {
        let bare = String(path.split(separator: "?", maxSplits: 1).first ?? "")
        guard let template = template(for: bare) else { return ["\(method) \(bare): no documented path"] }
        guard let operation = document["paths"]?[template]?[method.lowercased()] else {
            return ["\(method) \(template): not documented"]
        }
        guard let documented = operation["responses"]?[String(status)] else {
            return ["\(method) \(template): status \(status) not documented"]
        }
        let response = resolveResponse(documented)
        guard let schema = response["content"]?["application/json"]?["schema"] else {
            return body.isEmpty || response["content"] != nil ? [] : ["\(method) \(template) \(status): a body where none is documented"]
        }
        guard let value = try? JSONValue.decode(body) else { return ["\(method) \(template) \(status): body is not JSON"] }
        return validate(value, against: schema, at: "\(method) \(template) \(status) body")
    }

    /// A response given by reference (`#/components/responses/…`), as the shared 503 is.
    private func resolveResponse(_ response: JSONValue) -> JSONValue {
        guard let reference = response["$ref"]?.stringValue, reference.hasPrefix("#/components/responses/") else { return response }
        return document["components"]?["responses"]?[String(reference.dropFirst("#/components/responses/".count))] ?? .object([:])
    }

    private func resolve(_ schema: JSONValue) -> JSONValue {
        guard let reference = schema["$ref"]?.stringValue, reference.hasPrefix("#/components/schemas/") else { return schema }
        return resolve(document["components"]?["schemas"]?[String(reference.dropFirst("#/components/schemas/".count))] ?? .object([:]))
    }

    private func validate(_ value: JSONValue, against raw: JSONValue, at place: String) -> [String] {
        let schema = resolve(raw)
        if let all = schema["allOf"]?.arrayValue {
            return all.flatMap { validate(value, against: $0, at: place) }
        }
        if let one = schema["oneOf"]?.arrayValue {
            return one.contains { validate(value, against: $0, at: place).isEmpty } ? [] : ["\(place): matches none of oneOf"]
        }
        var problems: [String] = []
        if let types = schema["type"].map({ $0.arrayValue?.compactMap(\.stringValue) ?? [$0.stringValue ?? ""] }),
            !types.contains(where: { Self.value(value, is: $0) })
        {
            return ["\(place): \(Self.typeName(value)) where \(types.joined(separator: " or ")) is documented"]
        }
        if let allowed = schema["enum"]?.arrayValue, !allowed.contains(value) {
            problems.append("\(place): \(value) is not one of \(allowed)")
        }
        if case .object(let object) = value {
            let properties = schema["properties"]?.objectValue ?? [:]
            for name in schema["required"]?.arrayValue?.compactMap(\.stringValue) ?? [] where object[name] == nil {
                problems.append("\(place): required \(name) is missing")
            }
            for (name, item) in object {
                if let property = properties[name] {
                    problems += validate(item, against: property, at: "\(place).\(name)")
                } else if let additional = schema["additionalProperties"] {
                    if additional == .bool(false) {
                        problems.append("\(place): \(name) is not documented")
                    } else if additional.objectValue != nil {
                        problems += validate(item, against: additional, at: "\(place).\(name)")
                    }
                }
            }
        }
        if case .array(let items) = value, let itemSchema = schema["items"] {
            for (index, item) in items.enumerated() { problems += validate(item, against: itemSchema, at: "\(place)[\(index)]") }
        }
        return problems
    }

    private static func value(_ value: JSONValue, is type: String) -> Bool {
        switch (type, value) {
        case ("null", .null), ("boolean", .bool), ("integer", .integer), ("number", .integer), ("number", .number),
            ("string", .string), ("array", .array), ("object", .object):
            true
        default: false
        }
    }

    private static func typeName(_ value: JSONValue) -> String {
        switch value {
        case .null: "null"
        case .bool: "boolean"
        case .integer: "integer"
        case .number: "number"
        case .string: "string"
        case .array: "array"
        case .object: "object"
        }
    }
}
