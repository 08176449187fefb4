// The onReadReceipt executable. Written by `swift run herald infra` from FunctionCatalog.all.
import ChatFunctions
import HeraldRuntime

await FunctionCommand<OnReadReceipt>.main()
