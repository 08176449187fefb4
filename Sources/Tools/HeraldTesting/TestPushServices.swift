import LocalCloud
import WireFormats

/// The local cloud's Expo and APNs stand-ins, as tests drive them (the same as `/herald/expo/…` and
/// `/herald/apns/…` do).
extension TestLocalCloud {
    public enum PushService: String, Sendable { case expo, apns }

    /// What the stand-in took, oldest first: each record's token, ticket (Expo's id, APNs's `apns-id`),
    /// message (Expo's message, APNs's payload) and headers (APNs's).
    public func pushRecords(_ service: PushService) async throws -> [(token: String, ticket: String, message: JSONValue, headers: JSONValue)] {
        try await cloud.pushStandIns.records.messages(service: PushStandInRecords.Service(rawValue: service.rawValue)).map {
            ($0.token, $0.ticket, $0.message, $0.headers)
        }
    }

    /// Marks `token` dead at the service: refused at once (`send`), or taken and then reported gone in
    /// its receipt (`receipt`, Expo only).
    public func markDead(_ token: String, at service: PushService, when: String = "send") async throws {
        try await cloud.pushStandIns.records.markDead(token, service: PushStandInRecords.Service(rawValue: service.rawValue)!, when: when)
    }

    /// The next answers of the service: `tooManyRequests`, `unavailable` or `lostAnswer` (taken, then
    /// no answer for `hangFor`).
    public func injectFailures(_ next: [String], at service: PushService, hangFor: Duration? = nil) {
        cloud.pushStandIns.records.inject(
            next.compactMap(PushStandInRecords.InjectedFailure.init(rawValue:)), rate: nil, for: PushStandInRecords.Service(rawValue: service.rawValue)!,
            hangFor: hangFor)
    }

    /// Expo: the push access token requests must carry from now on (nil: none).
    public func requireExpoAccessToken(_ token: String?) { cloud.pushStandIns.expo.requireAccessToken(token) }

    /// Expo: `token` belongs to `project` (the others to the stand-in's default project).
    public func assignExpoToken(_ token: String, toProject project: String) { cloud.pushStandIns.expo.assign(token, toProject: project) }

    /// APNs: the stand-in's team key (PEM file), key id, team id and topic, and its certificate authority to trust.
    public var apnsCredentials: (keyFile: String, keyID: String, teamID: String, topic: String, authorityFile: String) {
        let credentials = cloud.pushStandIns.credentials
        return (credentials.keyFile, credentials.keyID, credentials.teamID, credentials.topic, credentials.authorityFile)
    }
}
