import CSDCore

/// Decoding untrusted bytes in sandboxed worker processes (the C core's
/// `sd_isolate.h`): a pool of long-lived workers, each confined by
/// seccomp-bpf (no socket, no exec, no file written; files read only where
/// Landlock allows: the fonts), no new privileges, an address-space limit
/// and an empty environment. The bytes go over a socketpair; the bitmap
/// comes back in a sealed memfd mapped here, its pixels not copied. CPU and
/// wall time per decode are enforced from outside (the worker is killed);
/// a worker that dies or overruns is this decode's error and is replaced.
///
/// The worker is a program whose `main` calls
/// `DecoderIsolation.runWorkerIfAsked()` first (`sdimage` does): by default
/// the running program itself (`/proc/self/exe`).
///
/// A decode here is the first frame, whole: no previews, no animation.
public final class DecoderIsolation: @unchecked Sendable {  // the pool is thread-safe (a mutex in C)
    /// What one decode may cost.
    public struct Limits: Sendable, Equatable {
        /// CPU time of the worker for one decode.
        public var cpuMilliseconds = 2_000
        /// Wall time from handing over the bytes to the answer.
        public var wallMilliseconds = 10_000
        /// The worker's address space (RLIMIT_AS).
        public var memoryBytes = 2 << 30

        /// The defaults: 2 CPU-seconds, 10 s, 2 GiB.
        public init() {}
    }

    private let pool: OpaquePointer
    /// The program started as each worker.
    public let workerPath: String
    /// What each decode may cost.
    public let limits: Limits

    /// A pool of at most `workers` workers (0: one per core), started from
    /// `workerPath` as needed.
    public init(workerPath: String = "/proc/self/exe", workers: Int = 0, limits: Limits = Limits()) throws(CoderError) {
        var l = sd_isolate_limits(cpu_ms: Int64(limits.cpuMilliseconds), wall_ms: Int64(limits.wallMilliseconds),
                                  memory_bytes: Int64(limits.memoryBytes))
        var out: OpaquePointer?
        try CoderError.check(sd_isolate_pool_new(workerPath, Int32(workers), &l, &out),
                             "no decoder worker at \(workerPath)")
        pool = out!
        self.workerPath = workerPath
        self.limits = limits
    }

    deinit {
        sd_isolate_pool_free(pool)
    }

    /// Call first in a worker program's `main`: when the process was started
    /// as a worker it serves decodes and exits, never returning; otherwise
    /// it returns at once.
    public static func runWorkerIfAsked() {
        _ = sd_worker_main(CommandLine.argc, CommandLine.unsafeArgv)
    }

    /// The process ids of the live workers.
    public var workerProcessIDs: [Int32] {
        var pids = [Int32](repeating: 0, count: 256)
        let n = Int(sd_isolate_pool_pids(pool, &pids, Int32(pids.count)))
        return Array(pids.prefix(n))
    }

    /// `bytes` decoded in a worker with `options` (its render included);
    /// `cancellation`, once cancelled, ends it within ~50 ms (the worker is
    /// killed) with `.cancelled`.
    public func decode(_ bytes: UnsafeRawBufferPointer, options: DecodeOptions = DecodeOptions(),
                       cancellation: DecodeCancellation? = nil) throws(CoderError) -> DecodedImage {
        let params = options.coreParameters
        let keys = params.map { Int32($0.0.rawValue) }
        let values = params.map(\.1)
        var out: OpaquePointer?
        var info = sd_isolate_info()
        var message = [CChar](repeating: 0, count: 256)
        func call(_ render: UnsafePointer<sd_render>?) -> Int32 {
            keys.withUnsafeBufferPointer { k in
                values.withUnsafeBufferPointer { v in
                    sd_isolate_decode(pool, bytes.baseAddress, bytes.count, k.baseAddress, v.baseAddress,
                                      Int32(k.count), render, cancellation?.flag, &out, &info, &message, message.count)
                }
            }
        }
        let rc: Int32
        if var render = options.render?.core {
            rc = withUnsafePointer(to: &render) { call($0) }
        } else {
            rc = call(nil)
        }
        let text = String(decoding: message.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        try CoderError.check(rc, text.isEmpty ? nil : text)
        return DecodedImage(bitmap: Bitmap(adopting: out!), format: ImageFormat(rawValue: Int(info.format)),
                            orientation: Int(info.orientation), sourceWidth: Int(info.source_width),
                            sourceHeight: Int(info.source_height), isProgressive: false,
                            isComplete: info.complete != 0, warnings: Int(info.warnings),
                            frameCount: max(1, Int(info.frame_count)), loopCount: 1, isAnimated: info.animated != 0,
                            sourceColorSpace: SourceColorSpace(rawValue: Int(info.color_space)) ?? .sRGB)
    }

    /// `bytes` decoded in a worker with `options`.
    public func decode(_ bytes: [UInt8], options: DecodeOptions = DecodeOptions()) throws(CoderError) -> DecodedImage {
        let r: Result<DecodedImage, CoderError> = bytes.withUnsafeBytes { raw in
            Result { () throws(CoderError) in try decode(raw, options: options) }
        }
        return try r.get()
    }
}

/// A switch that ends an isolated decode in flight (`DecoderIsolation`):
/// its worker is killed at once instead of spending its budget on a
/// result nobody will read (a client that went away).
public final class DecodeCancellation: @unchecked Sendable {  // one int the C pool reads atomically
    let flag: UnsafeMutablePointer<Int32>

    /// Not cancelled.
    public init() {
        flag = .allocate(capacity: 1)
        flag.initialize(to: 0)
    }

    deinit {
        flag.deallocate()
    }

    /// Cancel: the decode this is handed to ends (or does not start waiting).
    public func cancel() {
        sd_isolate_cancel_set(flag)
    }

    /// Whether `cancel()` was called.
    public var isCancelled: Bool { sd_isolate_cancel_get(flag) != 0 }
}
