import Foundation
import NotifiableCore
import Testing

@Suite struct CredentialTests {
    @Test(arguments: CredentialRole.allCases)
    func generatedPairHasExpectedShape(_ role: CredentialRole) throws {
        let credential = Credential.generate(role: role)
        #expect(credential.role == role)
        #expect(credential.accessID.count == 20)
        #expect(credential.accessID.allSatisfy { ("a"..."z").contains($0) || ("0"..."9").contains($0) })
        let secret = try #require(Data(base64Encoded: credential.secretKey))
        #expect(secret.count == 32)
    }

    @Test func generatedPairsDiffer() {
        let a = Credential.generate(role: .device)
        let b = Credential.generate(role: .device)
        #expect(a.accessID != b.accessID)
        #expect(a.secretKey != b.secretKey)
    }
}
