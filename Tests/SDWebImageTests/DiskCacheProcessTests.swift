import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Runs SDCacheStress (built beside this test bundle) as a child process.
struct Child: Sendable {
    let pid: pid_t
    let stdout: Int32

    static var binary: String {
        URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("SDCacheStress").path
    }

    static func start(_ args: [String], executable: String = Child.binary) throws -> Child {
        var fds: [Int32] = [0, 0]
        // Close-on-exec: a helper another test starts meanwhile with system()
        // (a server script whose watchdog lives as long as this process)
        // must not inherit the write end, or `output()` never sees the end
        // of the child's output (seen: a whole `swift test` hung).
        // (Swift's Glibc has no pipe2: a socket pair is made close-on-exec at once.)
        let kind = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        guard socketpair(AF_UNIX, kind, 0, &fds) == 0 else { throw CocoaError(.fileWriteUnknown) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        posix_spawn_file_actions_adddup2(&actions, fds[1], 1)
        posix_spawn_file_actions_addclose(&actions, fds[0])
        defer { posix_spawn_file_actions_destroy(&actions) }
        let argv = ([executable] + args).map { strdup($0) } + [nil]
        defer { for a in argv { free(a) } }
        var pid: pid_t = 0
        posix_spawn_file_actions_adddup2(&actions, fds[1], 2)
        let rc = posix_spawn(&pid, executable, &actions, nil, argv, environ)
        close(fds[1])
        guard rc == 0 else { close(fds[0]); throw CocoaError(.executableLoad) }
        return Child(pid: pid, stdout: fds[0])
    }

    /// Blocks until the child prints `line` (or its output ends).
    func waitFor(_ line: String) -> Bool {
        var text = ""
        var byte: UInt8 = 0
        while read(stdout, &byte, 1) == 1 {
            if byte == UInt8(ascii: "\n") {
                if text == line { return true }
                text = ""
            } else {
                text.append(Character(UnicodeScalar(byte)))
            }
        }
        return false
    }

    func output() -> String {
        var data = Data()
        var buf = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = read(stdout, &buf, buf.count)
            if n <= 0 { break }
            data.append(buf, count: n)
        }
        return String(decoding: data, as: UTF8.self)
    }

    /// Exit status (-signal when killed).
    func wait() -> Int32 {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        close(stdout)
        if status & 0x7f != 0 { return -(status & 0x7f) }
        return (status >> 8) & 0xff
    }
}

@Suite("Disk cache across processes: SIGKILL mid-write, two writers", .serialized)
struct DiskCacheProcessTests {
    func tempDir() -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("sdproc-\(getpid())-\(UInt32.random(in: 0...UInt32.max))").path
    }

    @Test("A process killed with SIGKILL while writing thousands of entries leaves no entry that decodes wrong")
    func sigkill() async throws {
        guard FileManager.default.isExecutableFile(atPath: Child.binary) else {
            Issue.record("SDCacheStress not built at \(Child.binary)")
            return
        }
        let dir = tempDir()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        for round in 0..<3 {
            let writer = try Child.start(["write", dir])
            #expect(await offPool { writer.waitFor("ready") })
            usleep(useconds_t(50_000 + round * 70_000))  // kill at a different moment each round
            kill(writer.pid, SIGKILL)
            #expect(await offPool { writer.wait() } == -SIGKILL)
        }
        let verify = try Child.start(["verify", dir, "100000"])
        let (status, out) = await offPool { let o = verify.output(); return (verify.wait(), o) }
        #expect(status == 0, "\(out)")
        let entries = Int(out.split(separator: " ").last?.trimmingCharacters(in: .whitespacesAndNewlines) ?? "") ?? 0
        #expect(entries >= 200)
    }

    @Test("Two processes storing, reading and removing the same keys never read a wrong entry")
    func twoProcesses() async throws {
        guard FileManager.default.isExecutableFile(atPath: Child.binary) else {
            Issue.record("SDCacheStress not built at \(Child.binary)")
            return
        }
        let dir = tempDir()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let a = try Child.start(["hammer", dir, "1", "3000"])
        let b = try Child.start(["hammer", dir, "2", "3000"])
        let (ra, rb) = await offPool { (a.wait(), b.wait()) }
        #expect(ra == 0 && rb == 0)
        let verify = try Child.start(["verify", dir, "63"])
        #expect(await offPool { _ = verify.output(); return verify.wait() } == 0)
    }
}

@Suite("Disk cache on a full or read-only disk (tmpfs in a mount namespace)", .serialized)
struct DiskCacheFullTests {
    /// Runs `script` under `unshare -rm` (user + mount namespace: a private
    /// tmpfs, no root needed); nil when namespaces are not allowed here.
    func inNamespace(_ script: String) async throws -> (Int32, String)? {
        guard await offPool({ system("unshare -rm true >/dev/null 2>&1") }) == 0 else { return nil }
        let child = try Child.start(["-rm", "sh", "-c", script], executable: "/usr/bin/unshare")
        return await offPool { let out = child.output(); return (child.wait(), out) }
    }

    @Test("ENOSPC: the store reports a full disk, memory still serves, nothing on disk is corrupt")
    func diskFull() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("sdfull-\(getpid())").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        guard let (rc, out) = try await inNamespace(
            "mount -t tmpfs -o size=512k tmpfs '\(dir)' && exec '\(Child.binary)' fill '\(dir)'") else {
            print("unshare -rm is not permitted here: ENOSPC check skipped")
            return
        }
        #expect(rc == 0, "\(out)")
        #expect(out.contains("No space left on device"))
    }

    @Test("Read-only: the store reports EROFS, memory still serves, existing entries still read")
    func readOnly() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("sdro-\(getpid())").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        guard let (rc, out) = try await inNamespace(
            "mount -t tmpfs -o size=4m tmpfs '\(dir)' && '\(Child.binary)' populate '\(dir)' 10 && "
            + "mount -o remount,ro '\(dir)' && exec '\(Child.binary)' readonly '\(dir)'") else {
            print("unshare -rm is not permitted here: read-only check skipped")
            return
        }
        #expect(rc == 0, "\(out)")
        #expect(out.contains("Read-only file system") && out.contains("entries 10"))
    }
}
