import FirestoreModel
import WireFormats

/// The `firestore.indexes.json` a deployment with this schema needs (the Firebase CLI's format): the
/// composite index presenceSweeper's query uses, collection-group indexes for token documents when
/// tokens live in a subcollection, and the TTL policies that expire the exactly-once ledger and the
/// read receipts.
extension Schema {
    public func firestoreIndexes(ledgerCollection: String = "_herald/events/ledger") -> JSONValue {
        func field(_ path: String) -> JSONValue { ["fieldPath": .string(path), "order": "ASCENDING"] }
        let indexes: [JSONValue] = [
            ["collectionGroup": .string(userCollection), "queryScope": "COLLECTION", "fields": [field(onlineField), field(heartbeatField)]]
        ]
        var overrides: [JSONValue] = []
        if let documents = tokens.layout.documents, documents.underUsers {
            // Queried across every user's subcollection: the time beside each token by the daily pass,
            // the token itself by tokenCleanup (who else holds a token just signed in).
            for path in [tokensUpdatedAtField, "token"].compactMap({ $0 }) {
                overrides.append([
                    "collectionGroup": .string(documents.collection), "fieldPath": .string(path),
                    "indexes": [
                        ["order": "ASCENDING", "queryScope": "COLLECTION"], ["order": "ASCENDING", "queryScope": "COLLECTION_GROUP"],
                    ],
                ])
            }
        }
        let ledgerGroup = ledgerCollection.split(separator: "/").last.map(String.init) ?? ledgerCollection
        // Ledger documents are only ever read by name: no index on them, and a TTL on expireAt.
        overrides.append(["collectionGroup": .string(ledgerGroup), "fieldPath": "expireAt", "ttl": true, "indexes": []])
        // Read receipts likewise: onReadReceipt reads them by name, and they live as long as the ledger.
        overrides.append(["collectionGroup": .string(Message.receiptCollection), "fieldPath": "expireAt", "ttl": true, "indexes": []])
        return ["indexes": .array(indexes), "fieldOverrides": .array(overrides)]
    }
}
