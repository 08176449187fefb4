"""firebase-admin (Python) with FIREBASE_AUTH_EMULATOR_HOST, against herald dev's Auth: verifies an ID
token an app got, finds its user by email, lists users, creates a user with a password, makes a custom
token and sets custom claims; prints what it saw as JSON.

Usage: FIREBASE_AUTH_EMULATOR_HOST=127.0.0.1:PORT firebase_admin_auth.py PROJECT ID_TOKEN EMAIL
"""
import json
import sys

import firebase_admin
from firebase_admin import auth, credentials


def main():
    project, id_token, email = sys.argv[1:4]
    firebase_admin.initialize_app(options={"projectId": project})
    out = {}
    decoded = auth.verify_id_token(id_token, check_revoked=True)
    out["verified"] = {"uid": decoded["uid"], "email": decoded.get("email"), "provider": decoded["firebase"]["sign_in_provider"]}
    user = auth.get_user_by_email(email)
    out["byEmail"] = {"uid": user.uid, "email": user.email, "displayName": user.display_name, "providers": [p.provider_id for p in user.provider_data]}
    out["listed"] = sorted(u.email or "" for u in auth.list_users().iterate_all())
    created = auth.create_user(email="made.by.admin@example.com", password="admin-secret", display_name="Made By Admin")
    out["created"] = created.uid
    auth.set_custom_user_claims(created.uid, {"role": "moderator"})
    out["claims"] = auth.get_user(created.uid).custom_claims
    out["customToken"] = auth.create_custom_token("custom-user-1", {"plan": "gold"}).decode()
    auth.update_user(created.uid, disabled=True)
    out["disabled"] = auth.get_user(created.uid).disabled
    auth.update_user(created.uid, disabled=False)
    try:
        auth.verify_id_token(id_token.rsplit(".", 2)[0] + ".e30.", check_revoked=False)
        out["forged"] = "accepted"
    except Exception as error:
        out["forged"] = type(error).__name__
    print(json.dumps(out))


if __name__ == "__main__":
    main()
