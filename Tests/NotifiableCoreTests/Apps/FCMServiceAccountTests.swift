import Crypto
import Foundation
import NotifiableCore
import Testing
import _CryptoExtras

@Suite struct FCMServiceAccountTests {
    static let rsaKey = try! _RSA.Signing.PrivateKey(keySize: .bits2048)

    /// A key file as the Firebase console hands it out, with `changes` applied (null removes a key).
    static func keyFile(_ changes: [String: JSONValue] = [:]) -> String {
        var object: [String: JSONValue] = [
            "type": .string("service_account"),
            "project_id": .string("notifiable-test"),
            "private_key_id": .string("0123456789abcdef0123456789abcdef01234567"),
            "private_key": .string(rsaKey.pkcs8PEMRepresentation),
            "client_email": .string("fcm-sender@notifiable-test.iam.gserviceaccount.com"),
            "client_id": .string("123456789012345678901"),
            "auth_uri": .string("https://accounts.google.com/o/oauth2/auth"),
            "token_uri": .string("https://oauth2.googleapis.com/token"),
            "universe_domain": .string("googleapis.com"),
        ]
        for (key, value) in changes {
            if value == .null { object[key] = nil } else { object[key] = value }
        }
        return JSONValue.object(object).jsonText()
    }

    func error(_ json: String) -> FCMServiceAccountError? {
        do {
            _ = try FCMServiceAccount(json: json)
            return nil
        } catch {
            return error
        }
    }

    @Test func readsAKeyFile() throws {
        let account = try FCMServiceAccount(json: Self.keyFile())
        #expect(account.projectID == "notifiable-test")
        #expect(account.clientEmail == "fcm-sender@notifiable-test.iam.gserviceaccount.com")
        #expect(account.privateKeyID == "0123456789abcdef0123456789abcdef01234567")
        #expect(account.tokenURI == "https://oauth2.googleapis.com/token")
        #expect(account.privateKey.publicKey.derRepresentation == Self.rsaKey.publicKey.derRepresentation)
    }

    @Test func readsPKCS1KeysAndEscapedLineBreaks() throws {
        let pkcs1 = Self.rsaKey.pemRepresentation
        #expect(pkcs1.hasPrefix("-----BEGIN RSA PRIVATE KEY-----"))
        let fromPKCS1 = try FCMServiceAccount(json: Self.keyFile(["private_key": .string(pkcs1)]))
        #expect(fromPKCS1.privateKey.publicKey.derRepresentation == Self.rsaKey.publicKey.derRepresentation)

        let escaped = Self.rsaKey.pkcs8PEMRepresentation.replacingOccurrences(of: "\n", with: "\\n")
        let fromEscaped = try FCMServiceAccount(json: Self.keyFile(["private_key": .string(escaped)]))
        #expect(fromEscaped.privateKey.publicKey.derRepresentation == Self.rsaKey.publicKey.derRepresentation)
    }

    @Test func optionalMembersHaveDefaults() throws {
        let account = try FCMServiceAccount(json: Self.keyFile(["private_key_id": .null, "token_uri": .null, "type": .null]))
        #expect(account.privateKeyID == nil)
        #expect(account.tokenURI == FCMServiceAccount.defaultTokenURI)
        let blank = try FCMServiceAccount(json: Self.keyFile(["private_key_id": .string(""), "token_uri": .string("  ")]))
        #expect(blank.privateKeyID == nil)
        #expect(blank.tokenURI == FCMServiceAccount.defaultTokenURI)
        let local = try FCMServiceAccount(json: Self.keyFile(["token_uri": .string("https://127.0.0.1:4443/token")]))
        #expect(local.tokenURI == "https://127.0.0.1:4443/token")
    }

    @Test(arguments: ["project_id", "client_email", "private_key"])
    func aMissingMemberIsNamed(_ key: String) throws {
        for absent: JSONValue in [.null, .string(""), .string(" \n")] {
            let failure = try #require(error(Self.keyFile([key: absent])))
            #expect(failure.field == key)
            #expect(failure.message == "the service account has no \(key): download a new key for the service account in the Firebase console")
        }
    }

    @Test func membersOfTheWrongTypeAreNamed() throws {
        for key in ["project_id", "client_email", "private_key", "private_key_id", "token_uri"] {
            let failure = try #require(error(Self.keyFile([key: .integer(5)])))
            #expect(failure.field == key)
            #expect(failure.message.hasPrefix("\(key) must be a string, not a number"))
        }
    }

    @Test func aKeyThatIsNotRSAIsRefused() throws {
        let ec = try #require(error(Self.keyFile(["private_key": .string(P256.Signing.PrivateKey().pemRepresentation)])))
        #expect(ec.field == "private_key")
        #expect(ec.message.hasPrefix("private_key is not an RSA private key (it is an EC P-256 key)"))

        let sec1 = try #require(error(Self.keyFile(["private_key": .string(P384.Signing.PrivateKey().pemRepresentation)])))
        #expect(sec1.message.hasPrefix("private_key is not an RSA private key (it is an EC P-384 key)"))

        let weak = try _RSA.Signing.PrivateKey(unsafeKeySize: .init(bitCount: 1024))
        let short = try #require(error(Self.keyFile(["private_key": .string(weak.pkcs8PEMRepresentation)])))
        #expect(short.message.hasPrefix("private_key is a 1024-bit RSA key"))

        let certificate = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----"
        #expect(error(Self.keyFile(["private_key": .string(certificate)]))?.message.hasPrefix("private_key is not a PEM private key") == true)
        #expect(error(Self.keyFile(["private_key": .string("hello")]))?.message.hasPrefix("private_key is not a PEM private key") == true)

        let encrypted = "-----BEGIN ENCRYPTED PRIVATE KEY-----\nMIIB\n-----END ENCRYPTED PRIVATE KEY-----"
        #expect(error(Self.keyFile(["private_key": .string(encrypted)]))?.message.hasPrefix("private_key is encrypted") == true)

        // A key file's PEM cut short.
        let pem = Self.rsaKey.pkcs8PEMRepresentation
        let truncated = String(pem.prefix(400)) + "\n-----END PRIVATE KEY-----"
        let damaged = try #require(error(Self.keyFile(["private_key": .string(truncated)])))
        #expect(damaged.field == "private_key")
        #expect(damaged.message.hasPrefix("private_key cannot be read as an RSA private key"))
    }

    @Test(arguments: ["http://oauth2.googleapis.com/token", "ftp://example.com/token", "not a url", "https://", "/token"])
    func aTokenURIMustBeHTTPS(_ uri: String) throws {
        let failure = try #require(error(Self.keyFile(["token_uri": .string(uri)])))
        #expect(failure.field == "token_uri")
        #expect(failure.message.contains("is not an https URL"))
    }

    @Test func otherFilesAreRecognised() throws {
        let googleServices = #"{"project_info": {"project_id": "x"}, "client": [{"client_info": {}}]}"#
        let failure = try #require(error(googleServices))
        #expect(failure.field == nil)
        #expect(failure.message.hasPrefix("this is google-services.json, the Android app's configuration"))

        let user = try #require(error(Self.keyFile(["type": .string("authorized_user")])))
        #expect(user.field == "type")
        #expect(user.message.hasPrefix("the JSON is a \"authorized_user\" credential, not a service account key"))

        let badEmail = try #require(error(Self.keyFile(["client_email": .string("not an email")])))
        #expect(badEmail.field == "client_email")
        let badProject = try #require(error(Self.keyFile(["project_id": .string("a/b")])))
        #expect(badProject.field == "project_id")
        #expect(
            try FCMServiceAccount(json: Self.keyFile(["project_id": .string("example.com:legacy-project")])).projectID
                == "example.com:legacy-project")
    }

    @Test(arguments: [
        "", " ", "nope", "null", "42", "\"text\"", "[]", "[{}]", "{", "{\"project_id\":", "{}", "\u{0}", "{\"a\":\"\u{FFFD}\"}",
        String(repeating: "[", count: 10_000), String(repeating: "{\"a\":", count: 5_000),
    ])
    func garbageIsRefusedWithoutCrashing(_ text: String) {
        #expect(error(text) != nil)
    }

    @Test func bytesThatAreNotTextAreRefused() throws {
        var generator = SystemRandomNumberGenerator()
        for length in [1, 7, 64, 2_000] {
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            #expect(throws: FCMServiceAccountError.self) { try FCMServiceAccount(json: bytes) }
        }
        let huge = Array(repeating: UInt8(ascii: " "), count: FCMServiceAccount.maximumSize + 1)
        let failure = try #require(throws: FCMServiceAccountError.self) { try FCMServiceAccount(json: huge) }
        #expect(failure.field == nil)
        #expect(failure.message.contains("more than a key file ever is"))
    }

    @Test func anEmptyObjectNamesTheFirstMissingMember() throws {
        let failure = try #require(error("{}"))
        #expect(failure.field == "project_id")
    }
}
