"""aioapns, an APNs client from PyPI, against an APNs server at 127.0.0.1:PORT over HTTP/2 and TLS,
with a provider token it signs itself from KEY_FILE (a .p8), trusting the server's CA_FILE.

  apns_twin.py PORT CA_FILE KEY_FILE KEY_ID TEAM_ID TOPIC TOKEN...
prints {"results": [{"token", "success", "status", "description"}]}
"""
import asyncio
import json
import ssl
import sys
import uuid

from aioapns import APNs, NotificationRequest, PushType
from aioapns.connection import APNsProductionClientProtocol


async def main():
    port, ca_file, key_file, key_id, team_id, topic, *tokens = sys.argv[1:]
    # aioapns names Apple's host and port in its protocol class: pointed at the stand-in here.
    APNsProductionClientProtocol.APNS_SERVER = "127.0.0.1"
    APNsProductionClientProtocol.APNS_PORT = int(port)
    context = ssl.create_default_context(cafile=ca_file)
    with open(key_file) as f:
        key = f.read()
    client = APNs(key=key, key_id=key_id, team_id=team_id, topic=topic, use_sandbox=False, ssl_context=context)
    results = []
    for token in tokens:
        request = NotificationRequest(
            device_token=token, message={"aps": {"alert": {"title": "Family", "body": "Alice: Dinner at 6pm"}, "badge": 1, "sound": "default"}},
            notification_id=str(uuid.uuid4()), push_type=PushType.ALERT, collapse_key="m1")
        response = await client.send_notification(request)
        results.append({"token": token, "success": response.is_successful, "status": response.status, "description": response.description})
    print(json.dumps({"results": results}))


if __name__ == "__main__":
    asyncio.run(main())
