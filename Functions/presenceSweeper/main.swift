// The presenceSweeper executable. Written by `swift run herald infra` from FunctionCatalog.all.
import ChatFunctions
import HeraldRuntime

await FunctionCommand<PresenceSweeper>.main()
