import FirestoreModel
import RSASignatures
import SystemAccess
import WireFormats

/// A service-account key file as the Cloud console downloads it. Its `description` never shows the key.
public struct ServiceAccountKey: Sendable, CustomStringConvertible {
    public var clientEmail: String
    public var privateKeyID: String
    public var projectID: String?
    public var tokenURI: String
    let privateKeyPEM: String

    public init(clientEmail: String, privateKeyID: String, privateKeyPEM: String, projectID: String?, tokenURI: String = "https://oauth2.googleapis.com/token")
    {
        self.clientEmail = clientEmail
        self.privateKeyID = privateKeyID
        self.privateKeyPEM = privateKeyPEM
        self.projectID = projectID
        self.tokenURI = tokenURI
    }

    /// Parses a key file's JSON. Errors name the missing or bad field, never its value.
    public init(json bytes: [UInt8], source: String) throws(AuthError) {
        guard let json = try? JSONValue(parsing: bytes), case .object(let members) = json else {
            throw AuthError.badKeyFile("\(source) is not a JSON object")
        }
        func field(_ name: String) throws(AuthError) -> String {
            guard let value = members[name]?.stringValue, !value.isEmpty else { throw AuthError.badKeyFile("\(source) has no \"\(name)\"") }
            return value
        }
        guard members["type"]?.stringValue == "service_account" else {
            throw AuthError.badKeyFile("\(source) is not a service-account key (type must be \"service_account\")")
        }
        let pem = try field("private_key")
        guard pem.containsBytes(of: "-----BEGIN PRIVATE KEY-----") || pem.containsBytes(of: "-----BEGIN RSA PRIVATE KEY-----") else {
            throw AuthError.badKeyFile("\(source): \"private_key\" is not a PEM private key")
        }
        self.init(
            clientEmail: try field("client_email"), privateKeyID: try field("private_key_id"), privateKeyPEM: pem,
            projectID: members["project_id"]?.stringValue, tokenURI: members["token_uri"]?.stringValue ?? "https://oauth2.googleapis.com/token")
    }

    public init(contentsOf path: String) throws(AuthError) {
        let bytes: [UInt8]
        do { bytes = try LocalFile.read(path, limit: 1 << 20) } catch { throw AuthError.badKeyFile("cannot read \(error)") }
        try self.init(json: bytes, source: path)
    }

    public var description: String { "ServiceAccountKey(\(clientEmail), key id \(privateKeyID))" }

    /// The RSA key of `private_key`: PKCS#8 (`BEGIN PRIVATE KEY`, what Google's key files hold) or
    /// PKCS#1 (`BEGIN RSA PRIVATE KEY`). The error says what is wrong, never a part of the key.
    func signingKey() throws(AuthError) -> RSA.PrivateKey {
        do {
            if let der = Self.pemBody(privateKeyPEM, label: "PRIVATE KEY") { return try RSA.PrivateKey(pkcs8: der) }
            if let der = Self.pemBody(privateKeyPEM, label: "RSA PRIVATE KEY") { return try RSA.PrivateKey(pkcs1: der) }
        } catch {
            throw AuthError.badPrivateKey("the private_key of \(clientEmail) could not be read as an RSA key: \(error)")
        }
        throw AuthError.badPrivateKey("the private_key of \(clientEmail) could not be read as an RSA key: no PEM private key in it")
    }

    /// The bytes between `-----BEGIN label-----` and `-----END label-----` (whitespace and `\n` escapes ignored).
    static func pemBody(_ pem: String, label: String) -> [UInt8]? {
        let begin = "-----BEGIN \(label)-----"
        let end = "-----END \(label)-----"
        guard let start = pem.firstByteRange(of: begin), let stop = pem[start.upperBound...].firstByteRange(of: end) else { return nil }
        let body = pem[start.upperBound..<stop.lowerBound].filter { !$0.isWhitespace }
        return Base64.decode(body)
    }
}

/// Why a credential could not be had. Messages name files, fields and endpoints, never keys or tokens.
public enum AuthError: Error, Sendable, Equatable, CustomStringConvertible {
    case badKeyFile(String)
    case badPrivateKey(String)
    /// The token endpoint or metadata server said no (the status and Google's error code, if any).
    case refused(String)
    /// The token endpoint or metadata server could not be reached, or answered 5xx or 429.
    case unavailable(String)
    /// No credentials are configured and this is not Google Cloud (no metadata server).
    case notOnGoogleCloud(String)
    /// A setting the others need is not set: the message names it.
    case missingSetting(String)

    public var description: String {
        switch self {
        case .badKeyFile(let m): "bad service-account key file: \(m)"
        case .badPrivateKey(let m): "bad private key: \(m)"
        case .refused(let m): "credentials refused: \(m)"
        case .unavailable(let m): "token service unavailable: \(m)"
        case .notOnGoogleCloud(let m), .missingSetting(let m): m
        }
    }
}
