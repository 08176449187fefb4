/// Firestore's `Listen`: the bidirectional stream behind real-time listeners.
struct FirestoreListen {
    let handler: LocalCloudHandler
    let metadata: [String: String]

    func run(requests: GRPCRequests, responses: GRPCResponseWriter) async throws(GRPCStatus) {
        throw .unimplemented("Listen is not served yet")
    }
}
