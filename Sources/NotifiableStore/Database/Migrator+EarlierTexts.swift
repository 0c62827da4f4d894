extension Migrator {
    /// The migrations that defined stored functions and triggers before those moved to their own
    /// files (`StoredFunctionFile`), with the checksum a database recorded when it applied each as it
    /// was then written. The schema they leave, with the files applied, is the same.
    static let earlierChecksums: [String: String] = [
        "0003": "82c016511feea971dabed28c758e1f06a6b7c399a865c5dfd8e9f3fe02666228",
        "0008": "138868c84b095d2f5451c3f97545a8743d6c6cd06c4f2a1add2510720f4e2030",
        "0010": "f6086de94771fd99885f7f3a7757f8dbf80cbc45835393f2fac54d2b065820eb",
        "0014": "d924d4349885d48d989df3090c2d0e5096a98159bbf5e04665af457e7e8fe2da",
        "0016": "568c6283df4a0d099460960f2a907f4f2ef19999d2bbac94e013d5b906db4bbd",
        "0017": "2a0bc6a17557e7a6d745743f8f36a7049b8636f828e4fd321fa8168affb9eead",
        "0018": "9ccad3d959e2397b2220bf0e3571a97e0146fa045200f414d552eaf478e38570",
        "0019": "e98d542664157b7829f60e125b47997a9f1e28504693a7910b82bf38bc5ed4f3",
        "0022": "f1c9c6e615867cc562d092dda70df081279c5c32b4c917c84fa312401485cc43",
        "0023": "995868f68d11ddcc9027a8cb98e63649420c8e765ef963a767d088f1d5f26b1a",
        "0024": "c361b314e11c1bde4225be454aa7e422d4b88f2d4763c4cea8bad4ef52d26867",
        "0026": "e8094c379f1c6b7d776226890dd5b6c7964211972cc2e48d1c978ff8563770fe",
    ]

    /// The last build that applies them as they were then written.
    static let lastBuildWithEarlierTexts = "commit 3c7af63 (2026-11-28)"
}
