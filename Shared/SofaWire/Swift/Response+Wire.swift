internal import CProtobufC
internal import SofaWireC
public import SofaCore

extension Response {
    /// The response as protobuf bytes (`sofa.wire.Response`).
    public func encoded() -> [UInt8] {
        let arena = Arena()
        let message: UnsafeMutablePointer<Sofa__Wire__Response> = arena.message { sofa__wire__response__init($0) }
        message.pointee.id = id
        switch outcome {
        case .failure(let error):
            let wire: UnsafeMutablePointer<Sofa__Wire__Error> = arena.message { sofa__wire__error__init($0) }
            wire.pointee.domain = arena.string(error.domain.rawValue)
            wire.pointee.code = error.code
            wire.pointee.message = arena.string(error.message)
            message.pointee.error = wire
        case .success(let reply):
            encode(reply, into: message, arena)
        }
        return pack(message)
    }

    private func encode(_ reply: Reply, into message: UnsafeMutablePointer<Sofa__Wire__Response>, _ arena: Arena) {
        switch reply {
        case .none:
            break
        case .health(let info):
            let r: UnsafeMutablePointer<Sofa__Wire__HealthInfo> = arena.message { sofa__wire__health_info__init($0) }
            r.pointee.service = arena.string(info.service)
            r.pointee.version = arena.string(info.version)
            r.pointee.pid = info.pid
            r.pointee.uptime_ms = info.uptimeMs
            r.pointee.instance = arena.string(info.instance)
            message.pointee.result_case = SOFA__WIRE__RESPONSE__RESULT_HEALTH
            message.pointee.health = r
        case .cluster(let services):
            let r: UnsafeMutablePointer<Sofa__Wire__ClusterInfo> = arena.message { sofa__wire__cluster_info__init($0) }
            let items = services.map { service -> UnsafeMutablePointer<Sofa__Wire__ServiceStatus> in
                let s: UnsafeMutablePointer<Sofa__Wire__ServiceStatus> = arena.message {
                    sofa__wire__service_status__init($0)
                }
                s.pointee.name = arena.string(service.name)
                s.pointee.healthy = service.healthy ? 1 : 0
                s.pointee.detail = arena.string(service.detail)
                s.pointee.instances = service.instances
                return s
            }
            r.pointee.n_services = items.count
            r.pointee.services = arena.array(items)
            message.pointee.result_case = SOFA__WIRE__RESPONSE__RESULT_CLUSTER
            message.pointee.cluster = r
        case .databases(let names):
            let r: UnsafeMutablePointer<Sofa__Wire__DatabaseList> = arena.message { sofa__wire__database_list__init($0) }
            r.pointee.n_names = names.count
            if !names.isEmpty {
                let list = names.map { arena.string($0) }
                r.pointee.names = arena.strings(list)
            }
            message.pointee.result_case = SOFA__WIRE__RESPONSE__RESULT_DATABASES
            message.pointee.databases = r
        case .document(let doc):
            let r: UnsafeMutablePointer<Sofa__Wire__Document> = arena.message { sofa__wire__document__init($0) }
            r.pointee.id = arena.bytes(doc.id)
            r.pointee.rev = arena.string(doc.rev)
            r.pointee.body = arena.bytes(doc.body)
            r.pointee.deleted = doc.deleted ? 1 : 0
            r.pointee.sequence = doc.sequence
            message.pointee.result_case = SOFA__WIRE__RESPONSE__RESULT_DOCUMENT
            message.pointee.document = r
        case .revision(let docID, let rev, let sequence):
            let r: UnsafeMutablePointer<Sofa__Wire__Revision> = arena.message { sofa__wire__revision__init($0) }
            r.pointee.id = arena.bytes(docID)
            r.pointee.rev = arena.string(rev)
            r.pointee.sequence = sequence
            message.pointee.result_case = SOFA__WIRE__RESPONSE__RESULT_REVISION
            message.pointee.revision = r
        case .echo(let payload, let instance):
            let r: UnsafeMutablePointer<Sofa__Wire__EchoReply> = arena.message { sofa__wire__echo_reply__init($0) }
            r.pointee.payload = arena.bytes(payload)
            r.pointee.instance = arena.string(instance)
            message.pointee.result_case = SOFA__WIRE__RESPONSE__RESULT_ECHO
            message.pointee.echo = r
        }
    }

    /// Decodes `sofa.wire.Response` bytes; anything else is a `.malformedMessage` error.
    public static func decode(_ bytes: UnsafeRawBufferPointer) throws(SofaError) -> Response {
        try unpack(bytes, "response", unpacker: { sofa__wire__response__unpack(nil, $0, $1) },
                   free: { sofa__wire__response__free_unpacked($0, nil) }) { (message) throws(SofaError) -> Response in
            let m = message.pointee
            if let error = m.error?.pointee {
                let domainName = try decodeString(error.domain, "error.domain")
                let domain = SofaError.Domain(rawValue: domainName) ?? .sofa
                return .failure(m.id, SofaError(domain, error.code, try decodeString(error.message, "error.message")))
            }
            return .ok(m.id, try decodeReply(m))
        }
    }

    public static func decode(_ bytes: [UInt8]) throws(SofaError) -> Response {
        try withBytes(bytes) { (buffer) throws(SofaError) -> Response in try decode(buffer) }
    }

    private static func decodeReply(_ m: Sofa__Wire__Response) throws(SofaError) -> Reply {
        switch m.result_case {
        case SOFA__WIRE__RESPONSE__RESULT_HEALTH:
            guard let r = m.health?.pointee else { return .none }
            return .health(HealthInfo(service: try decodeString(r.service, "health.service"),
                                      version: try decodeString(r.version, "health.version"),
                                      pid: r.pid, uptimeMs: r.uptime_ms,
                                      instance: try decodeString(r.instance, "health.instance")))
        case SOFA__WIRE__RESPONSE__RESULT_CLUSTER:
            guard let r = m.cluster?.pointee else { return .cluster([]) }
            var services: [ServiceStatus] = []
            for index in 0..<r.n_services {
                guard let s = r.services[index]?.pointee else { continue }
                services.append(ServiceStatus(name: try decodeString(s.name, "service.name"), healthy: s.healthy != 0,
                                              detail: try decodeString(s.detail, "service.detail"),
                                              instances: s.instances))
            }
            return .cluster(services)
        case SOFA__WIRE__RESPONSE__RESULT_DATABASES:
            guard let r = m.databases?.pointee else { return .databases([]) }
            var names: [String] = []
            for index in 0..<r.n_names { names.append(try decodeString(r.names[index], "databases.names")) }
            return .databases(names)
        case SOFA__WIRE__RESPONSE__RESULT_DOCUMENT:
            guard let r = m.document?.pointee else { return .none }
            return .document(StoredDocument(id: try decodeText(r.id, "document.id"),
                                            rev: try decodeString(r.rev, "document.rev"),
                                            body: decodeBytes(r.body), deleted: r.deleted != 0,
                                            sequence: r.sequence))
        case SOFA__WIRE__RESPONSE__RESULT_REVISION:
            guard let r = m.revision?.pointee else { return .none }
            return .revision(id: try decodeText(r.id, "revision.id"), rev: try decodeString(r.rev, "revision.rev"),
                             sequence: r.sequence)
        case SOFA__WIRE__RESPONSE__RESULT_ECHO:
            guard let r = m.echo?.pointee else { return .none }
            return .echo(payload: decodeBytes(r.payload), instance: try decodeString(r.instance, "echo.instance"))
        default:
            return .none
        }
    }
}
