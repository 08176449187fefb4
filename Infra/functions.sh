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
# Each preset's Eventarc triggers: trigger FUNCTION EVENT-TYPE PATTERN [SUFFIX].
herald_triggers() {
  case "$SCHEMA" in
    default)
      trigger onMessageCreated created 'conversations/{conversationId}/messages/{messageId}'
      trigger onReadReceipt updated 'conversations/{conversationId}/messages/{messageId}'
      trigger onReadReceipt deleted 'conversations/{conversationId}/messages/{messageId}' deleted
      trigger tokenCleanup written 'users/{userId}'
      ;;
    prd000)
      trigger onMessageCreated created 'conversations/{conversationId}/messages/{messageId}'
      trigger onReadReceipt updated 'conversations/{conversationId}/messages/{messageId}'
      trigger onReadReceipt deleted 'conversations/{conversationId}/messages/{messageId}' deleted
      trigger tokenCleanup written 'users/{userId}'
      ;;
    prd001)
      trigger onMessageCreated created 'messages/{messageId}'
      trigger onReadReceipt updated 'messages/{messageId}'
      trigger onReadReceipt deleted 'messages/{messageId}' deleted
      trigger tokenCleanup written 'users/{userId}'
      ;;
    prd004)
      trigger onMessageCreated created 'chats/{chatID}/messages/{messageID}'
      trigger onReadReceipt updated 'chats/{chatID}/messages/{messageID}'
      trigger onReadReceipt deleted 'chats/{chatID}/messages/{messageID}' deleted
      trigger tokenCleanup written 'users/{userId}'
      ;;
  esac
}
# Cloud Scheduler's jobs: job NAME CRON FUNCTION PATH ATTEMPT-DEADLINE.
herald_jobs() {
  job herald-presence-sweep '* * * * *' presenceSweeper / 60s
  job herald-token-cleanup '0 3 * * *' tokenCleanup /sweep 600s
}
