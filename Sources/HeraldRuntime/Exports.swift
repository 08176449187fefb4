// Functions serve over the HTTP server: its types (StopSignal, HTTPServer) come with the runtime.
@_exported import HeraldHTTPServer
