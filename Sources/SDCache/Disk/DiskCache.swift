import CSDSystem
import Foundation
#if canImport(Glibc)
import Glibc
import SDSync
#endif

/// Which file date ages an entry out.
public enum DiskCacheExpireType: Sendable {
    /// Last read or write (kept explicitly: atime updates are off on most mounts).
    case accessDate
    /// Last write (SDWebImage's default).
    case modificationDate
    /// Birth time where the file system records it, else modification.
    case creationDate
    /// Inode change time (metadata or data).
    case changeDate
}

/// A failed disk operation: the errno and what was being done.
public struct DiskCacheError: Error, Sendable, CustomStringConvertible {
    /// The errno.
    public let code: Int32
    /// The system call or step that failed ("open", "rename", "setxattr"…).
    public let operation: String
    /// The file or folder it was done on.
    public let path: String
    /// An error from its parts.
    public init(code: Int32, operation: String, path: String) {
        self.code = code
        self.operation = operation
        self.path = path
    }
    public var description: String { "\(operation) \(path): \(String(cString: strerror(code)))" }
    /// ENOSPC, EDQUOT: the disk is full.
    public var isDiskFull: Bool { code == ENOSPC || code == EDQUOT }
}

/// One file per key in one directory, named like SDWebImage's: the MD5 of the
/// key plus the key's path extension. Writes are atomic (a temporary file,
/// then rename), so a crash never leaves a half-written entry under a real
/// name, and two processes may share the directory. Extended data (e.g. HTTP
/// validators) rides in an extended attribute, written before the rename so
/// it is atomic with the bytes (a `.sdx` side file where xattrs are missing).
/// Thread-safe: every call is a few system calls, no shared state.
///
/// The folder is not trusted blindly: entries are opened without following
/// symbolic links and without blocking, and only regular files up to
/// `maxEntryBytes` are read (anything else there is removed and is a miss);
/// metadata writes never follow links; a folder that others can write to is
/// made private (0700) and one owned by another user is refused.
public final class DiskCache: Sendable {
    /// The folder holding the entries.
    public let directory: String
    private static let xattrName = "user.sdwebimage.extended"
    /// CRC-32 of the bytes, written with them: a flipped bit on disk makes
    /// the entry a miss instead of a wrong image (decoders cannot tell).
    private static let checksumName = "user.sdwebimage.crc32"
    private static let sidecar = ".sdx"
    private let counter = Counter()
    /// Entries larger than this are not read (a planted multi-GB file is a
    /// miss, not an allocation); default 256 MiB, above the downloader's
    /// 200 MiB response limit.
    public var maxEntryBytes: Int {
        get { limit.value }
        set { limit.value = max(0, newValue) }
    }
    private let limit = Limit(256 << 20)

    /// One stored entry, as `entries()` lists it.
    public struct Entry: Sendable {
        /// The file name (not the key: keys are hashed).
        public let name: String
        /// Bytes the file occupies on disk (allocated blocks).
        public let bytes: Int
        /// Last read or write, as the cache records it.
        public let accessDate: Date
        /// Last write of the bytes.
        public let modificationDate: Date
        /// Last change of the file's data or metadata.
        public let changeDate: Date

        /// An entry from its parts (for backends of your own).
        public init(name: String, bytes: Int, accessDate: Date, modificationDate: Date, changeDate: Date) {
            self.name = name
            self.bytes = bytes
            self.accessDate = accessDate
            self.modificationDate = modificationDate
            self.changeDate = changeDate
        }
    }

    /// Creates the directory (mode 0700) if needed. An existing one that is
    /// group- or world-writable is made 0700 (another local user could plant
    /// entries or swap them for links); one owned by another user, or that
    /// is no directory, is refused (EPERM / ENOTDIR).
    public init(directory: String) throws(DiskCacheError) {
        self.directory = directory.hasSuffix("/") && directory.count > 1 ? String(directory.dropLast()) : directory
        try Self.makeDirectories(self.directory)
        try Self.checkOwnership(self.directory)
    }

    private static func checkOwnership(_ path: String) throws(DiskCacheError) {
        var st = stat()
        guard stat(path, &st) == 0 else { throw DiskCacheError(code: errno, operation: "stat", path: path) }
        guard (st.st_mode & S_IFMT) == S_IFDIR else { throw DiskCacheError(code: ENOTDIR, operation: "open cache folder", path: path) }
        guard st.st_uid == geteuid() else {
            throw DiskCacheError(code: EPERM, operation: "trust cache folder owned by uid \(st.st_uid)", path: path)
        }
        if st.st_mode & 0o022 != 0, chmod(path, 0o700) != 0 {
            throw DiskCacheError(code: errno, operation: "chmod 0700 (the folder is writable by others)", path: path)
        }
    }

    /// Open an entry for reading: no symlinks followed, no blocking (a FIFO),
    /// a regular file up to `maxEntryBytes`. Anything else in its place is
    /// removed. Returns the descriptor and size, or nil.
    private func openEntry(_ path: String) -> (fd: Int32, size: Int)? {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY)
        if fd < 0 {
            if errno == ELOOP { unlink(path) }  // a symlink in an entry's place
            return nil
        }
        var st = stat()
        guard fstat(fd, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG, st.st_size >= 0, st.st_size <= maxEntryBytes else {
            let foreign = (st.st_mode & S_IFMT) != S_IFREG
            close(fd)
            if foreign { unlink(path) }
            return nil
        }
        return (fd, Int(st.st_size))
    }

    /// Move a cache folder's entries into `dst` and remove `src` (SDWebImage's
    /// `moveCacheDirectoryFromPath:toPath:`). No `src`: nothing to do. No
    /// `dst`: the folder is renamed. A file at `dst`: replaced. A folder at
    /// `dst`: `src`'s files are moved in, replacing same-named ones. Across
    /// file systems files are copied (through a temporary name, then renamed).
    public static func moveDirectory(from src: String, to dst: String) throws(DiskCacheError) {
        var st = stat()
        guard lstat(src, &st) == 0, (st.st_mode & S_IFMT) == S_IFDIR else { return }
        if lstat(dst, &st) == 0, (st.st_mode & S_IFMT) != S_IFDIR, unlink(dst) != 0 {
            throw DiskCacheError(code: errno, operation: "unlink", path: dst)
        }
        if lstat(dst, &st) != 0 {
            let parent = (dst as NSString).deletingLastPathComponent
            if !parent.isEmpty { try makeDirectories(parent) }
            if rename(src, dst) == 0 { return }
            guard errno == EXDEV else { throw DiskCacheError(code: errno, operation: "rename", path: dst) }
            try makeDirectories(dst)
        }
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: src) else {
            throw DiskCacheError(code: errno == 0 ? EIO : errno, operation: "opendir", path: src)
        }
        for name in names {
            let from = src + "/" + name, to = dst + "/" + name
            if rename(from, to) == 0 { continue }
            guard errno == EXDEV else { throw DiskCacheError(code: errno, operation: "rename", path: to) }
            let temp = dst + "/.move-" + name
            unlink(temp)
            do { try FileManager.default.copyItem(atPath: from, toPath: temp) } catch {
                unlink(temp)
                throw DiskCacheError(code: EIO, operation: "copy", path: to)
            }
            guard rename(temp, to) == 0 else { throw DiskCacheError(code: errno, operation: "rename", path: to) }
        }
        do { try FileManager.default.removeItem(atPath: src) } catch {
            throw DiskCacheError(code: EIO, operation: "remove", path: src)
        }
    }

    private static func makeDirectories(_ path: String) throws(DiskCacheError) {
        var built = path.hasPrefix("/") ? "" : "."
        for part in path.split(separator: "/") {
            built += "/" + part
            if mkdir(built, 0o700) != 0 && errno != EEXIST {
                throw DiskCacheError(code: errno, operation: "mkdir", path: built)
            }
        }
    }

    /// SDWebImage's `SDDiskCacheFileNameForKey`: MD5 hex of the key, then the
    /// URL's path extension (query and fragment ignored) unless it is too long
    /// for a file name.
    public static func fileName(forKey key: String) -> String {
        let hash = MD5.hex(key.utf8)
        var path = Substring(key)
        // only a percent escape makes the decoded path differ from the raw one
        // (and URL parsing is not free on every disk lookup)
        if key.utf8.contains(UInt8(ascii: "%")), let url = URLComponents(string: key), url.scheme != nil {
            path = Substring(url.path)  // as NSURL's pathExtension: the decoded path
        } else if let cut = path.firstIndex(where: { $0 == "?" || $0 == "#" }) {
            path = path[..<cut]
        }
        let last = path.split(separator: "/", omittingEmptySubsequences: true).last ?? ""
        guard let dot = last.lastIndex(of: "."), dot != last.startIndex else { return hash }
        // a decoded %00 is dropped, as SDWebImage does ("a.jpg00%00" -> "jpg00")
        let ext = last[last.index(after: dot)...].filter { $0 != "\0" }
        guard !ext.isEmpty, ext.utf8.count <= Int(NAME_MAX) - 33, !ext.contains("/") else { return hash }
        return hash + "." + ext
    }


    /// The path an entry for `key` has: the MD5 of the key plus the extension of the
    /// key's URL path, as SDWebImage names it. The file may not exist.
    public func cachePath(forKey key: String) -> String { directory + "/" + Self.fileName(forKey: key) }

    /// Whether an entry for `key` exists (a regular file; a link or FIFO is not one).
    public func containsData(forKey key: String) -> Bool { isEntry(cachePath(forKey: key)) }

    /// A regular file (not a link, FIFO or folder) under that name.
    private func isEntry(_ path: String) -> Bool {
        var st = stat()
        return lstat(path, &st) == 0 && (st.st_mode & S_IFMT) == S_IFREG
    }

    /// The bytes, or nil; a hit refreshes the entry's access date.
    public func data(forKey key: String) -> Data? {
        let path = cachePath(forKey: key)
        guard let (fd, size) = openEntry(path) else { return nil }
        defer { close(fd) }
        var data = Data(count: size)
        let ok: Bool = data.withUnsafeMutableBytes { buf in
            var done = 0
            while done < buf.count {
                let n = read(fd, buf.baseAddress! + done, buf.count - done)
                if n < 0 && errno == EINTR { continue }
                if n <= 0 { return false }
                done += n
            }
            return true
        }
        guard ok else { return nil }
        var stored: UInt32 = 0
        if fgetxattr(fd, Self.checksumName, &stored, 4) == 4 {
            let actual = data.withUnsafeBytes { sd_system_crc32($0.baseAddress, $0.count) }
            if actual != stored.littleEndian {
                unlink(path)  // rotted: fetched again and replaced
                unlink(path + Self.sidecar)
                return nil
            }
        }
        var times = [timespec(tv_sec: 0, tv_nsec: sd_system_utime_now()), timespec(tv_sec: 0, tv_nsec: sd_system_utime_omit())]
        _ = futimens(fd, &times)  // read-only media: ignored
        return data
    }

    /// Write atomically; `extendedData` (if any) lands together with the bytes.
    public func setData(_ data: Data, forKey key: String, extendedData: Data? = nil) throws(DiskCacheError) {
        let path = cachePath(forKey: key)
        var sidecarData: Data?
        let crc = data.withUnsafeBytes { sd_system_crc32($0.baseAddress, $0.count) }.littleEndian
        try writeAtomically(data, to: path) { fd throws(DiskCacheError) in
            var c = crc
            _ = fsetxattr(fd, Self.checksumName, &c, 4, 0)  // no xattrs here: no checksum, as before
            guard let extendedData else { return }
            let rc = extendedData.withUnsafeBytes { fsetxattr(fd, Self.xattrName, $0.baseAddress, $0.count, 0) }
            if rc != 0 {
                guard errno == ENOTSUP || errno == EOPNOTSUPP else {
                    throw DiskCacheError(code: errno, operation: "setxattr", path: path)
                }
                sidecarData = extendedData
            }
        }
        if let sidecarData {
            try writeAtomically(sidecarData, to: path + Self.sidecar)
        } else {
            unlink(path + Self.sidecar)  // a stale side file from an older entry
        }
    }

    /// A temporary file (mode 0600) written whole, `beforeRename` given its fd,
    /// then renamed over `path`; on any failure the temporary file is removed.
    private func writeAtomically(_ data: Data, to path: String,
                                 beforeRename: (Int32) throws(DiskCacheError) -> Void = { _ in }) throws(DiskCacheError) {
        let temp = directory + "/.tmp-\(getpid())-\(counter.next())-\(UInt32.random(in: 0...UInt32.max))"
        let fd = open(temp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw DiskCacheError(code: errno, operation: "create", path: temp) }
        var failure: DiskCacheError?
        let written: Int32 = data.withUnsafeBytes { buf in
            var done = 0
            while done < buf.count {
                let n = write(fd, buf.baseAddress! + done, buf.count - done)
                if n < 0 && errno == EINTR { continue }
                if n < 0 { return errno }
                if n == 0 { return EIO }
                done += n
            }
            return 0
        }
        if written != 0 { failure = DiskCacheError(code: written, operation: "write", path: temp) }
        if failure == nil {
            do { try beforeRename(fd) } catch { failure = error }
        }
        if close(fd) != 0, failure == nil { failure = DiskCacheError(code: errno, operation: "close", path: temp) }
        if failure == nil, rename(temp, path) != 0 { failure = DiskCacheError(code: errno, operation: "rename", path: path) }
        if let failure {
            unlink(temp)
            throw failure
        }
    }

    /// The extended data stored beside `key`'s entry; nil when none (or over 64 KiB).
    public func extendedData(forKey key: String) -> Data? {
        let path = cachePath(forKey: key)
        guard let (fd, _) = openEntry(path) else { return nil }
        defer { close(fd) }
        let size = fgetxattr(fd, Self.xattrName, nil, 0)
        if size >= 0 {
            guard size <= 64 << 10 else { return nil }
            var data = Data(count: size)
            let n = data.withUnsafeMutableBytes { fgetxattr(fd, Self.xattrName, $0.baseAddress, $0.count) }
            return n == size ? data : nil
        }
        let side = path + Self.sidecar
        guard let (sfd, ssize) = openEntry(side), ssize <= 64 << 10 else { return nil }
        defer { close(sfd) }
        var data = Data(count: ssize)
        let n = data.withUnsafeMutableBytes { read(sfd, $0.baseAddress, $0.count) }
        return n == ssize ? data : nil
    }

    /// Replace the extended data of an existing entry (nil removes it).
    /// Written through the entry's own descriptor: a link never redirects it.
    public func setExtendedData(_ data: Data?, forKey key: String) throws(DiskCacheError) {
        let path = cachePath(forKey: key)
        guard let (fd, _) = openEntry(path) else { throw DiskCacheError(code: ENOENT, operation: "setxattr", path: path) }
        defer { close(fd) }
        guard let data else {
            fremovexattr(fd, Self.xattrName)
            unlink(path + Self.sidecar)
            return
        }
        let rc = data.withUnsafeBytes { fsetxattr(fd, Self.xattrName, $0.baseAddress, $0.count, 0) }
        if rc == 0 { return }
        guard errno == ENOTSUP || errno == EOPNOTSUPP else {
            throw DiskCacheError(code: errno, operation: "setxattr", path: path)
        }
        try writeAtomically(data, to: path + Self.sidecar)
    }

    /// Make the entry new again (access and modification dates = now).
    public func touch(forKey key: String) {
        _ = utimensat(AT_FDCWD, cachePath(forKey: key), nil, AT_SYMLINK_NOFOLLOW)  // a link's target is not ours
    }

    /// Remove `key`'s entry and its extended data; a missing entry is fine.
    public func removeData(forKey key: String) {
        let path = cachePath(forKey: key)
        unlink(path)
        unlink(path + Self.sidecar)
    }

    /// Remove every entry (and leftover temporary files).
    public func removeAllData() {
        for name in names(includeHidden: true) { unlink(directory + "/" + name) }
    }

    /// Entries with their sizes (allocated bytes) and dates.
    public func entries() -> [Entry] {
        names(includeHidden: false).compactMap { name -> Entry? in
            guard !name.hasSuffix(Self.sidecar) else { return nil }
            var st = stat()
            guard lstat(directory + "/" + name, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG else { return nil }
            func date(_ t: timespec) -> Date { Date(timeIntervalSince1970: Double(t.tv_sec) + Double(t.tv_nsec) / 1e9) }
            return Entry(name: name, bytes: Int(st.st_blocks) * 512, accessDate: date(st.st_atim),
                         modificationDate: date(st.st_mtim), changeDate: date(st.st_ctim))
        }
    }

    /// Bytes the entries occupy on disk.
    public func totalSize() -> Int { entries().reduce(0) { $0 + $1.bytes } }
    /// How many entries there are.
    public func totalCount() -> Int { entries().count }

    /// Age out entries older than `maxAge` (< 0: never; 0: all), then, when
    /// `maxSize` > 0 is exceeded, drop the oldest until half of it is left.
    /// Temporary files left by a crash (older than 10 minutes) go too.
    /// Returns how many entries were removed.
    @discardableResult
    public func removeExpiredData(maxAge: TimeInterval, maxSize: Int, expireType: DiskCacheExpireType) -> Int {
        let now = Date()
        for name in names(includeHidden: true) where name.hasPrefix(".tmp-") {
            var st = stat()
            if lstat(directory + "/" + name, &st) == 0, Double(st.st_mtim.tv_sec) < now.timeIntervalSince1970 - 600 {
                unlink(directory + "/" + name)
            }
        }
        func age(_ e: Entry) -> Date {
            switch expireType {
            case .accessDate: max(e.accessDate, e.modificationDate)
            case .modificationDate, .creationDate: e.modificationDate
            case .changeDate: e.changeDate
            }
        }
        var removed = 0
        var kept: [(Entry, Date)] = []
        for e in entries() {
            let d = age(e)
            if maxAge >= 0 && d <= now.addingTimeInterval(-maxAge) {
                remove(e.name)
                removed += 1
            } else {
                kept.append((e, d))
            }
        }
        var total = kept.reduce(0) { $0 + $1.0.bytes }
        if maxSize > 0 && total > maxSize {
            for (e, _) in kept.sorted(by: { $0.1 < $1.1 }) where total > maxSize / 2 {
                remove(e.name)
                total -= e.bytes
                removed += 1
            }
        }
        return removed
    }

    private func remove(_ name: String) {
        unlink(directory + "/" + name)
        unlink(directory + "/" + name + Self.sidecar)
    }

    private func names(includeHidden: Bool) -> [String] {
        guard let dir = opendir(directory) else { return [] }
        defer { closedir(dir) }
        var out: [String] = []
        while let ent = readdir(dir) {
            let name = withUnsafeBytes(of: ent.pointee.d_name) { raw in
                String(cString: raw.bindMemory(to: CChar.self).baseAddress!)
            }
            if name == "." || name == ".." { continue }
            if !includeHidden && name.hasPrefix(".") { continue }
            out.append(name)
        }
        return out
    }
}

/// A lock-guarded integer setting.
final class Limit: Sendable {
    private let v: Locked<Int>
    init(_ v: Int) { self.v = Locked(v) }
    var value: Int {
        get { v.current }
        set { v.set(newValue) }
    }
}

/// A thread-safe counter for unique temporary names.
final class Counter: Sendable {
    private let n = Locked<UInt64>(0)
    func next() -> UInt64 { n.withLock { n in n += 1; return n } }
}
