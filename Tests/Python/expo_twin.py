"""Expo's own Python SDK (exponent-server-sdk) against an Expo push service at HOST: publishes one
alert to each token and reads the receipts of the tickets it got, as a server using Expo would.

  expo_twin.py HOST TOKEN...   prints {"tickets": [...], "receipts": {...}, "errors": [...]}
"""
import json
import sys

from exponent_server_sdk import PushClient, PushMessage, PushServerError


def main():
    host, tokens = sys.argv[1], sys.argv[2:]
    client = PushClient(host=host)
    out = {"tickets": [], "receipts": {}, "errors": []}
    messages = [
        PushMessage(to=token, title="Family", body="Alice: Dinner at 6pm", badge=1, sound="default", data={"conversationId": "family"},
                    channel_id="messages", category="HERALD_MESSAGE", priority="high")
        for token in tokens
    ]
    try:
        tickets = client.publish_multiple(messages)
    except PushServerError as error:
        out["errors"].append({"message": str(error), "errors": error.errors})
        print(json.dumps(out))
        return
    for ticket in tickets:
        out["tickets"].append({"status": ticket.status, "id": ticket.id, "message": ticket.message, "details": ticket.details,
                               "token": ticket.push_message.to})
    receipts = client.check_receipts_multiple([ticket for ticket in tickets if ticket.id])
    for receipt in receipts:
        out["receipts"][receipt.id] = {"status": receipt.status, "details": receipt.details}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
