import Foundation
import SDCache
import Testing

private func tempDir(_ name: String) -> String {
    let dir = FileManager.default.temporaryDirectory.appendingPathComponent("sdcache-\(name)-\(getpid())-\(UInt32.random(in: 0...UInt32.max))").path
    return dir
}

@Suite("DiskCache: names, atomic writes, extended data, sweeps")
struct DiskCacheTests {
    @Test("File names follow SDWebImage: MD5 of the key plus the URL's extension")
    func names() {
        // MD5("") and MD5("abc"), the RFC 1321 test vectors
        #expect(DiskCache.fileName(forKey: "") == "d41d8cd98f00b204e9800998ecf8427e")
        #expect(DiskCache.fileName(forKey: "abc") == "900150983cd24fb0d6963f7d28e17f72")
        let key = "http://example.com/a/image.png?size=3#x"
        #expect(DiskCache.fileName(forKey: key).hasSuffix(".png"))
        #expect(DiskCache.fileName(forKey: key).count == 32 + 4)
        #expect(!DiskCache.fileName(forKey: "http://example.com/noext").contains("."))
        let long = "http://example.com/a." + String(repeating: "x", count: 230)
        #expect(!DiskCache.fileName(forKey: long).contains("."))
        #expect(DiskCache.fileName(forKey: "http://e.com/dir.d/file") == DiskCache.fileName(forKey: "http://e.com/dir.d/file"))
        #expect(!DiskCache.fileName(forKey: "http://e.com/dir.d/file").contains("."))
        // SDImageCacheTests test49: the extension comes from the URL's decoded path
        #expect(DiskCache.fileName(forKey: "https://e.com/image.jpg00%00").hasSuffix(".jpg00"))
        #expect(DiskCache.fileName(forKey: "https://e.com/a%2Eb/photo.p%6Eg?x=1.gif").hasSuffix(".png"))
    }

    @Test("Store, read back, extended data with it, remove, leftovers of nothing")
    func roundTrip() throws {
        let cache = try DiskCache(directory: tempDir("rt"))
        defer { try? FileManager.default.removeItem(atPath: cache.directory) }
        let data = Data((0..<5000).map { UInt8($0 % 251) })
        try cache.setData(data, forKey: "k1", extendedData: Data("etag-1".utf8))
        #expect(cache.containsData(forKey: "k1") && cache.data(forKey: "k1") == data)
        #expect(cache.extendedData(forKey: "k1") == Data("etag-1".utf8))
        try cache.setData(Data("new".utf8), forKey: "k1")  // a new entry drops the old validators
        #expect(cache.extendedData(forKey: "k1") == nil)
        try cache.setExtendedData(Data("v2".utf8), forKey: "k1")
        #expect(cache.extendedData(forKey: "k1") == Data("v2".utf8) && cache.data(forKey: "k1") == Data("new".utf8))
        #expect(throws: DiskCacheError.self) { try cache.setExtendedData(Data(), forKey: "missing") }
        #expect(cache.totalCount() == 1 && cache.totalSize() > 0)
        let names = try FileManager.default.contentsOfDirectory(atPath: cache.directory)
        #expect(names == [DiskCache.fileName(forKey: "k1")])  // no temporary files left behind
        cache.removeData(forKey: "k1")
        #expect(!cache.containsData(forKey: "k1") && cache.data(forKey: "k1") == nil && cache.totalCount() == 0)
    }

    @Test("Private by default: the folder is 0700 and entries are 0600")
    func modes() throws {
        let cache = try DiskCache(directory: tempDir("modes"))
        defer { try? FileManager.default.removeItem(atPath: cache.directory) }
        try cache.setData(Data("x".utf8), forKey: "k", extendedData: Data("e".utf8))
        var st = stat()
        stat(cache.directory, &st)
        #expect(st.st_mode & 0o777 == 0o700)
        stat(cache.cachePath(forKey: "k"), &st)
        #expect(st.st_mode & 0o777 == 0o600)
    }

    @Test("Expiry by age (0 = everything, < 0 = never) and by size (down to half)")
    func sweeps() throws {
        let cache = try DiskCache(directory: tempDir("sweep"))
        defer { try? FileManager.default.removeItem(atPath: cache.directory) }
        for i in 0..<10 { try cache.setData(Data(count: 8192), forKey: "k\(i)") }
        #expect(cache.removeExpiredData(maxAge: -1, maxSize: 0, expireType: .modificationDate) == 0)
        #expect(cache.removeExpiredData(maxAge: 3600, maxSize: 0, expireType: .accessDate) == 0)
        // make k0...k4 old, k5...k9 recent; reading k2 makes it recent for accessDate only
        for i in 0..<5 {
            var t = [timespec(tv_sec: time(nil) - 7200, tv_nsec: 0), timespec(tv_sec: time(nil) - 7200, tv_nsec: 0)]
            utimensat(AT_FDCWD, cache.cachePath(forKey: "k\(i)"), &t, 0)
        }
        _ = cache.data(forKey: "k2")
        #expect(cache.removeExpiredData(maxAge: 3600, maxSize: 0, expireType: .modificationDate) == 5)
        #expect(cache.totalCount() == 5)
        let per = cache.totalSize() / 5
        #expect(cache.removeExpiredData(maxAge: -1, maxSize: per * 4, expireType: .modificationDate) == 3)
        #expect(cache.totalCount() == 2 && cache.totalSize() <= per * 2)
        #expect(cache.removeExpiredData(maxAge: 0, maxSize: 0, expireType: .accessDate) == 2)
        #expect(cache.totalCount() == 0)
    }

    @Test("Access dates: a read keeps an entry alive under .accessDate")
    func accessDate() throws {
        let cache = try DiskCache(directory: tempDir("atime"))
        defer { try? FileManager.default.removeItem(atPath: cache.directory) }
        try cache.setData(Data("a".utf8), forKey: "old-but-read")
        try cache.setData(Data("b".utf8), forKey: "old")
        for key in ["old-but-read", "old"] {
            var t = [timespec(tv_sec: time(nil) - 7200, tv_nsec: 0), timespec(tv_sec: time(nil) - 7200, tv_nsec: 0)]
            utimensat(AT_FDCWD, cache.cachePath(forKey: key), &t, 0)
        }
        _ = cache.data(forKey: "old-but-read")
        #expect(cache.removeExpiredData(maxAge: 3600, maxSize: 0, expireType: .accessDate) == 1)
        #expect(cache.containsData(forKey: "old-but-read") && !cache.containsData(forKey: "old"))
        cache.touch(forKey: "old-but-read")
        #expect(cache.removeExpiredData(maxAge: 3600, maxSize: 0, expireType: .modificationDate) == 0)
    }

    @Test("Threads writing the same keys never expose a torn entry")
    func concurrentWriters() throws {
        let cache = try DiskCache(directory: tempDir("race"))
        defer { try? FileManager.default.removeItem(atPath: cache.directory) }
        let bad = Counter()
        DispatchQueue.concurrentPerform(iterations: 4) { t in
            for i in 0..<300 {
                let key = "k\(i % 10)"
                let fill = UInt8(truncatingIfNeeded: t * 31 + i)
                try? cache.setData(Data(repeating: fill, count: 20_000 + Int(fill)), forKey: key)
                if let d = cache.data(forKey: key) {
                    // whole entries only: every byte equals the first, the length matches it
                    if d.count != 20_000 + Int(d.first ?? 0) || d.contains(where: { $0 != d.first }) { bad.add() }
                }
            }
        }
        #expect(bad.value == 0)
        #expect(cache.totalCount() == 10)
    }
}

final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var n = 0
    func add() { lock.lock(); n += 1; lock.unlock() }
    var value: Int { lock.lock(); defer { lock.unlock() }; return n }

    // Issue 13, defect 4: the folder's contents are not trusted blindly.
    @Test("A symlink in an entry's place is not followed: a miss, removed; the target is untouched")
    func symlinkEntry() throws {
        let cache = try DiskCache(directory: tempDir("link"))
        defer { try? FileManager.default.removeItem(atPath: cache.directory) }
        let secret = cache.directory + "-secret"
        try Data("not an image: a secret".utf8).write(to: URL(fileURLWithPath: secret))
        defer { unlink(secret) }
        try cache.setData(Data("v1".utf8), forKey: "k")
        let path = cache.cachePath(forKey: "k")
        unlink(path)
        #expect(symlink(secret, path) == 0)
        #expect(!cache.containsData(forKey: "k"))
        #expect(cache.data(forKey: "k") == nil)
        #expect(cache.extendedData(forKey: "k") == nil)
        #expect(throws: DiskCacheError.self) { try cache.setExtendedData(Data("x".utf8), forKey: "k") }
        var st = stat()
        #expect(lstat(path, &st) != 0)  // the planted link is gone
        // touch does not reach through a link to its target
        #expect(symlink(secret, path) == 0)
        var old = [timespec(tv_sec: 1_000_000, tv_nsec: 0), timespec(tv_sec: 1_000_000, tv_nsec: 0)]
        utimensat(AT_FDCWD, secret, &old, 0)
        cache.touch(forKey: "k")
        stat(secret, &st)
        #expect(st.st_mtim.tv_sec == 1_000_000)
        #expect(cache.totalCount() == 0)  // a link is no entry
    }

    @Test("A FIFO in an entry's place does not block; a huge sparse entry is not read")
    func fifoAndHugeEntries() throws {
        let cache = try DiskCache(directory: tempDir("fifo"))
        defer { try? FileManager.default.removeItem(atPath: cache.directory) }
        let path = cache.cachePath(forKey: "f")
        #expect(mkfifo(path, 0o600) == 0)
        let t0 = Date()
        #expect(cache.data(forKey: "f") == nil)
        #expect(!cache.containsData(forKey: "f"))
        #expect(Date().timeIntervalSince(t0) < 5)
        // 3 GB, sparse: refused by size before any read or allocation
        let big = cache.cachePath(forKey: "big")
        let fd = open(big, O_WRONLY | O_CREAT, 0o600)
        #expect(ftruncate(fd, 3 << 30) == 0)
        close(fd)
        #expect(cache.data(forKey: "big") == nil)
        cache.maxEntryBytes = 16
        try cache.setData(Data(count: 17), forKey: "s")
        #expect(cache.data(forKey: "s") == nil)
        cache.maxEntryBytes = 17
        #expect(cache.data(forKey: "s")?.count == 17)
    }

    @Test("New folders are 0700; a folder others can write to is made 0700; another user's is refused")
    func folderTrust() throws {
        let dir = tempDir("trust")
        let cache = try DiskCache(directory: dir + "/a/b")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var st = stat()
        stat(cache.directory, &st)
        #expect(st.st_mode & 0o777 == 0o700)
        let open = dir + "/open"
        mkdir(open, 0o777)
        chmod(open, 0o777)
        _ = try DiskCache(directory: open)
        stat(open, &st)
        #expect(st.st_mode & 0o777 == 0o700)
        let foreign = dir + "/foreign"
        mkdir(foreign, 0o700)
        if geteuid() == 0 && chown(foreign, 54321, 54321) == 0 {
            #expect(throws: DiskCacheError.self) { _ = try DiskCache(directory: foreign) }
        }
        let file = dir + "/file"
        try Data().write(to: URL(fileURLWithPath: file))
        #expect(throws: DiskCacheError.self) { _ = try DiskCache(directory: file) }
    }

    @Test("A bit flipped on disk makes the entry a miss (CRC-32 kept with the bytes) and removes it")
    func bitRot() throws {
        let cache = try DiskCache(directory: tempDir("rot"))
        defer { try? FileManager.default.removeItem(atPath: cache.directory) }
        let data = Data((0..<10000).map { UInt8($0 % 253) })
        try cache.setData(data, forKey: "k", extendedData: Data("v".utf8))
        #expect(cache.data(forKey: "k") == data)
        let fd = open(cache.cachePath(forKey: "k"), O_RDWR)
        var b: UInt8 = 0
        #expect(pread(fd, &b, 1, 5000) == 1)
        b ^= 1
        #expect(pwrite(fd, &b, 1, 5000) == 1)
        close(fd)
        #expect(cache.data(forKey: "k") == nil)
        #expect(!cache.containsData(forKey: "k"))
    }
}
