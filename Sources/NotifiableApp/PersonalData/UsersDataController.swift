import Foundation
import Hummingbird
import NotifiableCore

/// A person's data over the API, for the app's backend (server credentials): erase it, export it.
/// An alias the app never had answers like one it had: zero counts, an empty export. Neither
/// reveals more than the caller, who holds the app's server credentials, could already read.
struct UsersDataController {
    let personalData: PersonalData
    let trustedProxies: Set<String>

    func addRoutes(to group: RouterGroup<NotifiableRequestContext>) {
        group.delete("users/:alias", use: erase)
        group.get("users/:alias/data", use: export)
    }

    struct ErasedJSON: Encodable, Sendable {
        let erased: ErasedData
    }

    @Sendable func erase(_ request: Request, context: NotifiableRequestContext) async throws -> JSONResponse<ErasedJSON> {
        let caller = try context.requireServerCaller()
        let alias = try context.pathUserAlias()
        let requester = PersonalData.Requester(
            actor: "server credential \(caller.accessID)", channel: .api,
            origin: ClientOrigin.of(request, context: context, trustedProxies: trustedProxies).address)
        return JSONResponse(ErasedJSON(erased: try await personalData.erase(alias: alias, appID: caller.appID, by: requester, logger: context.logger)))
    }

    @Sendable func export(_ request: Request, context: NotifiableRequestContext) async throws -> Response {
        let caller = try context.requireServerCaller()
        let alias = try context.pathUserAlias()
        let personalData = personalData
        // Refused before the answer starts, while a refusal can still be a status.
        let reservation = try personalData.reserveExport()
        return Response(
            status: .ok, headers: [.contentType: "application/json; charset=utf-8", .cacheControl: "no-store"],
            body: ResponseBody { writer in
                try await personalData.export(alias: alias, appID: caller.appID, in: reservation) { try await writer.write(ByteBuffer(string: $0)) }
                try await writer.finish(nil)
            })
    }
}
