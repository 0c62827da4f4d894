import Logging

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Raises the process's soft limit on open descriptors to its hard limit. Each HTTP connection,
/// database connection and gateway connection holds one; the common soft limit of 1,024 would let
/// a thousand idle clients make the API unreachable, while the hard limit is usually far higher.
enum DescriptorLimit {
    /// Raises it and logs what it did (or why it could not).
    static func raiseToHardLimit(logger: Logger) {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else {
            logger.warning("could not read the open-file limit", metadata: ["errno": "\(errno)"])
            return
        }
        let soft = limit.rlim_cur
        guard soft < limit.rlim_max else {
            logger.info("open-file limit", metadata: ["soft": "\(soft)", "hard": "\(limit.rlim_max)"])
            return
        }
        limit.rlim_cur = limit.rlim_max
        if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 {
            logger.info("raised the open-file limit to the hard limit", metadata: ["from": "\(soft)", "to": "\(limit.rlim_max)"])
        } else {
            logger.warning("could not raise the open-file limit", metadata: ["soft": "\(soft)", "hard": "\(limit.rlim_max)", "errno": "\(errno)"])
        }
    }
}
