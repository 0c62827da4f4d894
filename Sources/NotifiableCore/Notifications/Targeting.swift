/// Which devices of an app a notification goes to. Rules are unioned: a device matched by
/// any rule gets the notification, once.
/// Stored as the `targeting` jsonb of a notification, in this Codable form (snake_case keys).
public struct Targeting: Sendable, Equatable, Codable {
    public var userAliases: [String]
    public var deviceIDs: [Int64]
    /// Conditions that must all hold; empty means this rule is absent.
    public var filters: [DeviceFilter]
    /// Devices whose tags satisfy it; nil means this rule is absent.
    public var tagExpression: TagExpression?
    public var all: Bool
    /// Devices whose position lies within a circle.
    public var near: GeoCircle?

    public init(
        userAliases: [String] = [], deviceIDs: [Int64] = [], filters: [DeviceFilter] = [], tagExpression: TagExpression? = nil,
        all: Bool = false, near: GeoCircle? = nil
    ) {
        self.userAliases = userAliases
        self.deviceIDs = deviceIDs
        self.filters = filters
        self.tagExpression = tagExpression
        self.all = all
        self.near = near
    }

    public var isEmpty: Bool {
        userAliases.isEmpty && deviceIDs.isEmpty && filters.isEmpty && tagExpression == nil && !all && near == nil
    }
}

/// One condition on a device: on a column (provider, language, country) or on a custom property.
/// Its Codable form is the one clients send: `{"field": "language", "op": "=", "value": "en"}`
/// or `{"property": "onsite", "op": "exists"}`.
public struct DeviceFilter: Sendable, Equatable, Codable {
    /// Codable as `{"field": "provider"|"language"|"country"}` or `{"property": "<key>"}`.
    public enum Subject: Sendable, Equatable, Codable {
        case provider
        case language
        case country
        case customProperty(String)
    }

    public enum Operator: String, Sendable, Codable {
        case equals = "="
        case notEquals = "!="
        case isIn = "in"
        case exists
        case lessThan = "<"
        case greaterThan = ">"
    }

    public var subject: Subject
    public var op: Operator
    /// The operand: a string/number/bool for = and !=, an array for `in`, a number for < and >,
    /// nil for `exists`.
    public var value: JSONValue?

    public init(subject: Subject, op: Operator, value: JSONValue?) {
        self.subject = subject
        self.op = op
        self.value = value
    }
}

extension Targeting {
    enum CodingKeys: String, CodingKey {
        case userAliases = "user_aliases"
        case deviceIDs = "device_ids"
        case filters
        case tagExpression = "tag_expression"
        case all
        case near
    }

    /// Keys missing from stored JSON take their defaults, so older rows still decode.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            userAliases: try container.decodeIfPresent([String].self, forKey: .userAliases) ?? [],
            deviceIDs: try container.decodeIfPresent([Int64].self, forKey: .deviceIDs) ?? [],
            filters: try container.decodeIfPresent([DeviceFilter].self, forKey: .filters) ?? [],
            tagExpression: try container.decodeIfPresent(TagExpression.self, forKey: .tagExpression),
            all: try container.decodeIfPresent(Bool.self, forKey: .all) ?? false,
            near: try container.decodeIfPresent(GeoCircle.self, forKey: .near)
        )
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(userAliases, forKey: .userAliases)
        try container.encode(deviceIDs, forKey: .deviceIDs)
        try container.encode(filters, forKey: .filters)
        try container.encodeIfPresent(tagExpression, forKey: .tagExpression)
        try container.encode(all, forKey: .all)
        try container.encodeIfPresent(near, forKey: .near)
    }
}

extension DeviceFilter {
    enum CodingKeys: String, CodingKey {
        case field
        case property
        case op
        case value
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            subject: try Subject(container: container),
            op: try container.decode(Operator.self, forKey: .op),
            value: try container.decodeIfPresent(JSONValue.self, forKey: .value)
        )
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try subject.encode(into: &container)
        try container.encode(op, forKey: .op)
        try container.encodeIfPresent(value, forKey: .value)
    }
}

extension DeviceFilter.Subject {
    /// The name of a column subject as clients write it in `"field"`; nil for a custom property.
    public var fieldName: String? {
        switch self {
        case .provider: "provider"
        case .language: "language"
        case .country: "country"
        case .customProperty: nil
        }
    }

    /// The column subject a client names in `"field"`, or nil when there is no such column.
    public init?(fieldName: String) {
        switch fieldName {
        case "provider": self = .provider
        case "language": self = .language
        case "country": self = .country
        default: return nil
        }
    }

    public init(from decoder: any Decoder) throws {
        try self.init(container: decoder.container(keyedBy: DeviceFilter.CodingKeys.self))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: DeviceFilter.CodingKeys.self)
        try encode(into: &container)
    }

    fileprivate init(container: KeyedDecodingContainer<DeviceFilter.CodingKeys>) throws {
        if let name = try container.decodeIfPresent(String.self, forKey: .field) {
            guard let subject = Self(fieldName: name) else {
                throw DecodingError.dataCorruptedError(
                    forKey: .field, in: container,
                    debugDescription: "Unknown device field \"\(name)\"; expected provider, language or country."
                )
            }
            self = subject
        } else if let key = try container.decodeIfPresent(String.self, forKey: .property) {
            self = .customProperty(key)
        } else {
            throw DecodingError.keyNotFound(
                DeviceFilter.CodingKeys.field,
                DecodingError.Context(codingPath: container.codingPath, debugDescription: "A filter names a \"field\" or a \"property\".")
            )
        }
    }

    fileprivate func encode(into container: inout KeyedEncodingContainer<DeviceFilter.CodingKeys>) throws {
        switch self {
        case .provider: try container.encode("provider", forKey: .field)
        case .language: try container.encode("language", forKey: .field)
        case .country: try container.encode("country", forKey: .field)
        case .customProperty(let key): try container.encode(key, forKey: .property)
        }
    }
}
