import ChatFunctions
import HeraldRuntime

await FunctionCommand<OnReadReceipt>.main()
