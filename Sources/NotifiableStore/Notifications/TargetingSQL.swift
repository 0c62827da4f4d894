import NotifiableCore

/// The SQL condition on `devices AS d` that a notification's targeting selects. Rules are
/// unioned (OR); the conditions of the filter rule must all hold (AND).
enum TargetingSQL {
    static func appendCondition(for targeting: Targeting, to builder: inout SQLBuilder) {
        guard !targeting.all else {
            builder.append("TRUE")
            return
        }
        var rules: [String] = []
        if !targeting.userAliases.isEmpty {
            rules.append("d.user_alias = ANY(\(builder.bind(targeting.userAliases))::text[])")
        }
        if !targeting.deviceIDs.isEmpty {
            rules.append("d.id = ANY(\(builder.bind(targeting.deviceIDs))::int8[])")
        }
        if !targeting.filters.isEmpty {
            let conditions = targeting.filters.map { condition(for: $0, builder: &builder) }
            rules.append("(" + conditions.joined(separator: " AND ") + ")")
        }
        if let expression = targeting.tagExpression {
            rules.append(TagExpressionSQL.condition(for: expression.root, builder: &builder))
        }
        if let near = targeting.near {
            rules.append(nearCondition(near, &builder))
        }
        builder.append(rules.isEmpty ? "FALSE" : "(" + rules.joined(separator: " OR ") + ")")
    }

    /// The box test is what `devices_location_idx` answers; the distance test then trims the
    /// box's corners to the circle.
    private static func nearCondition(_ circle: GeoCircle, _ builder: inout SQLBuilder) -> String {
        let center = "ll_to_earth(\(builder.bind(circle.latitude))::float8, \(builder.bind(circle.longitude))::float8)"
        let radius = "\(builder.bind(circle.radiusMeters))::float8"
        return "(d.latitude IS NOT NULL AND d.longitude IS NOT NULL AND earth_box(\(center), \(radius)) @> device_position(d.latitude, d.longitude)"
            + " AND earth_distance(\(center), device_position(d.latitude, d.longitude)) <= \(radius))"
    }

    private static func condition(for filter: DeviceFilter, builder: inout SQLBuilder) -> String {
        switch filter.subject {
        case .provider: return columnCondition("d.provider", filter, &builder)
        case .language: return columnCondition("d.language", filter, &builder)
        case .country: return columnCondition("d.country", filter, &builder)
        case .customProperty(let key): return propertyCondition(key, filter, &builder)
        }
    }

    private static func columnCondition(_ column: String, _ filter: DeviceFilter, _ builder: inout SQLBuilder) -> String {
        switch filter.op {
        case .equals:
            return "\(column) = \(builder.bind(scalarText(filter.value)))::text"
        case .notEquals:
            return "\(column) IS DISTINCT FROM \(builder.bind(scalarText(filter.value)))::text"
        case .isIn:
            return "\(column) = ANY(\(builder.bind(arrayItems(filter.value).map(scalarText)))::text[])"
        case .exists:
            return "\(column) IS NOT NULL"
        case .lessThan, .greaterThan:
            return "FALSE"  // validation admits no order comparison on columns
        }
    }

    private static func propertyCondition(_ key: String, _ filter: DeviceFilter, _ builder: inout SQLBuilder) -> String {
        let keyBind = builder.bind(key)
        let property = "(d.custom_properties -> \(keyBind)::text)"
        switch filter.op {
        case .exists:
            return "d.custom_properties ? \(keyBind)::text"
        case .equals:
            return "\(property) = \(builder.bind((filter.value ?? .null).jsonText()))::jsonb"
        case .notEquals:
            return "\(property) IS DISTINCT FROM \(builder.bind((filter.value ?? .null).jsonText()))::jsonb"
        case .isIn:
            let items = arrayItems(filter.value).map { $0.jsonText() }
            return "\(property) IN (SELECT item::jsonb FROM unnest(\(builder.bind(items))::text[]) AS item)"
        case .lessThan, .greaterThan:
            let comparison = filter.op == .lessThan ? "<" : ">"
            // CASE fixes the order: the cast runs only on numbers.
            return "CASE WHEN jsonb_typeof(\(property)) = 'number' THEN (d.custom_properties ->> \(keyBind)::text)::numeric "
                + "\(comparison) \(builder.bind(numberText(filter.value)))::text::numeric ELSE FALSE END"
        }
    }

    private static func scalarText(_ value: JSONValue?) -> String {
        switch value {
        case .string(let text)?: text
        case .integer(let number)?: String(number)
        case .number(let number)?: String(number)
        case .bool(let flag)?: String(flag)
        default: ""
        }
    }

    private static func arrayItems(_ value: JSONValue?) -> [JSONValue] {
        if case .array(let items)? = value { return items }
        return []
    }

    /// The filter's number as its exact text: a Double bound to numeric keeps only 15
    /// significant digits, so 16-digit values (microsecond timestamps) would compare rounded.
    private static func numberText(_ value: JSONValue?) -> String {
        switch value {
        case .integer(let number)?: String(number)
        case .number?: value?.jsonText() ?? "0"
        default: "0"
        }
    }
}
