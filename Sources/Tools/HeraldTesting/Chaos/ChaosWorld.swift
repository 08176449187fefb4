import ChatDemo
import ChatFunctions
import FirestoreModel

/// The people, devices and conversations a chaos run plays with, generated from a seed. Every user
/// has a phone (and every third a tablet) that never changes hands; a few roaming devices (shared
/// phones) are signed into one user after another. Every fourth phone runs an Expo app in Expo Go
/// (an Expo push token) and every tablet a development build (a raw APNs token): the three push
/// services each carry a share of the pushes.
public struct ChaosWorld: Sendable {
    public let people: [DemoWorld.Person]
    public let conversations: [DemoWorld.Conversation]
    public let roamingDevices: [String]
    /// The user each roaming device starts with.
    public let initialOwners: [String: String]

    public init(users: Int, conversations: Int, roamingDevices: Int, seed: UInt64) {
        var rng = SeededRandom(seed: seed)
        let ids = (0..<max(users, 3)).map { "u\($0)" }
        let devices = (0..<min(roamingDevices, ids.count)).map { "tok-roaming-\($0)" }
        var owners: [String: String] = [:]
        for (device, owner) in zip(devices, ids.shuffled(using: &rng)) { owners[device] = owner }
        people = ids.enumerated().map { index, id in
            let phone = index % 4 == 1 ? "ExponentPushToken[\(id)-phone]" : "tok-\(id)-phone"
            let own = [phone] + (index % 3 == 0 ? [Self.apnsToken(index)] : [])
            return DemoWorld.Person(id: id, name: "User \(index)", tokens: own + owners.filter { $0.value == id }.map(\.key).sorted())
        }
        self.conversations = (0..<max(conversations, 1)).map { index in
            // Half 1:1 chats, half groups of three to six.
            let size = index % 2 == 0 ? 2 : Int.random(in: 3...6, using: &rng)
            return DemoWorld.Conversation(
                id: "c\(index)", members: Array(ids.shuffled(using: &rng).prefix(size)),
                group: size > 2 ? "Group \(index)" : nil)
        }
        self.roamingDevices = devices
        initialOwners = owners
    }

    /// The devices that never change hands, with their user.
    public var stableDevices: [String: String] {
        var devices: [String: String] = [:]
        for person in people {
            for token in person.tokens where initialOwners[token] == nil { devices[token] = person.id }
        }
        return devices
    }

    public func name(of user: String) -> String { "User \(user.dropFirst())" }

    /// A raw APNs device token of its own for user number `index`'s tablet: 64 hex digits.
    static func apnsToken(_ index: Int) -> String {
        let digits = String(index, radix: 16)
        return String(repeating: "a", count: 64 - digits.count) + digits
    }
}
