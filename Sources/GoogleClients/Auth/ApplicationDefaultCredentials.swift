import AsyncHTTPClient
import Foundation

/// Google's Application Default Credentials order, as Herald follows it:
/// 1. `FIRESTORE_EMULATOR_HOST` set: Firestore goes to the emulator as `Bearer owner`;
/// 2. `GOOGLE_APPLICATION_CREDENTIALS`: a service-account key file, exchanged for tokens;
/// 3. the metadata server (`GCE_METADATA_HOST` or metadata.google.internal), as on Cloud Run.
/// With 2 or 3, `FIRESTORE_ENDPOINT` sends Firestore calls elsewhere than Google (e.g. `herald dev`).
public struct ApplicationDefaultCredentials: Sendable {
    public var firestore: any AccessTokenProvider
    public var messaging: any AccessTokenProvider
    public var firestoreEndpoint: String
    public var project: String

    public static func resolve(environment: [String: String], httpClient: HTTPClient) async throws -> ApplicationDefaultCredentials {
        let explicitProject = environment["GOOGLE_CLOUD_PROJECT"].flatMap { $0.isEmpty ? nil : $0 }
        if let host = environment["FIRESTORE_EMULATOR_HOST"], !host.isEmpty, explicitProject == nil, environment["GOOGLE_APPLICATION_CREDENTIALS"] == nil {
            throw AuthError.badKeyFile("FIRESTORE_EMULATOR_HOST is set: set GOOGLE_CLOUD_PROJECT too, to say which project's data to use")
        }
        var key: ServiceAccountKey?
        if let path = environment["GOOGLE_APPLICATION_CREDENTIALS"], !path.isEmpty {
            key = try ServiceAccountKey(contentsOf: path)
        }
        let metadata = key == nil ? MetadataServerCredentials(host: environment["GCE_METADATA_HOST"] ?? MetadataServerCredentials.defaultHost, httpClient: httpClient) : nil
        let cloud: any AccessTokenProvider
        let messaging: any AccessTokenProvider
        if let key {
            cloud = try ServiceAccountCredentials(key: key, mode: .tokenExchange(scopes: [ServiceAccountCredentials.cloudPlatformScope]), httpClient: httpClient)
            messaging = try ServiceAccountCredentials(key: key, mode: .tokenExchange(scopes: [ServiceAccountCredentials.cloudPlatformScope, ServiceAccountCredentials.messagingScope]), httpClient: httpClient)
        } else {
            cloud = metadata!
            messaging = metadata!
        }
        let project: String
        if let explicitProject { project = explicitProject } else if let id = key?.projectID { project = id } else if let metadata {
            project = try await metadata.projectID()
        } else {
            throw AuthError.badKeyFile("no project: set GOOGLE_CLOUD_PROJECT")
        }
        if let host = environment["FIRESTORE_EMULATOR_HOST"], !host.isEmpty {
            return ApplicationDefaultCredentials(firestore: EmulatorCredentials(), messaging: messaging, firestoreEndpoint: "http://\(host)", project: project)
        }
        // FIRESTORE_ENDPOINT: another Firestore REST endpoint reached with the real credentials (`herald dev`'s local cloud).
        let endpoint = environment["FIRESTORE_ENDPOINT"].flatMap { $0.isEmpty ? nil : $0 } ?? FirestoreClient.productionEndpoint
        return ApplicationDefaultCredentials(firestore: cloud, messaging: messaging, firestoreEndpoint: endpoint, project: project)
    }
}
