import Crypto
import Foundation
import NIOSSL
import SwiftASN1
import X509

/// The TLS identity of `herald dev`'s APNs stand-in: a certificate authority of its own and a server
/// certificate it signed for `127.0.0.1` and `localhost`, made once and kept in the data directory.
/// A client trusts the authority's certificate (`ca.pem`: the functions' `HERALD_APNS_CA_FILE`, a test's
/// `cafile`), as it would trust Apple's.
struct StandInCertificates: Sendable {
    let authorityFile: String
    let server: TLSConfiguration

    /// Reads the certificates from `directory`, or makes them there.
    static func load(directory: String) async throws -> StandInCertificates {
        try PrivateFiles.directory(directory)
        let authorityFile = (directory as NSString).appendingPathComponent("ca.pem")
        let certificateFile = (directory as NSString).appendingPathComponent("server.pem")
        let keyFile = (directory as NSString).appendingPathComponent("server-key.pem")
        if !FileManager.default.fileExists(atPath: certificateFile) || !FileManager.default.fileExists(atPath: keyFile)
            || !FileManager.default.fileExists(atPath: authorityFile)
        {
            let (authority, certificate, key) = try make()
            try PrivateFiles.write(key, to: keyFile)
            try PrivateFiles.write(certificate, to: certificateFile)
            try PrivateFiles.write(authority, to: authorityFile)
        }
        let chain = try NIOSSLCertificate.fromPEMFile(certificateFile).map { NIOSSLCertificateSource.certificate($0) }
        var server = TLSConfiguration.makeServerConfiguration(certificateChain: chain, privateKey: .file(keyFile))
        // APNs is HTTP/2 only: it is all that is offered.
        server.applicationProtocols = ["h2"]
        return StandInCertificates(authorityFile: authorityFile, server: server)
    }

    /// PEM of the authority's certificate, the server's certificate and the server's key.
    static func make() throws -> (authority: String, certificate: String, key: String) {
        let authorityKey = P256.Signing.PrivateKey()
        let authorityName = try DistinguishedName { CommonName("herald dev APNs stand-in CA") }
        let now = Date()
        let authority = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: .init(authorityKey.publicKey),
            notValidBefore: now - 3600, notValidAfter: now + 10 * 365 * 86_400, issuer: authorityName, subject: authorityName,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
                Critical(KeyUsage(keyCertSign: true))
            }, issuerPrivateKey: .init(authorityKey))
        let serverKey = P256.Signing.PrivateKey()
        let server = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: .init(serverKey.publicKey),
            notValidBefore: now - 3600, notValidAfter: now + 825 * 86_400, issuer: authorityName,
            subject: try DistinguishedName { CommonName("localhost") }, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                Critical(KeyUsage(digitalSignature: true))
                try ExtendedKeyUsage([.serverAuth])
                SubjectAlternativeNames([
                    .dnsName("localhost"), .ipAddress(ASN1OctetString(contentBytes: [127, 0, 0, 1])),
                    .ipAddress(ASN1OctetString(contentBytes: ArraySlice([UInt8](repeating: 0, count: 15) + [1]))),
                ])
            }, issuerPrivateKey: .init(authorityKey))
        return (try authority.serializeAsPEM().pemString, try server.serializeAsPEM().pemString, serverKey.pemRepresentation)
    }
}
