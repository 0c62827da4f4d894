/// Which devices of an app a notification goes to. Rules are unioned: a device matched by
/// any rule gets the notification, once.
public struct Targeting: Sendable, Equatable, Codable {
    public var userAliases: [String]
    public var deviceIDs: [Int64]
    /// Conditions that must all hold; empty means this rule is absent.
    public var filters: [DeviceFilter]
    public var all: Bool

    public init(userAliases: [String] = [], deviceIDs: [Int64] = [], filters: [DeviceFilter] = [], all: Bool = false) {
        self.userAliases = userAliases
        self.deviceIDs = deviceIDs
        self.filters = filters
        self.all = all
    }

    public var isEmpty: Bool { userAliases.isEmpty && deviceIDs.isEmpty && filters.isEmpty && !all }
}

/// One condition on a device: on a column (provider, language, country) or on a custom property.
public struct DeviceFilter: Sendable, Equatable, Codable {
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
