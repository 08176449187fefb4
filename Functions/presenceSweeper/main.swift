// The presenceSweeper executable. Written by `swift run herald infra` from FunctionCatalog.all.
// Serves the function on the host for its kind (HeraldRuntime/Serving/FunctionHosts.swift).
import ChatFunctions
import HeraldRuntime

await FunctionCommand<PresenceSweeper>.main()
