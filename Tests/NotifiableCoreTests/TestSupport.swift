import NotifiableCore

/// Decodes a JSON request body from its text, as the server does.
func json(_ text: String) throws -> JSONValue {
    try JSONValue.decode(Array(text.utf8))
}

/// The validation error `body` throws, or nil when it succeeds.
func validationError<T>(_ body: () throws(ValidationError) -> T) -> ValidationError? {
    do {
        _ = try body()
        return nil
    } catch {
        return error
    }
}

let hex64 = String(repeating: "a1", count: 32)
