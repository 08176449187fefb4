"""ES256 as Python's cryptography does it, the reference for P256Signatures.

Reads a JSON object on stdin:
  {"keys": N}                       -> makes N P-256 keys as Apple's .p8 files hold them (PKCS#8 PEM)
                                       and prints {"keys": [{"pem", "point"}]}, point = uncompressed, base64
  {"verify": [{"point", "message", "signature"}]}
                                    -> verifies each raw r||s signature (base64) of each message (base64)
                                       with the public point, and prints {"verdicts": [true|false, ...]}
"""
import base64
import json
import sys

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature


def main():
    request = json.load(sys.stdin)
    if "keys" in request:
        keys = []
        for _ in range(request["keys"]):
            key = ec.generate_private_key(ec.SECP256R1())
            pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
            point = key.public_key().public_bytes(serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)
            keys.append({"pem": pem.decode(), "point": base64.b64encode(point).decode()})
        print(json.dumps({"keys": keys}))
        return
    verdicts = []
    for item in request["verify"]:
        public = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), base64.b64decode(item["point"]))
        raw = base64.b64decode(item["signature"])
        signature = encode_dss_signature(int.from_bytes(raw[:32], "big"), int.from_bytes(raw[32:], "big"))
        try:
            public.verify(signature, base64.b64decode(item["message"]), ec.ECDSA(hashes.SHA256()))
            verdicts.append(True)
        except InvalidSignature:
            verdicts.append(False)
    print(json.dumps({"verdicts": verdicts}))


if __name__ == "__main__":
    main()
