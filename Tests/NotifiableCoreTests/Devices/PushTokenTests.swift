import NotifiableCore
import Testing

@Suite struct PushTokenTests {
    @Test func apnsTokenIsLowerCased() throws {
        let token = String(repeating: "AB12", count: 16)
        #expect(try PushToken.normalized(token, provider: .apns, field: "token") == token.lowercased())
    }

    @Test(arguments: [64, 200])
    func apnsAcceptsBoundaryLengths(_ length: Int) throws {
        let token = String(repeating: "f", count: length)
        #expect(try PushToken.normalized(token, provider: .apns, field: "token") == token)
    }

    @Test(arguments: [0, 63, 201])
    func apnsRejectsOutOfRangeLengths(_ length: Int) {
        let error = validationError { () throws(ValidationError) in
            try PushToken.normalized(String(repeating: "f", count: length), provider: .apns, field: "device_token.token")
        }
        #expect(error?.code == "invalid_token")
        #expect(error?.field == "device_token.token")
    }

    @Test func apnsRejectsNonHex() {
        let token = String(repeating: "g", count: 64)
        let error = validationError { () throws(ValidationError) in
            try PushToken.normalized(token, provider: .apns, field: "token")
        }
        #expect(error?.code == "invalid_token")
        #expect(error?.field == "token")
    }

    @Test func fcmTokenIsKeptAsSent() throws {
        let token = "dGVzdA:APA91bH-Example_Token"
        #expect(try PushToken.normalized(token, provider: .fcm, field: "token") == token)
    }

    @Test func fcmAcceptsMaxLength() throws {
        let token = String(repeating: "x", count: 4096)
        #expect(try PushToken.normalized(token, provider: .fcm, field: "token") == token)
    }

    @Test(arguments: ["", "has space", "tab\there", "caf\u{e9}", String(repeating: "x", count: 4097)])
    func fcmRejects(_ token: String) {
        let error = validationError { () throws(ValidationError) in
            try PushToken.normalized(token, provider: .fcm, field: "token")
        }
        #expect(error?.code == "invalid_token")
    }
}

@Suite struct PushTokenLogPrefixTests {
    @Test func logsShowOnlyTheFirstEightCharacters() {
        #expect(PushToken.logPrefix(String(repeating: "ab", count: 32)) == "abababab…")
        #expect(PushToken.logPrefix("fcm:APA91bHun4MxP5egoKMwt2KZFBaFUH") == "fcm:APA9…")
        #expect(PushToken.logPrefix("short") == "*****")
        #expect(PushToken.logPrefix("") == "")
    }
}
