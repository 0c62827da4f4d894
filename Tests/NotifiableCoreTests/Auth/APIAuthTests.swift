import Foundation
import NotifiableCore
import Testing

@Suite struct APIAuthTests {
    static let secret = "T0pSecretKey=="
    static let canonical = "POST,application/json; charset=utf-8,,/api/v1/device_tokens,Sun, 22 Nov 2026 06:01:44 GMT"

    @Test func sha1KnownAnswer() {
        #expect(APIAuth.signature(of: Self.canonical, secretKey: Self.secret, algorithm: .hmacSHA1) == "rHqIVN94l3teXl2h3e16WgYQlso=")
    }

    @Test func sha256KnownAnswer() {
        #expect(
            APIAuth.signature(of: Self.canonical, secretKey: Self.secret, algorithm: .hmacSHA256)
                == "VN9IfjFb8tTMwz8k57qbbEcN2NurHbvMlbCExbcOH8w="
        )
    }

    @Test func canonicalStringJoinsPartsWithCommas() {
        let built = APIAuth.canonicalString(
            method: "POST", contentType: "application/json; charset=utf-8", contentHash: "",
            requestURI: "/api/v1/device_tokens", date: "Sun, 22 Nov 2026 06:01:44 GMT"
        )
        #expect(built == Self.canonical)
    }

    @Test func canonicalStringUpperCasesMethod() {
        let built = APIAuth.canonicalString(method: "put", contentType: "", contentHash: "", requestURI: "/x", date: "d")
        #expect(built == "PUT,,,/x,d")
    }

    @Test func parsesSHA1AuthorizationHeader() {
        let auth = APIAuth.Authorization(header: "APIAuth abc123:c2lnbmF0dXJl=")
        #expect(auth == APIAuth.Authorization(algorithm: .hmacSHA1, accessID: "abc123", signature: "c2lnbmF0dXJl="))
    }

    @Test func parsesSHA256AuthorizationHeader() {
        let auth = APIAuth.Authorization(header: "APIAuth-HMAC-SHA256 abc123:c2lnbmF0dXJl=")
        #expect(auth == APIAuth.Authorization(algorithm: .hmacSHA256, accessID: "abc123", signature: "c2lnbmF0dXJl="))
    }

    @Test func headerValueRoundTrips() {
        let auth = APIAuth.Authorization(algorithm: .hmacSHA256, accessID: "id", signature: "sig")
        #expect(auth.headerValue == "APIAuth-HMAC-SHA256 id:sig")
        #expect(APIAuth.Authorization(header: auth.headerValue) == auth)
    }

    @Test(arguments: [
        "Bearer x",
        "APIAuth nocolon",
        "APIAuth :sig",
        "APIAuth id:",
        "APIAuth",
        "apiauth id:sig",
        "",
    ])
    func rejectsMalformedAuthorizationHeader(_ header: String) {
        #expect(APIAuth.Authorization(header: header) == nil)
    }

    @Test func constantTimeEqualsMatchesEquality() {
        #expect(APIAuth.constantTimeEquals("abc", "abc"))
        #expect(APIAuth.constantTimeEquals("", ""))
        #expect(!APIAuth.constantTimeEquals("abc", "abd"))
        #expect(!APIAuth.constantTimeEquals("abc", "Abc"))
    }

    @Test func constantTimeEqualsRejectsDifferentLengths() {
        #expect(!APIAuth.constantTimeEquals("abc", "abcd"))
        #expect(!APIAuth.constantTimeEquals("abc", ""))
        #expect(!APIAuth.constantTimeEquals("", "a"))
    }

    @Test func bodyHashesOfHelloAndOfNothing() {
        #expect(APIAuth.BodyHash.md5.value(of: Array("hello".utf8)) == "XUFAKrxLKna5cZ2REBfFkg==")
        #expect(APIAuth.BodyHash.md5.value(of: [UInt8]()) == "1B2M2Y8AsgTpgAmY7PhCfg==")
        // base64 of SHA-256, as api_auth's X-Authorization-Content-SHA256 carries it.
        #expect(APIAuth.BodyHash.sha256.value(of: Array("hello".utf8)) == "LPJNul+wow4m6DsqxbninhsWHlwfp0JecwQzYpOLmCQ=")
        #expect(APIAuth.BodyHash.sha256.value(of: [UInt8]()) == "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=")
        #expect(APIAuth.BodyHash.sha256.headerName == "X-Authorization-Content-SHA256")
        #expect(APIAuth.BodyHash.md5.headerName == "Content-MD5")
    }

    @Test func signedHeadersReproduceKnownAnswer() throws {
        let headers = APIAuth.signedHeaders(
            method: "POST", path: "/api/v1/device_tokens", body: Array("{}".utf8),
            accessID: "myid", secretKey: Self.secret, date: 1_795_327_304
        )
        let values = Dictionary(headers.map { ($0.name, $0.value) }, uniquingKeysWith: { a, _ in a })
        #expect(values["Date"] == "Sun, 22 Nov 2026 06:01:44 GMT")
        #expect(values["Content-Type"] == "application/json; charset=utf-8")
        #expect(values["Content-MD5"] == nil)
        #expect(values["Authorization"] == "APIAuth myid:rHqIVN94l3teXl2h3e16WgYQlso=")
    }

    @Test(arguments: [APIAuth.Algorithm.hmacSHA1, .hmacSHA256], APIAuth.BodyHash.allCases)
    func signedHeadersVerifyAgainstCanonicalString(_ algorithm: APIAuth.Algorithm, _ bodyHash: APIAuth.BodyHash) throws {
        let body = Array(#"{"provider":"fcm"}"#.utf8)
        let headers = APIAuth.signedHeaders(
            method: "put", path: "/api/v1/device_tokens/7", body: body, accessID: "access",
            secretKey: "s3cret", date: 1_700_000_000, algorithm: algorithm, bodyHash: bodyHash
        )
        let values = Dictionary(headers.map { ($0.name, $0.value) }, uniquingKeysWith: { a, _ in a })
        let hash = try #require(values[bodyHash.headerName])
        #expect(hash == bodyHash.value(of: body))
        #expect(values.count == 4)
        let date = try #require(values["Date"])
        #expect(HTTPDate.parse(date) == 1_700_000_000)
        let contentType = try #require(values["Content-Type"])
        let header = try #require(values["Authorization"])
        let auth = try #require(APIAuth.Authorization(header: header))
        #expect(auth.algorithm == algorithm)
        #expect(auth.accessID == "access")

        let canonical = APIAuth.canonicalString(
            method: "PUT", contentType: contentType, contentHash: hash, requestURI: "/api/v1/device_tokens/7", date: date
        )
        let expected = APIAuth.signature(of: canonical, secretKey: "s3cret", algorithm: algorithm)
        #expect(APIAuth.constantTimeEquals(auth.signature, expected))
        let wrongKey = APIAuth.signature(of: canonical, secretKey: "other", algorithm: algorithm)
        #expect(!APIAuth.constantTimeEquals(auth.signature, wrongKey))
    }
}
