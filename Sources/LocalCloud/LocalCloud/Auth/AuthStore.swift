import EmbeddedFirestore
import Foundation
import WireFormats

/// The local Firebase Auth's state in the local cloud's database: users, refresh tokens and the codes
/// of pending password resets and email verifications, per project. A restart keeps them.
struct AuthStore: Sendable {
    let database: LocalDatabase

    static let columns = """
        uid, email, email_verified, password_hash, salt, display_name, photo_url, disabled, created_at, last_login_at,
        password_updated_at, valid_since, custom_claims, provider
        """

    static func account(_ row: Row) -> AuthAccount {
        let claims: String? = row["custom_claims"]
        let hash: Data? = row["password_hash"]
        let salt: Data? = row["salt"]
        return AuthAccount(
            uid: row["uid"], email: row["email"], emailVerified: (row["email_verified"] as Int64) != 0, passwordHash: hash.map { Array($0) },
            salt: salt.map { Array($0) }, displayName: row["display_name"], photoURL: row["photo_url"], disabled: (row["disabled"] as Int64) != 0,
            createdAt: row["created_at"], lastLoginAt: row["last_login_at"], passwordUpdatedAt: row["password_updated_at"],
            validSince: row["valid_since"], customClaims: claims.flatMap { try? JSONValue(parsing: Array($0.utf8)) }?.objectValue ?? [:],
            provider: row["provider"])
    }

    static func arguments(_ project: String, _ account: AuthAccount) -> StatementArguments {
        [
            project, account.uid, account.email?.lowercased(), account.emailVerified ? 1 : 0, account.passwordHash.map { Data($0) },
            account.salt.map { Data($0) }, account.displayName, account.photoURL, account.disabled ? 1 : 0, account.createdAt,
            account.lastLoginAt, account.passwordUpdatedAt, account.validSince,
            account.customClaims.isEmpty ? nil : JSONValue.object(account.customClaims).serialized(), account.provider,
        ]
    }

    /// Stores `account` (a new one, or the new state of one); false when its email belongs to another user.
    func save(_ account: AuthAccount, project: String) async throws(LocalAPIError) -> Bool {
        try await database.write { db in
            if let email = account.email?.lowercased(),
                try String.fetchOne(
                    db, sql: "SELECT uid FROM auth_accounts WHERE project = ? AND email = ? AND uid != ?", arguments: [project, email, account.uid])
                    != nil
            {
                return false
            }
            try db.execute(
                sql: "INSERT OR REPLACE INTO auth_accounts (project, \(Self.columns)) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                arguments: Self.arguments(project, account))
            return true
        }
    }

    func account(uid: String, project: String) async throws(LocalAPIError) -> AuthAccount? {
        try await database.read { db in
            try Row.fetchOne(db, sql: "SELECT \(Self.columns) FROM auth_accounts WHERE project = ? AND uid = ?", arguments: [project, uid]).map(Self.account)
        }
    }

    func account(email: String, project: String) async throws(LocalAPIError) -> AuthAccount? {
        try await database.read { db in
            try Row.fetchOne(
                db, sql: "SELECT \(Self.columns) FROM auth_accounts WHERE project = ? AND email = ?", arguments: [project, email.lowercased()]
            ).map(Self.account)
        }
    }

    /// Users in uid order after `after`, at most `limit`.
    func accounts(project: String, after: String = "", limit: Int = 1000) async throws(LocalAPIError) -> [AuthAccount] {
        try await database.read { db in
            try Row.fetchAll(
                db, sql: "SELECT \(Self.columns) FROM auth_accounts WHERE project = ? AND uid > ? ORDER BY uid LIMIT ?",
                arguments: [project, after, limit]
            ).map(Self.account)
        }
    }

    func count(project: String) async throws(LocalAPIError) -> Int {
        try await database.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM auth_accounts WHERE project = ?", arguments: [project]) ?? 0 }
    }

    /// Deletes the user and everything that signs in as them (refresh tokens, pending codes).
    func delete(uid: String, project: String) async throws(LocalAPIError) -> Bool {
        try await database.write { db in
            try db.execute(sql: "DELETE FROM auth_refresh_tokens WHERE project = ? AND uid = ?", arguments: [project, uid])
            try db.execute(sql: "DELETE FROM auth_oob_codes WHERE project = ? AND uid = ?", arguments: [project, uid])
            try db.execute(sql: "DELETE FROM auth_accounts WHERE project = ? AND uid = ?", arguments: [project, uid])
            return db.changes > 0
        }
    }

    /// Every user of the project, their tokens and codes (the emulator's `DELETE …/accounts`).
    func clear(project: String) async throws(LocalAPIError) {
        try await database.write { db in
            for table in ["auth_refresh_tokens", "auth_oob_codes", "auth_accounts"] {
                try db.execute(sql: "DELETE FROM \(table) WHERE project = ?", arguments: [project])
            }
        }
    }

    // MARK: Refresh tokens

    func issueRefreshToken(uid: String, project: String) async throws(LocalAPIError) -> String {
        let token = LocalIdentity.randomText()
        try await database.write { db in
            try db.execute(
                sql: "INSERT INTO auth_refresh_tokens (token, project, uid, created_at) VALUES (?, ?, ?, ?)",
                arguments: [token, project, uid, Date().timeIntervalSince1970])
        }
        return token
    }

    /// The project and user a refresh token signs in as, if it is one this cloud issued and still holds.
    func refreshToken(_ token: String) async throws(LocalAPIError) -> (project: String, uid: String)? {
        try await database.read { db in
            try Row.fetchOne(db, sql: "SELECT project, uid FROM auth_refresh_tokens WHERE token = ?", arguments: [token]).map {
                ($0["project"] as String, $0["uid"] as String)
            }
        }
    }

    // MARK: Out-of-band codes

    struct OOBCode: Sendable {
        var code: String
        var uid: String
        var email: String
        /// `PASSWORD_RESET` or `VERIFY_EMAIL`.
        var kind: String
        var createdAt: Double
    }

    func issueCode(kind: String, uid: String, email: String, project: String) async throws(LocalAPIError) -> String {
        let code = LocalIdentity.randomText()
        try await database.write { db in
            try db.execute(
                sql: "INSERT INTO auth_oob_codes (code, project, uid, email, kind, created_at) VALUES (?, ?, ?, ?, ?, ?)",
                arguments: [code, project, uid, email, kind, Date().timeIntervalSince1970])
        }
        return code
    }

    func code(_ code: String, project: String) async throws(LocalAPIError) -> OOBCode? {
        try await database.read { db in
            try Row.fetchOne(db, sql: "SELECT * FROM auth_oob_codes WHERE project = ? AND code = ?", arguments: [project, code]).map {
                OOBCode(code: $0["code"], uid: $0["uid"], email: $0["email"], kind: $0["kind"], createdAt: $0["created_at"])
            }
        }
    }

    func useCode(_ code: String, project: String) async throws(LocalAPIError) {
        try await database.write { db in try db.execute(sql: "DELETE FROM auth_oob_codes WHERE project = ? AND code = ?", arguments: [project, code]) }
    }

    func codes(project: String) async throws(LocalAPIError) -> [OOBCode] {
        try await database.read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM auth_oob_codes WHERE project = ? ORDER BY created_at", arguments: [project]).map {
                OOBCode(code: $0["code"], uid: $0["uid"], email: $0["email"], kind: $0["kind"], createdAt: $0["created_at"])
            }
        }
    }

    static var migration: (identifier: String, apply: (Database) throws -> Void) {
        (
            "v7-auth",
            { db in
                try db.execute(
                    sql: """
                        CREATE TABLE auth_accounts (
                            project TEXT NOT NULL, uid TEXT NOT NULL, email TEXT, email_verified INTEGER NOT NULL, password_hash BLOB, salt BLOB,
                            display_name TEXT, photo_url TEXT, disabled INTEGER NOT NULL, created_at INTEGER NOT NULL, last_login_at INTEGER,
                            password_updated_at INTEGER, valid_since INTEGER NOT NULL, custom_claims TEXT, provider TEXT NOT NULL,
                            PRIMARY KEY (project, uid)
                        );
                        CREATE UNIQUE INDEX auth_accounts_by_email ON auth_accounts(project, email) WHERE email IS NOT NULL;
                        CREATE TABLE auth_refresh_tokens (token TEXT PRIMARY KEY, project TEXT NOT NULL, uid TEXT NOT NULL, created_at REAL NOT NULL);
                        CREATE INDEX auth_refresh_tokens_by_user ON auth_refresh_tokens(project, uid);
                        CREATE TABLE auth_oob_codes (
                            code TEXT PRIMARY KEY, project TEXT NOT NULL, uid TEXT NOT NULL, email TEXT NOT NULL, kind TEXT NOT NULL, created_at REAL NOT NULL
                        );
                        """)
            }
        )
    }
}
