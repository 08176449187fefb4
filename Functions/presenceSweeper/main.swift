import ChatFunctions
import HeraldRuntime

await FunctionCommand<PresenceSweeper>.main()
