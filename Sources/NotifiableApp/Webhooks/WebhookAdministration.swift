import NotifiableCore
import NotifiableDelivery
import NotifiableStore

/// Adding a webhook, as the admin API, the console and the command line all do it: the
/// subscription checked (`WebhookSubscription`), a target on this service's own network refused
/// (`WebhookTargets`), then the webhook stored with a new signing secret. Each door says the
/// refusal in its own way.
package struct WebhookAdministration: Sendable {
    let webhooks: WebhookStore
    let targets: WebhookTargets

    package init(webhooks: WebhookStore, targets: WebhookTargets) {
        self.webhooks = webhooks
        self.targets = targets
    }

    package enum Refusal: Error, Sendable {
        /// The URL or an event type is not one a webhook can have.
        case invalid(ValidationError)
        /// The URL names an address of this service's own network (`WebhookTargets`).
        case internalTarget(String)
        case noSuchApp
    }

    /// The webhook added and its signing secret, shown once.
    package func add(appID: Int64, url: String, eventNames: [String]?) async throws -> (webhook: Webhook, secret: String) {
        let subscription: WebhookSubscription
        do {
            subscription = try WebhookSubscription(url: url, eventNames: eventNames)
        } catch {
            throw Refusal.invalid(error)
        }
        if let refusal = await targets.refusal(of: subscription.url) { throw Refusal.internalTarget(refusal) }
        guard let added = try await webhooks.create(appID: appID, subscription) else { throw Refusal.noSuchApp }
        return added
    }
}
