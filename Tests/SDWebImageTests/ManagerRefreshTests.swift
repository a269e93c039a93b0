import Dispatch
import Foundation
import SDTestSupport
import SDWebImage
import Testing

/// Issue 13, defect 1: `.refreshCached` completes twice when the server's
/// image changed (cached, then new) and once when it did not. Every caller
/// that counts loads must count each URL once, when the load is over
/// (`whenFinished`); `sdimage fetch --refresh` trapped on exactly this.
@Suite("refreshCached: cached, then changed, for URLs of different speeds", .serialized)
struct ManagerRefreshTests {
    let servers = TestServers.shared

    @Test("Each load: cached image, then the changed one, then whenFinished once; nothing counted twice")
    func cachedThenChanged() async throws {
        let s = try #require(servers)
        let (m, c) = makeManager()
        let run = UUID().uuidString.prefix(8)
        // different speeds: the revalidations end in another order than they start
        let urls = [0, 300, 40, 150, 0, 80].enumerated().map { i, delay in
            s.url(s.fault, "/changing?id=r\(run)-\(i)&delay=\(delay)")
        }
        for url in urls { _ = await m.load(url, .waitStoreCache) }  // first version, cached
        c.waitForPendingWrites()
        c.clearMemory()

        let queue = DispatchQueue(label: "test.refresh")
        let logs = urls.map { _ in LoadLog(finals: 2) }
        let ends = Counter()
        let order = Recorder()
        let group = DispatchGroup()
        for (i, url) in urls.enumerated() {
            group.enter()
            let op = m.loadImage(with: url, options: [.refreshCached], context: [.callbackQueue: queue]) {
                image, data, error, type, finished, u in
                logs[i].block(image, data, error, type, finished, u)
                if finished { order.add("\(i)c") }
            }
            try #require(op).whenFinished {
                ends.add()
                order.add("\(i)e")
                group.leave()
            }
        }
        await offPool { group.wait() }
        #expect(ends.value == urls.count)
        for (i, log) in logs.enumerated() {
            #expect(log.finals.count == 2, "URL \(i): \(log.finals.count) final calls")
            #expect(log.finals.first?.type == .disk && log.finals.last?.type == SDImageCacheType.none)
            #expect(log.finals.allSatisfy { $0.image != nil && $0.error == nil })
            // whenFinished came after both completion calls
            let o = order.items
            let e = try #require(o.firstIndex(of: "\(i)e"))
            #expect(o[..<e].filter { $0 == "\(i)c" }.count == 2)
        }
        // the images differ (the fault server alternates two files)
        #expect(logs[0].finals.first?.image?.width != logs[0].finals.last?.image?.width
                || logs[0].finals.first?.image?.height != logs[0].finals.last?.image?.height)
        #expect(await eventually { !m.isRunning })
    }

    @Test("A 304 completes once, and whenFinished follows that one call, also on a concurrent queue")
    func notModifiedEndsAfterTheCachedCall() async throws {
        let s = try #require(servers)
        let (m, c) = makeManager()
        let file = s.www.appendingPathComponent("img/refresh-end.jpg")
        try TestServers.jpeg(width: 24, height: 16, progressive: false).write(to: file)
        let url = s.url(s.http, "/img/refresh-end.jpg")
        _ = await m.load(url, .waitStoreCache)
        c.waitForPendingWrites()
        let calls = Counter()
        let seenAtEnd = Counter()
        let done = DispatchSemaphore(value: 0)
        let op = m.loadImage(with: url, options: [.refreshCached],
                             context: [.callbackQueue: DispatchQueue.global()]) { _, _, _, _, finished, _ in
            if finished {
                usleep(50_000)  // a slow completion on a concurrent queue
                calls.add()
            }
        }
        try #require(op).whenFinished {
            for _ in 0..<calls.value { seenAtEnd.add() }
            done.signal()
        }
        await offPool { done.wait() }
        #expect(calls.value == 1)
        #expect(seenAtEnd.value == 1)
        // registered after the end: runs at once
        let late = Counter()
        op?.whenFinished { late.add() }
        #expect(late.value == 1)
    }

    @Test("The prefetcher counts a URL once when its refresh completes twice")
    func prefetcherCountsOnce() async throws {
        let s = try #require(servers)
        let (m, c) = makeManager()
        let run = UUID().uuidString.prefix(8)
        let urls = [0, 120, 30].enumerated().map { i, d in s.url(s.fault, "/changing?id=p\(run)-\(i)&delay=\(d)") }
        for url in urls { _ = await m.load(url, .waitStoreCache) }
        c.waitForPendingWrites()
        let p = SDWebImagePrefetcher(imageManager: m)
        let progress = Recorder()
        let finished = DispatchSemaphore(value: 0)
        let result = Recorder()
        p.prefetchURLs(urls, options: [.refreshCached], progress: { f, t in progress.add("\(f)/\(t)") },
                       completed: { f, skipped in result.add("\(f),\(skipped)"); finished.signal() })
        await offPool { finished.wait() }
        try await Task.sleep(nanoseconds: 300_000_000)  // a second count would land here
        #expect(progress.items == ["1/3", "2/3", "3/3"])
        #expect(result.items == ["3,0"])
    }
}

