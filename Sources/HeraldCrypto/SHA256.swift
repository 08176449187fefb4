import COpenSSL

/// SHA-256 (FIPS 180-4), computed by OpenSSL's libcrypto.
public struct SHA256: Sendable {
    private var bytes: [UInt8] = []

    public init() {}

    /// The digest of `bytes`: 32 bytes.
    public static func hash(_ bytes: some Sequence<UInt8>) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: 32)
        let done = digest.withUnsafeMutableBufferPointer { out in
            let direct = bytes.withContiguousStorageIfAvailable { herald_sha256($0.baseAddress, $0.count, out.baseAddress!) }
            return direct ?? Array(bytes).withUnsafeBufferPointer { herald_sha256($0.baseAddress, $0.count, out.baseAddress!) }
        }
        // Only a process without libcrypto gets here, and function executables refuse to start without it.
        guard done == 1 else { fatalError(OpenSSL.problem ?? "OpenSSL's SHA-256 failed") }
        return digest
    }

    /// Adds bytes to hash; the digest covers everything added, in order.
    public mutating func update(_ more: some Sequence<UInt8>) { bytes.append(contentsOf: more) }

    public consuming func finalize() -> [UInt8] { Self.hash(bytes) }
}

/// OpenSSL's libcrypto, opened at its first use.
public enum OpenSSL {
    /// Why libcrypto cannot be used here, or nil when it can (opens it if nothing has yet).
    public static var problem: String? { herald_openssl_problem().map { String(cString: $0) } }

    /// Opens libcrypto on a thread of its own (about 2 ms), so that start-up does not wait for it;
    /// `failed` runs on that thread with the reason if it cannot be used.
    public static func loadInBackground(failed: @escaping @convention(c) (UnsafePointer<CChar>) -> Void) {
        herald_openssl_load_in_background(failed)
    }
}
