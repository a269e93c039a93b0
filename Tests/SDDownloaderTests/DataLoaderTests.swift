import Foundation
import SDCoders
import SDDownloader
import SDTestSupport
import Testing

/// Collects callbacks; checked after completion.
private final class Log: @unchecked Sendable {
    private let lock = NSLock()
    private(set) var progress: [(Int64, Int64)] = []
    private(set) var previews = 0
    private(set) var completions = 0
    func add(_ p: (Int64, Int64)) { lock.lock(); progress.append(p); lock.unlock() }
    func preview() { lock.lock(); previews += 1; lock.unlock() }
    func complete() { lock.lock(); completions += 1; lock.unlock() }
    var snapshot: (progress: [(Int64, Int64)], previews: Int, completions: Int) {
        lock.lock(); defer { lock.unlock() }
        return (progress, previews, completions)
    }
}

@Suite("DataLoader over the C transfer loop", .serialized)
struct DataLoaderTests {
    let servers = TestServers.shared

    @Test("An image loads, decoded, with its bytes, response and metrics")
    func loadsImage() async throws {
        let s = try #require(servers, "test servers could not start (nginx, openssl, python3)")
        let loader = try DataLoader()
        let result = try await loader.load(DownloadRequest.patient(s.url(s.http, "/img/small.jpg")))
        let image = try #require(result.image)
        #expect(image.bitmap.width == 64 && image.bitmap.height == 48)
        #expect(image.format == .jpeg && image.isComplete)
        let onDisk = try Data(contentsOf: s.www.appendingPathComponent("img/small.jpg"))
        #expect(result.data == onDisk)
        #expect(result.response?.statusCode == 200)
        #expect(result.response?.value(forHTTPHeaderField: "etag") != nil)
        #expect(result.response?.mimeType == "image/jpeg")
        #expect(result.metrics.bytes == onDisk.count && result.metrics.httpVersion == 11)
    }

    @Test("Thumbnail options reach the decoder; bytes-only skips decoding")
    func decodeOptions() async throws {
        let s = try #require(servers)
        let loader = try DataLoader()
        var request = DownloadRequest.patient(s.url(s.http, "/img/prog.jpg"))
        request.decodeOptions = .thumbnail(maxPixelSize: 80)
        let thumb = try await loader.load(request)
        #expect(thumb.image?.bitmap.width == 80 && thumb.image?.bitmap.height == 60)
        request.decode = false
        let raw = try await loader.load(request)
        #expect(raw.image == nil && raw.data.count > 0)
    }

    @Test("A transfer that breaks part-way can be resumed: only the rest is fetched, the image is whole")
    func resume() async throws {
        let s = try #require(servers)
        let loader = try DataLoader()
        let whole = try Data(contentsOf: s.www.appendingPathComponent("img/small.jpg"))
        let id = "dl-\(UInt32.random(in: 0...UInt32.max))"
        let url = s.url(s.fault, "/resumable?id=\(id)")
        var partial: ResumableData?
        do {
            _ = try await loader.load(DownloadRequest.patient(url))
            Issue.record("the first transfer is cut off")
        } catch {
            partial = error.resumable
        }
        let p = try #require(partial)
        #expect(p.validator == "\"v1\"" && p.data == whole.prefix(whole.count / 2))
        var request = DownloadRequest.patient(url)
        request.resume = p
        let result = try await loader.load(request)
        #expect(result.data == whole && result.response?.statusCode == 206)
        #expect(result.image?.bitmap.width == 64 && result.image?.isComplete == true)
        #expect(result.metrics.resumedBytes == p.data.count && result.metrics.bytes == whole.count - p.data.count)
        #expect(s.resumedRanges(id) == [p.data.count])
        // a 206 for another range than asked is refused, not stitched
        request.url = s.url(s.fault, "/resumable?id=\(id)-bad&bad=1")
        await #expect(throws: DownloadError.self) { try await loader.load(request) }
    }

    @Test("A thumbnail's transfer ends once its image is settled; the rest comes by Range when asked")
    func endsWhenSettled() async throws {
        let s = try #require(servers)
        let file = try Data(contentsOf: s.www.appendingPathComponent("trickle/settle.jpg"))
        let loader = try DataLoader()
        var options = DecodeOptions.thumbnail(maxPixelSize: 225)  // 1/8 of the 1800 px photo
        options.resampling.shrinkOnLoadMargin = 1
        // the origin sends the first half and holds the rest until its gate
        // opens: whatever the machine's speed, only an early end completes
        let id = "settle-\(UInt32.random(in: 0...UInt32.max))"
        let url = s.url(s.fault, "/drip-file?name=trickle/settle.jpg&piece=4096&gap=0&mid=\(id)&id=\(id)&etag=auto&ranges=1")
        var request = DownloadRequest.patient(url)
        request.decodeOptions = options
        request.endsWhenSettled = true
        let early = try await loader.load(request)
        s.faultEnded(id)
        let image = try #require(early.image)
        // the whole file's thumbnail, pixel for pixel (settle levels 0: exact)
        let reference = try ImageDecoder.decode([UInt8](file), options: options)
        let pixels = { (b: Bitmap) in b.withUnsafeBytes { Data($0) } }
        #expect(image.isComplete && pixels(image.bitmap) == pixels(reference.bitmap))
        #expect(early.metrics.endedEarly && early.metrics.fullLength == file.count)
        #expect(early.data.count <= file.count / 2 + 4096 && early.data == file.prefix(early.data.count))
        #expect(early.completeUpTo?.width == 225 && early.completeUpTo?.height == 150)
        let sent = s.faultSent(id)
        #expect(sent > 0 && sent <= file.count / 2 + 2 * 4096)  // the held half never went
        // the rest, by Range + If-Range on the ETag: only the missing bytes
        let resumable = try #require(early.resumable)
        var full = DownloadRequest.patient(url)
        full.resume = resumable
        let whole = try await loader.load(full)
        #expect(whole.response?.statusCode == 206 && whole.data == file)
        #expect(!whole.metrics.endedEarly && whole.metrics.bytes == file.count - resumable.data.count)
        #expect(whole.image?.bitmap.width == 1800 && whole.image?.isComplete == true)
        #expect(s.faultSent(id) == sent + file.count - resumable.data.count)
        // off (the default), from nginx: the whole file
        var off = DownloadRequest.patient(s.url(s.http, "/trickle/settle.jpg"))
        off.decodeOptions = options
        let plain = try await loader.load(off)
        #expect(!plain.metrics.endedEarly && plain.data == file && plain.completeUpTo == nil)
    }

    @Test("maxConnectionsPerHost: six loads at once share one connection")
    func connectionsPerHost() async throws {
        let s = try #require(servers)
        let loader = try DataLoader(maxConcurrentDownloads: 6)
        loader.maxConnectionsPerHost = 1
        #expect(loader.maxConnectionsPerHost == 1)
        let results = try await withThrowingTaskGroup(of: DownloadResult.self) { group in
            for i in 0..<6 {
                group.addTask { try await loader.load(DownloadRequest.patient(s.url(s.http, "/img/n\(i).jpg?host"))) }
            }
            return try await group.reduce(into: [DownloadResult]()) { $0.append($1) }
        }
        #expect(results.count == 6 && results.allSatisfy { $0.image != nil })
        #expect(results.reduce(0) { $0 + $1.metrics.newConnections } == 1)
    }

    @Test("Errors keep their cause and the HTTP status")
    func errors() async throws {
        let s = try #require(servers)
        let loader = try DataLoader()
        await #expect(throws: DownloadError.self) {
            try await loader.load(DownloadRequest.patient(s.url(s.http, "/img/missing.jpg")))
        }
        do {
            _ = try await loader.load(DownloadRequest.patient(s.url(s.http, "/img/missing.jpg")))
        } catch {
            #expect(error.code == .badStatus && error.statusCode == 404)
        }
        do {
            _ = try await loader.load(DownloadRequest.patient(s.url(s.fault, "/html")))
            Issue.record("an HTML page must not decode")
        } catch {
            #expect(error.code == .decodeFailed)
        }
        do {
            var r = DownloadRequest.patient(s.url(s.fault, "/stall"))
            r.timeout = 0.5
            _ = try await loader.load(r)
            Issue.record("a stalled body must time out")
        } catch {
            #expect(error.code == .timedOut)
        }
    }

    @Test("Progress is monotonic, previews arrive, completion once, on the given queue")
    func callbacks() async throws {
        let s = try #require(servers)
        let loader = try DataLoader()
        let log = Log()
        let queue = DispatchQueue(label: "test.callbacks")
        var request = DownloadRequest.patient(s.url(s.fault, "/drip-progressive"))
        request.progressivePreviews = true
        request.decodeOptions.previewIntervalMilliseconds = 0
        let result: Result<DownloadResult, DownloadError> = await withCheckedContinuation { cont in
            loader.load(request, queue: queue,
                        progress: { r, e in dispatchPrecondition(condition: .onQueue(queue)); log.add((r, e)) },
                        preview: { _ in log.preview() },
                        completion: { res in
                            dispatchPrecondition(condition: .onQueue(queue))
                            log.complete()
                            cont.resume(returning: res)
                        })
        }
        let value = try result.get()
        try await Task.sleep(nanoseconds: 20_000_000)
        let snap = log.snapshot
        #expect(snap.completions == 1)
        #expect(snap.progress.first?.0 == 0)
        #expect(snap.progress.last?.0 == Int64(value.data.count))
        #expect(zip(snap.progress, snap.progress.dropFirst()).allSatisfy { $0.0 <= $1.0 })
        #expect(snap.previews >= 1)
        #expect(value.image?.isProgressive == true)
    }

    @Test("Cancelling a task, or the Swift task awaiting it, ends it with .cancelled")
    func cancellation() async throws {
        let s = try #require(servers)
        let loader = try DataLoader()
        let log = Log()
        let result: Result<DownloadResult, DownloadError> = await withCheckedContinuation { cont in
            let task = loader.load(DownloadRequest.patient(s.url(s.fault, "/stall"))) { res in
                log.complete()
                cont.resume(returning: res)
            }
            DispatchQueue.global().asyncAfter(deadline: .now() + 0.1) { task?.cancel() }
        }
        #expect(throws: DownloadError.self) { try result.get() }
        if case .failure(let e) = result { #expect(e.code == .cancelled) }
        let swiftTask = Task { try await loader.load(DownloadRequest.patient(s.url(s.fault, "/stall"))) }
        try await Task.sleep(nanoseconds: 100_000_000)
        swiftTask.cancel()
        do {
            _ = try await swiftTask.value
            Issue.record("must be cancelled")
        } catch let error as DownloadError {
            #expect(error.code == .cancelled)
        }
        #expect(log.snapshot.completions == 1)
    }

    @Test("Many concurrent loads from many tasks all complete")
    func concurrentLoads() async throws {
        let s = try #require(servers)
        let loader = try DataLoader(maxConcurrentDownloads: 4)
        let widths = try await withThrowingTaskGroup(of: Int.self) { group in
            for i in 0..<64 {
                group.addTask {
                    try await loader.load(DownloadRequest.patient(s.url(s.http, "/img/n\(i % 8).jpg"))).image?.bitmap.width ?? -1
                }
            }
            return try await group.reduce(into: [Int]()) { $0.append($1) }
        }
        #expect(widths.count == 64)
        #expect(Set(widths) == Set(16..<24))
    }

    @Test("An invalid URL is refused with a completion, not silence")
    func refused() async throws {
        let loader = try DataLoader()
        do {
            _ = try await loader.load(DownloadRequest.patient(URL(string: "gopher://127.0.0.1/x")!))
            Issue.record("must fail")
        } catch {
            #expect(error.code == .schemeNotAllowed)  // was .invalidRequest (issue 13, defect 6)
        }
    }

    @Test("No request value can carry CR/LF into the request; the refusal says why")
    func noHeaderInjection() async throws {
        let loader = try DataLoader()
        var r = DownloadRequest.patient(URL(string: "http://127.0.0.1:1/x.jpg")!)
        r.headers["User-Agent"] = "v\r\nX-Injected: 1"
        do {
            _ = try await loader.load(r)
            Issue.record("must fail")
        } catch {
            #expect(error.code == .invalidRequest && error.message.contains("control character"))
        }
        var r2 = DownloadRequest.patient(URL(string: "http://127.0.0.1:1/x.jpg")!)
        r2.ifNoneMatch = "\"a\"\r\nX-Injected: 1"
        do {
            _ = try await loader.load(r2)
            Issue.record("must fail")
        } catch {
            #expect(error.code == .invalidRequest)
        }
        do {
            _ = try await loader.load(DownloadRequest.patient(URL(string: "img/relative.jpg")!))
            Issue.record("must fail")
        } catch {
            #expect(error.code == .badURL && error.message.contains("relative"))
        }
    }

    @Test("Only well-formed validators are kept (they go back out in conditional requests)")
    func validators() {
        #expect(HTTPValidator.etag("\"abc\"") == "\"abc\"")
        #expect(HTTPValidator.etag("W/\"abc\"") == "W/\"abc\"")
        #expect(HTTPValidator.etag("\"a\rb\"") == nil)
        #expect(HTTPValidator.etag("\"a\nX: 1\"") == nil)
        #expect(HTTPValidator.etag("abc") == nil)  // unquoted
        #expect(HTTPValidator.etag("\"a\"b\"") == nil)
        #expect(HTTPValidator.etag("\"" + String(repeating: "a", count: 2000) + "\"") == nil)
        #expect(HTTPValidator.date("Wed, 21 Oct 2015 07:28:00 GMT") != nil)
        #expect(HTTPValidator.date("Wed, 21 Oct 2015\r\nX: 1") == nil)
    }
}
