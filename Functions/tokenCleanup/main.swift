import ChatFunctions
import HeraldRuntime

await FunctionCommand<TokenCleanup>.main()
