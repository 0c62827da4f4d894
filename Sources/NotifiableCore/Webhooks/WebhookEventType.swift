/// What a webhook can hear about. Delivery events concern one push to one device;
/// `invalidated` concerns a device whose token a gateway declared dead.
public enum WebhookEventType: String, Sendable, CaseIterable, Codable {
    case sent, failed, invalidated, delivered, opened, dead
}
