# Herald's functions as FunctionCatalog.all (Sources/ChatFunctions/FunctionCatalog.swift) declares them, for
# deploy.sh, build-images.sh and the benchmarks. Written by `swift run herald infra`; InfraTests fails when
# this file and the catalog differ.
# shellcheck shell=bash disable=SC2034
FUNCTIONS=(onMessageCreated onReadReceipt presenceSweeper tokenCleanup)
PUSHING=(onMessageCreated onReadReceipt tokenCleanup)
# Who calls each function: run.invoker for them, and the function checks their identity tokens too.
callers_of() {
  case "$1" in
    onMessageCreated) echo "$TRIGGER_SA" ;;
    onReadReceipt) echo "$TRIGGER_SA" ;;
    presenceSweeper) echo "$SCHEDULER_SA" ;;
    tokenCleanup) echo "$TRIGGER_SA,$SCHEDULER_SA" ;;
  esac
}
# Each schema's Eventarc triggers are derived from its own paths: `herald schema deployment SCHEMA` writes them.
# Cloud Scheduler's jobs: job NAME CRON FUNCTION PATH ATTEMPT-DEADLINE.
herald_jobs() {
  job herald-presence-sweep '* * * * *' presenceSweeper / 60s
  job herald-token-cleanup '0 3 * * *' tokenCleanup /sweep 600s
}
