import GoogleClients
import P256Signatures
import PushClients
import SystemAccess

/// How a function reaches the push services besides FCM, from its environment. Each is off until it is
/// configured; the tokens of a service that is off are kept and counted (`SkippedTokens`).
///
/// - Expo: `HERALD_EXPO_PUSH=on`, or `HERALD_EXPO_ACCESS_TOKEN` (the project's push access token, a
///   secret: needed once Expo's "enhanced security" is on); `HERALD_EXPO_ENDPOINT` (Expo's by default).
/// - APNs: `HERALD_APNS_KEY` (the `.p8` key's PEM, a secret) or `HERALD_APNS_KEY_FILE`,
///   `HERALD_APNS_KEY_ID`, `HERALD_APNS_TEAM_ID`, `HERALD_APNS_TOPIC` (the app's bundle id), and
///   `HERALD_APNS_ENVIRONMENT` (`production`, or `sandbox` for development builds);
///   `HERALD_APNS_ENDPOINT` and `HERALD_APNS_CA_FILE` (a certificate to trust besides the system's)
///   point it at a stand-in such as `herald dev`'s.
public struct PushServiceSettings: Sendable {
    public struct Expo: Sendable {
        public var endpoint: String
        /// A secret: never logged, never in an error.
        public var accessToken: String?
    }

    public struct APNs: Sendable {
        public var endpoint: String
        public var key: P256.PrivateKey
        public var keyID: String
        public var teamID: String
        public var topic: String
        /// A PEM file of certificates to trust besides the system's roots (a local stand-in's).
        public var trustedCertificatesFile: String?
    }

    public var expo: Expo?
    public var apns: APNs?

    public init(expo: Expo? = nil, apns: APNs? = nil) {
        self.expo = expo
        self.apns = apns
    }

    /// Reads the settings; appends what is wrong to `problems`, naming settings, never their secret values.
    static func reading(_ value: (String) -> String?, cleartext: CleartextPolicy, problems: inout [String]) -> PushServiceSettings {
        var settings = PushServiceSettings()
        let token = value("HERALD_EXPO_ACCESS_TOKEN")
        var expoOn = token != nil
        switch value("HERALD_EXPO_PUSH")?.lowercased() {
        case nil: break
        case "on", "true", "1": expoOn = true
        case "off", "false", "0":
            if token != nil { problems.append("HERALD_EXPO_PUSH is off but HERALD_EXPO_ACCESS_TOKEN is set: say which") }
            expoOn = false
        case let other?: problems.append("HERALD_EXPO_PUSH must be on or off, not \"\(other.prefix(40))\"")
        }
        if let token, token.utf8.count > 1024 || token.utf8.contains(where: { $0 < 0x21 || $0 > 0x7E }) {
            problems.append("HERALD_EXPO_ACCESS_TOKEN is not an access token (printable characters, at most 1,024)")
        }
        let expoEndpoint = value("HERALD_EXPO_ENDPOINT") ?? ExpoPushClient.productionEndpoint
        if let problem = cleartext.problem(expoEndpoint, setting: "HERALD_EXPO_ENDPOINT") { problems.append(problem) }
        if expoOn { settings.expo = Expo(endpoint: expoEndpoint, accessToken: token) }

        let apnsNames = ["HERALD_APNS_KEY_ID", "HERALD_APNS_TEAM_ID", "HERALD_APNS_TOPIC"]
        let keyText: String?
        if let file = value("HERALD_APNS_KEY_FILE") {
            if value("HERALD_APNS_KEY") != nil { problems.append("set HERALD_APNS_KEY or HERALD_APNS_KEY_FILE, not both") }
            do {
                keyText = String(decoding: try LocalFile.read(file, limit: 64 << 10), as: UTF8.self)
            } catch {
                problems.append("HERALD_APNS_KEY_FILE names \(file), which cannot be read (\(error))")
                keyText = nil
            }
        } else {
            keyText = value("HERALD_APNS_KEY")
        }
        let given = apnsNames.filter { value($0) != nil }
        guard keyText != nil || !given.isEmpty || value("HERALD_APNS_KEY_FILE") != nil else { return settings }
        let missing = (keyText == nil ? ["HERALD_APNS_KEY (or HERALD_APNS_KEY_FILE)"] : []) + apnsNames.filter { value($0) == nil }
        guard missing.isEmpty, let keyText, let keyID = value("HERALD_APNS_KEY_ID"), let teamID = value("HERALD_APNS_TEAM_ID"),
            let topic = value("HERALD_APNS_TOPIC")
        else {
            problems.append("APNs needs \(missing.joined(separator: ", ")) as well")
            return settings
        }
        let key: P256.PrivateKey
        do { key = try P256.PrivateKey(pem: keyText) } catch {
            problems.append("HERALD_APNS_KEY is not an APNs key: \(error)")
            return settings
        }
        for (name, id) in [("HERALD_APNS_KEY_ID", keyID), ("HERALD_APNS_TEAM_ID", teamID)]
        where id.utf8.count != 10 || !id.utf8.allSatisfy({ (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) }) {
            problems.append("\(name) must be Apple's 10-character id (capital letters and digits), not \"\(id.prefix(40))\"")
        }
        if topic.utf8.count > 255 || !topic.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) {
            problems.append("HERALD_APNS_TOPIC must be the app's bundle id, not \"\(topic.prefix(40))\"")
        }
        var endpoint = APNsClient.productionEndpoint
        switch value("HERALD_APNS_ENVIRONMENT")?.lowercased() {
        case nil, "production": break
        case "sandbox", "development": endpoint = APNsClient.sandboxEndpoint
        case let other?: problems.append("HERALD_APNS_ENVIRONMENT must be production or sandbox, not \"\(other.prefix(40))\"")
        }
        if let override = value("HERALD_APNS_ENDPOINT") {
            endpoint = override
            // APNs speaks HTTP/2 over TLS only: a plain http endpoint could never answer.
            if !override.lowercased().hasPrefix("https://") {
                problems.append("HERALD_APNS_ENDPOINT must be https (APNs is HTTP/2 over TLS), not \"\(override.prefix(80))\"")
            }
        }
        let trusted = value("HERALD_APNS_CA_FILE")
        if let trusted, !LocalFile.isReadable(trusted) { problems.append("HERALD_APNS_CA_FILE names \(trusted), which is not a readable file") }
        settings.apns = APNs(endpoint: endpoint, key: key, keyID: keyID, teamID: teamID, topic: topic, trustedCertificatesFile: trusted)
        return settings
    }
}
