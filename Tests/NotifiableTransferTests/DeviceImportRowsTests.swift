import NotifiableCore
import Testing

@testable import NotifiableStore
@testable import NotifiableTransfer

@Suite struct DeviceImportRowsTests {
    @Test func theHeaderIsReadWithoutAByteOrderMarkSpacesOrCase() throws {
        #expect(try DeviceImportRows.csvHeader(["\u{FEFF}Token", " provider ", "USER_ALIAS"]) == ["token", "provider", "user_alias"])
    }

    @Test(arguments: [
        (["token", "provider", "colour"], "Unknown CSV column(s) \"colour\""),
        (["token", "provider", "token"], "The CSV header names a column twice."),
        (["token", "name"], "The CSV header must name at least the token and provider columns."),
    ])
    func aHeaderThatCannotBeReadSaysWhy(fields: [String], message: String) {
        do {
            _ = try DeviceImportRows.csvHeader(fields)
            Issue.record("accepted \(fields)")
        } catch {
            #expect("\(error)".hasPrefix(message))
        }
    }

    @Test func rowsAreValidatedByTheRegistrationRules() throws {
        let columns = ["token", "provider", "language", "tags"]
        let good = DeviceImportRows.registration { () throws(ValidationError) in
            try DeviceImportRows.csvBody([String(repeating: "AB", count: 32), "gcm", "EN", "vip beta"], columns: columns)
        }
        let device = try good.get()
        #expect(device.provider == .fcm && device.language == .set("en") && device.tags == .set(["beta", "vip"]))
        let short = DeviceImportRows.registration { () throws(ValidationError) in try DeviceImportRows.csvBody(["x"], columns: columns) }
        guard case .failure(let error) = short else {
            Issue.record("a row of one field was accepted")
            return
        }
        #expect(error.code == "wrong_field_count")
    }

    @Test func aNotifiableRailsLocaleFillsInOnlyTheMissingLanguageAndCountry() throws {
        func row(locale: String?, language: String?, country: String?, valid: Bool = true) -> NotifiableRailsDevice {
            NotifiableRailsDevice(
                id: 1, token: "abc", provider: "apns", locale: locale, language: language, country: country, name: nil,
                userAlias: " alice ", isValid: valid
            )
        }
        #expect(
            try DeviceImportRows.railsBody(row(locale: "en_GB", language: nil, country: nil))
                == .object([
                    "token": .string("abc"), "provider": .string("apns"), "user_alias": .string("alice"), "language": .string("en"), "country": .string("GB"),
                ])
        )
        #expect(
            try DeviceImportRows.railsBody(row(locale: "en-GB", language: "fr", country: ""))
                == .object([
                    "token": .string("abc"), "provider": .string("apns"), "user_alias": .string("alice"), "language": .string("fr"), "country": .string("GB"),
                ])
        )
        #expect(throws: ValidationError.self) { try DeviceImportRows.railsBody(row(locale: nil, language: nil, country: nil, valid: false)) }
    }
}
