"""What the listener loads share (listen_check.py's `load`, webchannel_load.py). The writers: 8 threads commit
batches of 10 increments to random documents of `items` (i0…i199) for `seconds`; `rate` writes a
second in all (0: as fast as they go). Returns (writes, seconds taken). A commit Google's emulator
aborts under contention ("Transaction lock timeout", ABORTED) is retried, as clients retry ABORTED."""
import random
import time
from concurrent.futures import ThreadPoolExecutor

from google.api_core import exceptions
from google.cloud import firestore


def write_increments(db, seconds, rate):
    items = db.collection("items")
    writes = [0] * 8
    started = time.monotonic()
    stop = started + seconds

    def writer(w):
        rng = random.Random(w)
        while time.monotonic() < stop:
            if rate > 0:
                # Each writer's commits of 10 are paced so that the 8 of them make `rate` writes a second.
                due = started + (writes[w] / 10 + 1) * 80 / rate
                time.sleep(max(0.0, due - time.monotonic()))
            batch = db.batch()
            for _ in range(10):
                batch.update(items.document(f"i{rng.randrange(200)}"), {"value": firestore.Increment(1)})
            try:
                batch.commit()
            except exceptions.Aborted:
                continue
            writes[w] += 10

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(writer, range(8)))
    return sum(writes), time.monotonic() - started


def wait_until(lock, predicate, seconds):
    """Whether `predicate` (read under `lock`) holds within `seconds`, looking every 50 ms."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        with lock:
            if predicate():
                return True
        time.sleep(0.05)
    with lock:
        return predicate()
