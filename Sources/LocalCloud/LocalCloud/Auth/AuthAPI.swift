import EmbeddedFirestore
import Foundation
import WireFormats

/// The Identity Toolkit and Secure Token calls of Firebase's SDKs, answered as Google's Auth emulator
/// answers them: the same JSON, and errors in Google's shape (`{"error": {"code": 400, "message":
/// "EMAIL_EXISTS", …}}`), whose codes the SDKs turn into the `auth/…` errors an app shows.
struct AuthAPI: Sendable {
    let auth: LocalAuth
    /// The project of calls that name none (the SDKs' `accounts:…`): the one the local cloud serves.
    let project: String
    /// The local cloud's address, for the links a password reset or a verification sends.
    let base: String
    /// Whether the caller is an administrator (`Bearer owner`, or one of the local cloud's access tokens).
    let isAdmin: Bool

    static let maximumPasswordBytes = 4096
    static let maximumTextBytes = 2048

    var store: AuthStore { auth.store }

    /// Answers a request under `/identitytoolkit.googleapis.com/`, `/securetoken.googleapis.com/` or `/emulator/`.
    func handle(_ request: LocalRequest) async -> LocalResponse {
        do {
            return LocalResponse(json: try await route(request))
        } catch let error as AuthError {
            return Self.error(error)
        } catch let error as LocalAPIError {
            return LocalResponse(error)
        } catch {
            return Self.error(AuthError("INTERNAL_ERROR", status: 500))
        }
    }

    static func error(_ error: AuthError) -> LocalResponse {
        let status = error.status == 400 ? "INVALID_ARGUMENT" : error.status == 404 ? "NOT_FOUND" : error.status == 403 ? "PERMISSION_DENIED" : "INTERNAL"
        return LocalResponse(
            status: error.status,
            json: [
                "error": [
                    "code": .integer(Int64(error.status)), "message": .string(error.message),
                    "errors": [["message": .string(error.message), "reason": "invalid", "domain": "global"]], "status": .string(status),
                ]
            ])
    }

    func route(_ request: LocalRequest) async throws -> JSONValue {
        let s = request.segments
        let body = try Self.body(of: request)
        if s.first == "securetoken.googleapis.com" {
            guard s.count == 3, s[2] == "token", request.method == "POST" else { throw AuthError("not found", status: 404) }
            return try await AdministratorCalls(api: self).refresh(body)
        }
        if s.first == "emulator" { return try await AdministratorCalls(api: self).emulator(request, body: body) }
        guard s.count >= 3, s[0] == "identitytoolkit.googleapis.com", s[1] == "v1", request.method == "POST" || request.method == "GET" else {
            throw AuthError("not found", status: 404)
        }
        // `projects/P/accounts…` (the Admin SDKs) or `accounts:…` (the client SDKs).
        var method = s[2]
        var project = self.project
        if s.count >= 5, s[2] == "projects" {
            project = s[3]
            method = s[4...].joined(separator: "/")
        }
        switch method {
        case "accounts:signUp", "accounts": return try await signUp(body, project: project)
        case "accounts:signInWithPassword": return try await signIn(body, project: project)
        case "accounts:signInWithCustomToken": return try await signInWithCustomToken(body, project: project)
        case "accounts:lookup": return try await AccountCalls(api: self).lookup(body, project: project)
        case "accounts:update": return try await AccountCalls(api: self).update(body, project: project)
        case "accounts:delete": return try await AccountCalls(api: self).delete(body, project: project)
        case "accounts:sendOobCode": return try await AccountCalls(api: self).sendOobCode(body, project: project)
        case "accounts:resetPassword": return try await AccountCalls(api: self).resetPassword(body, project: project)
        case "accounts:createAuthUri": return try await createAuthUri(body, project: project)
        case "accounts:batchGet": return try await AdministratorCalls(api: self).batchGet(request, project: project)
        default: throw AuthError("not found: \(method.prefix(80))", status: 404)
        }
    }

    /// The request's JSON object, or its form fields (the token refresh is form-encoded), or nothing.
    static func body(of request: LocalRequest) throws -> [String: JSONValue] {
        guard !request.body.isEmpty else { return [:] }
        if request.headers["content-type"]?.lowercased().hasPrefix("application/x-www-form-urlencoded") == true {
            let form = LocalRequest(method: "GET", path: "/", query: String(decoding: request.body, as: UTF8.self), headers: [:], body: [])
            return form.query.compactMapValues { $0.first.map { .string($0) } }
        }
        guard let json = try? JSONValue(parsing: request.body), let object = json.objectValue else {
            throw AuthError("INVALID_JSON : the body is not a JSON object")
        }
        return object
    }

    static func text(_ body: [String: JSONValue], _ key: String) -> String? {
        guard let value = body[key]?.stringValue, !value.isEmpty else { return nil }
        return value
    }

    static func now() -> Int64 { Int64(Date().timeIntervalSince1970 * 1000) }

    /// An ID token and a refresh token for the user, as the sign-in calls answer them.
    func tokens(for account: AuthAccount, project: String) async throws -> [String: JSONValue] {
        [
            "idToken": .string(AuthTokens.idToken(for: account, project: project)),
            "refreshToken": .string(try await store.issueRefreshToken(uid: account.uid, project: project)), "expiresIn": "3600",
        ]
    }

    static func checkEmail(_ email: String) throws -> String {
        let parts = email.split(separator: "@", omittingEmptySubsequences: false)
        guard email.utf8.count <= 254, parts.count == 2, !parts[0].isEmpty, parts[1].contains("."), !parts[1].hasPrefix("."), !parts[1].hasSuffix("."),
            email.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value != 0x7F })
        else { throw AuthError("INVALID_EMAIL") }
        return email.lowercased()
    }

    static func checkPassword(_ password: String) throws {
        guard password.count >= 6 else { throw AuthError("WEAK_PASSWORD : Password should be at least 6 characters") }
        guard password.utf8.count <= maximumPasswordBytes else { throw AuthError("WEAK_PASSWORD : Password should be at most 4096 bytes") }
    }

    /// What a password is checked against when the email has none: 32 bytes no derived key equals in practice.
    static let noHash = [UInt8](repeating: 0, count: 32)

    static func checkText(_ text: String?, _ code: String) throws {
        if let text, text.utf8.count > maximumTextBytes { throw AuthError("\(code) : at most \(maximumTextBytes) bytes") }
    }

    func hash(_ password: String) async throws -> (hash: [UInt8], salt: [UInt8]) {
        try await auth.hashing { try PasswordHash.make(password) }
    }

    /// The user an ID token signs in as: a token of this project, not expired, not issued before the
    /// user's tokens were revoked, of a user who exists and is not disabled.
    func user(idToken token: String?, project: String) async throws -> AuthAccount {
        guard let token else { throw AuthError("MISSING_ID_TOKEN") }
        let (uid, issuedAt) = try AuthTokens.subject(of: token, project: project).get()
        guard let account = try await store.account(uid: uid, project: project) else { throw AuthError("USER_NOT_FOUND") }
        guard !account.disabled else { throw AuthError("USER_DISABLED") }
        guard issuedAt >= account.validSince else { throw AuthError("TOKEN_EXPIRED") }
        return account
    }

    // MARK: Sign-up and sign-in

    /// `accounts:signUp`: an email-and-password user, an anonymous one (no email), or, with an ID token,
    /// an anonymous user linked to an email and password. The Admin SDKs' `projects/P/accounts` too.
    func signUp(_ body: [String: JSONValue], project: String) async throws -> JSONValue {
        let email = try Self.text(body, "email").map(Self.checkEmail)
        let password = Self.text(body, "password")
        try Self.checkText(Self.text(body, "displayName"), "INVALID_DISPLAY_NAME")
        try Self.checkText(Self.text(body, "photoUrl"), "INVALID_PHOTO_URL")
        if email != nil && password == nil && !isAdmin { throw AuthError("MISSING_PASSWORD") }
        if password != nil && email == nil { throw AuthError("MISSING_EMAIL") }
        if let password { try Self.checkPassword(password) }
        let now = Self.now()
        var account: AuthAccount
        if let token = Self.text(body, "idToken") {
            // Linking: the signed-in (anonymous) user gets the email and password.
            account = try await user(idToken: token, project: project)
            guard account.email == nil else { throw AuthError("EMAIL_EXISTS") }
        } else {
            var uid = Self.text(body, "localId") ?? LocalIdentity.randomText().prefix(28).description
            if !isAdmin { uid = LocalIdentity.randomText().prefix(28).description }
            guard uid.utf8.count <= 128, !uid.contains("/") else { throw AuthError("INVALID_LOCAL_ID") }
            if try await store.account(uid: uid, project: project) != nil { throw AuthError("DUPLICATE_LOCAL_ID") }
            account = AuthAccount(uid: uid, createdAt: now, validSince: now / 1000, provider: email == nil ? "anonymous" : "password")
        }
        if let email, try await store.account(email: email, project: project) != nil { throw AuthError("EMAIL_EXISTS") }
        account.email = email ?? account.email
        if let password {
            (account.passwordHash, account.salt) = try await hash(password)
            account.passwordUpdatedAt = now
            account.provider = "password"
        }
        account.displayName = Self.text(body, "displayName") ?? account.displayName
        account.photoURL = Self.text(body, "photoUrl") ?? account.photoURL
        if isAdmin {
            account.emailVerified = body["emailVerified"]?.boolValue ?? account.emailVerified
            account.disabled = body["disabled"]?.boolValue ?? account.disabled
        }
        account.lastLoginAt = now
        guard try await store.save(account, project: project) else { throw AuthError("EMAIL_EXISTS") }
        auth.onChange()
        var answer = try await tokens(for: account, project: project)
        answer["kind"] = "identitytoolkit#SignupNewUserResponse"
        answer["localId"] = .string(account.uid)
        if let email = account.email { answer["email"] = .string(email) }
        return .object(answer)
    }

    /// `accounts:signInWithPassword`. A wrong password and an unknown email get one answer,
    /// `INVALID_LOGIN_CREDENTIALS`, as Firebase's with email enumeration protection.
    func signIn(_ body: [String: JSONValue], project: String) async throws -> JSONValue {
        guard let email = Self.text(body, "email") else { throw AuthError("INVALID_EMAIL") }
        guard let password = Self.text(body, "password") else { throw AuthError("MISSING_PASSWORD") }
        guard password.utf8.count <= Self.maximumPasswordBytes else { throw AuthError("INVALID_LOGIN_CREDENTIALS") }
        let found = try await store.account(email: email, project: project)
        // An unknown email costs a hash too, so the time taken does not say which emails have accounts.
        let stored = found.flatMap { account in account.passwordHash.flatMap { hash in account.salt.map { (hash, $0) } } }
        let matches = try await auth.hashing {
            PasswordHash.matches(password, hash: stored?.0 ?? Self.noHash, salt: stored?.1 ?? Self.noHash)
        }
        guard var account = found, stored != nil, matches else { throw AuthError("INVALID_LOGIN_CREDENTIALS") }
        guard !account.disabled else { throw AuthError("USER_DISABLED") }
        account.lastLoginAt = Self.now()
        _ = try await store.save(account, project: project)
        auth.onChange()
        var answer = try await tokens(for: account, project: project)
        answer["kind"] = "identitytoolkit#VerifyPasswordResponse"
        answer["localId"] = .string(account.uid)
        answer["email"] = .string(account.email ?? email)
        answer["displayName"] = .string(account.displayName ?? "")
        answer["registered"] = true
        return .object(answer)
    }

    /// `accounts:signInWithCustomToken`: a token an Admin SDK made (signed or, in emulator mode, not);
    /// its `uid` is signed in, made a user if new, with its `claims`.
    func signInWithCustomToken(_ body: [String: JSONValue], project: String) async throws -> JSONValue {
        guard let token = Self.text(body, "token") else { throw AuthError("MISSING_CUSTOM_TOKEN") }
        guard let (_, claims) = AuthTokens.claims(of: token), let uid = claims["uid"]?.stringValue, !uid.isEmpty, uid.utf8.count <= 128 else {
            throw AuthError("INVALID_CUSTOM_TOKEN")
        }
        if let expires = claims["exp"]?.int64Value, expires < Int64(Date().timeIntervalSince1970) { throw AuthError("INVALID_CUSTOM_TOKEN : expired") }
        let now = Self.now()
        var account =
            try await store.account(uid: uid, project: project) ?? AuthAccount(uid: uid, createdAt: now, validSince: now / 1000, provider: "custom")
        let isNew = account.lastLoginAt == nil
        guard !account.disabled else { throw AuthError("USER_DISABLED") }
        if let extra = claims["claims"]?.objectValue { account.customClaims.merge(extra) { _, new in new } }
        account.lastLoginAt = now
        _ = try await store.save(account, project: project)
        auth.onChange()
        var answer = try await tokens(for: account, project: project)
        answer["kind"] = "identitytoolkit#VerifyCustomTokenResponse"
        answer["isNewUser"] = .bool(isNew)
        return .object(answer)
    }

    /// A password reset's or verification's link, as Google's emulator makes it.
    static func link(base: String, code: AuthStore.OOBCode) -> String {
        let mode = code.kind == "PASSWORD_RESET" ? "resetPassword" : "verifyEmail"
        return "\(base)/emulator/action?mode=\(mode)&lang=en&oobCode=\(code.code)&apiKey=fake-api-key"
    }

    /// The page a link opens: a verification is applied at once; a reset asks for the new password,
    /// which the page posts back to itself.
    func action(_ request: LocalRequest) async -> LocalResponse {
        func page(_ text: String, form: Bool = false) -> LocalResponse {
            let input = form ? #"<form method="post"><input type="password" name="newPassword" minlength="6" required> <button>Save</button></form>"# : ""
            return LocalResponse(
                text: "<!doctype html><meta charset=utf-8><title>herald dev</title><p>\(text.htmlEscaped)</p>\(input)\n",
                contentType: "text/html; charset=utf-8")
        }
        let code = request.query["oobCode"]?.first ?? ""
        do {
            switch (request.query["mode"]?.first, request.method) {
            case ("verifyEmail", _):
                _ = try await AccountCalls(api: self).update(["oobCode": .string(code)], project: project)
                return page("Your email is verified.")
            case ("resetPassword", "GET"):
                let answer = try await AccountCalls(api: self).resetPassword(["oobCode": .string(code)], project: project)
                return page("A new password for \(answer["email"]?.stringValue ?? "")", form: true)
            case ("resetPassword", _):
                var body = try Self.body(of: request)
                body["oobCode"] = .string(code)
                _ = try await AccountCalls(api: self).resetPassword(body, project: project)
                return page("Your password is changed: sign in with it.")
            default:
                return page("This link is not one herald dev made.")
            }
        } catch let error as AuthError {
            return page("Not done: \(error.message)")
        } catch {
            return page("Not done.")
        }
    }

    /// `accounts:createAuthUri`: whether an email is registered, and how it signs in.
    func createAuthUri(_ body: [String: JSONValue], project: String) async throws -> JSONValue {
        guard let email = Self.text(body, "identifier") else { throw AuthError("MISSING_IDENTIFIER") }
        let account = try await store.account(email: try Self.checkEmail(email), project: project)
        let methods: [JSONValue] = account?.passwordHash != nil ? ["password"] : []
        return [
            "kind": "identitytoolkit#CreateAuthUriResponse", "registered": .bool(account != nil), "allProviders": .array(methods),
            "signinMethods": .array(methods), "sessionId": .string(LocalIdentity.randomText()),
        ]
    }
}

extension String {
    /// Text safe inside HTML.
    fileprivate var htmlEscaped: String {
        var out = ""
        for character in self {
            switch character {
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "&": out += "&amp;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            default: out.append(character)
            }
        }
        return out
    }
}
