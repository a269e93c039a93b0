import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// How much memory this process may use, and how pressed the system is for
/// it: what a Linux cache has instead of memory warnings. A container's
/// limit is its cgroup's (`memory.max` in v2, `memory.limit_in_bytes` in
/// v1), not the host's RAM, which a default sized from RAM alone would
/// overshoot until the OOM killer ends the process.
package enum SystemMemory {
    /// The cgroup's memory limit when one is set, else physical RAM.
    package static var limit: Int {
        let ram = physical
        guard let cg = cgroupLimit(), cg > 0 else { return ram }
        return min(cg, ram)
    }

    /// Physical RAM (1 GiB if the system will not say).
    package static var physical: Int {
        let pages = sysconf(Int32(_SC_PHYS_PAGES)), size = sysconf(Int32(_SC_PAGESIZE))
        return pages > 0 && size > 0 ? pages * size : 1 << 30
    }

    /// The limit of this process's cgroup (v2, then v1); nil when unlimited
    /// or not visible.
    package static func cgroupLimit(root: String = "/sys/fs/cgroup",
                                    selfCgroup: String = "/proc/self/cgroup") -> Int? {
        if let dir = cgroupV2Directory(root: root, selfCgroup: selfCgroup),
           let text = read(dir + "/memory.max") {
            return parseLimit(text)
        }
        if let text = read(root + "/memory/memory.limit_in_bytes") { return parseLimit(text) }
        return nil
    }

    /// The memory-pressure file to watch: the cgroup's `memory.pressure`
    /// (v2), else the system's `/proc/pressure/memory`; nil without PSI.
    package static func pressureFile(root: String = "/sys/fs/cgroup",
                                     selfCgroup: String = "/proc/self/cgroup") -> String? {
        if let dir = cgroupV2Directory(root: root, selfCgroup: selfCgroup),
           read(dir + "/memory.pressure").flatMap(pressure(fromPSI:)) != nil {
            return dir + "/memory.pressure"
        }
        return read("/proc/pressure/memory").flatMap(pressure(fromPSI:)) != nil ? "/proc/pressure/memory" : nil
    }

    /// The v2 cgroup folder of this process ("0::/path" in /proc/self/cgroup).
    static func cgroupV2Directory(root: String, selfCgroup: String) -> String? {
        guard let text = read(selfCgroup) else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix("0::") {
            let path = line.dropFirst(3)
            guard !path.contains("..") else { return nil }
            return root + (path == "/" ? "" : String(path))
        }
        return nil
    }

    /// A limit file's value: bytes, or nil for "max" (v2) and v1's "no
    /// limit" (a page-rounded LONG_MAX, anything from 2^60 up).
    package static func parseLimit(_ text: String) -> Int? {
        let t = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard let v = Int(t), v > 0, v < 1 << 60 else { return nil }
        return v
    }

    /// The share of the last 10 s in which some task stalled on memory, in
    /// percent: the `some avg10=` field of a PSI file.
    package static func pressure(fromPSI text: String) -> Double? {
        for line in text.split(separator: "\n") where line.hasPrefix("some ") {
            for field in line.split(separator: " ") where field.hasPrefix("avg10=") {
                return Double(field.dropFirst(6))
            }
        }
        return nil
    }

    /// This process's resident set now, bytes (/proc/self/statm; 0 when unreadable).
    package static var residentBytes: Int {
        guard let s = read("/proc/self/statm") else { return 0 }
        let pages = s.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
    }

    /// A small text file, whole (nil when it cannot be read).
    static func read(_ path: String) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var buf = [UInt8](repeating: 0, count: 4096)
        let n = buf.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
        guard n > 0 else { return nil }
        return String(decoding: buf[..<n], as: UTF8.self)
    }
}
