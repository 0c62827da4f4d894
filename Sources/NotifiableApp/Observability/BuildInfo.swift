/// What this build is, for `notifiable --version` and the `notifiable_build_info` metric.
public enum BuildInfo {
    /// The release, as tagged; the OpenAPI document's `info.version` follows it.
    public static let version = "1.0.0"
}
