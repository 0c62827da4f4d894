import NotifiableCore

/// What the fake APNs checks inside a payload's `aps`, beyond its being a JSON object: the shapes
/// Apple's payload key reference gives for interruption levels, critical sounds and Live Activity
/// pushes (docs/compatibility.md §12). Apple documents no refusal for these; the fake refuses them with
/// `BadPayload` so that a push the phone would not show as sent is caught in tests, a stricter
/// reading than Apple's own.
enum SandboxAPNsPayloadRules {
    static let interruptionLevels: Set<String> = ["passive", "active", "time-sensitive", "critical"]

    /// Whether the payload is worth reading whole: most pushes carry none of these keys, and the
    /// fake gateway also serves benchmarks.
    static func mayNeedReading(_ body: UnsafeRawBufferPointer) -> Bool {
        contains(body, #""interruption-level""#) || contains(body, #""sound":{"#)
    }

    static let liveActivityEvents: Set<String> = ["start", "update", "end"]

    /// The problem with the payload, or nil when Apple's shapes hold. A Live Activity's `aps` needs
    /// its `timestamp` (seconds) and `event`, a start its `attributes-type`, `attributes` and alert.
    static func problem(in payload: [UInt8], liveActivity: Bool = false) -> String? {
        guard let aps = (try? JSONValue.decode(payload))?.objectValue?["aps"]?.objectValue else {
            return liveActivity ? "a Live Activity push needs aps" : nil
        }
        if liveActivity {
            guard case .integer? = aps["timestamp"] else { return "a Live Activity push needs aps.timestamp in seconds" }
            guard case .string(let event)? = aps["event"], liveActivityEvents.contains(event) else { return "aps.event is start, update or end" }
            if let state = aps["content-state"], state.objectValue == nil { return "aps.content-state is a dictionary" }
            if event == "start", aps["attributes-type"] == nil || aps["attributes"]?.objectValue == nil || aps["alert"] == nil {
                return "a start needs attributes-type, attributes and an alert"
            }
            return nil
        }
        var level: String?
        if let value = aps["interruption-level"] {
            guard case .string(let text) = value, interruptionLevels.contains(text) else { return "interruption-level is not one of Apple's four" }
            level = text
        }
        if case .object(let sound)? = aps["sound"] {
            guard case .string? = sound["name"] else { return "a sound dictionary needs its name" }
            if let volume = sound["volume"] {
                guard let number = volume.doubleValue, (0...1).contains(number) else { return "sound volume must be from 0 to 1" }
            }
            if level == "critical", sound["critical"] != .integer(1) { return "a critical alert's sound needs \"critical\": 1" }
        } else if level == "critical" {
            return "a critical alert needs the sound dictionary with \"critical\": 1"
        }
        return nil
    }

    private static func contains(_ body: UnsafeRawBufferPointer, _ text: String) -> Bool {
        let needle = Array(text.utf8)
        guard body.count >= needle.count else { return false }
        var index = 0
        while index <= body.count - needle.count {
            if body[index] == needle[0] {
                var matched = true
                for offset in 1..<needle.count where body[index + offset] != needle[offset] {
                    matched = false
                    break
                }
                if matched { return true }
            }
            index += 1
        }
        return false
    }
}

extension JSONValue {
    fileprivate var doubleValue: Double? {
        switch self {
        case .integer(let value): Double(value)
        case .number(let value): value
        default: nil
        }
    }
}
