import CSDCore
import Dispatch
import Foundation
import SDCoders

/// A body sink that hands each piece to a Swift closure and is done when the
/// body is: `DownloadRequest.bodyObserver`. With an inner sink (the decode
/// sink) it is a tee: every call goes on to the inner sink, which owns the
/// port and answers the transfer.
// @unchecked: `port` and `innerState` are the loop thread's only (the C loop calls the sink there); the rest is `let`.
final class BodyObserver: @unchecked Sendable {
    /// A sink to hand every call on to, with its context (`sd_loop_body_sink`).
    struct Inner {
        var sink: sd_body_sink
        var ctx: UnsafeMutableRawPointer?
    }
    let observe: @Sendable (UnsafeRawBufferPointer) -> Void
    let inner: Inner?
    var port: OpaquePointer?  // the loop thread's only
    var innerState: UnsafeMutableRawPointer?  // likewise

    init(_ observe: @escaping @Sendable (UnsafeRawBufferPointer) -> Void, forwardingTo inner: Inner? = nil) {
        self.observe = observe
        self.inner = inner
    }

    static func of(_ p: UnsafeMutableRawPointer?) -> BodyObserver { Unmanaged<BodyObserver>.fromOpaque(p!).takeUnretainedValue() }

    /// The vtable (the C request copies it when set).
    nonisolated(unsafe) static let sink: UnsafeMutablePointer<sd_body_sink> = {
        var s = sd_body_sink()
        s.size = MemoryLayout<sd_body_sink>.size
        s.open = { ctx, request, port, state in
            let o = BodyObserver.of(ctx)
            state?.pointee = ctx
            if let inner = o.inner { return inner.sink.open(inner.ctx, request, port, &o.innerState) }
            o.port = port
            return 0
        }
        s.push = { state, data, length in
            let o = BodyObserver.of(state)
            o.observe(UnsafeRawBufferPointer(start: data, count: length))
            if let inner = o.inner { return inner.sink.push(o.innerState, data, length) }
            return 0
        }
        s.room = { state in
            let o = BodyObserver.of(state)
            guard let inner = o.inner, let room = inner.sink.room else { return 1 << 30 }
            return room(o.innerState)
        }
        s.finish = { state in
            let o = BodyObserver.of(state)
            if let inner = o.inner { inner.sink.finish(o.innerState); return }
            sd_sink_port_done(o.port, 0, nil, nil, nil, 0)
            sd_sink_port_release(o.port)
            o.port = nil
        }
        s.abort = { state in
            let o = BodyObserver.of(state)
            if let inner = o.inner { inner.sink.abort(o.innerState); return }
            sd_sink_port_release(o.port)
            o.port = nil
        }
        let p = UnsafeMutablePointer<sd_body_sink>.allocate(capacity: 1)
        p.initialize(to: s)
        return p
    }()
}
