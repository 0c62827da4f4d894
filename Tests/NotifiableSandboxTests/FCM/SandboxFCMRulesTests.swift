import Foundation
import Testing

@testable import NotifiableSandbox

/// The fake FCM gateway's rules without sockets, where time can be chosen.
@Suite("Fake FCM rules")
struct SandboxFCMRulesTests {
    static let tokenURI = "https://127.0.0.1:1/token"

    func makeRules() throws -> (SandboxFCMRules, ServiceAccountKey) {
        let rules = SandboxFCMRules()
        rules.setTokenURI(Self.tokenURI)
        let account = try SandboxFCMServiceAccount.make(projectID: "p", clientEmail: nil, tokenURI: Self.tokenURI)
        rules.trust(clientEmail: account.clientEmail, projectID: "p", publicKey: account.privateKey.publicKey)
        return (rules, try ServiceAccountKey(json: account.json))
    }

    func tokenRequest(_ assertion: String) -> SandboxHTTPRequest {
        SandboxHTTPRequest(
            method: "POST", path: "/token", headers: [(name: "content-type", value: "application/x-www-form-urlencoded")],
            body: Array("grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=\(assertion)".utf8)
        )
    }

    func sendRequest(bearer: String) -> SandboxHTTPRequest {
        SandboxHTTPRequest(
            method: "POST", path: "/v1/projects/p/messages:send", headers: [(name: "authorization", value: "Bearer \(bearer)")],
            body: Array(#"{"message":{"token":"t"}}"#.utf8)
        )
    }

    func reply(_ decision: SandboxHTTPDecision) throws -> SandboxHTTPReply {
        guard case .answer(let reply, _) = decision else { throw SandboxGatewayError("No answer: \(decision)") }
        return reply
    }

    func json(_ reply: SandboxHTTPReply) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(reply.body.utf8)) as? [String: Any])
    }

    @Test("An access token works until its lifetime ends")
    func accessTokenExpires() throws {
        let (rules, account) = try makeRules()
        let issued = Date(timeIntervalSince1970: 1_700_000_000)
        let answer = try reply(rules.decide(tokenRequest(try account.assertion(issuedAt: issued)), now: issued))
        #expect(answer.status == 200)
        let accessToken = try #require(try json(answer)["access_token"] as? String)
        #expect(try reply(rules.decide(sendRequest(bearer: accessToken), now: issued.addingTimeInterval(3598))).status == 200)
        #expect(try reply(rules.decide(sendRequest(bearer: accessToken), now: issued.addingTimeInterval(3599))).status == 401)
    }

    @Test("An assertion issued up to a minute ahead of the clock is taken; further ahead it is refused")
    func clockSkew() throws {
        let (rules, account) = try makeRules()
        let now = Date(timeIntervalSince1970: 1_700_000_000)
        let ahead = try reply(rules.decide(tokenRequest(try account.assertion(issuedAt: now.addingTimeInterval(50))), now: now))
        #expect(ahead.status == 200)
        let tooFar = try reply(rules.decide(tokenRequest(try account.assertion(issuedAt: now.addingTimeInterval(70))), now: now))
        #expect(tooFar.status == 400)
        #expect(try json(tooFar)["error"] as? String == "invalid_grant")
    }

    @Test("Token answers are not cacheable and keep Google's member order")
    func tokenAnswerShape() throws {
        let (rules, account) = try makeRules()
        let answer = try reply(rules.decide(tokenRequest(try account.assertion())))
        #expect(answer.body.hasPrefix(#"{"access_token":"ya29."#))
        #expect(answer.body.hasSuffix(#","expires_in":3599,"token_type":"Bearer"}"#))
        #expect(answer.headers["cache-control"]?.contains("no-store") == true)
    }

    @Test("A JSON token request is read as a form would be")
    func jsonTokenRequest() throws {
        let (rules, account) = try makeRules()
        let body = #"{"grant_type":"urn:ietf:params:oauth:grant-type:jwt-bearer","assertion":"\#(try account.assertion())"}"#
        let request = SandboxHTTPRequest(
            method: "POST", path: "/token", headers: [(name: "content-type", value: "application/json")], body: Array(body.utf8)
        )
        #expect(try reply(rules.decide(request)).status == 200)
    }

    @Test("Google's error body is written as Google writes it")
    func errorBodyShape() {
        let body = GoogleErrorBody.apiError(
            code: 404, message: "Requested entity was not found.", status: "NOT_FOUND",
            details: [.fcmError(errorCode: "UNREGISTERED")]
        )
        #expect(
            body
                == #"{"error":{"code":404,"message":"Requested entity was not found.","status":"NOT_FOUND","details":[{"@type":"type.googleapis.com/google.firebase.fcm.v1.FcmError","errorCode":"UNREGISTERED"}]}}"#
        )
        #expect(GoogleErrorBody.oauthError("invalid_grant", description: "a \"b\"") == #"{"error":"invalid_grant","error_description":"a \"b\""}"#)
        #expect(GoogleErrorBody.field(namedIn: "Invalid value at 'message.android.ttl' (x), 1") == "message.android.ttl")
        #expect(GoogleErrorBody.field(namedIn: "The registration token is not a valid FCM registration token") == "message.token")
        #expect(GoogleErrorBody.field(namedIn: "Requested entity was not found.") == nil)
    }

    @Test("Small readers: durations, field names, send paths, JSON strings")
    func helpers() {
        for good in ["3600s", "0s", "1.5s", "0.000000001s"] { #expect(FCMMessageValidator.isDuration(good), "\(good)") }
        for bad in ["3600", "s", "-1s", "1.s", ".5s", "1.0000000001s", "1e3s", "1,5s"] {
            #expect(!FCMMessageValidator.isDuration(bad), "\(bad)")
        }
        #expect(FCMMessageValidator.snakeCase("collapseKey") == "collapse_key")
        #expect(FCMMessageValidator.snakeCase("collapse_key") == "collapse_key")
        #expect(SandboxFCMRules.sendPathProject("/v1/projects/demo-project/messages:send") == "demo-project")
        #expect(SandboxFCMRules.sendPathProject("/v1/projects//messages:send") == nil)
        #expect(SandboxFCMRules.sendPathProject("/v1/projects/a/b/messages:send") == nil)
        #expect(SandboxFCMRules.sendPathProject("/v1/projects/a/messages") == nil)
    }
}
