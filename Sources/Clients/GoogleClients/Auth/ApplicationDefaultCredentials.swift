import HeraldHTTPClient
import SystemAccess

/// Google's Application Default Credentials order, as Herald follows it:
/// 1. `FIRESTORE_EMULATOR_HOST` set: Firestore goes to the emulator as `Bearer owner`;
/// 2. `GOOGLE_APPLICATION_CREDENTIALS`, else gcloud's own file (`gcloud auth application-default
///    login`: `~/.config/gcloud/application_default_credentials.json`): a service-account key, a
///    person's login (`authorized_user`) or a login impersonating a service account;
/// 3. the metadata server (`GCE_METADATA_HOST`, or Google's at 169.254.169.254), as on Cloud Run.
/// With 2 or 3, `FIRESTORE_ENDPOINT` sends Firestore calls elsewhere than Google (e.g. `herald dev`).
///
/// Nothing here waits long: on a Google runtime (Cloud Run sets `K_SERVICE`) the metadata server is
/// taken as there; elsewhere it is probed once for at most `probeTimeout`, as Google's auth libraries
/// do, and its absence is an error that says which settings to give.
public struct ApplicationDefaultCredentials: Sendable {
    public var firestore: any AccessTokenProvider
    public var messaging: any AccessTokenProvider
    public var firestoreEndpoint: String
    public var project: String

    /// Google's metadata server by address: no DNS lookup that could hang off Google Cloud.
    public static let googleMetadataHost = "169.254.169.254"
    public static let probeTimeout: Duration = .milliseconds(800)
    /// Environment variables that Google's runtimes set, so the metadata server is known to be there.
    static let googleRuntimeVariables = ["K_SERVICE", "CLOUD_RUN_JOB", "FUNCTION_TARGET", "GAE_SERVICE"]

    public static let whatToSet =
        "sign in with `gcloud auth application-default login` (your own login; add --impersonate-service-account=EMAIL to act as a service account), "
        + "or set GOOGLE_APPLICATION_CREDENTIALS to a credentials file (a service-account key, or such a login's file), "
        + "or run on Google Cloud (its metadata server), or set FIRESTORE_EMULATOR_HOST=HOST:PORT with GOOGLE_CLOUD_PROJECT for an emulator (or herald dev), "
        + "or pass --documents FILE to run offline"

    public static func resolve(environment: [String: String], httpClient: HTTPTransport) async throws -> ApplicationDefaultCredentials {
        func value(_ key: String) -> String? { environment[key].flatMap { $0.isEmpty ? nil : $0 } }
        let explicitProject = value("GOOGLE_CLOUD_PROJECT") ?? value("GCLOUD_PROJECT")
        if value("FIRESTORE_EMULATOR_HOST") != nil, explicitProject == nil, value("GOOGLE_APPLICATION_CREDENTIALS") == nil {
            throw AuthError.missingSetting(
                "FIRESTORE_EMULATOR_HOST is set but GOOGLE_CLOUD_PROJECT is not: set it to say which project's data to use (or pass --documents FILE to run offline)"
            )
        }
        var file: CredentialsFile?
        let wellKnown = CredentialsFile.wellKnownPath(environment: environment).flatMap { LocalFile.isReadable($0) ? $0 : nil }
        if let path = value("GOOGLE_APPLICATION_CREDENTIALS") ?? wellKnown {
            let read = try CredentialsFile(contentsOf: path)
            // Assertions, refresh tokens and source tokens go to these: in clear only to a local endpoint.
            for (url, what) in read.secretDestinations {
                if let problem = CleartextPolicy(environment: environment).problem(url, setting: "the credentials file's \(what)") {
                    throw AuthError.badKeyFile(problem)
                }
            }
            file = read
        }
        var metadata: MetadataServerCredentials?
        if file == nil {
            let host = value("GCE_METADATA_HOST") ?? googleMetadataHost
            let server = MetadataServerCredentials(host: host, httpClient: httpClient)
            let known = value("GCE_METADATA_HOST") != nil || googleRuntimeVariables.contains { value($0) != nil }
            if known {
                metadata = server
            } else if value("FIRESTORE_EMULATOR_HOST") == nil {
                guard await server.isReachable(within: probeTimeout) else {
                    throw AuthError.notOnGoogleCloud(
                        "no Google credentials found (no key file, and no metadata server answered within \(probeTimeout)): \(whatToSet)")
                }
                metadata = server
            }
        }
        let cloud: any AccessTokenProvider
        let messaging: any AccessTokenProvider
        if let file {
            cloud = try file.credentials(scopes: [ServiceAccountCredentials.cloudPlatformScope], httpClient: httpClient)
            messaging = try file.credentials(
                scopes: [ServiceAccountCredentials.cloudPlatformScope, ServiceAccountCredentials.messagingScope], httpClient: httpClient)
        } else if let metadata {
            cloud = metadata
            messaging = metadata
        } else {
            // An emulator with no Google credentials: Firestore needs none; FCM calls fail, each saying why.
            cloud = EmulatorCredentials()
            messaging = UnavailableCredentials(reason: "no credentials for FCM: \(whatToSet)")
        }
        let project: String
        if let explicitProject {
            project = explicitProject
        } else if let id = file?.project {
            project = id
        } else if let metadata {
            project = try await metadata.projectID()
        } else {
            throw AuthError.missingSetting("no project: set GOOGLE_CLOUD_PROJECT (the credentials name none)")
        }
        if let host = value("FIRESTORE_EMULATOR_HOST") {
            return ApplicationDefaultCredentials(firestore: EmulatorCredentials(), messaging: messaging, firestoreEndpoint: "http://\(host)", project: project)
        }
        // FIRESTORE_ENDPOINT: another Firestore REST endpoint reached with the real credentials (`herald dev`'s local cloud).
        let endpoint = value("FIRESTORE_ENDPOINT") ?? FirestoreClient.productionEndpoint
        return ApplicationDefaultCredentials(firestore: cloud, messaging: messaging, firestoreEndpoint: endpoint, project: project)
    }
}

/// Credentials that were not configured: every call fails, saying what to set.
struct UnavailableCredentials: AccessTokenProvider {
    let reason: String
    func token() async throws -> String { throw AuthError.refused(reason) }
    func invalidate(_ token: String) async {}
}
