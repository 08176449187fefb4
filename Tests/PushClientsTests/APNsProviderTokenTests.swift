import Crypto
import Foundation
import P256Signatures
import PushClients
import Testing
import WireFormats

/// The provider token's life, on an injected clock: kept for 50 minutes, renewed on APNs's word only
/// once 20 minutes old, and an ES256 JWT any verifier takes.
@Suite struct APNsProviderTokenTests {
    static func provider(_ clock: Shared<Int64>) throws -> (APNsProviderToken, Crypto.P256.Signing.PrivateKey) {
        let reference = Crypto.P256.Signing.PrivateKey()
        let key = try P256Signatures.P256.PrivateKey(pem: reference.pemRepresentation)
        return (APNsProviderToken(key: key, keyID: "ABC123DEFG", teamID: "DEF123GHIJ", now: { clock.value }), reference)
    }

    @Test func oneTokenServesFiftyMinutesThenANewOne() throws {
        let clock = Shared<Int64>(1_800_000_000)
        let (provider, _) = try Self.provider(clock)
        let first = try provider.token()
        clock.change { $0 += 49 * 60 }
        #expect(try provider.token() == first)
        clock.change { $0 += 60 }
        let second = try provider.token()
        #expect(second != first)
        #expect(provider.issuedAt == Int64(1_800_003_000))
    }

    @Test func aRefusedTokenIsRenewedOnlyWhenTwentyMinutesOld() throws {
        let clock = Shared<Int64>(1_800_000_000)
        let (provider, _) = try Self.provider(clock)
        let first = try provider.token()
        clock.change { $0 += 19 * 60 }
        #expect(try provider.renew(after: first) == nil)
        clock.change { $0 += 60 }
        let renewed = try #require(try provider.renew(after: first))
        #expect(renewed != first)
        // Another request that was refused with the old token gets the new one, not a third.
        #expect(try provider.renew(after: first) == renewed)
    }

    @Test func theTokenIsAnES256JWTOfTheTeamAndKey() throws {
        let clock = Shared<Int64>(1_800_000_123)
        let (provider, reference) = try Self.provider(clock)
        let token = try provider.token()
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        #expect(parts.count == 3)
        let header = try JSONValue(parsing: try #require(Base64.decode(parts[0])))
        let claims = try JSONValue(parsing: try #require(Base64.decode(parts[1])))
        #expect(header == ["alg": "ES256", "kid": "ABC123DEFG"])
        #expect(claims == ["iss": "DEF123GHIJ", "iat": .integer(1_800_000_123)])
        let signature = try Crypto.P256.Signing.ECDSASignature(rawRepresentation: try #require(Base64.decode(parts[2])))
        #expect(reference.publicKey.isValidSignature(signature, for: Data(token.utf8.prefix(parts[0].count + 1 + parts[1].count))))
    }
}
