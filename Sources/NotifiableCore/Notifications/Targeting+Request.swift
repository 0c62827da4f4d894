extension Targeting {
    /// The request keys that say who gets a notification.
    static let requestKeys: Set<String> = ["user_aliases", "device_ids", "filters", "tag_expression", "all", "near"]

    static func read(from reader: NotificationFieldReader) throws(ValidationError) -> Targeting {
        Targeting(
            userAliases: try readUserAliases(reader),
            deviceIDs: try readDeviceIDs(reader),
            filters: try readFilters(reader),
            tagExpression: try readTagExpression(reader),
            all: try reader.bool("all") ?? false,
            near: try GeoCircle.read(from: reader)
        )
    }

    /// Non-empty strings of at most 255 characters, deduplicated in the order sent.
    private static func readUserAliases(_ reader: NotificationFieldReader) throws(ValidationError) -> [String] {
        guard
            let list = try reader.array(
                "user_aliases", expected: "an array of user aliases", maxCount: NotificationRequest.maxRecipients
            )
        else { return [] }
        let (items, path) = list
        // Byte for byte, as PostgreSQL compares aliases: Swift's String equality would merge
        // canonically equivalent spellings ("e\u{301}" and "é") that are different users there.
        var seen = Set<[UInt8]>()
        var aliases: [String] = []
        for (index, item) in items.enumerated() {
            let itemPath = "\(path).\(index)"
            guard case .string(let alias) = item else {
                throw NotificationFieldReader.typeError(itemPath, expected: "a string", got: item)
            }
            // The registry's rule: an alias named here is one a device can hold and an erasure can name.
            if let problem = UserAlias.problem(alias) {
                throw ValidationError(code: "invalid_user_alias", message: "\(itemPath) \(problem).", field: itemPath)
            }
            if seen.insert(Array(alias.utf8)).inserted { aliases.append(alias) }
        }
        return aliases
    }

    /// Positive integers, or strings holding one (the SDKs keep ids as strings), deduplicated in
    /// the order sent.
    private static func readDeviceIDs(_ reader: NotificationFieldReader) throws(ValidationError) -> [Int64] {
        guard
            let list = try reader.array(
                "device_ids", expected: "an array of device ids", maxCount: NotificationRequest.maxRecipients
            )
        else { return [] }
        let (items, path) = list
        var seen = Set<Int64>()
        var ids: [Int64] = []
        for (index, item) in items.enumerated() {
            let itemPath = "\(path).\(index)"
            let id: Int64?
            switch item {
            case .integer(let value): id = value
            case .string(let text): id = text.utf8.allSatisfy { (48...57).contains($0) } ? Int64(text) : nil
            case .number: id = nil
            default: throw NotificationFieldReader.typeError(itemPath, expected: "a device id (a number or a string of digits)", got: item)
            }
            guard let id, id > 0 else {
                throw ValidationError(
                    code: "invalid_device_id",
                    message: "\(itemPath) is not a device id; ids are positive whole numbers, such as 12 or \"12\".",
                    field: itemPath
                )
            }
            if seen.insert(id).inserted { ids.append(id) }
        }
        return ids
    }

    /// A tag expression, parsed here so that a fault is answered with its position, never
    /// reaching the database. Empty or absent means no such rule.
    private static func readTagExpression(_ reader: NotificationFieldReader) throws(ValidationError) -> TagExpression? {
        guard let source = try reader.string("tag_expression"), !source.isEmpty else { return nil }
        do {
            return try TagExpression.parse(source)
        } catch {
            throw ValidationError(code: "invalid_tag_expression", message: error.message, field: reader.path("tag_expression"))
        }
    }

    private static func readFilters(_ reader: NotificationFieldReader) throws(ValidationError) -> [DeviceFilter] {
        guard
            let list = try reader.array(
                "filters", expected: "an array of conditions on devices", maxCount: NotificationRequest.maxFilters
            )
        else { return [] }
        let (items, path) = list
        var filters: [DeviceFilter] = []
        for (index, item) in items.enumerated() {
            filters.append(try DeviceFilter.read(item, path: "\(path).\(index)"))
        }
        return filters
    }
}

extension DeviceFilter {
    /// One element of `filters`: `{"field"|"property": …, "op": …, "value": …}`.
    static func read(_ item: JSONValue, path: String) throws(ValidationError) -> DeviceFilter {
        guard case .object(let object) = item else {
            throw NotificationFieldReader.typeError(
                path, expected: "an object such as {\"field\": \"language\", \"op\": \"=\", \"value\": \"en\"}", got: item
            )
        }
        let reader = NotificationFieldReader(object: object, prefix: path + ".")
        try reader.refuseUnknownKeys(["field", "property", "op", "value"], in: "a filter")
        let subject = try readSubject(reader, path: path)
        let op = try readOperator(reader, subject: subject)
        let value = try readValue(reader, subject: subject, op: op)
        return DeviceFilter(subject: subject, op: op, value: value)
    }

    private static func readSubject(_ reader: NotificationFieldReader, path: String) throws(ValidationError) -> Subject {
        let field = try reader.string("field")
        let property = try reader.string("property")
        switch (field, property) {
        case (nil, nil):
            throw ValidationError(
                code: "missing_field",
                message: "\(path) must name what it tests: \"field\" (provider, language or country) or "
                    + "\"property\" (a key of the devices' custom properties).",
                field: path
            )
        case (_?, _?):
            throw ValidationError(
                code: "conflicting_fields",
                message: "\(path) gives both \"field\" and \"property\"; a filter tests one of them.",
                field: reader.path("property")
            )
        case (let name?, nil):
            guard let subject = Subject(fieldName: name.lowercased()) else {
                throw ValidationError(
                    code: "invalid_filter_field",
                    message: "\(reader.path("field")) \"\(name)\" is not a device field; use provider, language or "
                        + "country, or \"property\" for a custom property.",
                    field: reader.path("field")
                )
            }
            return subject
        case (nil, let key?):
            guard !key.isEmpty else {
                throw ValidationError(
                    code: "invalid_value", message: "\(reader.path("property")) must not be empty.", field: reader.path("property")
                )
            }
            guard key.count <= NotificationRequest.maxShortTextLength else {
                throw NotificationFieldReader.tooLong(
                    reader.path("property"), length: key.count, max: NotificationRequest.maxShortTextLength
                )
            }
            return .customProperty(key)
        }
    }

    private static func readOperator(_ reader: NotificationFieldReader, subject: Subject) throws(ValidationError) -> Operator {
        let path = reader.path("op")
        guard let name = try reader.string("op") else {
            throw ValidationError(
                code: "missing_field", message: "\(path) is required: one of =, !=, in, exists, <, >.", field: path
            )
        }
        guard let op = Operator(rawValue: name.lowercased()) else {
            throw ValidationError(
                code: "invalid_operator", message: "\(path) \"\(name)\" is not an operator; use =, !=, in, exists, < or >.",
                field: path
            )
        }
        if let fieldName = subject.fieldName, [.exists, .lessThan, .greaterThan].contains(op) {
            throw ValidationError(
                code: "invalid_operator",
                message: "\(path) \"\(op.rawValue)\" applies to custom properties only; for \(fieldName) use =, != or in.",
                field: path
            )
        }
        return op
    }

    private static func readValue(_ reader: NotificationFieldReader, subject: Subject, op: Operator) throws(ValidationError) -> JSONValue? {
        let path = reader.path("value")
        let member = reader.member("value")
        if op == .exists {
            guard member == nil else {
                throw ValidationError(code: "invalid_value", message: "\(path): \"exists\" takes no value.", field: path)
            }
            return nil
        }
        guard let value = member?.value else {
            throw ValidationError(code: "missing_field", message: "\(path) is required for \"\(op.rawValue)\".", field: path)
        }
        switch op {
        case .exists:
            return nil
        case .lessThan, .greaterThan:
            switch value {
            case .integer, .number: return value
            default: throw NotificationFieldReader.typeError(path, expected: "a number", got: value)
            }
        case .equals, .notEquals:
            return try scalar(value, subject: subject, path: path)
        case .isIn:
            guard case .array(let items) = value else {
                throw NotificationFieldReader.typeError(path, expected: "an array of values", got: value)
            }
            guard !items.isEmpty else {
                throw ValidationError(code: "invalid_value", message: "\(path) must hold at least one value.", field: path)
            }
            guard items.count <= NotificationRequest.maxFilterValues else {
                throw ValidationError(
                    code: "too_many",
                    message: "\(path) has \(items.count) values; at most \(NotificationRequest.maxFilterValues) are allowed.",
                    field: path
                )
            }
            var seen = Set<JSONValue>()
            var values: [JSONValue] = []
            for (index, item) in items.enumerated() {
                let value = try scalar(item, subject: subject, path: "\(path).\(index)")
                if seen.insert(value).inserted { values.append(value) }
            }
            return .array(values)
        }
    }

    /// A value compared with `subject`, in stored form: a provider's canonical name, a lower-case
    /// language or country code, or any string, number or boolean for a custom property.
    private static func scalar(_ value: JSONValue, subject: Subject, path: String) throws(ValidationError) -> JSONValue {
        switch subject {
        case .customProperty:
            switch value {
            case .string, .integer, .number, .bool: return value
            default: throw NotificationFieldReader.typeError(path, expected: "a string, number or boolean", got: value)
            }
        case .provider:
            guard case .string(let name) = value else {
                throw NotificationFieldReader.typeError(path, expected: "a provider name", got: value)
            }
            guard let provider = Provider(wireName: name) else {
                throw ValidationError(
                    code: "invalid_provider", message: "\(path): unknown provider \"\(name)\"; use \(Provider.wireNamesForMessages).",
                    field: path
                )
            }
            return .string(provider.rawValue)
        case .language, .country:
            let isLanguage = subject == .language
            guard case .string(let code) = value else {
                throw NotificationFieldReader.typeError(path, expected: isLanguage ? "a language code" : "a country code", got: value)
            }
            let isLetters = code.utf8.allSatisfy { (65...90).contains($0) || (97...122).contains($0) }
            guard isLetters, (isLanguage ? 2...3 : 2...2).contains(code.utf8.count) else {
                throw ValidationError(
                    code: isLanguage ? "invalid_language" : "invalid_country",
                    message: "\(path) \"\(code)\" is not "
                        + (isLanguage ? "an ISO 639 language code such as \"en\"." : "an ISO 3166 alpha-2 country code such as \"gb\"."),
                    field: path
                )
            }
            return .string(code.lowercased())
        }
    }
}
