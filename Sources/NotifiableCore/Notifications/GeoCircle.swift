/// "Near a point": the devices whose last known position lies within `radiusMeters` of it.
/// Codable as `{"latitude": …, "longitude": …, "radius_m": …}`, the form clients send.
public struct GeoCircle: Sendable, Equatable, Codable {
    public var latitude: Double
    public var longitude: Double
    public var radiusMeters: Double

    public init(latitude: Double, longitude: Double, radiusMeters: Double) {
        self.latitude = latitude
        self.longitude = longitude
        self.radiusMeters = radiusMeters
    }

    /// Half the earth's circumference: every point is within it.
    public static let maximumRadius: Double = 20_037_509

    enum CodingKeys: String, CodingKey {
        case latitude, longitude
        case radiusMeters = "radius_m"
    }

    /// `"near": {"latitude": 51.5, "longitude": -0.12, "radius_m": 5000}`.
    static func read(from reader: NotificationFieldReader) throws(ValidationError) -> GeoCircle? {
        guard let member = reader.member("near") else { return nil }
        guard case .object(let fields) = member.value else {
            throw NotificationFieldReader.typeError(
                member.path, expected: "an object such as {\"latitude\": 51.5, \"longitude\": -0.12, \"radius_m\": 5000}", got: member.value
            )
        }
        let nested = NotificationFieldReader(object: fields, prefix: member.path + ".")
        try nested.refuseUnknownKeys(["latitude", "longitude", "radius_m"], in: "near")
        func number(_ key: String, in range: ClosedRange<Double>, what: String) throws(ValidationError) -> Double {
            let value: Double?
            switch nested.member(key)?.value {
            case .integer(let integer)?: value = Double(integer)
            case .number(let number)?: value = number
            default: value = nil
            }
            guard let value, range.contains(value) else {
                throw ValidationError(
                    code: "invalid_value", message: "\(nested.path(key)) must be \(what), from \(range.lowerBound) to \(range.upperBound).",
                    field: nested.path(key)
                )
            }
            return value
        }
        return GeoCircle(
            latitude: try number("latitude", in: -90...90, what: "a latitude in degrees"),
            longitude: try number("longitude", in: -180...180, what: "a longitude in degrees"),
            radiusMeters: try number("radius_m", in: 1...maximumRadius, what: "a radius in metres")
        )
    }
}
