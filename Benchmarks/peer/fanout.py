"""The peer's FCM fan-out: firebase-admin's send_each to TOKENS devices against an FCM v1 endpoint
(herald dev's sink) in chunks of 500, ROUNDS rounds, the first not counted. Prints one JSON line: sends/s, p99 per send.

Usage: fanout.py FCM_BASE_URL PROJECT TOKENS ROUNDS
"""
import json
import sys
import time

import firebase_admin
from firebase_admin import credentials, messaging
from google.auth.credentials import AnonymousCredentials


class _Anonymous(credentials.Base):
    def get_credential(self):
        return AnonymousCredentials()


base, project, tokens, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
app = firebase_admin.initialize_app(_Anonymous(), {"projectId": project})
service = messaging._get_messaging_service(app)
service._fcm_url = f"{base}/v1/projects/{project}/messages:send"
# Each send's own duration, timed around the HTTP call send_each makes per message.
latencies = []
send_one = service._client.body


def timed(*args, **kwargs):
    start = time.perf_counter()
    try:
        return send_one(*args, **kwargs)
    finally:
        latencies.append(time.perf_counter() - start)


service._client.body = timed
elapsed = 0.0
for round in range(rounds):
    if round == 1:
        latencies.clear()
    messages = [messaging.Message(token=f"tok-{round}-{i}", notification=messaging.Notification(title="Family • Alice", body="Dinner at 6pm"),
                                  data={"conversationId": "c1", "messageId": f"m{round}"}) for i in range(tokens)]
    start = time.perf_counter()
    # send_each takes at most 500 messages: larger groups go in chunks, as firebase-admin's docs say.
    responses = [messaging.send_each(messages[i:i + 500], app=app) for i in range(0, tokens, 500)]
    if round > 0:
        elapsed += time.perf_counter() - start
    failed = [r.exception for response in responses for r in response.responses if r.exception]
    if failed:
        sys.exit(f"{len(failed)} sends failed: {failed[0]}")
latencies.sort()
print(json.dumps({"sps": tokens * (rounds - 1) / elapsed, "p99": latencies[len(latencies) * 99 // 100]}))
