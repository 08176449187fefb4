import EmbeddedFirestore
import Foundation
import WireFormats

/// The local Auth's users in and out, in the file Google's Auth emulator exports
/// (`auth_export/accounts.json`: `{"kind": "identitytoolkit#DownloadAccountResponse", "users": […]}`).
/// Passwords leave as this cloud keeps them (`heraldScrypt:` and the salt, never the password); a
/// Google emulator's export (`fakeHash:salt=…:password=…`) is read and its passwords hashed here.
public struct AuthArchive: Sendable {
    let store: AuthStore
    let onChange: @Sendable () -> Void

    public static let exportFile = "auth_export/accounts.json"
    /// Users in one export, at most.
    public static let maximumImported = 100_000

    public func exportAccounts(project: String) async throws(LocalAPIError) -> JSONValue {
        var users: [JSONValue] = []
        var after = ""
        while true {
            let page = try await store.accounts(project: project, after: after, limit: 1000)
            for account in page {
                guard var info = account.userInfo.objectValue else { continue }
                if let hash = account.passwordHash, let salt = account.salt {
                    info["passwordHash"] = .string("heraldScrypt:" + Base64.encode(hash))
                    info["salt"] = .string(Base64.encode(salt))
                }
                info["heraldProvider"] = .string(account.provider)
                users.append(.object(info))
            }
            guard page.count == 1000, let last = page.last else { break }
            after = last.uid
        }
        return ["kind": "identitytoolkit#DownloadAccountResponse", "users": .array(users)]
    }

    /// Adds the users of an export (a user already here by id is left as it is); the count added.
    public func importAccounts(_ json: JSONValue, project: String) async throws -> Int {
        guard let users = json["users"]?.arrayValue else { throw LocalAPIError.invalidArgument("\(Self.exportFile) has no users array") }
        guard users.count <= Self.maximumImported else {
            throw LocalAPIError.invalidArgument("\(Self.exportFile) holds \(users.count) users; at most \(Self.maximumImported) are imported")
        }
        var added = 0
        for (index, user) in users.enumerated() {
            guard let uid = user["localId"]?.stringValue, !uid.isEmpty, uid.utf8.count <= 128 else {
                throw LocalAPIError.invalidArgument("\(Self.exportFile): user \(index) has no localId (or one over 128 bytes)")
            }
            if try await store.account(uid: uid, project: project) != nil { continue }
            func milliseconds(_ key: String) -> Int64? { user[key]?.stringValue.flatMap { Int64($0) } ?? user[key]?.int64Value }
            let now = Int64(Date().timeIntervalSince1970 * 1000)
            var account = AuthAccount(
                uid: uid, email: user["email"]?.stringValue?.lowercased(), emailVerified: user["emailVerified"]?.boolValue ?? false,
                displayName: user["displayName"]?.stringValue, photoURL: user["photoUrl"]?.stringValue, disabled: user["disabled"]?.boolValue ?? false,
                createdAt: milliseconds("createdAt") ?? now, lastLoginAt: milliseconds("lastLoginAt"),
                passwordUpdatedAt: user["passwordUpdatedAt"]?.int64Value, validSince: milliseconds("validSince") ?? now / 1000,
                customClaims: user["customAttributes"]?.stringValue.flatMap { try? JSONValue(parsing: Array($0.utf8)) }?.objectValue ?? [:],
                provider: user["heraldProvider"]?.stringValue ?? (user["email"] == nil ? "anonymous" : "password"))
            let stored = user["passwordHash"]?.stringValue ?? ""
            if stored.hasPrefix("heraldScrypt:"), let hash = Base64.decode(stored.dropFirst("heraldScrypt:".count)),
                let salt = user["salt"]?.stringValue.flatMap({ Base64.decode($0) })
            {
                (account.passwordHash, account.salt) = (hash, salt)
            } else if stored.hasPrefix("fakeHash:"), let range = stored.range(of: ":password=") {
                // Google's emulator keeps the password itself in its export: hashed here, then forgotten.
                (account.passwordHash, account.salt) = try PasswordHash.make(String(stored[range.upperBound...]))
            }
            guard try await store.save(account, project: project) else {
                throw LocalAPIError.invalidArgument("\(Self.exportFile): user \(uid.prefix(128)) has an email another user has")
            }
            added += 1
        }
        if added > 0 { onChange() }
        return added
    }
}
