#!/usr/bin/env bash
# Trying it: calls to the running system, top to bottom, each showing its
# status. Run it against `make dev` (bash scripts/try.sh); `make test` runs
# it against a fresh stack, so every call here works. PUBLIC_URL, ADMIN_URL,
# BO_TOKEN and BO_VIEWER_TOKEN point it elsewhere.
# It creates a category, a tag, two media and one document of each type
# (PDF, LINK, MARKDOWN, HTML), then deletes them (the documents go to the
# trash); the ids it chooses end in the time it started, so it runs again.
set -euo pipefail
P=${PUBLIC_URL:-http://127.0.0.1:8080}   # the public listener (the mobile app's)
A=${ADMIN_URL:-http://127.0.0.1:8090}    # the admin listener: every /bo call goes there
BO="Authorization: Bearer ${BO_TOKEN:-dev-token}"                   # an editor
VIEWER="Authorization: Bearer ${BO_VIEWER_TOKEN:-dev-viewer-token}" # a viewer: GET and HEAD only
J='Content-Type: application/json'
RUN=$(date +%s)
OUT=$(mktemp -d); trap 'rm -rf "$OUT"' EXIT

# call STATUS CURL-ARGS...: runs curl, prints the status, the call and the
# start of the answer, and stops the script unless the status is STATUS.
call() {
  local want=$1; shift
  local got; got=$(curl -sS -o "$OUT/body" -w '%{http_code}' "$@")
  local method=GET url= prev=
  for a in "$@"; do
    case $prev in -X) method=$a ;; -d | -F) [ "$method" = GET ] && method=POST ;; esac
    case $a in http*) url=$a ;; esac
    prev=$a
  done
  printf '%s  %-6s %s\n' "$got" "$method" "$url"
  head -c 300 "$OUT/body"; echo
  if [ "$got" != "$want" ]; then echo "expected $want" >&2; exit 1; fi
}
# id: the first "id" of the last answer.
id() { grep -o '"id":"[^"]*"' "$OUT/body" | head -1 | cut -d'"' -f4; }

echo '## The public listener has no back-office; a viewer may only read'
call 404 "$P/bo/documents" -H "$BO"
call 401 "$A/bo/nope"                      # credentials are checked before the path
call 200 "$A/bo/documents" -H "$VIEWER"
call 403 -X POST "$A/bo/tags-categories" -H "$VIEWER" -H "$J" -d '{"id":"x","name":"X"}'

echo '## Tags and categories (the caller chooses their ids)'
CATEGORY=health-$RUN TAG=vaccines-$RUN
call 201 -X POST "$A/bo/tags-categories" -H "$BO" -H "$J" -d '{"id":"'$CATEGORY'","name":"Santé"}'
call 201 -X POST "$A/bo/tags" -H "$BO" -H "$J" -d '{"id":"'$TAG'","name":"Vaccins","categoryId":"'$CATEGORY'"}'
call 200 -X PATCH "$A/bo/tags/$TAG" -H "$BO" -H "$J" -d '{"name":"Vaccination"}'
call 200 "$A/bo/tags-categories" -H "$BO"  # with createdAt, updatedAt, createdBy, updatedBy
call 200 "$P/public/tags-categories"        # creation order, tags inside

echo '## Media (multipart, part "file"; the type is decided by the bytes)'
printf '%%PDF-1.4\n1 0 obj <<>> endobj\ntrailer <<>>\n%%%%EOF\n' >"$OUT/guide.pdf"
base64 -d >"$OUT/figure.png" <<<'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=='
call 201 -X POST "$A/bo/medias" -H "$BO" -F "file=@$OUT/guide.pdf"
PDF_MEDIA=$(id)
call 201 -X POST "$A/bo/medias" -H "$BO" -F "file=@$OUT/figure.png"
IMAGE=$(id)
call 200 "$A/bo/medias" -H "$BO"            # newest first
call 200 "$P/public/medias/$PDF_MEDIA"
call 200 "$P/public/medias/$PDF_MEDIA/download"  # Range, ETag, 304...

echo '## Documents, one of each type (the server makes their ids)'
call 201 -X POST "$A/bo/documents" -H "$BO" -H "$J" \
  -d '{"type":"PDF","title":"Guide","fileId":"'$PDF_MEDIA'","tagsIds":["'$TAG'"]}'
PDF=$(id)
call 201 -X POST "$A/bo/documents" -H "$BO" -H "$J" \
  -d '{"type":"LINK","title":"Site","url":"https://example.org","tagsIds":["'$TAG'"]}'
LINK=$(id)
call 201 -X POST "$A/bo/documents" -H "$BO" -H "$J" \
  -d '{"type":"MARKDOWN","title":"Fiche","content":"# Fiche\n\n![Figure](figure.png)","sources":["OMS"],"imagesIds":["'$IMAGE'"]}'
MARKDOWN=$(id)
call 201 -X POST "$A/bo/documents" -H "$BO" -H "$J" \
  -d '{"type":"HTML","title":"Page","content":"<h1>Page</h1><p>Bonjour</p>","sources":[],"imagesIds":[]}'
HTML=$(id)
call 200 -X PATCH "$A/bo/documents/$LINK" -H "$BO" -H "$J" \
  -d '{"type":"LINK","title":"Site","url":"https://example.org/v2","tagsIds":["'$TAG'"]}'
call 200 "$A/bo/documents" -H "$BO"         # all, deleted ones too, newest first
call 200 "$P/public/documents"              # not deleted, no content
call 200 "$P/public/documents/$PDF/detail"  # with related documents (the LINK shares its tag)
call 200 "$P/public/documents/$MARKDOWN/detail"
call 200 "$P/public/documents/$PDF/download"       # the PDF's bytes
call 200 "$P/public/documents/$HTML/download"      # the content as a file
call 409 -X DELETE "$A/bo/medias/$PDF_MEDIA" -H "$BO"                   # a live document uses it

echo '## Sync: every live document, the tag categories and a cursor; then what changed since'
call 200 "$P/public/sync"
CURSOR=$(grep -o '"cursor":"[^"]*"' "$OUT/body" | cut -d'"' -f4)
call 204 -X DELETE "$A/bo/documents/$HTML" -H "$BO"      # to the trash, idempotent
call 200 "$P/public/sync?cursor=$CURSOR"                  # the HTML document's id under "removed"
call 200 -X POST "$A/bo/documents/$HTML/restore" -H "$BO"

echo "## The app's public settings"
call 200 "$P/public/config"                 # {"moderatorEmail":...}
EMAIL=$(grep -o '"moderatorEmail":"[^"]*"' "$OUT/body" | cut -d'"' -f4)
call 200 -X PUT "$A/bo/config" -H "$BO" -H "$J" -d '{"moderatorEmail":"moderation@library.example"}'
call 200 "$A/bo/config" -H "$VIEWER"        # with updatedAt, updatedBy
call 422 -X PUT "$A/bo/config" -H "$BO" -H "$J" -d '{"moderatorEmail":"nope"}'  # naming moderatorEmail
call 200 -X PUT "$A/bo/config" -H "$BO" -H "$J" -d '{"moderatorEmail":"'$EMAIL'"}'

echo '## Deleting what this script made: documents first, then their media and tags'
for doc in $PDF $LINK $MARKDOWN $HTML; do call 204 -X DELETE "$A/bo/documents/$doc" -H "$BO"; done
call 204 -X DELETE "$A/bo/medias/$PDF_MEDIA" -H "$BO"    # no live document uses it now
call 204 -X DELETE "$A/bo/medias/$IMAGE" -H "$BO"
call 204 -X DELETE "$A/bo/tags-categories/$CATEGORY" -H "$BO"  # and its tags
echo 'done: every call answered as expected'
