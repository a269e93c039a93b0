#if Serve
import Foundation
import Hummingbird
import HummingbirdCore
import Logging
import Metrics
import NIOCore
import Prometheus
import SDCache
import SDSync
import SDWebImage
import ServiceLifecycle

/// What `sdimage serve` runs with.
public struct ServeConfiguration: Sendable {
    public var host = "127.0.0.1"
    /// 0: any free port (printed when listening).
    public var port = 8080
    /// nil: unsigned URLs are served (only with --insecure-allow-unsigned).
    public var signer: URLSigner?
    /// `Cache-Control: public, max-age` of results, in seconds.
    public var maxAge = 31_536_000
    /// On SIGTERM/SIGINT: stop accepting, then let requests in flight finish
    /// for at most this long before they are cancelled.
    public var drainTimeout: Duration = .seconds(30)
    /// What /health/ready adds (the shared tier's state): it answers 200
    /// while the server serves, degraded or not.
    public var readiness: (@Sendable () -> String)?
    /// Image requests one client address may have in flight (0: no
    /// limit); past it 429 with `Retry-After`, before any work.
    public var maxClientRequests = 0
    /// Files served as they are, by path (`--dev`'s sample): bytes and Content-Type.
    public var files: [String: (data: Data, type: String)] = [:]
    /// imgproxy's presets (`pr:`, and `default` before every URL's options).
    public var presets = Presets()
    /// Source URL prefixes rendered (imgproxy's `IMGPROXY_ALLOWED_SOURCES`); empty: any.
    public var allowedSources: [String] = []
    /// `/metrics` on an address of its own (and not on `host:port`); nil: beside the images.
    public var metricsAddress: (host: String, port: Int)?
    /// A connection with no request in progress for this long is closed
    /// (before its first request too: a client that opens and waits); nil: never.
    public var idleTimeout: Duration? = .seconds(60)
    /// Connections open at once on the image address; past it new ones wait
    /// in the kernel's backlog until one closes (no descriptor runs out).
    /// The metrics address, when set, is apart: its `/health/live` answers
    /// at the cap. nil: no cap.
    public var maxConnections: Int?
    public init() {}
}

/// The HTTP side of `sdimage serve`: imgproxy's processing URLs, the health
/// endpoints, conditional requests, and an access log with the source
/// reduced to its host.
public struct ImageServer: Sendable {
    public let configuration: ServeConfiguration
    public let renderer: Renderer
    let logger: Logger
    /// What `/metrics` shows: the metrics of the library (downloads, cache
    /// hits, decode times: swift-metrics, bootstrapped onto it) and the server's.
    let registry: PrometheusCollectorRegistry
    let latency = Metrics.Timer(label: "sdimage_serve_request_duration_seconds")
    /// sdimage_serve_requests_total by "status format", made once each.
    let requestCounters = SDSync.Locked<[String: Metrics.Counter]>([:])
    /// Image requests in flight by client address (with `maxClientRequests`).
    let clients = SDSync.Locked<[String: Int]>([:])

    /// Bootstraps swift-metrics onto a Prometheus registry (once per process).
    public init(configuration: ServeConfiguration, renderer: Renderer, logger: Logger,
                registry: PrometheusCollectorRegistry) {
        self.configuration = configuration
        self.renderer = renderer
        self.logger = logger
        self.registry = registry
    }

    /// A registry with swift-metrics bootstrapped onto it: call before
    /// anything makes a metric (the renderer, the downloader), once.
    public static func bootstrapMetrics() -> PrometheusCollectorRegistry {
        let registry = PrometheusCollectorRegistry()
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.defaultDurationHistogramBuckets = [
            .milliseconds(1), .milliseconds(2), .milliseconds(5), .milliseconds(10), .milliseconds(25),
            .milliseconds(50), .milliseconds(100), .milliseconds(250), .milliseconds(500), .seconds(1),
            .seconds(2.5), .seconds(5), .seconds(10),
        ]
        MetricsSystem.bootstrap(factory)
        return registry
    }

    /// Run until SIGTERM or SIGINT (then stop accepting and finish what is
    /// in flight); `onListening` gets the port bound.
    public func run(onListening: @escaping @Sendable (Int) -> Void) async throws {
        let router = Router(context: ServeRequestContext.self)
        // the router answers these paths; every other GET is an image
        // `/health` is imgproxy's path (an operator's probes keep working)
        let (health, live, ready, metrics) = ("/health", "/health/live", "/health/ready", "/metrics")
        router.get(RouterPath(health)) { _, _ in "ok\n" }
        router.get(RouterPath(live)) { _, _ in "ok\n" }
        let readiness = configuration.readiness
        router.get(RouterPath(ready)) { _, _ in "ready\n" + (readiness.map { $0() + "\n" } ?? "") }
        let rss = Gauge(label: "process_resident_memory_bytes")
        let registry = self.registry
        let metricsHandler: @Sendable (Request, ServeRequestContext) async throws -> Response = { _, _ in
            rss.record(SystemMemory.residentBytes)
            var headers = HTTPFields()
            headers[.contentType] = "text/plain; version=0.0.4; charset=utf-8"
            return Response(status: .ok, headers: headers,
                            body: ResponseBody(byteBuffer: ByteBuffer(bytes: registry.emitToBuffer())))
        }
        var services: [any Service] = []
        if let m = configuration.metricsAddress {  // its own address: not on the public one
            router.get(RouterPath(metrics)) { _, _ in Self.error(404, "/metrics is served on its own address") }
            let metricsRouter = Router(context: ServeRequestContext.self)
            metricsRouter.get(RouterPath(metrics), use: metricsHandler)
            // the liveness probe's reserved path: answered even when the
            // image address is at its connection cap
            metricsRouter.get(RouterPath(live)) { _, _ in "ok\n" }
            let logger = self.logger
            services.append(Application(router: metricsRouter,
                                        configuration: ApplicationConfiguration(address: .hostname(m.host, port: m.port),
                                                                                serverName: "sdimage-metrics"),
                                        onServerRunning: { channel in
                                            logger.notice("metrics listening", metadata: [
                                                "address": "\(m.host):\(channel.localAddress?.port ?? 0)"])
                                        },
                                        logger: logger))
        } else {
            router.get(RouterPath(metrics), use: metricsHandler)
        }
        for (path, file) in configuration.files {
            router.get(RouterPath(path)) { _, _ in
                var headers = HTTPFields()
                headers[.contentType] = file.type
                return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: file.data)))
            }
        }
        // every other GET is an image: answered without the router's trie,
        // which costs more than a memory hit's whole answer on a path of
        // many segments (a plain source URL)
        let routed: Set<String> = Set([health, live, ready, metrics] + configuration.files.keys)
        let app = Application(
            responder: ServeResponder(server: self, router: router.buildResponder(), routed: routed),
            server: .http1(configuration: .init(idleTimeout: configuration.idleTimeout.map {
                .nanoseconds(Int64($0.components.seconds) * 1_000_000_000 + $0.components.attoseconds / 1_000_000_000)
            })),
            configuration: ApplicationConfiguration(address: .hostname(configuration.host, port: configuration.port),
                                                    serverName: "sdimage",
                                                    availableConnectionsDelegate: configuration.maxConnections.map {
                                                        MaximumAvailableConnections($0, logger: logger)
                                                    }),
            onServerRunning: { channel in onListening(channel.localAddress?.port ?? 0) },
            logger: logger)
        var group = ServiceGroupConfiguration(services: [app] + services, gracefulShutdownSignals: [.sigterm, .sigint],
                                              logger: logger)
        group.maximumGracefulShutdownDuration = configuration.drainTimeout
        try await ServiceGroup(configuration: group).run()
    }


    func respond(to request: Request, client: String?) async -> Response {
        let start = DispatchTime.now().uptimeNanoseconds
        var host = "-"
        var response: Response
        let limit = configuration.maxClientRequests
        if limit > 0, let client, !clients.withLock({ c in
            guard c[client, default: 0] < limit else { return false }
            c[client, default: 0] += 1
            return true
        }) {
            response = Self.error(429, "too many requests in flight from \(client) (the limit is \(limit))")
            response.headers[.retryAfter] = "1"
        } else {
            defer {
                if limit > 0, let client {
                    clients.withLock { c in c[client] = c[client, default: 1] > 1 ? c[client, default: 1] - 1 : nil }
                }
            }
            do throws(ProcessingURLError) {
                let parsed = try ProcessingRequest(path: Substring(request.uri.path), signer: configuration.signer,
                                                   presets: configuration.presets)
                host = URL(string: parsed.source)?.host ?? "-"
                response = await render(parsed, request)
            } catch {
                response = Self.error(error.kind == .forbidden ? 403 : 400, error.reason)
            }
        }
        let elapsed = DispatchTime.now().uptimeNanoseconds - start
        let ms = Double(elapsed) / 1e6
        latency.recordNanoseconds(Int64(elapsed))
        let format = response.headers[.contentType].flatMap { $0.hasPrefix("image/") ? String($0.dropFirst(6)) : nil } ?? "-"
        let status = "\(response.status.code)"
        requestCounters.withLock { c in
            let key = status + " " + format
            if let counter = c[key] { return counter }
            let counter = Metrics.Counter(label: "sdimage_serve_requests_total", dimensions: [("status", status), ("format", format)])
            c[key] = counter
            return counter
        }.increment()
        // the source URL may carry secrets: only its host is logged
        logger.info("request", metadata: [
            "status": "\(response.status.code)", "ms": "\(String(format: "%.1f", ms))", "source_host": "\(host)",
            "bytes": "\(response.headers[.contentLength] ?? "-")",
        ])
        return response
    }

    func render(_ parsed: ProcessingRequest, _ request: Request) async -> Response {
        var closes = false
        var response = await answer(parsed, request, closes: &closes)
        if closes { response.headers[.connection] = "close" }  // said, so a client does not reuse it
        return response
    }

    private func answer(_ parsed: ProcessingRequest, _ request: Request, closes: inout Bool) async -> Response {
        do throws(RenderError) {
            if !configuration.allowedSources.isEmpty, !configuration.allowedSources.contains(where: { parsed.source.hasPrefix($0) }) {
                throw RenderError(status: 404, reason: "the source is not among the allowed sources")
            }
            // imgproxy's `exp`: past it the URL is gone, cached or not
            if let exp = parsed.options.expires, Int64(Date().timeIntervalSince1970) >= exp {
                throw RenderError(status: 404, reason: "the URL expired")
            }
            let accepts = Accepts(header: request.headers[.accept])
            let r: Rendered
            if let hit = renderer.inMemory(parsed, accepts: accepts) {
                r = hit  // answered at once: the connection stays open for the next request
            } else {
                // anything that may wait (a turn, the disk, the fleet, the
                // origin) is cancelled when the client closes its connection,
                // so a client that gave up does not keep its place in the
                // render queue; Hummingbird then closes the connection after
                // the answer (it read the request stream to the end)
                let renderer = self.renderer
                closes = true
                do {
                    r = try await request.body.consumeWithCancellationOnInboundClose { _ in
                        try await renderer.render(parsed, accepts: accepts)
                    }
                } catch let e as RenderError {
                    throw e
                } catch {
                    throw RenderError(status: 499, reason: "the client went away")
                }
            }
            var headers = HTTPFields()
            headers[.contentType] = r.format.contentType
            headers[.contentDisposition] = Self.disposition(source: parsed.source, format: r.format,
                                                            filename: parsed.options.filename,
                                                            attachment: parsed.options.attachment)
            headers[.eTag] = r.etag
            if let lm = r.lastModified { headers[.lastModified] = lm }
            headers[.cacheControl] = "public, max-age=\(configuration.maxAge)"
            if parsed.options.format == nil { headers[.vary] = "Accept" }
            if Self.notModified(request.headers, etag: r.etag, lastModified: r.lastModified) {
                return Response(status: .notModified, headers: headers)
            }
            headers[.contentLength] = "\(r.data.count)"
            return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: r.data)))
        } catch {
            if let detail = error.detail {
                logger.notice("render failed", metadata: ["status": "\(error.status)", "reason": "\(error.reason)",
                                                          "detail": "\(detail)"])
            }
            var r = Self.error(error.status, error.reason)
            if let after = error.retryAfter { r.headers[.retryAfter] = "\(after)" }
            return r
        }
    }

    /// imgproxy's `Content-Disposition`: inline, the source's file name
    /// (its last path segment without extension; "image" when it has none)
    /// with the result's extension; characters outside [A-Za-z0-9._-]
    /// become "_", so no quote or control character reaches the header.
    static func disposition(source: String, format: OutputFormat, filename: String? = nil, attachment: Bool = false) -> String {
        let path = source.split(separator: "?", maxSplits: 1).first.map(String.init) ?? source
        var name = path.split(separator: "/").last.map(String.init) ?? ""
        if path.hasSuffix("/") || !path.contains("/") { name = "" }
        if let dot = name.lastIndex(of: "."), dot != name.startIndex { name = String(name[..<dot]) }
        name = filename ?? (name.removingPercentEncoding ?? name)
        name = name.map { c -> Character in
            c.isASCII && (c.isLetter || c.isNumber || c == "." || c == "_" || c == "-") ? c : "_"
        }.reduce(into: "") { $0.append($1) }
        if name.isEmpty { name = "image" }
        return "\(attachment ? "attachment" : "inline"); filename=\"\(name).\(format.fileExtension)\""
    }

    /// RFC 9110's order: `If-None-Match` decides when present; else
    /// `If-Modified-Since` at or after the source's Last-Modified.
    static func notModified(_ h: HTTPFields, etag: String, lastModified: String?) -> Bool {
        if let match = h[.ifNoneMatch] {  // the weak comparison, as RFC 9110 has it for If-None-Match
            return match.split(separator: ",").contains { item in
                let t = item.trimmingCharacters(in: .whitespaces)
                return t == "*" || (t.hasPrefix("W/") ? String(t.dropFirst(2)) : t) == etag
            }
        }
        guard let since = h[.ifModifiedSince].flatMap(Self.httpDate), let lm = lastModified.flatMap(Self.httpDate) else {
            return false
        }
        return lm <= since
    }

    /// An IMF-fixdate ("Sun, 06 Nov 1994 08:49:37 GMT"), the form HTTP sends.
    static func httpDate(_ s: String) -> Date? {
        let f = DateFormatter()
        f.locale = Locale(identifier: "en_US_POSIX")
        f.timeZone = TimeZone(identifier: "GMT")
        f.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        return f.date(from: s)
    }

    static func error(_ status: Int, _ reason: String) -> Response {
        var headers = HTTPFields()
        headers[.contentType] = "text/plain; charset=utf-8"
        headers[.cacheControl] = "no-store"
        let body = reason + "\n"
        return Response(status: HTTPResponse.Status(code: status), headers: headers,
                        body: ResponseBody(byteBuffer: ByteBuffer(string: body)))
    }
}
/// Image paths straight to the server; the few fixed ones through the router.
struct ServeResponder: HTTPResponder {
    typealias Context = ServeRequestContext
    let server: ImageServer
    let router: RouterResponder<ServeRequestContext>
    let routed: Set<String>

    func respond(to request: Request, context: ServeRequestContext) async throws -> Response {
        // HEAD: the GET's answer without its body (its headers, Content-Length too)
        let head = request.method == .head
        var get = request
        if head {
            var h = request.head
            h.method = .get
            get = Request(head: h, body: request.body)
        }
        var response: Response
        if routed.contains(get.uri.path) {
            response = try await router.respond(to: get, context: context)
        } else if get.method == .get {
            response = await server.respond(to: get, client: context.remoteAddress?.ipAddress)
        } else {
            response = ImageServer.error(405, "\(request.method) is not served: GET and HEAD are")
            response.headers[.allow] = "GET, HEAD"
        }
        if head {
            let length = response.headers[.contentLength]
            response.body = ResponseBody()
            if let length { response.headers[.contentLength] = length }
        }
        return response
    }
}

/// Hummingbird's basic context and the client's address (for the per-client limit).
struct ServeRequestContext: RequestContext, RemoteAddressRequestContext {
    var coreContext: CoreRequestContextStorage
    let remoteAddress: SocketAddress?

    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        remoteAddress = source.channel.remoteAddress
    }
}
#endif
