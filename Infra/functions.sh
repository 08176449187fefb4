# Herald's functions as FunctionCatalog.all (Sources/Chat/ChatFunctions/FunctionCatalog.swift) declares them, for
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
# The settings `herald deploy --set NAME=VALUE` may give each function: its own, then the runtime's.
settings_of() {
  case "$1" in
    onMessageCreated) echo "HERALD_VIEWING_STALE_AFTER LOG_LEVEL HERALD_API_TIMEOUT HERALD_PUSH_LEASE HERALD_METRICS OTEL_TRACES_EXPORTER OTEL_TRACES_SAMPLER OTEL_TRACES_SAMPLER_ARG OTEL_METRICS_EXPORTER OTEL_METRIC_EXPORT_INTERVAL" ;;
    onReadReceipt) echo "LOG_LEVEL HERALD_API_TIMEOUT HERALD_PUSH_LEASE HERALD_METRICS OTEL_TRACES_EXPORTER OTEL_TRACES_SAMPLER OTEL_TRACES_SAMPLER_ARG OTEL_METRICS_EXPORTER OTEL_METRIC_EXPORT_INTERVAL" ;;
    presenceSweeper) echo "HERALD_PRESENCE_STALE_AFTER HERALD_TYPING_STALE_AFTER HERALD_VIEWING_STALE_AFTER LOG_LEVEL HERALD_API_TIMEOUT HERALD_PUSH_LEASE HERALD_METRICS OTEL_TRACES_EXPORTER OTEL_TRACES_SAMPLER OTEL_TRACES_SAMPLER_ARG OTEL_METRICS_EXPORTER OTEL_METRIC_EXPORT_INTERVAL" ;;
    tokenCleanup) echo "HERALD_TOKEN_STALE_AFTER HERALD_TOKEN_VALIDATE HERALD_TOKEN_DOUBTFUL_AFTER HERALD_TOKEN_CLAIMS_COLLECTION LOG_LEVEL HERALD_API_TIMEOUT HERALD_PUSH_LEASE HERALD_METRICS OTEL_TRACES_EXPORTER OTEL_TRACES_SAMPLER OTEL_TRACES_SAMPLER_ARG OTEL_METRICS_EXPORTER OTEL_METRIC_EXPORT_INTERVAL" ;;
  esac
}
# Each schema's Eventarc triggers are derived from its own paths: `herald schema deployment SCHEMA` writes them.
# Cloud Scheduler's jobs: job NAME CRON FUNCTION PATH ATTEMPT-DEADLINE.
herald_jobs() {
  job herald-presence-sweep '* * * * *' presenceSweeper / 60s
  job herald-token-cleanup '0 3 * * *' tokenCleanup /sweep 600s
}
