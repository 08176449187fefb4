#!/usr/bin/env bash
# Deploys Herald's functions (Infra/functions.sh, from FunctionCatalog.all) to Google Cloud, in order, idempotently (run it again after a change):
#   1. APIs            2. service accounts (one per function, one for Eventarc, one for Cloud Scheduler)
#   3. IAM roles (Firestore limited to the database by an IAM condition; Pub/Sub's token creation to
#      the trigger's account)    4. Firestore indexes, field overrides and the ledger's TTL policy
#   5. Cloud Run services (Infra/cloudrun/*.yaml) by image digest, each invocable only by its caller's
#      service account, which the function checks too (HERALD_ALLOWED_CALLERS)
#   6. a dead-letter topic, Eventarc triggers with retry and dead-letter policies
#   7. Cloud Scheduler jobs calling with OIDC tokens
#   8. monitoring: the Herald dashboard and alerting policies (Infra/observability/)
# Each service runs the Google-built OpenTelemetry Collector beside the function: spans to Cloud Trace,
# metrics to Managed Service for Prometheus (its configuration goes to Secret Manager in step 5).
# The images (one per function) must already be in Artifact Registry (Infra/build-images.sh --push REPOSITORY).
#
# Usage: Infra/deploy.sh PROJECT REGION [--schema PRESET|FILE] [--repository REPOSITORY] [--tag TAG]
#                        [--firestore-location LOCATION] [--database DATABASE] [--ledger-collection PATH]
#                        [--notification-channel CHANNEL] [--expo] [--expo-access-token-secret SECRET]
#                        [--apns-key-file FILE | --apns-key-secret SECRET] [--apns-key-id ID] [--apns-team-id ID]
#                        [--apns-topic BUNDLE_ID] [--apns-environment production|sandbox] [--dry-run]
# --schema: a preset (default, prd000, prd001, prd004) or your schema file (docs/schema.md). The triggers, the
#   indexes and the HERALD_SCHEMA value come from it, through `herald schema deployment` (the HERALD variable
#   names the herald executable; else `herald` on PATH, else `swift run herald` in this checkout); a schema with
#   an error is refused before anything runs.
# --database: the Firestore database (default: "(default)"); --firestore-location: its location (nam5, eur3 or a
#   region; default: read from the project). Eventarc's Firestore triggers are created there, the rest in REGION.
# --ledger-collection: where the exactly-once ledger lives (default _herald/events/ledger). Firestore's TTL
#   policy and index exemption go to its collection group, every collection of its last name: if your app
#   keeps a collection named `ledger` with an `expireAt` field, give the ledger a name of its own.
# --notification-channel: a Cloud Monitoring channel (projects/P/notificationChannels/ID) the alerts notify.
# --expo: send Expo push tokens through Expo's push service; --expo-access-token-secret names the Secret Manager
#   secret holding the project's push access token (needed once Expo's enhanced security is on).
# --apns-key-file (uploaded to the secret herald-apns-key) or --apns-key-secret (a secret holding the .p8),
#   with --apns-key-id, --apns-team-id and --apns-topic (the app's bundle id): send raw APNs device tokens through
#   Apple's APNs; --apns-environment sandbox for development builds. Secrets reach the functions as Cloud Run
#   secret references: their values never appear in a manifest, a command or this script's output.
# --dry-run prints every command and runs none; values only Google knows (the project number, a
# trigger's subscription) appear as PROJECT_NUMBER and SUBSCRIPTION_OF_<trigger>.
set -euo pipefail

usage() {
  echo "usage: $0 PROJECT REGION [--schema PRESET|FILE] [--repository REPOSITORY] [--tag TAG] [--firestore-location LOCATION] [--database DATABASE] [--ledger-collection PATH] [--notification-channel CHANNEL] [--expo] [--expo-access-token-secret SECRET] [--apns-key-file FILE | --apns-key-secret SECRET] [--apns-key-id ID] [--apns-team-id ID] [--apns-topic BUNDLE_ID] [--apns-environment production|sandbox] [--set NAME=VALUE]... [--unset NAME]... [--dry-run]" >&2
  exit 2
}

[ $# -ge 2 ] || usage
PROJECT=$1
REGION=$2
shift 2
SCHEMA=""
REPOSITORY=""
TAG=latest
FIRESTORE_LOCATION=""
DATABASE=""
LEDGER_COLLECTION=""
NOTIFY=""
DRY_RUN=false
EXPO=false
EXPO_TOKEN_SECRET=""
APNS_KEY_FILE=""
APNS_KEY_SECRET=""
APNS_KEY_ID=""
APNS_TEAM_ID=""
APNS_TOPIC=""
APNS_ENVIRONMENT=""
SETTINGS=()
UNSET=()
while [ $# -gt 0 ]; do
  case "$1" in
    --schema) SCHEMA=${2:?--schema needs a value}; shift 2 ;;
    --repository) REPOSITORY=${2:?--repository needs a value}; shift 2 ;;
    --tag) TAG=${2:?--tag needs a value}; shift 2 ;;
    --firestore-location) FIRESTORE_LOCATION=${2:?--firestore-location needs a value}; shift 2 ;;
    --database) DATABASE=${2:?--database needs a value}; shift 2 ;;
    --ledger-collection) LEDGER_COLLECTION=${2:?--ledger-collection needs a value}; shift 2 ;;
    --notification-channel) NOTIFY=${2:?--notification-channel needs a value}; shift 2 ;;
    --expo) EXPO=true; shift ;;
    --expo-access-token-secret) EXPO_TOKEN_SECRET=${2:?--expo-access-token-secret needs a value}; EXPO=true; shift 2 ;;
    --apns-key-file) APNS_KEY_FILE=${2:?--apns-key-file needs a value}; shift 2 ;;
    --apns-key-secret) APNS_KEY_SECRET=${2:?--apns-key-secret needs a value}; shift 2 ;;
    --apns-key-id) APNS_KEY_ID=${2:?--apns-key-id needs a value}; shift 2 ;;
    --apns-team-id) APNS_TEAM_ID=${2:?--apns-team-id needs a value}; shift 2 ;;
    --apns-topic) APNS_TOPIC=${2:?--apns-topic needs a value}; shift 2 ;;
    --apns-environment) APNS_ENVIRONMENT=${2:?--apns-environment needs a value}; shift 2 ;;
    --set) SETTINGS+=("${2:?--set needs NAME=VALUE}"); shift 2 ;;
    --unset) UNSET+=("${2:?--unset needs a NAME}"); shift 2 ;;
    --dry-run) DRY_RUN=true; shift ;;
    *) usage ;;
  esac
done
case "$PROJECT" in *[!a-z0-9-]* | "") echo "error: PROJECT must be a project id, not \"$PROJECT\"" >&2; exit 2 ;; esac
case "$REGION" in *[!a-z0-9-]* | "") echo "error: REGION must be a region such as europe-west1, not \"$REGION\"" >&2; exit 2 ;; esac
case "$NOTIFY" in "" | projects/*/notificationChannels/*) ;; *) echo "error: --notification-channel must be projects/PROJECT/notificationChannels/ID, not \"$NOTIFY\"" >&2; exit 2 ;; esac
case "$NOTIFY" in *[!a-zA-Z0-9/_-]*) echo "error: --notification-channel must be projects/PROJECT/notificationChannels/ID, not \"$NOTIFY\"" >&2; exit 2 ;; esac

# The push services besides FCM: every setting checked before anything runs.
for secret in "$EXPO_TOKEN_SECRET" "$APNS_KEY_SECRET"; do
  case "$secret" in *[!A-Za-z0-9_-]*) echo "error: a secret's name is letters, digits, - and _, not \"$secret\"" >&2; exit 2 ;; esac
done
APNS=false
if [ -n "$APNS_KEY_FILE$APNS_KEY_SECRET$APNS_KEY_ID$APNS_TEAM_ID$APNS_TOPIC$APNS_ENVIRONMENT" ]; then
  APNS=true
  if [ -n "$APNS_KEY_FILE" ] && [ -n "$APNS_KEY_SECRET" ]; then echo "error: give --apns-key-file or --apns-key-secret, not both" >&2; exit 2; fi
  missing=()
  [ -n "$APNS_KEY_FILE$APNS_KEY_SECRET" ] || missing+=(--apns-key-file)
  [ -n "$APNS_KEY_ID" ] || missing+=(--apns-key-id)
  [ -n "$APNS_TEAM_ID" ] || missing+=(--apns-team-id)
  [ -n "$APNS_TOPIC" ] || missing+=(--apns-topic)
  if [ ${#missing[@]} -gt 0 ]; then echo "error: APNs needs ${missing[*]} as well" >&2; exit 2; fi
  for id in "$APNS_KEY_ID" "$APNS_TEAM_ID"; do
    [[ "$id" =~ ^[A-Z0-9]{10}$ ]] || { echo "error: --apns-key-id and --apns-team-id are Apple's 10-character ids, not \"$id\"" >&2; exit 2; }
  done
  [[ "$APNS_TOPIC" =~ ^[A-Za-z0-9.-]+$ ]] || { echo "error: --apns-topic must be the app's bundle id, not \"$APNS_TOPIC\"" >&2; exit 2; }
  case "$APNS_ENVIRONMENT" in "" | production | sandbox) ;; *) echo "error: --apns-environment must be production or sandbox, not \"$APNS_ENVIRONMENT\"" >&2; exit 2 ;; esac
  if [ -n "$APNS_KEY_FILE" ]; then
    grep -q -- "-----BEGIN PRIVATE KEY-----" "$APNS_KEY_FILE" 2>/dev/null || { echo "error: --apns-key-file $APNS_KEY_FILE is not a readable .p8 key (-----BEGIN PRIVATE KEY-----)" >&2; exit 2; }
    APNS_KEY_SECRET=herald-apns-key
  fi
fi
REPOSITORY=${REPOSITORY:-$REGION-docker.pkg.dev/$PROJECT/herald}
case "$REPOSITORY$TAG" in *[!a-zA-Z0-9./:_-]*) echo "error: REPOSITORY and TAG must be an image repository and tag, not \"$REPOSITORY\" \"$TAG\"" >&2; exit 2 ;; esac
HERE=$(cd "$(dirname "$0")" && pwd)
# The rendered manifests: kept in HERALD_RENDER_DIR when it is set, else in a temporary folder removed at the end.
if [ -n "${HERALD_RENDER_DIR:-}" ]; then
  RENDERED=$HERALD_RENDER_DIR
  mkdir -p "$RENDERED"
else
  RENDERED=$(mktemp -d)
  trap 'rm -rf "$RENDERED"' EXIT
fi

# FUNCTIONS, PUSHING, callers_of, settings_of and herald_jobs, written from the code's catalog of functions.
# shellcheck source=Infra/functions.sh
source "$HERE/functions.sh"
service_of() { echo "herald-$(echo "$1" | tr '[:upper:]' '[:lower:]')"; }
# The settings a function's service carries now, as NAME=VALUE with the value in base64 (read back, so
# that a redeploy keeps them; nothing when the service does not exist yet or cannot be read).
deployed_settings_of() {
  local json
  json=$(gcloud run services describe "$(service_of "$1")" --region="$REGION" --project="$PROJECT" --format=json 2>/dev/null) || return 0
  # A value as NAME=…; a Secret Manager reference as NAME@secret=… (the secret's name).
  jq -r '.spec.template.spec.containers[]? | select(.name == "function") | .env[]?
    | if .value != null then "\(.name)=\(.value | @base64)"
      elif .valueFrom.secretKeyRef.name != null then "\(.name)@secret=\(.valueFrom.secretKeyRef.name | @base64)"
      else empty end' <<<"$json" 2>/dev/null || true
}
# A redeploy keeps what it is not given again: the schema, database and ledger the deployed services
# carry (the first function's), and their push services when no push flag is given; a first deploy
# takes the defaults.
PUSH_FLAGS_GIVEN=false
if $EXPO || [ -n "$EXPO_TOKEN_SECRET$APNS_KEY_FILE$APNS_KEY_SECRET$APNS_KEY_ID$APNS_TEAM_ID$APNS_TOPIC$APNS_ENVIRONMENT" ]; then PUSH_FLAGS_GIVEN=true; fi
if [ -z "$SCHEMA" ] || [ -z "$DATABASE" ] || [ -z "$LEDGER_COLLECTION" ] || ! $PUSH_FLAGS_GIVEN; then
  while IFS= read -r entry; do
    value=$(base64 -d <<<"${entry#*=}")
    name=${entry%%=*}
    if ! $PUSH_FLAGS_GIVEN; then
      case "$name" in
        HERALD_EXPO_PUSH) if [ "$value" = on ]; then EXPO=true; echo "# Expo's push service: on (the deployed services', kept)"; fi ;;
        HERALD_EXPO_ACCESS_TOKEN@secret) EXPO_TOKEN_SECRET=$value ;;
        HERALD_APNS_KEY@secret) APNS_KEY_SECRET=$value; APNS=true; echo "# APNs: the deployed services' settings, kept" ;;
        HERALD_APNS_KEY_ID) APNS_KEY_ID=$value ;;
        HERALD_APNS_TEAM_ID) APNS_TEAM_ID=$value ;;
        HERALD_APNS_TOPIC) APNS_TOPIC=$value ;;
        HERALD_APNS_ENVIRONMENT) APNS_ENVIRONMENT=$value ;;
      esac
    fi
    case "$name" in
      HERALD_SCHEMA)
        [ -z "$SCHEMA" ] || continue
        if [[ "$value" == "{"* ]]; then
          SCHEMA="$RENDERED/deployed-schema.json"
          printf '%s\n' "$value" >"$SCHEMA"
          echo "# schema: the deployed services' schema file (kept)"
        else
          SCHEMA=$value
          echo "# schema: $value (the deployed services', kept)"
        fi
        ;;
      FIRESTORE_DATABASE) if [ -z "$DATABASE" ]; then DATABASE=$value; echo "# database: $value (the deployed services', kept)"; fi ;;
      HERALD_LEDGER_COLLECTION) if [ -z "$LEDGER_COLLECTION" ]; then LEDGER_COLLECTION=$value; echo "# ledger: $value (the deployed services', kept)"; fi ;;
    esac
  done < <(deployed_settings_of "${FUNCTIONS[0]}")
fi
# Kept push settings are checked as given ones are: they reach the manifests.
if ! $PUSH_FLAGS_GIVEN; then
  for secret in "$EXPO_TOKEN_SECRET" "$APNS_KEY_SECRET"; do
    case "$secret" in *[!A-Za-z0-9_-]*) echo "error: the deployed services name the secret \"$secret\", not a secret's name" >&2; exit 2 ;; esac
  done
  if $APNS && ! [[ "$APNS_KEY_ID$APNS_TEAM_ID" =~ ^[A-Z0-9]{20}$ && "$APNS_TOPIC" =~ ^[A-Za-z0-9.-]+$ && "$APNS_ENVIRONMENT" =~ ^(production|sandbox)$ ]]; then
    echo "error: the deployed services' APNs settings are incomplete or wrong: give the --apns-* flags" >&2
    exit 2
  fi
fi
SCHEMA=${SCHEMA:-default}
DATABASE=${DATABASE:-(default)}
LEDGER_COLLECTION=${LEDGER_COLLECTION:-_herald/events/ledger}
case "$DATABASE" in "(default)") ;; *[!a-z0-9-]* | "" | -*) echo "error: --database must be a database id such as (default) or chat-eu, not \"$DATABASE\"" >&2; exit 2 ;; esac
case "$FIRESTORE_LOCATION" in *[!a-z0-9-]*) echo "error: --firestore-location must be a location such as nam5, eur3 or europe-west1, not \"$FIRESTORE_LOCATION\"" >&2; exit 2 ;; esac
# A collection path: an odd number of segments of letters, digits, _ and -.
if ! [[ "$LEDGER_COLLECTION" =~ ^[A-Za-z0-9_-]+(/[A-Za-z0-9_-]+/[A-Za-z0-9_-]+)*$ ]]; then
  echo "error: --ledger-collection must be a collection path such as _herald/events/ledger, not \"$LEDGER_COLLECTION\"" >&2
  exit 2
fi

# What the schema deploys, derived from it by the code: HERALD_SCHEMA's value, the triggers, the indexes.
if [ -n "${HERALD:-}" ]; then
  read -r -a HERALD_COMMAND <<<"$HERALD"
elif command -v herald >/dev/null 2>&1; then
  HERALD_COMMAND=(herald)
else
  HERALD_COMMAND=(swift run --package-path "$HERE/.." --quiet herald)
fi
if ! "${HERALD_COMMAND[@]}" schema deployment "$SCHEMA" --ledger-collection "$LEDGER_COLLECTION" --output "$RENDERED/schema" >&2; then
  echo "error: schema \"$SCHEMA\" cannot be deployed (above); nothing was run" >&2
  exit 2
fi
SCHEMA_VALUE=$(cat "$RENDERED/schema/schema.value")
INDEXES="$RENDERED/schema/firestore.indexes.json"
if [ -z "$FIRESTORE_LOCATION" ] && ! $DRY_RUN; then
  FIRESTORE_LOCATION=$(gcloud firestore databases describe --database="$DATABASE" --project="$PROJECT" --format='value(locationId)') || {
    echo "error: cannot read the location of Firestore database $DATABASE in $PROJECT: create it, or give --firestore-location" >&2
    exit 2
  }
fi
FIRESTORE_LOCATION=${FIRESTORE_LOCATION:-LOCATION_OF_DATABASE}

# --set and --unset name settings some function reads (herald deploy checks their values too).
SETTABLE=" $(for function in "${FUNCTIONS[@]}"; do settings_of "$function"; done | tr '\n' ' ') "
for entry in "${SETTINGS[@]}" "${UNSET[@]}"; do
  name=${entry%%=*}
  if ! [[ "$name" =~ ^[A-Z][A-Z0-9_]*$ && "$SETTABLE" == *" $name "* ]]; then echo "error: no function reads the setting \"$name\"" >&2; exit 2; fi
  [[ "$entry" != *$'\n'* ]] || { echo "error: the setting $name is one line" >&2; exit 2; }
done
TRIGGER_SA="herald-trigger@$PROJECT.iam.gserviceaccount.com"
SCHEDULER_SA="herald-scheduler@$PROJECT.iam.gserviceaccount.com"
DEAD_LETTERS=herald-dead-letters
COLLECTOR_CONFIG=herald-otel-collector   # the secret the manifests mount
OBSERVABILITY="$HERE/observability"

account_of() { echo "$(service_of "$1")@$PROJECT.iam.gserviceaccount.com"; }

quote() { printf '%q ' "$@" | sed 's/ $//'; }
# Prints the command, and runs it unless --dry-run.
run() {
  echo "+ $(quote "$@")"
  if ! $DRY_RUN; then "$@"; fi
}
# ensure DESCRIBE... -- CREATE...: creates only what does not exist yet.
ensure() {
  local describe=()
  while [ "$1" != "--" ]; do describe+=("$1"); shift; done
  shift
  if $DRY_RUN; then echo "+ $(quote "${describe[@]}") >/dev/null 2>&1 || $(quote "$@")"; return; fi
  if "${describe[@]}" >/dev/null 2>&1; then echo "= exists: ${describe[*]}"; else run "$@"; fi
}
# upsert DESCRIBE... -- UPDATE... -- CREATE...: updates what exists, creates the rest.
upsert() {
  local describe=() update=()
  while [ "$1" != "--" ]; do describe+=("$1"); shift; done
  shift
  while [ "$1" != "--" ]; do update+=("$1"); shift; done
  shift
  if $DRY_RUN; then echo "+ $(quote "${describe[@]}") >/dev/null 2>&1 && $(quote "${update[@]}") || $(quote "$@")"; return; fi
  if "${describe[@]}" >/dev/null 2>&1; then run "${update[@]}"; else run "$@"; fi
}
# patch_field URL BODY: Firestore's Admin API with gcloud's token (printed as the command that gets it, never the token).
patch_field() {
  echo "+ curl -sS --fail-with-body -X PATCH -H \"Authorization: Bearer \$(gcloud auth print-access-token)\" -H 'Content-Type: application/json' $(quote "$1") -d $(quote "$2")"
  if $DRY_RUN; then return; fi
  curl -sS --fail-with-body -X PATCH -H "Authorization: Bearer $(gcloud auth print-access-token)" -H 'Content-Type: application/json' "$1" -d "$2" >/dev/null
}
# A value only Google knows; PLACEHOLDER in a dry run.
value() {
  local placeholder=$1
  shift
  if $DRY_RUN; then echo "$placeholder"; else "$@"; fi
}
# Creates, counting "already exists" as done (for resources without a name to describe).
create_once() {
  echo "+ $(quote "$@")"
  if $DRY_RUN; then return; fi
  local output
  if ! output=$("$@" 2>&1); then
    case "$output" in *ALREADY_EXISTS* | *"already exists"*) echo "= exists" ;; *) echo "$output" >&2; return 1 ;; esac
  fi
}

echo "# Herald → project $PROJECT, schema $SCHEMA, images $REPOSITORY/herald-FUNCTION:$TAG"
echo "# Firestore database $DATABASE in $FIRESTORE_LOCATION: the Eventarc triggers go there; the Cloud Run services and Cloud Scheduler jobs in $REGION"

echo "# 1. APIs"
run gcloud services enable run.googleapis.com eventarc.googleapis.com firestore.googleapis.com fcm.googleapis.com \
  cloudscheduler.googleapis.com pubsub.googleapis.com secretmanager.googleapis.com monitoring.googleapis.com \
  cloudtrace.googleapis.com --project="$PROJECT"
PROJECT_NUMBER=$(value PROJECT_NUMBER gcloud projects describe "$PROJECT" --format='value(projectNumber)')
PUBSUB_AGENT="service-$PROJECT_NUMBER@gcp-sa-pubsub.iam.gserviceaccount.com"

echo "# 2. Service accounts"
for function in "${FUNCTIONS[@]}"; do
  ensure gcloud iam service-accounts describe "$(account_of "$function")" --project="$PROJECT" -- \
    gcloud iam service-accounts create "$(service_of "$function")" --display-name="Herald $function" --project="$PROJECT"
done
ensure gcloud iam service-accounts describe "$TRIGGER_SA" --project="$PROJECT" -- \
  gcloud iam service-accounts create herald-trigger --display-name="Herald Eventarc triggers" --project="$PROJECT"
ensure gcloud iam service-accounts describe "$SCHEDULER_SA" --project="$PROJECT" -- \
  gcloud iam service-accounts create herald-scheduler --display-name="Herald Cloud Scheduler jobs" --project="$PROJECT"

echo "# 3. IAM: the least each identity needs"
bind() { run gcloud projects add-iam-policy-binding "$PROJECT" --member="serviceAccount:$1" --role="$2" --condition="${3:-None}" --quiet; }
# Firestore for this database only: an IAM condition on its resource name.
FIRESTORE_ONLY="expression=resource.name==\"projects/$PROJECT/databases/$DATABASE\",title=herald-$(echo "$DATABASE" | tr -dc 'a-z0-9-')-database-only"
for function in "${FUNCTIONS[@]}"; do bind "$(account_of "$function")" roles/datastore.user "$FIRESTORE_ONLY"; done
for function in "${PUSHING[@]}"; do bind "$(account_of "$function")" roles/firebasecloudmessaging.admin; done
# The collector beside each function writes with the function's account: metrics and spans, nothing else.
for function in "${FUNCTIONS[@]}"; do
  bind "$(account_of "$function")" roles/monitoring.metricWriter
  bind "$(account_of "$function")" roles/cloudtrace.agent
done
bind "$TRIGGER_SA" roles/eventarc.eventReceiver
# Pub/Sub signs Eventarc's pushes with the trigger's account: it may mint tokens for that one account, not for every account in the project.
run gcloud iam service-accounts add-iam-policy-binding "$TRIGGER_SA" --member="serviceAccount:$PUBSUB_AGENT" \
  --role=roles/iam.serviceAccountTokenCreator --project="$PROJECT"

echo "# 4. Firestore indexes, field overrides, TTL ($INDEXES)"
while IFS= read -r index; do
  group=$(jq -r '.collectionGroup' <<<"$index")
  scope=$(jq -r '.queryScope' <<<"$index")
  configs=()
  while IFS= read -r config; do configs+=("--field-config=$config"); done < <(jq -r '.fields[] | "field-path=\(.fieldPath),order=\(.order | ascii_downcase)"' <<<"$index")
  create_once gcloud firestore indexes composite create --project="$PROJECT" --database="$DATABASE" \
    --collection-group="$group" --query-scope="$(tr '[:upper:]' '[:lower:]' <<<"$scope" | tr '_' '-')" "${configs[@]}" --async
done < <(jq -c '.indexes[]' "$INDEXES")
while IFS= read -r override; do
  group=$(jq -r '.collectionGroup' <<<"$override")
  field=$(jq -r '.fieldPath' <<<"$override")
  if [ "$(jq -r '.ttl // false' <<<"$override")" = true ]; then
    run gcloud firestore fields ttls update "$field" --collection-group="$group" --enable-ttl --database="$DATABASE" --project="$PROJECT" --async
  fi
  if [ "$(jq -r '.indexes | length' <<<"$override")" = 0 ]; then
    run gcloud firestore indexes fields update "$field" --collection-group="$group" --disable-indexes --database="$DATABASE" --project="$PROJECT" --async
  elif [ "$(jq '[.indexes[] | select(.queryScope == "COLLECTION_GROUP")] | length' <<<"$override")" != 0 ]; then
    # A single-field index of collection-group scope (the token sweep's and tokenCleanup's queries over
    # every user's token documents): gcloud has no flag for the scope, so Firestore's Admin API
    # (fields.patch) sets it.
    patch_field "https://firestore.googleapis.com/v1/projects/$PROJECT/databases/$DATABASE/collectionGroups/$group/fields/$field?updateMask=indexConfig" \
      "$(jq -c --arg field "$field" '{indexConfig: {indexes: [.indexes[] | {queryScope, fields: [{fieldPath: $field, order}]}]}}' <<<"$override")"
  fi
done < <(jq -c '.fieldOverrides[]' "$INDEXES")

echo "# 5. The collector's configuration (Secret Manager), then the Cloud Run services (rendered into $RENDERED)"
ensure gcloud secrets describe "$COLLECTOR_CONFIG" --project="$PROJECT" -- \
  gcloud secrets create "$COLLECTOR_CONFIG" --replication-policy=automatic --project="$PROJECT"
# A new version only when the file changed (each deploy would otherwise add one).
if $DRY_RUN; then
  echo "+ gcloud secrets versions access latest --secret=$COLLECTOR_CONFIG --project=$PROJECT | cmp -s - $(quote "$OBSERVABILITY/collector.yaml") || gcloud secrets versions add $COLLECTOR_CONFIG --data-file=$(quote "$OBSERVABILITY/collector.yaml") --project=$PROJECT"
elif gcloud secrets versions access latest --secret="$COLLECTOR_CONFIG" --project="$PROJECT" 2>/dev/null | cmp -s - "$OBSERVABILITY/collector.yaml"; then
  echo "= unchanged: $COLLECTOR_CONFIG"
else
  run gcloud secrets versions add "$COLLECTOR_CONFIG" --data-file="$OBSERVABILITY/collector.yaml" --project="$PROJECT"
fi
for function in "${FUNCTIONS[@]}"; do
  run gcloud secrets add-iam-policy-binding "$COLLECTOR_CONFIG" --member="serviceAccount:$(account_of "$function")" \
    --role=roles/secretmanager.secretAccessor --project="$PROJECT"
done
# The APNs key from its file: a new version only when it changed. Its contents are never printed.
if [ -n "$APNS_KEY_FILE" ]; then
  ensure gcloud secrets describe "$APNS_KEY_SECRET" --project="$PROJECT" -- \
    gcloud secrets create "$APNS_KEY_SECRET" --replication-policy=automatic --project="$PROJECT"
  if $DRY_RUN; then
    echo "+ gcloud secrets versions access latest --secret=$APNS_KEY_SECRET --project=$PROJECT | cmp -s - $(quote "$APNS_KEY_FILE") || gcloud secrets versions add $APNS_KEY_SECRET --data-file=$(quote "$APNS_KEY_FILE") --project=$PROJECT"
  elif gcloud secrets versions access latest --secret="$APNS_KEY_SECRET" --project="$PROJECT" 2>/dev/null | cmp -s - "$APNS_KEY_FILE"; then
    echo "= unchanged: $APNS_KEY_SECRET"
  else
    run gcloud secrets versions add "$APNS_KEY_SECRET" --data-file="$APNS_KEY_FILE" --project="$PROJECT"
  fi
fi
# The push services' secrets, readable by the functions that send pushes.
for secret in "$EXPO_TOKEN_SECRET" "$APNS_KEY_SECRET"; do
  [ -n "$secret" ] || continue
  for function in "${PUSHING[@]}"; do
    run gcloud secrets add-iam-policy-binding "$secret" --member="serviceAccount:$(account_of "$function")" \
      --role=roles/secretmanager.secretAccessor --project="$PROJECT"
  done
done
# YAML single-quoted: a schema file's JSON is one line, its quotes doubled.
yaml_quoted() { local text=${1//\'/\'\'}; printf "'%s'" "$text"; }
# The push services' settings of a function that sends pushes, as env entries of its manifest.
env_value() { printf '            - name: %s\n              value: %s\n' "$1" "$(yaml_quoted "$2")"; }
env_secret() { printf '            - name: %s\n              valueFrom:\n                secretKeyRef:\n                  name: %s\n                  key: latest\n' "$1" "$2"; }
push_settings_of() {
  case " ${PUSHING[*]} " in *" $1 "*) ;; *) return 0 ;; esac
  if $EXPO; then env_value HERALD_EXPO_PUSH on; fi
  if [ -n "$EXPO_TOKEN_SECRET" ]; then env_secret HERALD_EXPO_ACCESS_TOKEN "$EXPO_TOKEN_SECRET"; fi
  if $APNS; then
    env_secret HERALD_APNS_KEY "$APNS_KEY_SECRET"
    env_value HERALD_APNS_KEY_ID "$APNS_KEY_ID"
    env_value HERALD_APNS_TEAM_ID "$APNS_TEAM_ID"
    env_value HERALD_APNS_TOPIC "$APNS_TOPIC"
    env_value HERALD_APNS_ENVIRONMENT "${APNS_ENVIRONMENT:-production}"
  fi
}
# operator_settings FUNCTION: its manifest's entries for the settings it reads: those its service carries
# unless --unset, then --set's. Written before the manifests, with a line saying what each keeps.
declare -A OPERATOR_SETTINGS=()
for function in "${FUNCTIONS[@]}"; do
  readable=" $(settings_of "$function") "
  declare -A chosen=()
  order=()
  while IFS= read -r entry; do
    name=${entry%%=*}
    if ! [[ "$readable" == *" $name "* && " ${UNSET[*]} " != *" $name "* ]]; then continue; fi
    chosen[$name]=$(base64 -d <<<"${entry#*=}")
    order+=("$name")
    echo "# $(service_of "$function") keeps $name (the deployed service carries it)"
  done < <(deployed_settings_of "$function")
  for entry in "${SETTINGS[@]}"; do
    name=${entry%%=*}
    [[ "$readable" == *" $name "* ]] || continue
    [ -n "${chosen[$name]+set}" ] || order+=("$name")
    chosen[$name]=${entry#*=}
  done
  OPERATOR_SETTINGS[$function]=""
  for name in "${order[@]}"; do OPERATOR_SETTINGS[$function]+=$(env_value "$name" "${chosen[$name]}")$'\n'; done
  unset chosen
done
# Each function its own image, deployed by digest: what runs is exactly the image that was checked,
# whatever the tag points at later.
image_of() {
  local image
  image="$REPOSITORY/$(service_of "$1")"
  echo "$image@$(value "DIGEST_OF_$(service_of "$1")" gcloud artifacts docker images describe "$image:$TAG" --format='value(image_summary.digest)')"
}
url_of() { echo "https://$(service_of "$1")-$PROJECT_NUMBER.$REGION.run.app"; }
for function in "${FUNCTIONS[@]}"; do
  manifest="$RENDERED/$function.yaml"
  sed -e "s|PROJECT_ID|$PROJECT|g" -e "s|IMAGE|$(image_of "$function")|g" -e "s|SERVICE_URL|$(url_of "$function")|" \
    -e "s|value: CALLER_ACCOUNTS|value: $(callers_of "$function")|" "$HERE/cloudrun/$function.yaml" |
    while IFS= read -r line; do
      case "$line" in
        *"value: SCHEMA") line="${line%SCHEMA}$(yaml_quoted "$SCHEMA_VALUE")" ;;
        *"value: DATABASE") line="${line%DATABASE}$(yaml_quoted "$DATABASE")" ;;
        *"value: LEDGER_COLLECTION") line="${line%LEDGER_COLLECTION}$(yaml_quoted "$LEDGER_COLLECTION")" ;;
        *"# PUSH_SERVICES"*) push_settings_of "$function"; printf '%s' "${OPERATOR_SETTINGS[$function]}"; continue ;;
      esac
      printf '%s\n' "$line"
    done >"$manifest"
  run gcloud run services replace "$manifest" --region="$REGION" --project="$PROJECT"
done
invoker() {
  run gcloud run services add-iam-policy-binding "$(service_of "$1")" --member="serviceAccount:$2" --role=roles/run.invoker \
    --region="$REGION" --project="$PROJECT"
}
for function in "${FUNCTIONS[@]}"; do
  IFS=, read -r -a callers <<<"$(callers_of "$function")"
  for caller in "${callers[@]}"; do invoker "$function" "$caller"; done
done

echo "# 6. Dead letters and Eventarc triggers"
ensure gcloud pubsub topics describe "$DEAD_LETTERS" --project="$PROJECT" -- \
  gcloud pubsub topics create "$DEAD_LETTERS" --project="$PROJECT"
ensure gcloud pubsub subscriptions describe "$DEAD_LETTERS" --project="$PROJECT" -- \
  gcloud pubsub subscriptions create "$DEAD_LETTERS" --topic="$DEAD_LETTERS" --message-retention-duration=7d --project="$PROJECT"
run gcloud pubsub topics add-iam-policy-binding "$DEAD_LETTERS" --member="serviceAccount:$PUBSUB_AGENT" --role=roles/pubsub.publisher --project="$PROJECT"
# trigger FUNCTION KIND PATTERN [SUFFIX]: one event type per Eventarc trigger (a second kind needs a second trigger).
# A trigger that exists is compared with what the schema asks. One whose path, destination or account
# differ (a schema that moved the documents a function watches) is updated in place; one of another event
# type or database, or one Eventarc refuses to update, is deleted and created again (with it go its
# subscription and the events waiting there for a retry, and the events of the seconds between are not
# delivered); one that matches is left as it is.
trigger() {
  local function=$1 kind=$2 pattern=$3 service name
  service=$(service_of "$function")
  name=$service${4:+-$4}
  NAMED_TRIGGERS+=("$name")
  local type="google.cloud.firestore.document.v1.$kind"
  local settings=(--destination-run-service="$service" --destination-run-region="$REGION"
    --event-filters="type=$type" --event-filters="database=$DATABASE"
    --event-filters-path-pattern="document=$pattern" --event-data-content-type=application/protobuf
    --service-account="$TRIGGER_SA" --project="$PROJECT")
  local describe=(gcloud eventarc triggers describe "$name" --location="$FIRESTORE_LOCATION" --project="$PROJECT" --format=json)
  local create=(gcloud eventarc triggers create "$name" --location="$FIRESTORE_LOCATION" "${settings[@]}")
  local update=(gcloud eventarc triggers update "$name" --location="$FIRESTORE_LOCATION" "${settings[@]}")
  local delete=(gcloud eventarc triggers delete "$name" --location="$FIRESTORE_LOCATION" --project="$PROJECT" --quiet)
  # A trigger in one line: its filters by attribute (with a path pattern's operator), its data's type,
  # where it delivers and as whom.
  local wanted="database=$DATABASE document=$pattern (match-path-pattern) type=$type (application/protobuf) → $service in $REGION as $TRIGGER_SA"
  if $DRY_RUN; then
    echo "# $name, where it exists, is compared with: $wanted; updated where its path, destination or account differ; deleted and created again where its event type or database differ or Eventarc refuses the update"
    echo "+ $(quote "${describe[@]}") >/dev/null 2>&1 && $(quote "${update[@]}") || $(quote "${create[@]}")"
  else
    local current have same_source
    if ! current=$("${describe[@]}" 2>"$RENDERED/describe.error"); then
      if ! grep -q NOT_FOUND "$RENDERED/describe.error"; then
        echo "error: cannot read Eventarc trigger $name: $(cat "$RENDERED/describe.error")" >&2
        exit 1
      fi
      run "${create[@]}"
    else
      have=$(jq -r '([.eventFilters[]? | "\(.attribute)=\(.value)\(if .operator then " (\(.operator))" else "" end)"] | sort | join(" "))
        + " (\(.eventDataContentType // "application/json")) → \(.destination.cloudRun.service // "?") in \(.destination.cloudRun.region // "?")"
        + " as \(.serviceAccount // "?")"' <<<"$current") || {
        echo "error: cannot read Eventarc trigger $name: $current" >&2
        exit 1
      }
      same_source=$(jq -r --arg type "$type" --arg database "$DATABASE" \
        '[.eventFilters[]? | select((.attribute == "type" and .value == $type) or (.attribute == "database" and .value == $database))] | length == 2' <<<"$current")
      if [ "$have" = "$wanted" ]; then
        echo "= exists: $name ($have)"
      elif [ "$same_source" != true ]; then
        echo "# $name has another event type or database (was: $have): deleted and created again"
        run "${delete[@]}"
        run "${create[@]}"
      else
        echo "# $name changed (was: $have)"
        if ! run "${update[@]}"; then
          echo "# Eventarc did not update $name: deleted and created again"
          run "${delete[@]}"
          run "${create[@]}"
        fi
      fi
    fi
  fi
  local subscription
  subscription=$(value "SUBSCRIPTION_OF_$name" gcloud eventarc triggers describe "$name" --location="$FIRESTORE_LOCATION" \
    --project="$PROJECT" --format='value(transport.pubsub.subscription)')
  # Pub/Sub retries with backoff from 10 s to 600 s; after 10 attempts the event goes to the dead letters.
  run gcloud pubsub subscriptions update "$subscription" --dead-letter-topic="projects/$PROJECT/topics/$DEAD_LETTERS" \
    --max-delivery-attempts=10 --min-retry-delay=10s --max-retry-delay=600s --project="$PROJECT"
  run gcloud pubsub subscriptions add-iam-policy-binding "$subscription" --member="serviceAccount:$PUBSUB_AGENT" \
    --role=roles/pubsub.subscriber --project="$PROJECT"
}
NAMED_TRIGGERS=()
# shellcheck source=/dev/null
source "$RENDERED/schema/triggers.sh"
# Herald's triggers this schema does not name (a kind a function no longer takes, or the database's old
# location after --database moved) still deliver their events: named, with the command that deletes
# each, not deleted (a trigger is never removed on a guess).
LIST_TRIGGERS=(gcloud eventarc triggers list --location=- --project="$PROJECT" --format=json)
if $DRY_RUN; then
  echo "+ $(quote "${LIST_TRIGGERS[@]}")"
else
  while IFS= read -r resource; do
    trigger_name=${resource##*/}
    trigger_location=${resource#*/locations/}
    trigger_location=${trigger_location%%/*}
    case "$trigger_name" in herald-*) ;; *) continue ;; esac
    if [ "$trigger_location" != "$FIRESTORE_LOCATION" ] || [[ " ${NAMED_TRIGGERS[*]} " != *" $trigger_name "* ]]; then
      echo "! Eventarc trigger $trigger_name in $trigger_location is not one this schema deploys, and still delivers its events: delete it with gcloud eventarc triggers delete $trigger_name --location=$trigger_location --project=$PROJECT"
    fi
  done < <("${LIST_TRIGGERS[@]}" 2>/dev/null | jq -r '.[]?.name // empty' 2>/dev/null || true)
fi

echo "# 7. Cloud Scheduler jobs"
job() {
  local name=$1 schedule=$2 function=$3 path=$4 deadline=$5 flags
  flags=(--location="$REGION" --schedule="$schedule" --uri="$(url_of "$function")$path" --http-method=POST
    --oidc-service-account-email="$SCHEDULER_SA" --oidc-token-audience="$(url_of "$function")"
    --attempt-deadline="$deadline" --project="$PROJECT")
  upsert gcloud scheduler jobs describe "$name" --location="$REGION" --project="$PROJECT" -- \
    gcloud scheduler jobs update http "$name" "${flags[@]}" -- \
    gcloud scheduler jobs create http "$name" "${flags[@]}"
}
herald_jobs

echo "# 8. Monitoring: the Herald dashboard and alerting policies ($OBSERVABILITY)"
# upsert_listed KIND FILE FLAG [EXTRA...]: updates the dashboard or policy with the file's display name,
# else creates it (neither has a name of our choosing to describe). Alerting policies are in gcloud's
# alpha track in the SDKs of 2025 (`gcloud components install alpha`).
upsert_listed() {
  local kind=$1 file=$2 flag=$3 display name
  shift 3
  local monitoring=(gcloud monitoring)
  if [ "$kind" = policies ]; then monitoring=(gcloud alpha monitoring); fi
  display=$(jq -r .displayName "$file")
  local list=("${monitoring[@]}" "$kind" list --filter="displayName=\"$display\"" --format='value(name)' --limit=1 --project="$PROJECT")
  if $DRY_RUN; then
    name="$(tr '[:lower:]' '[:upper:]' <<<"$kind")_$(basename "$file" .json)"
    echo "+ $(quote "${list[@]}") >/dev/null 2>&1 && $(quote "${monitoring[@]}" "$kind" update "$name" "$flag=$file" "$@" --project="$PROJECT") || $(quote "${monitoring[@]}" "$kind" create "$flag=$file" "$@" --project="$PROJECT")"
    return
  fi
  name=$("${list[@]}")
  if [ -n "$name" ]; then
    run "${monitoring[@]}" "$kind" update "$name" "$flag=$file" "$@" --project="$PROJECT"
  else
    run "${monitoring[@]}" "$kind" create "$flag=$file" "$@" --project="$PROJECT"
  fi
}
upsert_listed dashboards "$OBSERVABILITY/dashboard.json" --config-from-file
for policy in "$OBSERVABILITY"/alerts/*.json; do
  upsert_listed policies "$policy" --policy-from-file ${NOTIFY:+--notification-channels="$NOTIFY"}
done

echo "# done"
