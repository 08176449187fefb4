/// The push services a stored token belongs to. An app stores whatever its SDK gave it, and only the
/// service that issued a token can deliver to it: FCM refuses the others as not valid registration
/// tokens, so sending one there would lose the device.
public enum PushTokenKind: String, Sendable, Hashable, CaseIterable, Comparable {
    /// An FCM registration token (Firebase's iOS, Android and web SDKs, React Native Firebase, and
    /// `getDevicePushTokenAsync()` on Android). FCM is the judge of its own tokens.
    case fcm
    /// An Expo push token, `ExponentPushToken[…]` (`getExpoPushTokenAsync()`): Expo's push service delivers it.
    case expo
    /// A raw APNs device token, in hex (`getDevicePushTokenAsync()` on iOS, an app's own
    /// `didRegisterForRemoteNotificationsWithDeviceToken`): only Apple's APNs delivers it.
    case apns

    /// How people call the service, for logs and reports.
    public var serviceName: String {
        switch self {
        case .fcm: "FCM"
        case .expo: "Expo"
        case .apns: "APNs"
        }
    }

    public static func < (a: PushTokenKind, b: PushTokenKind) -> Bool {
        allCases.firstIndex(of: a)! < allCases.firstIndex(of: b)!
    }
}

/// The one place that decides what a stored token is: its kind, or why it is no token at all.
public enum PushToken {
    /// What a stored string is.
    public enum Verdict: Sendable, Hashable {
        case token(PushTokenKind)
        /// No service could take it; the reason names what is wrong, never the token itself.
        case malformed(reason: String)

        public var kind: PushTokenKind? {
            if case .token(let kind) = self { kind } else { nil }
        }
    }

    /// Tokens longer than this are no token of any service (FCM's are about 160 characters, Expo's
    /// about 40, APNs's 64): a client may write anything.
    public static let maximumBytes = 4096
    /// APNs device tokens are 32 bytes today; Apple warns they may grow, so any even number of hex
    /// digits from 64 up to this is taken as one.
    public static let maximumAPNsHexDigits = 200

    /// The kind of `token`, or why it is malformed. Conservative where it removes: only what no
    /// service issues is malformed (empty, too long, spaces, control or non-ASCII characters, an Expo
    /// token that is not `ExponentPushToken[…]`, hex of APNs's length but odd).
    public static func classify(_ token: String) -> Verdict {
        let bytes = token.utf8
        guard !bytes.isEmpty else { return .malformed(reason: "an empty token") }
        guard bytes.count <= maximumBytes else { return .malformed(reason: "a token of \(bytes.count) bytes (at most \(maximumBytes))") }
        guard bytes.allSatisfy({ (0x21...0x7E).contains($0) }) else {
            return .malformed(reason: "a token with a space, a control or a non-ASCII character")
        }
        for prefix in ["ExponentPushToken[", "ExpoPushToken["] where token.hasPrefix(prefix) {
            let inner = bytes.dropFirst(prefix.utf8.count)
            guard inner.last == UInt8(ascii: "]"), inner.count >= 2, inner.count <= 257,
                inner.dropLast().allSatisfy({ isWordByte($0) })
            else { return .malformed(reason: "an Expo push token that is not \(prefix)…] with letters, digits, - and _ inside") }
            return .token(.expo)
        }
        if isUUID(bytes) { return .token(.expo) }  // Expo's older form, as Expo's own SDKs take it
        // Hex of about an APNs token's length is one, or a damaged one (no FCM token is all hex).
        if bytes.count >= 60, bytes.allSatisfy(isHexDigit) {
            guard bytes.count % 2 == 0, bytes.count >= 64, bytes.count <= maximumAPNsHexDigits else {
                return .malformed(reason: "an APNs device token of \(bytes.count) hex digits (an even number from 64 to \(maximumAPNsHexDigits))")
            }
            return .token(.apns)
        }
        return .token(.fcm)
    }

    /// The kind of a token that is not malformed (a malformed one counts as FCM's, which refuses it).
    public static func kind(of token: String) -> PushTokenKind { classify(token).kind ?? .fcm }

    public static func isWellFormed(_ token: String) -> Bool { classify(token).kind != nil }

    /// Whether a stored string looks like a token, as evidence of where an app keeps them: an Expo or APNs
    /// token, or an FCM registration token's shape (64 to 4096 of the characters FCM uses,
    /// `dXyz…:APA91b…`). Auto-ids (20), uids (28) and UUIDs (36) are shorter.
    public static func looksLikeToken(_ text: String) -> Bool {
        if let kind = classify(text).kind, kind != .fcm { return true }
        return text.utf8.count >= 64 && text.utf8.count <= maximumBytes
            && text.utf8.allSatisfy { $0 == UInt8(ascii: ":") || isWordByte($0) }
    }

    static func isHexDigit(_ byte: UInt8) -> Bool {
        (0x30...0x39).contains(byte) || (0x41...0x46).contains(byte) || (0x61...0x66).contains(byte)
    }

    static func isWordByte(_ byte: UInt8) -> Bool {
        (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) || byte == 0x2D || byte == 0x5F
    }

    /// `8-4-4-4-12` hex digits.
    static func isUUID(_ bytes: String.UTF8View) -> Bool {
        guard bytes.count == 36 else { return false }
        for (index, byte) in bytes.enumerated() {
            let isDash = [8, 13, 18, 23].contains(index)
            if isDash ? byte != 0x2D : !isHexDigit(byte) { return false }
        }
        return true
    }
}
