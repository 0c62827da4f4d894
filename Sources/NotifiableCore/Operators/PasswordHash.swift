import Crypto
import Foundation
import _CryptoExtras

/// Operators' passwords, kept as scrypt hashes (swift-crypto's `KDF.Scrypt`, BoringSSL's
/// implementation). scrypt is memory-hard, so guessing on GPUs or ASICs costs memory as well as
/// time, and it comes from a library the project already depends on and Apple maintains.
/// The parameters are OWASP's (Password Storage Cheat Sheet) equivalent of N=2^17, r=8, p=1 at
/// a quarter of the memory: N=2^15, r=8, p=3 (32 MiB, about 0.1 s here), so a burst of sign-ins
/// cannot exhaust the server's memory. The stored form names its parameters, so they can rise
/// later without breaking existing hashes.
public struct PasswordHash: Sendable, Equatable {
    public struct Parameters: Sendable, Equatable {
        public var rounds: Int
        public var blockSize: Int
        public var parallelism: Int

        public init(rounds: Int, blockSize: Int, parallelism: Int) {
            self.rounds = rounds
            self.blockSize = blockSize
            self.parallelism = parallelism
        }

        public static let standard = Parameters(rounds: 1 << 15, blockSize: 8, parallelism: 3)
    }

    public static let minimumPasswordLength = 12
    public static let maximumPasswordLength = 1024

    /// `scrypt$N$r$p$salt$hash`, salt and hash in base64url.
    public let encoded: String

    public init?(encoded: String) {
        guard Self.parse(encoded) != nil else { return nil }
        self.encoded = encoded
    }

    /// A new hash of `password` under a fresh random salt.
    public static func make(_ password: String, parameters: Parameters = .standard) throws -> PasswordHash {
        let salt = SymmetricKey(size: .bits128).withUnsafeBytes { Data($0) }
        let hash = try derive(password, salt: salt, parameters: parameters)
        return PasswordHash(
            unchecked:
                "scrypt$\(parameters.rounds)$\(parameters.blockSize)$\(parameters.parallelism)$\(Base64URL.encode(salt))$\(Base64URL.encode(hash))"
        )
    }

    /// Whether `password` is the one hashed; compared in constant time.
    public func matches(_ password: String) -> Bool {
        guard password.utf8.count <= Self.maximumPasswordLength, let (parameters, salt, expected) = Self.parse(encoded),
            let actual = try? Self.derive(password, salt: salt, parameters: parameters)
        else { return false }
        return actual.count == expected.count && zip(actual, expected).reduce(0) { $0 | ($1.0 ^ $1.1) } == 0
    }

    /// Why a new password is refused, or nil when it is acceptable.
    public static func weakness(of password: String) -> String? {
        if password.count < minimumPasswordLength { return "A password needs at least \(minimumPasswordLength) characters." }
        if password.utf8.count > maximumPasswordLength { return "A password may have at most \(maximumPasswordLength) bytes." }
        return nil
    }

    private init(unchecked: String) { encoded = unchecked }

    private static func derive(_ password: String, salt: Data, parameters: Parameters) throws -> Data {
        let key = try KDF.Scrypt.deriveKey(
            from: Data(password.utf8), salt: salt, outputByteCount: 32, rounds: parameters.rounds, blockSize: parameters.blockSize,
            parallelism: parameters.parallelism)
        return key.withUnsafeBytes { Data($0) }
    }

    private static func parse(_ encoded: String) -> (Parameters, Data, Data)? {
        let parts = encoded.split(separator: "$", omittingEmptySubsequences: false)
        guard parts.count == 6, parts[0] == "scrypt", let rounds = Int(parts[1]), let blockSize = Int(parts[2]), let parallelism = Int(parts[3]),
            rounds > 1, rounds <= 1 << 20, rounds & (rounds - 1) == 0, (1...32).contains(blockSize), (1...16).contains(parallelism),
            let salt = Base64URL.decode(parts[4]), let hash = Base64URL.decode(parts[5]), salt.count >= 16, hash.count == 32
        else { return nil }
        return (Parameters(rounds: rounds, blockSize: blockSize, parallelism: parallelism), salt, hash)
    }
}
