import ChatFunctions
import HeraldRuntime

await FunctionCommand<OnReadReceipt>.run()
