import EmbeddedFirestore
import Foundation
import WireFormats

/// Firebase Auth on `herald dev`'s own port, as Google's Auth emulator serves it: the Identity Toolkit
/// calls the SDKs make (`/identitytoolkit.googleapis.com/v1/accounts:…`), the token refresh
/// (`/securetoken.googleapis.com/v1/token`), the Admin SDKs' calls (`…/v1/projects/P/accounts…`) and
/// the emulator's own (`/emulator/v1/projects/P/…`). `AuthAPI` answers them; this holds the state.
public final class LocalAuth: Sendable {
    let store: AuthStore
    /// Sign-ups and password sign-ins hash a password (milliseconds of CPU each, a tenth of a second in
    /// a debug build): one at a time, with a short line waiting its turn.
    let hashTurns = HashTurns(waitingLimit: 8)
    let hashQueue = DispatchQueue(label: "herald.auth.hash")
    /// Told of every change, for the console.
    let onChange: @Sendable () -> Void
    /// Told of each password-reset or verification link made (no mail is sent), for the log.
    let onLink: @Sendable (String) -> Void

    init(database: LocalDatabase, onChange: @escaping @Sendable () -> Void, onLink: @escaping @Sendable (String) -> Void) {
        store = AuthStore(database: database)
        self.onChange = onChange
        self.onLink = onLink
    }

    /// Users in and out, in the file Google's Auth emulator exports.
    public var archive: AuthArchive { AuthArchive(store: store, onChange: onChange) }

    /// `body` (a password hash) in its turn, on a thread of its own (not a server's event loop nor the
    /// tasks' pool), or `TOO_MANY_ATTEMPTS_TRY_LATER` when the line is full, as Firebase answers a
    /// flood: a burst of sign-ups takes at most one core, and the Firestore API answers meanwhile.
    func hashing<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        guard await hashTurns.take() else { throw AuthError("TOO_MANY_ATTEMPTS_TRY_LATER") }
        defer { hashTurns.release() }
        return try await withCheckedContinuation { (done: CheckedContinuation<Result<T, any Error>, Never>) in
            hashQueue.async { done.resume(returning: Result { try body() }) }
        }.get()
    }

    /// Makes (or finds) a user with an email and a password: `herald dev --seed demo`'s people.
    public func ensureUser(uid: String, email: String, password: String, displayName: String?, project: String) async throws {
        if try await store.account(uid: uid, project: project) != nil { return }
        let (hash, salt) = try PasswordHash.make(password)
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let account = AuthAccount(
            uid: uid, email: email, emailVerified: true, passwordHash: hash, salt: salt, displayName: displayName, createdAt: now,
            passwordUpdatedAt: now, validSince: now / 1000, provider: "password")
        guard try await store.save(account, project: project) else { throw LocalAPIError.failedPrecondition("\(email) belongs to another user") }
        onChange()
    }

    /// The console's Users view: the users and the pending links.
    public func console(project: String, base: String) async throws(LocalAPIError) -> JSONValue {
        let users = try await store.accounts(project: project, limit: 1000)
        let codes = try await store.codes(project: project)
        return [
            "users": .array(users.map(\.consoleJSON)),
            "links": .array(
                codes.map {
                    [
                        "email": .string($0.email), "kind": .string($0.kind), "link": .string(AuthAPI.link(base: base, code: $0)),
                        "createdAt": .number(String($0.createdAt)),
                    ]
                }),
        ]
    }

    /// The console's actions on a user: `disable`, `enable`, `delete`.
    public func perform(_ action: String, uid: String, project: String) async throws(LocalAPIError) {
        guard var account = try await store.account(uid: uid, project: project) else { throw .notFound("no user \(uid.prefix(128))") }
        switch action {
        case "delete": _ = try await store.delete(uid: uid, project: project)
        case "disable", "enable":
            account.disabled = action == "disable"
            _ = try await store.save(account, project: project)
        default: throw .invalidArgument("action: disable, enable or delete")
        }
        onChange()
    }
}
