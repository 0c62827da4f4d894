import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The `process_*` metrics Prometheus's own client libraries expose, read from Linux's /proc
/// at each scrape: CPU, resident memory, open and allowed descriptors, start time.
enum ProcessMetrics {
    /// When the machine booted, in seconds since 1970: /proc/stat's `btime`, as Prometheus's Go
    /// client (procfs) reads it, once; the start time is then the same at every scrape.
    static let bootTime: Double? = {
        #if os(Linux)
        guard let stat = try? String(contentsOfFile: "/proc/stat", encoding: .utf8) else { return nil }
        for line in stat.split(separator: "\n") where line.hasPrefix("btime ") {
            return Double(line.dropFirst("btime ".count))
        }
        #endif
        return nil
    }()

    static func exposition() -> String {
        var lines: [String] = []
        func add(_ name: String, _ type: String, _ value: Double) {
            lines.append("# TYPE \(name) \(type)")
            lines.append("\(name) \(value)")
        }
        #if os(Linux)
        let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
        let pageSize = Double(sysconf(Int32(_SC_PAGESIZE)))
        // /proc/self/stat: fields after the command's closing parenthesis; utime and stime are the
        // 14th and 15th fields, starttime the 22nd, rss (pages) the 24th.
        if let stat = try? String(contentsOfFile: "/proc/self/stat", encoding: .utf8), let close = stat.lastIndex(of: ")") {
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            if fields.count > 21, let utime = Double(fields[11]), let stime = Double(fields[12]), let start = Double(fields[19]),
                let rss = Double(fields[21])
            {
                add("process_cpu_seconds_total", "counter", (utime + stime) / ticks)
                add("process_resident_memory_bytes", "gauge", rss * pageSize)
                if let bootTime = Self.bootTime {
                    add("process_start_time_seconds", "gauge", bootTime + start / ticks)
                }
            }
        }
        if let descriptors = try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd") {
            add("process_open_fds", "gauge", Double(descriptors.count))
        }
        var limit = rlimit()
        if getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 {
            add("process_max_fds", "gauge", Double(limit.rlim_cur))
        }
        #endif
        return lines.isEmpty ? "" : lines.joined(separator: "\n") + "\n"
    }
}
