import Dispatch
import Foundation
import SDTestSupport
import SDWebImage
import Testing

/// Port of SDUtilsTests.testSDCallbackQueue, and the context key end to end.
@Suite("SDCallbackQueue")
struct CallbackQueueTests {
    @Test("safeExecute runs inline on its own queue and dispatches from elsewhere; dispatch always dispatches; invoke runs inline")
    func policies() {
        let q = DispatchQueue(label: "cbq.test")
        let cq = SDCallbackQueue(dispatchQueue: q)
        #expect(cq.policy == .safeExecute)
        let order = Recorder()
        q.sync {
            cq.async { order.add("inline") }  // on q already: runs now
            order.add("after")
        }
        #expect(order.items == ["inline", "after"])

        let done = DispatchSemaphore(value: 0)
        cq.async { order.add("dispatched"); done.signal() }  // from elsewhere: onto q
        done.wait()
        #expect(order.items.last == "dispatched")

        cq.policy = .dispatch
        q.sync {
            cq.async { order.add("later") }  // even on q: after the current block
            order.add("now")
        }
        q.sync {}
        #expect(Array(order.items.suffix(2)) == ["now", "later"])

        cq.policy = .invoke
        cq.async { order.add("invoked") }  // inline, on this thread
        #expect(order.items.last == "invoked")
        cq.sync { order.add("sync") }
        #expect(order.items.last == "sync")
    }

    @Test("The context key takes an SDCallbackQueue: completions run by its policy")
    func throughManager() async throws {
        let s = try #require(TestServers.shared)
        let (m, _) = makeManager()
        let q = DispatchQueue(label: "cbq.manager")
        let key = DispatchSpecificKey<Int>()
        q.setSpecific(key: key, value: 7)
        let onQueue = Recorder()
        let log = LoadLog()
        m.loadImage(with: s.url(s.http, "/img/small.jpg?cbq"),
                    context: [.callbackQueue: SDCallbackQueue(dispatchQueue: q, policy: .dispatch)]) { image, d, e, t, f, u in
            onQueue.add(DispatchQueue.getSpecific(key: key) == 7 ? "q" : "elsewhere")
            log.block(image, d, e, t, f, u)
        }
        await log.wait()
        #expect(log.last?.image != nil && onQueue.items == ["q"])
    }
}

final class Recorder: @unchecked Sendable {
    private let lock = NSLock()
    private var _items: [String] = []
    func add(_ s: String) { lock.lock(); _items.append(s); lock.unlock() }
    var items: [String] { lock.lock(); defer { lock.unlock() }; return _items }
}
