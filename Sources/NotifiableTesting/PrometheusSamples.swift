/// The samples of a Prometheus text exposition, for checking `/metrics` answers:
/// `samples.value("notifiable_deliveries_total", ["provider": "apns", "outcome": "sent"])`.
public struct PrometheusSamples: Sendable {
    public struct Sample: Sendable, Equatable {
        public let name: String
        public let labels: [String: String]
        public let value: Double
    }

    public struct Malformed: Error, CustomStringConvertible {
        public let line: String
        public var description: String { "not a Prometheus sample line: \(line)" }
    }

    public let samples: [Sample]

    /// Parses every sample line; comment lines (`# TYPE`, `# HELP`) and blank lines are skipped.
    public init(text: String) throws {
        samples = try text.split(separator: "\n").compactMap { line in
            line.hasPrefix("#") || line.allSatisfy(\.isWhitespace) ? nil : try Self.sample(String(line))
        }
    }

    /// The value of the sample with exactly these labels, or nil when there is none.
    public func value(_ name: String, _ labels: [String: String] = [:]) -> Double? {
        samples.first { $0.name == name && $0.labels == labels }?.value
    }

    /// Every sample of `name` whose labels include `labels`.
    public func all(_ name: String, matching labels: [String: String] = [:]) -> [Sample] {
        samples.filter { sample in sample.name == name && labels.allSatisfy { sample.labels[$0.key] == $0.value } }
    }

    static func sample(_ line: String) throws -> Sample {
        var rest = Substring(line)
        let name = rest.prefix { $0 != "{" && $0 != " " }
        rest = rest.dropFirst(name.count)
        var labels: [String: String] = [:]
        if rest.first == "{" {
            rest = rest.dropFirst()
            while rest.first != "}" {
                let key = rest.prefix { $0 != "=" }
                rest = rest.dropFirst(key.count)
                guard rest.hasPrefix("=\"") else { throw Malformed(line: line) }
                rest = rest.dropFirst(2)
                var value = ""
                while let character = rest.first, character != "\"" {
                    rest = rest.dropFirst()
                    guard character == "\\" else {
                        value.append(character)
                        continue
                    }
                    guard let escaped = rest.first else { throw Malformed(line: line) }
                    rest = rest.dropFirst()
                    value.append(escaped == "n" ? "\n" : escaped)
                }
                guard rest.first == "\"" else { throw Malformed(line: line) }
                rest = rest.dropFirst()
                if rest.first == "," { rest = rest.dropFirst() }
                labels[String(key)] = value
                guard !rest.isEmpty else { throw Malformed(line: line) }
            }
            rest = rest.dropFirst()
        }
        let fields = rest.split(separator: " ")
        guard !name.isEmpty, let first = fields.first, let value = Double(first) ?? Self.special(first) else { throw Malformed(line: line) }
        return Sample(name: String(name), labels: labels, value: value)
    }

    private static func special(_ text: Substring) -> Double? {
        switch text {
        case "+Inf": .infinity
        case "-Inf": -.infinity
        case "NaN": .nan
        default: nil
        }
    }
}

extension Array where Element == PrometheusSamples.Sample {
    /// The sum of the samples' values.
    public var total: Double { reduce(0) { $0 + $1.value } }
}
