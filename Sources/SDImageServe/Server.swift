#if Serve
import Foundation
import Hummingbird
import Logging
import NIOCore
import SDWebImage

/// What `sdimage serve` runs with.
public struct ServeConfiguration: Sendable {
    public var host = "127.0.0.1"
    /// 0: any free port (printed when listening).
    public var port = 8080
    /// nil: unsigned URLs are served (only with --insecure-allow-unsigned).
    public var signer: URLSigner?
    /// `Cache-Control: public, max-age` of results, in seconds.
    public var maxAge = 31_536_000
    /// Files served as they are, by path (`--dev`'s sample): bytes and Content-Type.
    public var files: [String: (data: Data, type: String)] = [:]
    public init() {}
}

/// The HTTP side of `sdimage serve`: imgproxy's processing URLs, the health
/// endpoints, conditional requests, and an access log with the source
/// reduced to its host.
public struct ImageServer: Sendable {
    public let configuration: ServeConfiguration
    public let renderer: Renderer
    let logger: Logger

    public init(configuration: ServeConfiguration, renderer: Renderer, logger: Logger) {
        self.configuration = configuration
        self.renderer = renderer
        self.logger = logger
    }

    /// Run until SIGTERM or SIGINT (then stop accepting and finish what is
    /// in flight); `onListening` gets the port bound.
    public func run(onListening: @escaping @Sendable (Int) -> Void) async throws {
        let router = Router()
        router.get("/health/live") { _, _ in "ok\n" }
        router.get("/health/ready") { _, _ in "ready\n" }
        for (path, file) in configuration.files {
            router.get(RouterPath(path)) { _, _ in
                var headers = HTTPFields()
                headers[.contentType] = file.type
                return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: file.data)))
            }
        }
        router.get("**") { request, _ in await self.respond(to: request) }
        let app = Application(
            router: router,
            configuration: ApplicationConfiguration(address: .hostname(configuration.host, port: configuration.port),
                                                    serverName: "sdimage"),
            onServerRunning: { channel in onListening(channel.localAddress?.port ?? 0) },
            logger: logger)
        try await app.runService()
    }

    func respond(to request: Request) async -> Response {
        let start = DispatchTime.now().uptimeNanoseconds
        var host = "-"
        let response: Response
        do throws(ProcessingURLError) {
            let parsed = try ProcessingRequest(path: Substring(request.uri.path), signer: configuration.signer)
            host = URL(string: parsed.source)?.host ?? "-"
            response = await render(parsed, request)
        } catch {
            response = Self.error(error.kind == .forbidden ? 403 : 400, error.reason)
        }
        let ms = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6
        // the source URL may carry secrets: only its host is logged
        logger.info("request", metadata: [
            "status": "\(response.status.code)", "ms": "\(String(format: "%.1f", ms))", "source_host": "\(host)",
            "bytes": "\(response.headers[.contentLength] ?? "-")",
        ])
        return response
    }

    func render(_ parsed: ProcessingRequest, _ request: Request) async -> Response {
        do {
            let r = try await renderer.render(parsed, accepts: Accepts(header: request.headers[.accept]))
            var headers = HTTPFields()
            headers[.contentType] = r.format.contentType
            headers[.eTag] = r.etag
            headers[.cacheControl] = "public, max-age=\(configuration.maxAge)"
            if parsed.options.format == nil { headers[.vary] = "Accept" }
            if let match = request.headers[.ifNoneMatch],
               match.split(separator: ",").contains(where: { $0.trimmingCharacters(in: .whitespaces) == r.etag || $0 == "*" }) {
                return Response(status: .notModified, headers: headers)
            }
            headers[.contentLength] = "\(r.data.count)"
            return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: r.data)))
        } catch {
            return Self.error(error.status, error.reason)
        }
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
#endif
