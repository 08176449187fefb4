import EmbeddedFirestore
import Foundation
import WireFormats

/// What a signed-in user (or an administrator) does with an account: read it, change it, delete it,
/// reset its password or verify its email through a link, as Identity Toolkit's calls do.
struct AccountCalls: Sendable {
    let api: AuthAPI
    var store: AuthStore { api.store }

    /// The account a call names: the caller's, by its ID token; an administrator's call may name any by `localId`.
    func target(_ body: [String: JSONValue], project: String) async throws -> AuthAccount {
        if api.isAdmin, let uid = AuthAPI.text(body, "localId") {
            guard let account = try await store.account(uid: uid, project: project) else { throw AuthError("USER_NOT_FOUND") }
            return account
        }
        return try await api.user(idToken: AuthAPI.text(body, "idToken"), project: project)
    }

    /// `accounts:lookup`: the caller's account (the SDKs call it after every sign-in); an administrator's
    /// by `localId` or `email` lists.
    func lookup(_ body: [String: JSONValue], project: String) async throws -> JSONValue {
        var found: [AuthAccount] = []
        if api.isAdmin, body["idToken"] == nil {
            for uid in body["localId"]?.arrayValue?.compactMap(\.stringValue) ?? [] {
                if let account = try await store.account(uid: uid, project: project) { found.append(account) }
            }
            for email in body["email"]?.arrayValue?.compactMap(\.stringValue) ?? [] {
                if let account = try await store.account(email: email, project: project) { found.append(account) }
            }
        } else {
            found = [try await api.user(idToken: AuthAPI.text(body, "idToken"), project: project)]
        }
        var answer: [String: JSONValue] = ["kind": "identitytoolkit#GetAccountInfoResponse"]
        if !found.isEmpty { answer["users"] = .array(found.map(\.userInfo)) }
        return .object(answer)
    }

    /// `accounts:update`: display name, photo, email, password (attributes deleted by `deleteAttribute`);
    /// with an `oobCode`, the email verification it stands for. An administrator may also disable a
    /// user, mark an email verified and set custom claims.
    func update(_ body: [String: JSONValue], project: String) async throws -> JSONValue {
        if let code = AuthAPI.text(body, "oobCode") { return try await verifyEmail(code, project: project) }
        var account = try await target(body, project: project)
        try AuthAPI.checkText(AuthAPI.text(body, "displayName"), "INVALID_DISPLAY_NAME")
        try AuthAPI.checkText(AuthAPI.text(body, "photoUrl"), "INVALID_PHOTO_URL")
        var reissue = false
        if let name = AuthAPI.text(body, "displayName") { account.displayName = name }
        if let photo = AuthAPI.text(body, "photoUrl") { account.photoURL = photo }
        for attribute in body["deleteAttribute"]?.arrayValue?.compactMap(\.stringValue) ?? [] {
            if attribute == "DISPLAY_NAME" { account.displayName = nil }
            if attribute == "PHOTO_URL" { account.photoURL = nil }
        }
        if let email = AuthAPI.text(body, "email") {
            let email = try AuthAPI.checkEmail(email)
            if email != account.email {
                if try await store.account(email: email, project: project) != nil { throw AuthError("EMAIL_EXISTS") }
                account.email = email
                account.emailVerified = false
                reissue = true
            }
        }
        if let password = AuthAPI.text(body, "password") {
            try AuthAPI.checkPassword(password)
            (account.passwordHash, account.salt) = try await api.hash(password)
            account.passwordUpdatedAt = AuthAPI.now()
            // Every other session ends with a new password: tokens issued before now are refused.
            account.validSince = AuthAPI.now() / 1000
            if account.provider == "anonymous", account.email != nil { account.provider = "password" }
            reissue = true
        }
        if api.isAdmin {
            account.disabled = body["disableUser"]?.boolValue ?? account.disabled
            account.emailVerified = body["emailVerified"]?.boolValue ?? account.emailVerified
            if let claims = AuthAPI.text(body, "customAttributes") {
                guard let object = try? JSONValue(parsing: Array(claims.utf8)).objectValue, claims.utf8.count <= 1000 else {
                    throw AuthError("INVALID_CLAIMS")
                }
                account.customClaims = object
            }
            if body["validSince"] != nil { account.validSince = AuthAPI.now() / 1000 }
        }
        guard try await store.save(account, project: project) else { throw AuthError("EMAIL_EXISTS") }
        api.auth.onChange()
        var answer: [String: JSONValue] = (account.userInfo.objectValue ?? [:]).filter { $0.key != "createdAt" && $0.key != "validSince" }
        answer["kind"] = "identitytoolkit#SetAccountInfoResponse"
        if reissue, body["returnSecureToken"]?.boolValue == true { answer.merge(try await api.tokens(for: account, project: project)) { _, new in new } }
        return .object(answer)
    }

    /// `accounts:delete`: the caller's own account, or any by `localId` for an administrator.
    func delete(_ body: [String: JSONValue], project: String) async throws -> JSONValue {
        let account = try await target(body, project: project)
        _ = try await store.delete(uid: account.uid, project: project)
        api.auth.onChange()
        return ["kind": "identitytoolkit#DeleteAccountResponse"]
    }

    /// `accounts:sendOobCode`: a password reset (by email) or an email verification (by ID token). No mail
    /// is sent: the link is kept, shown in the console and at `/emulator/v1/projects/P/oobCodes`.
    func sendOobCode(_ body: [String: JSONValue], project: String) async throws -> JSONValue {
        let kind = AuthAPI.text(body, "requestType") ?? ""
        let account: AuthAccount
        switch kind {
        case "PASSWORD_RESET":
            guard let email = AuthAPI.text(body, "email") else { throw AuthError("MISSING_EMAIL") }
            guard let found = try await store.account(email: email, project: project) else { throw AuthError("EMAIL_NOT_FOUND") }
            account = found
        case "VERIFY_EMAIL":
            account = try await target(body, project: project)
        default:
            throw AuthError("INVALID_REQ_TYPE : \(kind.prefix(40)) (PASSWORD_RESET or VERIFY_EMAIL)")
        }
        guard let email = account.email else { throw AuthError("MISSING_EMAIL") }
        let code = try await store.issueCode(kind: kind, uid: account.uid, email: email, project: project)
        api.auth.onChange()
        let link = AuthAPI.link(base: api.base, code: .init(code: code, uid: account.uid, email: email, kind: kind, createdAt: 0))
        api.auth.onLink("\(kind == "PASSWORD_RESET" ? "password reset" : "email verification") for \(email): \(link)")
        return ["kind": "identitytoolkit#GetOobConfirmationCodeResponse", "email": .string(email)]
    }

    /// `accounts:resetPassword`: with `newPassword`, the reset the code stands for; without, which email it is for.
    func resetPassword(_ body: [String: JSONValue], project: String) async throws -> JSONValue {
        guard let text = AuthAPI.text(body, "oobCode"), let code = try await store.code(text, project: project), code.kind == "PASSWORD_RESET" else {
            throw AuthError("INVALID_OOB_CODE")
        }
        if let password = AuthAPI.text(body, "newPassword") {
            try AuthAPI.checkPassword(password)
            guard var account = try await store.account(uid: code.uid, project: project) else { throw AuthError("USER_NOT_FOUND") }
            (account.passwordHash, account.salt) = try await api.hash(password)
            account.passwordUpdatedAt = AuthAPI.now()
            account.validSince = AuthAPI.now() / 1000
            _ = try await store.save(account, project: project)
            try await store.useCode(code.code, project: project)
            api.auth.onChange()
        }
        return ["kind": "identitytoolkit#ResetPasswordResponse", "requestType": "PASSWORD_RESET", "email": .string(code.email)]
    }

    func verifyEmail(_ text: String, project: String) async throws -> JSONValue {
        guard let code = try await store.code(text, project: project), code.kind == "VERIFY_EMAIL",
            var account = try await store.account(uid: code.uid, project: project), account.email == code.email
        else { throw AuthError("INVALID_OOB_CODE") }
        account.emailVerified = true
        _ = try await store.save(account, project: project)
        try await store.useCode(code.code, project: project)
        api.auth.onChange()
        return [
            "kind": "identitytoolkit#SetAccountInfoResponse", "localId": .string(account.uid), "email": .string(code.email), "emailVerified": true,
        ]
    }
}
