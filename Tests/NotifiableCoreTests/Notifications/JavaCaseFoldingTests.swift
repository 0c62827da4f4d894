import Foundation
import Testing

@testable import NotifiableCore

/// The Android SDK matches `n_id`, `title` and `message` with Java's `equalsIgnoreCase`, which
/// compares characters by their simple upper- and lower-case mappings.
@Suite struct JavaCaseFoldingTests {
    /// Every non-ASCII code point whose case mapping is a single ASCII letter is one the fold
    /// knows: U+0131 ı and U+017F ſ (upper case I, S), U+212A K (lower case k). U+0130 İ lower-cases
    /// to i plus a combining dot in the full mapping Swift exposes, and to i in Java's simple one.
    @Test func theFoldCoversEveryCodePointThatCaseMapsToAnASCIILetter() {
        var found: [UInt32] = []
        for value in UInt32(0x80)...0x10FFFF {
            guard let scalar = Unicode.Scalar(value) else { continue }
            for mapping in [scalar.properties.uppercaseMapping, scalar.properties.lowercaseMapping] {
                let mapped = Array(mapping.unicodeScalars)
                if mapped.count == 1, mapped[0].isASCII, mapped[0].properties.isAlphabetic { found.append(value) }
                if mapped.count == 2, mapped[0].isASCII, mapped[1].value == 0x307 { found.append(value) }
            }
        }
        #expect(Set(found) == [0x130, 0x131, 0x17F, 0x212A])
        for value in found {
            let scalar = Unicode.Scalar(value)!
            let folded = NotificationContent.javaCaseFolded(String(scalar))
            #expect(folded.unicodeScalars.allSatisfy { $0.isASCII })
        }
    }

    @Test(arguments: ["title", "TITLE", "Title", "tıtle", "TİTLE", "message", "MESSAGE", "meſſage", "n_id", "N_ID", "n_İd", "n_ıd"])
    func keysTheAndroidSDKReadsAsItsOwn(_ key: String) {
        #expect(NotificationContent.isAndroidSDKKey(key))
        #expect(NotificationContent.isReservedParameter(key))
    }

    @Test(arguments: ["titles", "subtitle", "messages", "nid", "n-id", "tītle", "ｔｉｔｌｅ"])
    func keysThatOnlyLookAlike(_ key: String) {
        #expect(!NotificationContent.isAndroidSDKKey(key))
    }
}
