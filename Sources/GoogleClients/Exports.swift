// Google clients trace their calls: the trace context and its recorder come with them.
@_exported import Telemetry
