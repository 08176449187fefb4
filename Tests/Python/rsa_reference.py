"""RS256 by Python's `cryptography` (OpenSSL underneath), the reference for HeraldCrypto.

Writes one JSON document: keys of several sizes (PKCS#8 and PKCS#1 DER, n and e), for each key
messages with their signatures, and hostile signatures (changed, cut, padded, the modulus itself,
zero) with whether `cryptography` accepts each. Hostile keys too: truncated and changed DER, and
public keys of too few bits or with an even exponent, with whether `cryptography` loads them.
Usage: rsa_reference.py SEED KEYS_PER_SIZE
"""

import base64
import json
import random
import sys

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def accepts(public_key, signature: bytes, message: bytes) -> bool:
    try:
        public_key.verify(signature, message, padding.PKCS1v15(), hashes.SHA256())
        return True
    except InvalidSignature:
        return False


def loads(der: bytes) -> bool:
    try:
        serialization.load_der_private_key(der, password=None)
        return True
    except Exception:
        return False


def main() -> None:
    seed, per_size = int(sys.argv[1]), int(sys.argv[2])
    chance = random.Random(seed)
    keys = []
    for bits in [2048, 2049, 3072, 4096]:
        for _ in range(per_size):
            exponent = chance.choice([65537, 65537, 3])
            key = rsa.generate_private_key(public_exponent=exponent, key_size=bits)
            public = key.public_key()
            numbers = public.public_numbers()
            size = (numbers.n.bit_length() + 7) // 8
            messages = []
            for length in [0, 1, 55, 56, 64, 1000, chance.randrange(0, 5000)]:
                message = bytes(chance.randrange(256) for _ in range(length))
                signature = key.sign(message, padding.PKCS1v15(), hashes.SHA256())
                hostile = []
                flipped = bytearray(signature)
                flipped[chance.randrange(len(flipped))] ^= 1 << chance.randrange(8)
                for candidate in [bytes(flipped), signature[:-1], b"\x00" + signature, numbers.n.to_bytes(size, "big"),
                                  bytes(size), (numbers.n - 1).to_bytes(size, "big"), bytes(chance.randrange(256) for _ in range(size))]:
                    hostile.append({"signature": b64(candidate), "accepted": accepts(public, candidate, message)})
                messages.append({"message": b64(message), "signature": b64(signature), "hostile": hostile})
            pkcs8 = key.private_bytes(serialization.Encoding.DER, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
            pkcs1 = key.private_bytes(serialization.Encoding.DER, serialization.PrivateFormat.TraditionalOpenSSL, serialization.NoEncryption())
            damaged = []
            for _ in range(20):
                changed = bytearray(pkcs8)
                changed[chance.randrange(len(changed))] ^= chance.randrange(1, 256)
                damaged.append({"der": b64(bytes(changed)), "loads": loads(bytes(changed))})
            cut = chance.randrange(len(pkcs8))
            damaged.append({"der": b64(pkcs8[:cut]), "loads": loads(pkcs8[:cut])})
            keys.append({"bits": bits, "pkcs8": b64(pkcs8), "pkcs1": b64(pkcs1), "n": b64(numbers.n.to_bytes(size, "big")),
                         "e": b64(numbers.e.to_bytes((numbers.e.bit_length() + 7) // 8, "big")), "messages": messages, "damaged": damaged})
    json.dump({"keys": keys}, sys.stdout)


if __name__ == "__main__":
    main()
