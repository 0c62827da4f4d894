import Foundation
import NotifiableCore
import Testing

private func registration(_ members: String) throws -> DeviceFields {
    let body = try json(#"{"device_token": {"provider": "fcm", "token": "fcm-token-1", \#(members)}}"#)
    return try DeviceFields.registration(from: body)
}

private func registrationError(_ members: String) throws -> ValidationError? {
    let body = try json(#"{"device_token": {"provider": "fcm", "token": "fcm-token-1", \#(members)}}"#)
    return validationError { () throws(ValidationError) in try DeviceFields.registration(from: body) }
}

@Suite struct DeviceTagsTests {
    @Test func tagsAreSortedAndDuplicatesCollapse() throws {
        let fields = try registration(##""tags": ["lang:fr", "group:beta", "lang:fr", "User@Example.com", "#launch", "v1.2-rc_3"]"##)
        #expect(fields.tags == .set(["#launch", "User@Example.com", "group:beta", "lang:fr", "v1.2-rc_3"]))
        #expect(fields.platformProperties["tags"] == nil)
    }

    @Test func aRequestWithoutTagsLeavesThemAndNullOrEmptyRemovesThem() throws {
        #expect(try registration(#""name": "x""#).tags == .unchanged)
        #expect(try registration(#""tags": null"#).tags == .set([]))
        #expect(try registration(#""tags": []"#).tags == .set([]))
        let update = try DeviceFields.update(from: json(#"{"tags": ["a"]}"#), provider: .apns)
        #expect(update.tags == .set(["a"]))
    }

    @Test(
        arguments: [
            (#""tags": ["ok", "ok2", "ok3", "has space"]"#, "invalid_tag", "device_token.tags.3"),
            (#""tags": [""]"#, "invalid_tag", "device_token.tags.0"),
            (#""tags": ["a", "x:1=1"]"#, "invalid_tag", "device_token.tags.1"),
            (#""tags": ["a&&b"]"#, "invalid_tag", "device_token.tags.0"),
            (#""tags": ["café"]"#, "invalid_tag", "device_token.tags.0"),
            (#""tags": ["\#(String(repeating: "t", count: 121))"]"#, "invalid_tag", "device_token.tags.0"),
            (#""tags": [1]"#, "invalid_type", "device_token.tags.0"),
            (#""tags": "beta""#, "invalid_type", "device_token.tags"),
        ] as [(String, String, String)])
    func badTagsAreNamedByIndex(members: String, code: String, field: String) throws {
        let error = try registrationError(members)
        #expect(error?.code == code, "\(String(describing: error))")
        #expect(error?.field == field)
    }

    @Test func theLongestTagIsAccepted() throws {
        let longest = String(repeating: "t", count: 120)
        #expect(try registration(#""tags": ["\#(longest)"]"#).tags == .set([longest]))
    }

    @Test func sixtyTagsAreAllowedAndSixtyOneAreNotDuplicatesApart() throws {
        let sixty = (1...60).map { "\"t\($0)\"" }
        #expect(try registration(#""tags": [\#(sixty.joined(separator: ","))]"#).tags != .unchanged)
        // Duplicates collapse before counting.
        #expect(try registration(#""tags": [\#((sixty + ["\"t1\""]).joined(separator: ","))]"#).tags != .unchanged)
        let error = try registrationError(#""tags": [\#((sixty + ["\"t61\""]).joined(separator: ","))]"#)
        #expect(error?.code == "too_many_tags")
        #expect(error?.field == "device_token.tags")
        #expect(error?.message == "device_token.tags would give the device 61 tags; a device carries at most 60.")
    }

    @Test func replacementAndEditBodies() throws {
        #expect(try TagChanges.replacement(from: json(#"{"tags": ["b", "a", "b"]}"#)) == .replace(["a", "b"]))
        #expect(try TagChanges.replacement(from: json(#"{"tags": []}"#)) == .replace([]))
        #expect(try TagChanges.edit(from: json(#"{"add": ["b", "a"]}"#)) == .edit(add: ["a", "b"], remove: []))
        #expect(try TagChanges.edit(from: json(#"{"remove": ["a"], "add": null}"#)) == .edit(add: [], remove: ["a"]))

        let edit = TagChanges.edit(add: ["c", "a"], remove: ["b", "zz"])
        #expect(edit.applied(to: ["a", "b", "d"]) == ["a", "c", "d"])
        #expect(TagChanges.replace(["x"]).applied(to: ["a"]) == ["x"])
    }

    @Test(
        arguments: [
            (#"{}"#, true, "missing_field", "tags"),
            (#"{"tags": ["a"], "add": ["b"]}"#, true, "unknown_field", "add"),
            (#"{"tags": ["ok", "no way"]}"#, true, "invalid_tag", "tags.1"),
            (#"[]"#, true, "invalid_body", nil),
            (#"{}"#, false, "missing_field", "add"),
            (#"{"add": [], "remove": []}"#, false, "missing_field", "add"),
            (#"{"add": ["a"], "remove": ["b", "a"]}"#, false, "conflicting_tags", "remove"),
            (#"{"add": ["a", "b", "c", "d;"]}"#, false, "invalid_tag", "add.3"),
            (#"{"remove": {"a": 1}}"#, false, "invalid_type", "remove"),
            (#"{"tags": ["a"]}"#, false, "unknown_field", "tags"),
        ] as [(String, Bool, String, String?)])
    func badTagChangesAreNamed(body: String, isReplacement: Bool, code: String, field: String?) throws {
        let value = try json(body)
        let error = validationError { () throws(ValidationError) -> TagChanges in
            if isReplacement { return try TagChanges.replacement(from: value) }
            return try TagChanges.edit(from: value)
        }
        #expect(error?.code == code, "\(String(describing: error))")
        #expect(error?.field == field)
    }

    @Test func aNotificationTargetsATagExpression() throws {
        let request = try NotificationRequest.parse(json(#"{"message": "m", "tag_expression": "beta && !lang:fr"}"#), now: Date())
        #expect(request.targeting.tagExpression == (try TagExpression.parse("beta && !lang:fr")))
        #expect(!request.targeting.isEmpty)
        // An empty expression is no rule at all.
        let emptyBody = try json(#"{"message": "m", "tag_expression": ""}"#)
        let empty = validationError { () throws(ValidationError) in try NotificationRequest.parse(emptyBody, now: Date()) }
        #expect(empty?.code == "no_target")
    }

    @Test func aMalformedExpressionIsAValidationErrorOnItsField() throws {
        let body = try json(#"{"notification": {"message": "m", "tag_expression": "(username:alice || group:beta) &&"}}"#)
        let error = validationError { () throws(ValidationError) in try NotificationRequest.parse(body, now: Date()) }
        #expect(
            error
                == ValidationError(
                    code: "invalid_tag_expression",
                    message: "Invalid tag expression at position 34: expected a tag, '!' or '(' after '&&', but the expression ends.",
                    field: "notification.tag_expression"
                ))
        let typed = try json(#"{"message": "m", "tag_expression": ["a"]}"#)
        #expect(validationError { () throws(ValidationError) in try NotificationRequest.parse(typed, now: Date()) }?.code == "invalid_type")
        let stateful = try json(#"{"message": "m", "user_aliases": ["a"], "tag_expression": "b", "stateful": true}"#)
        #expect(
            validationError { () throws(ValidationError) in try NotificationRequest.parse(stateful, now: Date()) }?.code
                == "stateful_needs_user_aliases")
    }

    @Test func storedTargetingWithoutTheKeyStillDecodes() throws {
        let old = #"{"user_aliases": ["a"], "device_ids": [], "filters": [], "all": false}"#
        let targeting = try JSONDecoder().decode(Targeting.self, from: Data(old.utf8))
        #expect(targeting == Targeting(userAliases: ["a"]))
        let withExpression = Targeting(tagExpression: try TagExpression.parse("a || !b"))
        let data = try JSONEncoder().encode(withExpression)
        #expect(try JSONDecoder().decode(Targeting.self, from: data) == withExpression)
        #expect(!String(decoding: try JSONEncoder().encode(Targeting(all: true)), as: UTF8.self).contains("tag_expression"))
    }
}
