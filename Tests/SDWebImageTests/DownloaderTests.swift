import Dispatch
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import SDTestSupport
import SDWebImage
import SDWebImageTestSupport
import Testing

/// SDWebImageDownloader against the real nginx and the fault server
/// (ports of SDWebImageDownloaderTests where they apply on Linux).
@Suite("SDWebImageDownloader: basics and errors")
struct DownloaderTests {
    let servers = TestServers.shared

    @Test("The shared downloader is a separate instance; default and custom headers")
    func headers() {
        let d = SDWebImageDownloader()  // patience: the defaults under test; it loads nothing
        #expect(d !== SDWebImageDownloader.shared)  // patience: identity only
        #expect(d.value(forHTTPHeaderField: "Accept") == "image/*,*/*;q=0.8")
        #expect(d.value(forHTTPHeaderField: "user-agent")?.hasPrefix("SDWebImage-Linux/") == true)
        d.setValue("v1", forHTTPHeaderField: "X-Test")
        #expect(d.value(forHTTPHeaderField: "x-test") == "v1")
        d.setValue(nil, forHTTPHeaderField: "X-Test")
        #expect(d.value(forHTTPHeaderField: "X-Test") == nil)
        d.config.maxConcurrentDownloads = 3
        #expect(d.config.maxConcurrentDownloads == 3)
        #expect(SDWebImageDownloaderConfig.default.maxConcurrentDownloads == 6)
        #expect(SDWebImageDownloaderConfig.default.maxConnectionsPerHost == 6)  // was 0 (issue 13: on by default)
        d.config.maxConnectionsPerHost = 2
        #expect(d.config.maxConnectionsPerHost == 2 && d.config.copy().maxConnectionsPerHost == 2)
        #expect(d.config.downloadTimeout == 15)
    }

    @Test("A JPEG downloads: image, the exact bytes, finished once, response and metrics on the token")
    func simpleJPEG() async throws {
        let s = try #require(servers, "test servers could not start (nginx, openssl, python3)")
        let d = patientDownloader()
        let url = s.url(s.http, "/img/small.jpg")
        let (o, token) = d.start(url)
        await o.wait()
        let image = try #require(o.image)
        #expect(o.error == nil && o.finished == 1 && o.offQueue == 0)
        #expect(image.width == 64 && image.height == 48 && image.bytesPerRow >= 64 * 4)
        #expect(image.format == .jpeg && image.orientation == 1 && image.scale == 1 && !image.isIncremental)
        #expect(image.cost == image.bytesPerRow * image.height)
        #expect(o.data == (try Data(contentsOf: s.www.appendingPathComponent("img/small.jpg"))))
        #expect((token?.response as? HTTPURLResponse)?.statusCode == 200)
        #expect(token?.url == url && token?.request?.url == url)
        let metrics = try #require(token?.metrics)
        #expect(metrics.bytes == o.data?.count && metrics.httpVersion == 11)
    }

    @Test("A PNG with alpha downloads; @2x in the name sets the scale")
    func pngAndScale() async throws {
        let s = try #require(servers)
        let d = patientDownloader()
        let png = await d.load(s.url(s.http, "/img/alpha.png"))
        #expect(png.image?.format == .png && png.image?.hasAlpha == true && png.image?.width == 50)
        let retina = await d.load(s.url(s.http, "/img/small@2x.jpg"))
        #expect(retina.image?.scale == 2 && retina.image?.size == CGSize(width: 20, height: 15))
        let forced = await d.load(s.url(s.http, "/img/small@2x.jpg"), [], [.imageScaleFactor: 3.0])
        #expect(forced.image?.scale == 3)
    }

    @Test("nil URL gives invalidURL with no image and no data")
    func nilURL() async {
        let o = await SDWebImageDownloader.shared.load(nil)  // patience: a nil URL: nothing is fetched
        #expect(o.image == nil && o.data == nil && o.finished == 1)
        #expect(o.sdError?.code == .invalidURL)
    }

    @Test("404 gives invalidDownloadStatusCode with the status; 401 without credentials, success with them")
    func statusAndAuth() async throws {
        let s = try #require(servers)
        let d = patientDownloader()
        let missing = await d.load(s.url(s.http, "/img/missing.jpg"))
        #expect(missing.image == nil && missing.data == nil && missing.finished == 1)
        #expect(missing.sdError?.code == .invalidDownloadStatusCode && missing.sdError?.statusCode == 404)
        #expect(missing.sdError?.response?.statusCode == 404)

        try FileManager.default.createDirectory(at: s.www.appendingPathComponent("auth"), withIntermediateDirectories: true)
        try TestServers.jpeg(width: 20, height: 10, progressive: false)
            .write(to: s.www.appendingPathComponent("auth/a.jpg"))
        let url = s.url(s.http, "/auth/a.jpg")
        let denied = await d.load(url)
        #expect(denied.sdError?.statusCode == 401)
        let config = SDWebImageDownloaderConfig()
        config.username = "user"
        config.password = "secret"
        let ok = await patientDownloader(config).load(url)
        #expect(ok.image?.width == 20 && ok.error == nil)
        let credential = SDWebImageDownloaderConfig()
        credential.urlCredential = URLCredential(user: "user", password: "secret", persistence: .none)
        #expect(await patientDownloader(credential).load(url).image?.height == 10)
    }

    @Test("Empty, undecodable and zero-pixel bodies give badImageData")
    func badData() async throws {
        let s = try #require(servers)
        let d = patientDownloader()
        for url in [s.url(s.http, "/img/empty.jpg"), s.url(s.fault, "/empty"), s.url(s.fault, "/html"),
                    s.url(s.http, "/img/zero.jpg")] {
            let o = await d.load(url)
            #expect(o.image == nil && o.finished == 1, "\(url)")
            #expect(o.sdError?.code == .badImageData, "\(url): \(String(describing: o.error))")
        }
    }

    @Test("Network failures keep their cause as URLError")
    func networkCauses() async throws {
        let s = try #require(servers)
        let d = patientDownloader()
        let tls = await d.load(s.url(s.https, "/img/small.jpg"))
        #expect((tls.error as? URLError)?.code == .secureConnectionFailed)
        let trusted = await d.load(s.url(s.https, "/img/small.jpg"), .allowInvalidSSLCertificates)
        #expect(trusted.image?.width == 64)

        let config = SDWebImageDownloaderConfig()
        config.downloadTimeout = 0.5
        let stalled = await SDWebImageDownloader(config: config).load(s.url(s.fault, "/stall"))  // patience: the timeout under test
        #expect((stalled.error as? URLError)?.code == .timedOut)
        let short = await d.load(s.url(s.fault, "/short"))
        #expect((short.error as? URLError)?.code == .networkConnectionLost)
        let loop = await d.load(s.url(s.fault, "/redirect-loop"))
        #expect((loop.error as? URLError)?.code == .httpTooManyRedirects)

        // A port nobody listens on: bind, note it, close.
        let refused = await d.load(URL(string: "http://127.0.0.1:\(try closedPort())/a.jpg"))
        #expect((refused.error as? URLError)?.code == .cannotConnectToHost)
    }

    @Test("Acceptable status codes and content types are checked")
    func acceptable() async throws {
        let s = try #require(servers)
        let url = s.url(s.http, "/img/small.jpg")
        let codes = SDWebImageDownloaderConfig()
        codes.acceptableStatusCodes = IndexSet(integer: 1)
        let o1 = await patientDownloader(codes).load(url)
        #expect(o1.sdError?.code == .invalidDownloadStatusCode && o1.sdError?.statusCode == 200)
        codes.acceptableStatusCodes = IndexSet([200, 204])  // not a range: checked in Swift
        #expect(await patientDownloader(codes).load(url).image != nil)

        let types = SDWebImageDownloaderConfig()
        types.acceptableContentTypes = ["application/json"]
        let o2 = await patientDownloader(types).load(url)
        #expect(o2.sdError?.code == .invalidDownloadContentType)
        types.acceptableContentTypes = ["image/jpeg"]
        #expect(await patientDownloader(types).load(url).image != nil)
    }

    @Test("avoidDecodeImage gives the bytes and no image; scaleDownLargeImages and thumbnails bound the bitmap")
    func decodeChoices() async throws {
        let s = try #require(servers)
        let d = patientDownloader()
        let url = s.url(s.http, "/img/big.jpg")
        let raw = await d.load(url, .avoidDecodeImage)
        #expect(raw.image == nil && raw.error == nil && (raw.data?.count ?? 0) > 1000)
        let limited = await d.load(url, .scaleDownLargeImages, [.imageScaleDownLimitBytes: 100_000])
        let image = try #require(limited.image)
        #expect(image.cost <= 100_000 && image.sourcePixelWidth == 1000)
        let fill = await d.load(url, [], [.imageThumbnailPixelSize: CGSize(width: 100, height: 100),
                                          .imagePreserveAspectRatio: false])
        #expect(fill.image?.width == 100 && fill.image?.height == 100)
    }

    @Test("Progress starts at 0, grows, honours minimumProgressInterval and ends at the total before completion")
    func progress() async throws {
        let s = try #require(servers)
        for interval in [0.0, 0.51] {
            let config = SDWebImageDownloaderConfig()
            config.minimumProgressInterval = interval
            let o = await patientDownloader(config).load(s.url(s.fault, "/drip"))
            let calls = o.progressCalls
            let total = try #require(o.data?.count)
            #expect(o.image != nil)
            #expect(calls.first?.0 == 0 && calls.first?.1 == total)
            #expect(calls.last?.0 == total)
            #expect(zip(calls, calls.dropFirst()).allSatisfy { $0.0 <= $1.0 })
            if interval > 0 {
                // 0, one step of >= 51 %, the end: at most 3 calls
                #expect(calls.count >= 2 && calls.count <= 3, "\(calls)")
            } else {
                // the first call and the final one at least: how many pieces a
                // starved reader sees at once is the scheduler's (a quiet TSan
                // run saw 3 calls for the drip's pieces)
                #expect(calls.count >= 2, "\(calls)")
            }
        }
    }

    @Test("Progressive loads deliver incremental previews, then the final image")
    func progressive() async throws {
        let s = try #require(servers)
        let d = patientDownloader()
        let held = HeldDrip(s)
        defer { held.open() }
        let (o, _) = d.start(held.url, .progressiveLoad)
        #expect(await eventually(600) { !o.previews.isEmpty }, "a preview before the last piece")
        held.open()
        await o.wait()
        #expect(!o.previews.isEmpty && o.previews.allSatisfy { $0.isIncremental && $0.width == 320 })
        #expect(o.image?.isIncremental == false && o.image?.width == 320 && o.finished == 1)

        var seen: [Bool] = []
        let stream = HeldDrip(s, tag: "stream")
        defer { stream.open() }
        for try await image in d.progressiveImages(with: stream.url) {
            seen.append(image.isIncremental)
            if image.isIncremental { stream.open() }  // the first preview came with the last piece held
        }
        #expect(seen.count >= 2 && seen.last == false && seen.dropLast().allSatisfy { $0 })
    }

    @Test("Callbacks run on the context's queue, else on the config's")
    func callbackQueues() async throws {
        let s = try #require(servers)
        let d = patientDownloader()
        let mine = DispatchQueue(label: "mine")
        let (o, _) = d.start(s.url(s.http, "/img/n1.jpg"), [], nil, queue: mine)
        await o.wait()
        #expect(o.offQueue == 0 && !o.progressCalls.isEmpty)

        let key = DispatchSpecificKey<Int>()
        let configQueue = DispatchQueue(label: "config")
        configQueue.setSpecific(key: key, value: 7)
        let config = SDWebImageDownloaderConfig()
        config.callbackQueue = configQueue
        let onConfigQueue: Bool = await withCheckedContinuation { c in
            patientDownloader(config).downloadImage(with: s.url(s.http, "/img/n2.jpg")) { (_, _, _, _) in
                c.resume(returning: DispatchQueue.getSpecific(key: key) == 7)
            }
        }
        #expect(onConfigQueue)
    }

    @Test("async/await: result with response and metrics; task cancellation gives cancelled")
    func async() async throws {
        let s = try #require(servers)
        let d = patientDownloader()
        let r = try await d.downloadImage(with: s.url(s.http, "/img/small.jpg"))
        #expect(r.image?.width == 64 && (r.response as? HTTPURLResponse)?.statusCode == 200 && r.metrics != nil)
        await #expect(throws: URLError.self) { try await d.downloadImage(with: URL(string: "http://127.0.0.1:\(try closedPort())/")) }

        let task = Task { try await d.downloadImage(with: s.url(s.fault, "/stall?async")) }
        try await Task.sleep(nanoseconds: 100_000_000)
        task.cancel()
        do {
            _ = try await task.value
            Issue.record("a cancelled download succeeded")
        } catch SDWebImageError.cancelled {
        } catch {
            Issue.record("wrong error \(error)")
        }
    }
}

/// A loopback port with no listener.
func closedPort() throws -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(fd) }
    var addr = sockaddr_in()
    addr.sin_family = sa_family_t(AF_INET)
    addr.sin_addr.s_addr = inet_addr("127.0.0.1")
    var len = socklen_t(MemoryLayout<sockaddr_in>.size)
    let ok = withUnsafeMutablePointer(to: &addr) { p in
        p.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, len) == 0 && getsockname(fd, $0, &len) == 0 }
    }
    guard ok else { throw CocoaError(.fileWriteUnknown) }
    return Int(UInt16(bigEndian: addr.sin_port))
}
