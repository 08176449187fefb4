import EmbeddedFirestore
import Foundation
import WireFormats

/// The token refresh, the Admin SDKs' listing of users and the emulator's own endpoints.
struct AdministratorCalls: Sendable {
    let api: AuthAPI
    var store: AuthStore { api.store }

    /// `securetoken.googleapis.com/v1/token`: a refresh token for a new ID token (form-encoded or JSON,
    /// as the SDKs send it). A refresh token of a deleted user, or one this cloud never issued, is refused.
    func refresh(_ body: [String: JSONValue]) async throws -> JSONValue {
        guard AuthAPI.text(body, "grant_type") == "refresh_token" else { throw AuthError("INVALID_GRANT_TYPE") }
        guard let token = AuthAPI.text(body, "refresh_token") else { throw AuthError("MISSING_REFRESH_TOKEN") }
        guard let (project, uid) = try await store.refreshToken(token) else { throw AuthError("INVALID_REFRESH_TOKEN") }
        guard let account = try await store.account(uid: uid, project: project) else { throw AuthError("USER_NOT_FOUND") }
        guard !account.disabled else { throw AuthError("USER_DISABLED") }
        let idToken = AuthTokens.idToken(for: account, project: project)
        return [
            "id_token": .string(idToken), "access_token": .string(idToken), "expires_in": "3600", "token_type": "Bearer",
            "refresh_token": .string(token), "user_id": .string(uid), "project_id": .string(project),
        ]
    }

    /// `projects/P/accounts:batchGet?maxResults=&nextPageToken=`: the users in pages (the Admin SDKs' list).
    func batchGet(_ request: LocalRequest, project: String) async throws -> JSONValue {
        guard api.isAdmin else { throw AuthError("INSUFFICIENT_PERMISSION", status: 403) }
        let limit = min(max(request.query["maxResults"]?.first.flatMap { Int($0) } ?? 1000, 1), 1000)
        let after = request.query["nextPageToken"]?.first ?? ""
        let page = try await store.accounts(project: project, after: after, limit: limit)
        var answer: [String: JSONValue] = ["kind": "identitytoolkit#DownloadAccountResponse", "users": .array(page.map(\.userInfo))]
        if page.count == limit, let last = page.last { answer["nextPageToken"] = .string(last.uid) }
        return .object(answer)
    }

    /// `/emulator/v1/projects/P/accounts` (DELETE: every user), `config` (GET or PATCH: the emulator's
    /// settings; none changes anything here) and `oobCodes` (the pending links).
    func emulator(_ request: LocalRequest, body: [String: JSONValue]) async throws -> JSONValue {
        let s = request.segments
        guard s.count == 5, s[1] == "v1", s[2] == "projects" else { throw AuthError("not found", status: 404) }
        let project = s[3]
        switch (request.method, s[4]) {
        case ("DELETE", "accounts"):
            try await store.clear(project: project)
            api.auth.onChange()
            return .object([:])
        case ("GET", "config"), ("PATCH", "config"):
            return ["signIn": ["allowDuplicateEmails": false], "usageMode": "DEFAULT", "emailPrivacyConfig": ["enableImprovedEmailPrivacy": true]]
        case ("GET", "oobCodes"):
            let codes = try await store.codes(project: project)
            return [
                "oobCodes": .array(
                    codes.map {
                        [
                            "email": .string($0.email), "oobCode": .string($0.code), "oobLink": .string(AuthAPI.link(base: api.base, code: $0)),
                            "requestType": .string($0.kind),
                        ]
                    })
            ]
        default:
            throw AuthError("not found", status: 404)
        }
    }
}
