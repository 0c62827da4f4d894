import Foundation
import NotifiableCore
import Testing

/// Every presentation field refuses a wrong type, range or size with a 422 that names it and says
/// the rule broken (not `unknown_field`).
@Suite struct PresentationFieldsTests {
    static let now = Date(timeIntervalSince1970: 1_795_132_800)

    static func refusal(_ members: String) throws -> ValidationError? {
        let body = try json(#"{"title": "Hi", "all": true, \#(members)}"#)
        return validationError { () throws(ValidationError) in try NotificationRequest.parse(body, now: now) }
    }

    static let refused: [(members: String, code: String, field: String)] = [
        (#""interruption_level": "urgent""#, "invalid_interruption_level", "interruption_level"),
        (#""interruption_level": 3"#, "invalid_type", "interruption_level"),
        (#""interruption_level": "critical""#, "missing_critical_sound", "critical_sound"),
        (#""relevance_score": 1.5"#, "out_of_range", "relevance_score"),
        (#""relevance_score": -0.1"#, "out_of_range", "relevance_score"),
        (#""relevance_score": "high""#, "invalid_type", "relevance_score"),
        (#""target_content_id": 7"#, "invalid_type", "target_content_id"),
        (#""filter_criteria": "\#(String(repeating: "f", count: 256))""#, "too_long", "filter_criteria"),
        (#""critical_sound": "siren""#, "invalid_type", "critical_sound"),
        (#""critical_sound": {"volume": 2}"#, "out_of_range", "critical_sound.volume"),
        (#""critical_sound": {"name": 1}"#, "invalid_type", "critical_sound.name"),
        (#""critical_sound": {"pitch": 1}"#, "unknown_field", "critical_sound.pitch"),
        (#""critical_sound": {}, "interruption_level": "passive""#, "conflicting_fields", "critical_sound"),
        (#""critical_sound": {}, "sound": "ding""#, "conflicting_fields", "critical_sound"),
        (#""image_url": "http://example.com/a.jpg""#, "invalid_image_url", "image_url"),
        (#""image_url": "/a.jpg""#, "invalid_image_url", "image_url"),
        (#""image_url": "https://""#, "invalid_image_url", "image_url"),
        (#""image_url": "https://example.com/\#(String(repeating: "a", count: 1010))""#, "too_long", "image_url"),
        (#""image_url": ["https://a.example/x"]"#, "invalid_type", "image_url"),
        (#""android": "orders""#, "invalid_type", "android"),
        (#""android": {"color": "red"}"#, "invalid_color", "android.color"),
        (##""android": {"color": "#f60"}"##, "invalid_color", "android.color"),
        (##""android": {"color": "#ff66001"}"##, "invalid_color", "android.color"),
        (#""android": {"visibility": "hidden"}"#, "invalid_visibility", "android.visibility"),
        (#""android": {"sticky": "yes"}"#, "invalid_type", "android.sticky"),
        (#""android": {"notification_count": -1}"#, "out_of_range", "android.notification_count"),
        (#""android": {"channel_id": 5}"#, "invalid_type", "android.channel_id"),
        (#""android": {"channel": "x"}"#, "unknown_field", "android.channel"),
        (#""title_loc_args": ["a"]"#, "missing_field", "title_loc_key"),
        (#""loc_key": "K", "loc_args": [1]"#, "invalid_type", "loc_args.0"),
        (#""loc_key": "K", "loc_args": "a""#, "invalid_type", "loc_args"),
        (#""loc_key": "K", "loc_args": [\#(Array(repeating: #""a""#, count: 21).joined(separator: ","))]"#, "too_many", "loc_args"),
        (#""apns": []"#, "invalid_type", "apns"),
        (#""apns": {"headers": {"apns-topic": "com.other"}}"#, "owned_field", "apns.headers.apns-topic"),
        (#""apns": {"headers": {"APNS-ID": "x"}}"#, "owned_field", "apns.headers.APNS-ID"),
        (#""apns": {"headers": {"authorization": "bearer x"}}"#, "owned_field", "apns.headers.authorization"),
        (#""apns": {"headers": {"apns-priority": 10}}"#, "invalid_type", "apns.headers.apns-priority"),
        (#""apns": {"headers": {"apns-priority": "10\n"}}"#, "invalid_type", "apns.headers.apns-priority"),
        (#""apns": {"payload": {"n_id": 1}}"#, "owned_field", "apns.payload.n_id"),
        (#""apns": {"headers": {"apns-push-type": "voip"}}"#, "invalid_header", "apns.headers.apns-push-type"),
        (#""apns": {"headers": {"apns-push-type": "liveactivity"}}"#, "invalid_header", "apns.headers.apns-push-type"),
        (#""apns": {"headers": {"apns-priority": "7"}}"#, "invalid_header", "apns.headers.apns-priority"),
        (#""apns": {"headers": {"apns-expiration": "tomorrow"}}"#, "invalid_header", "apns.headers.apns-expiration"),
        (#""apns": {"headers": {"apns-collapse-id": "\#(String(repeating: "c", count: 65))"}}"#, "invalid_header", "apns.headers.apns-collapse-id"),
        (#""apns": {"headers": {"apns-x y": "1"}}"#, "owned_field", "apns.headers.apns-x y"),
        (#""fcm": {"android": {"data": {"k": "v"}}}"#, "owned_field", "fcm.android.data"),
        (#""fcm": {"data": {"Title": "second title"}}"#, "owned_field", "fcm.data.Title"),
        (#""fcm": {"data": {"tıtle": "second title"}}"#, "owned_field", "fcm.data.tıtle"),
        (#""apns": {"payload": {"aps": "x"}}"#, "invalid_type", "apns.payload.aps"),
        (#""apns": {"body": {}}"#, "unknown_field", "apns.body"),
        (#""fcm": {"token": "other"}"#, "unknown_field", "fcm.token"),
        (#""fcm": {"data": {"n_id": "9"}}"#, "owned_field", "fcm.data.n_id"),
        (#""fcm": {"data": {"google.x": "9"}}"#, "owned_field", "fcm.data.google.x"),
        (#""fcm": {"data": {"k": 9}}"#, "invalid_type", "fcm.data.k"),
        (#""fcm": {"apns": {"payload": {"n_id": 9}}}"#, "owned_field", "fcm.apns.payload.n_id"),
        (#""fcm": {"android": 1}"#, "invalid_type", "fcm.android"),
    ]

    @Test(arguments: refused)
    func aWrongValueIsRefusedNamingItsField(_ example: (members: String, code: String, field: String)) throws {
        let error = try #require(try Self.refusal(example.members), "accepted: \(example.members)")
        #expect(error.code == example.code, "\(example.members): \(error.message)")
        #expect(error.field == example.field, "\(example.members): \(error.message)")
        #expect(error.message.contains(example.field.components(separatedBy: ".").first!))
    }

    @Test func eachFieldIsReadUnderNotificationToo() throws {
        let body = try json(
            #"""
            {"notification": {"title": "t", "interruption_level": "time-sensitive", "image_url": "https://a.example/i.png",
              "android": {"channel_id": "c"}, "loc_key": "K"}, "all": true}
            """#)
        let content = try NotificationRequest.parse(body, now: Self.now).content
        #expect(content.interruptionLevel == .timeSensitive)
        #expect(content.imageURL == "https://a.example/i.png")
        #expect(content.android == AndroidPresentation(channelID: "c"))
        #expect(content.localizationKeys == LocalizationKeys(bodyKey: "K"))
        let nested = try json(#"{"notification": {"title": "t", "android": {"color": "blue"}}, "all": true}"#)
        let error = validationError { () throws(ValidationError) in try NotificationRequest.parse(nested, now: Self.now) }
        #expect(error?.field == "notification.android.color")
    }

    @Test func aLocalizationKeyAloneIsSomethingToShow() throws {
        let content = try NotificationRequest.parse(try json(#"{"loc_key": "HELLO", "all": true}"#), now: Self.now).content
        #expect(content.localizationKeys?.bodyKey == "HELLO")
        #expect(!content.isBackgroundOnly)
    }

    @Test func theStoredFormKeepsEveryFieldAndOldRowsStillDecode() throws {
        let body = try json(
            #"""
            {"title": "t", "interruption_level": "critical", "critical_sound": {"name": "s", "volume": 0.5}, "relevance_score": 0.25,
             "target_content_id": "w", "filter_criteria": "f", "image_url": "https://a.example/i.png",
             "android": {"channel_id": "c", "icon": "i", "color": "#000000", "click_action": "A", "visibility": "public", "sticky": true,
                         "notification_count": 3},
             "title_loc_key": "T", "title_loc_args": ["1"], "loc_key": "B", "loc_args": ["2"],
             "apns": {"headers": {"apns-priority": "5"}, "payload": {"x": {"y": 1}}},
             "fcm": {"android": {"direct_boot_ok": true}, "apns": {"headers": {"apns-priority": "5"}}, "data": {"d": "1"}}, "all": true}
            """#)
        let content = try NotificationRequest.parse(body, now: Self.now).content
        let stored = try JSONEncoder().encode(content)
        #expect(try JSONDecoder().decode(NotificationContent.self, from: stored) == content)
        let old = #"{"text": {"title": "t"}, "localized": {}, "parameters": {}, "content_available": false, "mutable_content": false, "priority": "high"}"#
        let decoded = try JSONDecoder().decode(NotificationContent.self, from: Data(old.utf8))
        #expect(decoded.interruptionLevel == nil && decoded.android == nil && decoded.overrides == nil && decoded.imageURL == nil)
    }
}
