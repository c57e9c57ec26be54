public import SofaWire

// The wire's types that the SDK's API takes or returns, under the SDK's name. The rest of the wire
// (requests, frames, forwarding) stays out of an application's namespace.
public typealias BlobInfo = SofaWire.BlobInfo
public typealias BulkItem = SofaWire.BulkItem
public typealias BulkItemResult = SofaWire.BulkItemResult
public typealias ConflictPolicy = SofaWire.ConflictPolicy
public typealias ConflictResolution = SofaWire.ConflictResolution
public typealias DatabaseInfo = SofaWire.DatabaseInfo
public typealias HealthInfo = SofaWire.HealthInfo
public typealias IndexDefinition = SofaWire.IndexDefinition
public typealias InsertResult = SofaWire.InsertResult
public typealias ReplicationDirection = SofaWire.ReplicationDirection
public typealias ReplicationStatus = SofaWire.ReplicationStatus
public typealias RevsDiffEntry = SofaWire.RevsDiffEntry
public typealias ServiceStatus = SofaWire.ServiceStatus
