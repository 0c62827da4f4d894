# Calling NotifiableServer from a shell with curl and openssl: source this file, then
#
#   NOTIFIABLE_ACCESS_ID=… NOTIFIABLE_SECRET_KEY=… notifiable_request POST https://push.example.com /api/v1/notifications \
#     '{"message": "Hello", "user_aliases": ["alice"]}'
#
# Signs as the api_auth gem does (README, Authentication): HMAC-SHA1 over
# `METHOD,Content-Type,X-Authorization-Content-SHA256,path,Date`, the body covered by its SHA-256
# on POST, PUT and PATCH (server credentials must; device credentials may). The answer's body goes
# to standard output, its status to standard error; the exit status is 0 for 2xx and 3xx.

notifiable_request() {
  local method path base body date type hash canonical signature status out
  method=$(printf '%s' "$1" | tr '[:lower:]' '[:upper:]'); base=${2%/}; path=$3; body=${4-}
  date=$(LC_ALL=C date -u '+%a, %d %b %Y %H:%M:%S GMT')
  type='application/json; charset=utf-8'
  hash=''
  case $method in POST|PUT|PATCH) hash=$(printf '%s' "$body" | openssl dgst -sha256 -binary | openssl base64 -A) ;; esac
  canonical="$method,$type,$hash,${path%%\?*},$date"
  signature=$(printf '%s' "$canonical" | openssl dgst -sha1 -hmac "$NOTIFIABLE_SECRET_KEY" -binary | openssl base64 -A)
  out=$(mktemp)
  set -- -sS -o "$out" -w '%{http_code}' -X "$method" "$base$path" -H "Date: $date" -H "Content-Type: $type" \
    -H "Authorization: APIAuth $NOTIFIABLE_ACCESS_ID:$signature"
  [ -n "$hash" ] && set -- "$@" -H "X-Authorization-Content-SHA256: $hash" --data-binary "$body"
  status=$(curl "$@") || { rm -f "$out"; return 1; }
  cat "$out"; echo; rm -f "$out"
  echo "$status" >&2
  [ "$status" -lt 400 ]
}

# notifiable_verify_webhook SECRET HEADER BODY_FILE: exit 0 when X-Notifiable-Signature
# (t=…,sha256=…) signs the file's bytes with SECRET within five minutes.
notifiable_verify_webhook() {
  local secret=$1 header=$2 file=$3 timestamp given expected now
  timestamp=$(printf '%s' "$header" | tr ',' '\n' | sed -n 's/^ *t=//p' | head -n 1)
  given=$(printf '%s' "$header" | tr ',' '\n' | sed -n 's/^ *sha256=//p' | tr '[:upper:]' '[:lower:]')
  case $timestamp in ''|*[!0-9]*) return 1 ;; esac
  now=$(date +%s)
  [ $((now - timestamp)) -le 300 ] && [ $((timestamp - now)) -le 300 ] || return 1
  expected=$({ printf '%s.' "$timestamp"; cat "$file"; } | openssl dgst -sha256 -hmac "$secret" -r | cut -d' ' -f1)
  printf '%s\n' "$given" | grep -qx "$expected"
}
