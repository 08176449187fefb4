import AsyncHTTPClient
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdCore
import HummingbirdTLS
import Logging
import NIOCore
import NIOHTTP1
import NIOSSL

/// A certificate authority of the test's own: one self-signed certificate for `127.0.0.1` and
/// `localhost` (made by `openssl`), which a root file system trusts once its PEM is in the bundle.
public struct TestCertificateAuthority: Sendable {
    public let certificatePEM: String
    public let keyPEM: String

    public static func make() async throws -> TestCertificateAuthority {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-ca-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let made = try await ProcessRunner.run(
            URL(fileURLWithPath: "/usr/bin/env"),
            [
                "openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=Herald test CA",
                "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1", "-addext", "basicConstraints=critical,CA:TRUE",
                "-keyout", directory.appendingPathComponent("key.pem").path, "-out", directory.appendingPathComponent("cert.pem").path,
            ])
        guard made.status == 0 else { throw RawHTTPError("openssl could not make a certificate: \(made.stderr)") }
        return TestCertificateAuthority(
            certificatePEM: try String(contentsOf: directory.appendingPathComponent("cert.pem"), encoding: .utf8),
            keyPEM: try String(contentsOf: directory.appendingPathComponent("key.pem"), encoding: .utf8))
    }
}

/// Serves HTTPS on a free loopback port with the authority's certificate, forwarding every request to
/// `target` (`herald dev`'s plain http) and its answer back: `herald dev` over TLS, for a client that
/// must check the certificate against its own trust store.
public func withTLSProxy<Result: Sendable>(
    to target: String, authority: TestCertificateAuthority, _ body: @Sendable (_ port: Int) async throws -> Result
) async throws -> Result {
    let logger = Logger(label: "tls-proxy") { _ in SwiftLogNoOpLogHandler() }
    var tls = TLSConfiguration.makeServerConfiguration(
        certificateChain: try NIOSSLCertificate.fromPEMBytes(Array(authority.certificatePEM.utf8)).map { .certificate($0) },
        privateKey: .privateKey(try NIOSSLPrivateKey(bytes: Array(authority.keyPEM.utf8), format: .pem)))
    tls.applicationProtocols = ["http/1.1"]
    let router = Router()
    for method in [HTTPRequest.Method.get, .post, .put, .patch, .delete] {
        router.on("**", method: method) { request, _ -> Response in
            var request = request
            var forwarded = HTTPClientRequest(url: target + (request.uri.path) + (request.uri.query.map { "?\($0)" } ?? ""))
            forwarded.method = .init(rawValue: request.method.rawValue)
            for field in request.headers where field.name.canonicalName != "host" { forwarded.headers.add(name: field.name.rawName, value: field.value) }
            forwarded.body = .bytes(try await request.collectBody(upTo: 64 << 20))
            let answer = try await HTTPClient.shared.execute(forwarded, timeout: .seconds(60))
            var headers = HTTPFields()
            for (name, value) in answer.headers {
                guard let field = HTTPField.Name(name), !["content-length", "transfer-encoding", "connection"].contains(name.lowercased()) else { continue }
                headers.append(HTTPField(name: field, value: value))
            }
            return Response(
                status: .init(code: Int(answer.status.code)), headers: headers, body: .init(byteBuffer: try await answer.body.collect(upTo: 64 << 20)))
        }
    }
    let server = try HTTPServerBuilder.tls(.http1(), tlsConfiguration: tls)
    return try await withRunningApplication(
        logger: logger,
        { onRunning in
            Application(
                router: router, server: server, configuration: .init(address: .hostname("127.0.0.1", port: 0)),
                onServerRunning: { await onRunning($0.localAddress?.port ?? 0) }, logger: logger)
        }, { port, _ in try await body(port) })
}
