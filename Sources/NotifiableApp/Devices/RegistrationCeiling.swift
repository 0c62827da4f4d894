import Foundation
import Hummingbird
import Logging
import NotifiableCore
import NotifiableStore
import Synchronization

/// `POST /api/v1/device_tokens` without the database, for the registration benchmark's ceiling:
/// the same middleware (request log, metrics, errors, APIAuth with its credential cache) and the
/// same body decoding and validation as the real route, with one credential held in memory and
/// the device answered as the registry would return it, unsaved. What this serves per second is
/// what the HTTP layer alone allows; `scripts/bench` sets the real route against it.
public func buildRegistrationCeilingApplication(
    host: String, port: Int, accessID: String, secretKey: String, logger: Logger
) -> some ApplicationProtocol {
    let credential = CredentialCache.Credential(appID: 1, role: .device, secretKey: secretKey, requiresVerifiedAlias: false, expiresAt: nil)
    let credentials = CredentialCache { presented in presented == accessID ? credential : nil }
    let metrics = ServiceMetrics()
    let router = Router(context: NotifiableRequestContext.self)
    router.add(middleware: RequestLogMiddleware())
    router.add(middleware: HTTPMetricsMiddleware(factory: metrics.factory))
    router.add(middleware: ErrorMiddleware())
    let sequence = Counter()
    router.group("api/v1").add(middleware: APIAuthMiddleware(credentials: credentials, seen: nil))
        .post("device_tokens") { request, context -> JSONResponse<DeviceJSON> in
            let caller = try context.requireCaller()
            var request = request
            let body = try await request.jsonBody(context: context)
            let fields = try DeviceFields.registration(from: body)
            guard let provider = fields.provider, let token = fields.token else {
                throw APIError(status: .unprocessableContent, code: "missing_field", message: "provider and token are required.")
            }
            let now = Date()
            return JSONResponse(
                DeviceJSON(
                    Device(
                        id: sequence.next(), appID: caller.appID, provider: provider, token: token,
                        name: fields.name.applied(to: nil), userAlias: fields.userAlias.applied(to: nil),
                        language: fields.language.applied(to: nil), country: fields.country.applied(to: nil),
                        customProperties: fields.customProperties.applied(to: nil) ?? [:], platformProperties: fields.platformProperties,
                        createdAt: now, updatedAt: now, registeredAt: now, invalidatedAt: nil, unregisteredAt: nil,
                        tags: fields.tags.applied(to: nil) ?? []
                    )))
        }
    return Application(
        router: router,
        configuration: .init(address: .hostname(host, port: port), serverName: "NotifiableServer"),
        logger: logger
    )
}

/// Device ids for the answers, as the database's sequence would hand them out.
private final class Counter: Sendable {
    private let value = Mutex<Int64>(0)

    func next() -> Int64 {
        value.withLock { value in
            value += 1
            return value
        }
    }
}
