import ChatFunctions
import HeraldRuntime

await FunctionCommand<OnMessageCreated>.main()
